// Tensor parallelism (model/layers/decoder_shard.h, LoadCausalLM over several backends) on the
// shared tiny models: the ranks' shards together give the whole model's logits (dense, GGUF block
// formats, AWQ; F32, BF16 and int8 activations), the goldens still hold, splits that would cut a
// head or a quantized block are refused with the reason, and a bad token is an error on every
// rank rather than a hang.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/communicator.h"
#include "cli/awq_quantize.h"
#include "golden_util.h"
#include "model/causal_lm.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;

std::string Shared(const std::string& rel) { return std::string(XINFER_SHARED_DIR) + "/" + rel; }

#define REQUIRE_SHARED(path) \
  if (!fs::exists(path)) GTEST_SKIP() << (path) << " is absent (../shared not available)"

// `size` CPU backends of one thread each and the communicator between them.
struct Ranks {
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<Backend*> pointers;
  std::unique_ptr<Communicator> comm;
  Ranks(int size, const CpuBackendOptions& options) : comm(CreateHostCommunicator(size)) {
    CpuBackendOptions o = options;
    o.num_threads = 1;
    for (int r = 0; r < size; ++r) {
      backends.push_back(CreateCpuBackend(o));
      pointers.push_back(backends.back().get());
    }
  }
};

// The same model whole (on `ranks_of_one`) and split over `ranks`.
struct Pair {
  std::unique_ptr<CausalLM> whole, split;
};
Pair LoadPair(const std::string& path, Ranks& ranks_of_one, Ranks& ranks,
              const ModelLoadOptions& options = {}) {
  Pair p;
  auto whole = LoadCausalLM(path, ranks_of_one.pointers, *ranks_of_one.comm, options);
  EXPECT_TRUE(whole.ok()) << whole.status().ToString();
  auto split = LoadCausalLM(path, ranks.pointers, *ranks.comm, options);
  EXPECT_TRUE(split.ok()) << split.status().ToString();
  if (whole.ok() && split.ok()) {
    p.whole = std::move(*whole);
    p.split = std::move(*split);
  }
  return p;
}

// Prefills a prompt, then decodes 4 tokens greedily, into both models; returns the largest logit
// difference over every step relative to max(1, the step's largest |logit|).
double LargestRelativeDifference(const Pair& p, Backend& backend) {
  const int64_t vocab = p.whole->config().vocab_size;
  SingleSequence a(*p.whole, backend, 64), b(*p.split, backend, 64);
  std::vector<float> la(vocab), lb(vocab);
  std::vector<int32_t> tokens = {1, 17, 200, 3, 1000 % static_cast<int32_t>(vocab), 42, 7, 99};
  double worst = 0;
  for (int step = 0; step < 5; ++step) {
    EXPECT_TRUE(a.Append(tokens, la).ok());
    EXPECT_TRUE(b.Append(tokens, lb).ok());
    double largest = 1, diff = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      largest = std::max<double>(largest, std::fabs(la[i]));
      diff = std::max<double>(diff, std::fabs(la[i] - lb[i]));
    }
    worst = std::max(worst, diff / largest);
    tokens = {static_cast<int32_t>(std::max_element(la.begin(), la.end()) - la.begin())};
  }
  return worst;
}

TEST(TensorParallelTest, ShardsGiveTheWholeModelsLogits) {
  REQUIRE_SHARED(Shared("models"));
  const struct {
    std::string model;
    std::vector<int> sizes;
  } cases[] = {
      {"tiny-qwen3", {2, 4}},  // 4 query heads, 2 kv heads: 4 ranks share them
      {"tiny-qwen2", {2, 4}},  // q/k/v biases
      {"tinystories-656k", {2, 4, 8}},
      {"tiny-qwen3-bf16.gguf", {2}},
      {"tiny-qwen3-q8_0.gguf", {2, 4}},
      {"tiny-qwen3-q4_0.gguf", {2, 4}},  // 6 blocks of intermediate features: uneven over 4
  };
  for (const auto& c : cases) {
    for (int size : c.sizes) {
      for (bool int8 : {false, true}) {
        if (int8 && !c.model.ends_with(".gguf")) continue;
        SCOPED_TRACE(c.model + " over " + std::to_string(size) + (int8 ? " int8" : ""));
        const CpuBackendOptions o{.int8_activations = int8};
        Ranks one(1, o), ranks(size, o);
        const Pair p = LoadPair(Shared("models/" + c.model), one, ranks);
        ASSERT_TRUE(p.whole && p.split);
        EXPECT_EQ(p.split->num_parameters(), p.whole->num_parameters());
        EXPECT_LT(LargestRelativeDifference(p, *one.backends[0]), 1e-5);
      }
    }
  }
}

TEST(TensorParallelTest, KvAndWeightBytesCountEveryRank) {
  REQUIRE_SHARED(Shared("models/tiny-qwen3"));
  Ranks one(1, {}), two(2, {}), four(4, {});
  const Pair p2 = LoadPair(Shared("models/tiny-qwen3"), one, two);
  const Pair p4 = LoadPair(Shared("models/tiny-qwen3"), one, four);
  ASSERT_TRUE(p2.split && p4.split);
  // 2 kv heads: split over 2 ranks, replicated over 4 (each rank keeps the one its queries use).
  EXPECT_EQ(p2.split->kv_bytes_per_token(DType::kF32), p2.whole->kv_bytes_per_token(DType::kF32));
  EXPECT_EQ(p4.split->kv_bytes_per_token(DType::kF32),
            2 * p4.whole->kv_bytes_per_token(DType::kF32));
  // Every projection and the vocabulary are split; only the norms are held by every rank.
  EXPECT_GE(p2.split->weight_bytes(), p2.whole->weight_bytes());
  EXPECT_LT(p2.split->weight_bytes(), p2.whole->weight_bytes() + 4096);
}

TEST(TensorParallelTest, GoldensStillHold) {
  REQUIRE_SHARED(Shared("golden/logits/tinystories-656k"));
  for (auto [model, size] : {std::pair{"tinystories-656k", 2}, std::pair{"tiny-qwen3", 4}}) {
    SCOPED_TRACE(std::string(model) + " over " + std::to_string(size));
    Ranks ranks(size, {});
    auto split = LoadCausalLM(Shared(std::string("models/") + model), ranks.pointers, *ranks.comm);
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    testing::ExpectMatchesGolden(**split, *ranks.backends[0],
                                 Shared(std::string("golden/logits/") + model));
  }
}

TEST(TensorParallelTest, AwqShardsAlongItsGroups) {
  REQUIRE_SHARED(Shared("models/tinystories-656k"));
  // g32 so that a rank's 4 heads of 16 features (o_proj) hold whole groups.
  const std::string dir = ::testing::TempDir() + "xinfer-tp-awq-" + std::to_string(getpid());
  fs::remove_all(dir);
  ASSERT_TRUE(QuantizeModelAwq(Shared("models/tinystories-656k"), dir, {.group_size = 32}).ok());
  const struct {
    const char* name;
    CpuBackendOptions backend;
    ModelLoadOptions load;
  } modes[] = {{"f32", {}, {}},
               {"bfloat16", {.bf16_activations = true}, {.bf16_weights = true}},
               {"int8", {.int8_activations = true}, {}}};
  for (const auto& m : modes) {
    SCOPED_TRACE(m.name);
    Ranks one(1, m.backend), two(2, m.backend);
    const Pair p = LoadPair(dir, one, two, m.load);
    ASSERT_TRUE(p.whole && p.split);
    EXPECT_LT(LargestRelativeDifference(p, *one.backends[0]), 1e-5);
  }
  fs::remove_all(dir);
}

TEST(TensorParallelTest, SplitsThatCutHeadsOrBlocksAreRefused) {
  REQUIRE_SHARED(Shared("models/tinystories-656k-awq"));
  const struct {
    std::string model;
    int size;
    std::string message;
  } cases[] = {
      {"tiny-qwen3", 3, "tensor_parallel_size 3 must divide the model's 4 attention heads"},
      {"tinystories-656k", 16, "tensor_parallel_size 16 must divide the model's 8 attention heads"},
      {"tinystories-656k-awq", 2,
       "tensor_parallel_size 2: layer 0's o_proj (AWQ4-g128) is quantized in blocks of 128 input "
       "features, which slices of 64 features (4 heads) per rank would cut"},
      {"tiny-qwen3-kq-q4_k_m.gguf", 2, "is quantized in blocks of 256 input features"},
  };
  for (const auto& c : cases) {
    Ranks ranks(c.size, {});
    auto model = LoadCausalLM(Shared("models/" + c.model), ranks.pointers, *ranks.comm);
    ASSERT_FALSE(model.ok()) << c.model;
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find(c.message), std::string::npos)
        << model.status().ToString();
    EXPECT_NE(model.status().message().find(c.model), std::string::npos)
        << model.status().ToString();
  }
}

TEST(TensorParallelTest, BadTokenIsAnErrorOnEveryRankNotAHang) {
  REQUIRE_SHARED(Shared("models/tinystories-656k"));
  Ranks ranks(2, {});
  auto model = LoadCausalLM(Shared("models/tinystories-656k"), ranks.pointers, *ranks.comm);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  SingleSequence seq(**model, *ranks.backends[0], 32);
  std::vector<float> logits((*model)->config().vocab_size);
  const Status bad = seq.Append(std::vector<int32_t>{5, 2048}, logits);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument) << bad.ToString();
  EXPECT_NE(bad.message().find("token id 2048 is outside the vocabulary"), std::string::npos)
      << bad.ToString();
  // The ranks are still in step: the next batch runs.
  EXPECT_TRUE(seq.Append(std::vector<int32_t>{5, 6}, logits).ok());
}

}  // namespace
}  // namespace xinfer
