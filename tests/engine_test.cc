// The engine on the shared tiny models: batch invariance, prefix caching, preemption, seeded
// sampling and the per-request parameters, all checked on token ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <regex>

#include "engine_test_util.h"
#include "moe_model_util.h"
#include "sampling/gbnf.h"
#include "test_util.h"

namespace xinfer {
namespace {

using testing::Completed;
using testing::Greedy;
using testing::RunToCompletion;

EngineConfig BaseConfig(const std::string& model) {
  EngineConfig c;
  c.model = testing::SharedDir() + "/models/" + model;
  c.kv_cache_memory = 64 << 20;
  c.max_model_len = 2048;
  return c;
}

std::unique_ptr<LLMEngine> MakeEngine(const EngineConfig& c) {
  auto e = LLMEngine::Create(c);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<std::vector<int32_t>> RandomPrompts(int count, int min_len, int max_len, int vocab,
                                                uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(min_len, max_len), tok(3, vocab - 1);
  std::vector<std::vector<int32_t>> prompts(count);
  for (auto& p : prompts) {
    p.resize(len(rng));
    for (auto& t : p) t = tok(rng);
  }
  return prompts;
}

struct InvarianceCase {
  std::string model;
  int max_tokens;
  std::string dtype = "auto";  // bfloat16: the vdpbf16ps kernels must be batch-invariant too
  std::string kv_cache_dtype = "auto";  // bfloat16: so must attention over a BF16 cache
};

void PrintTo(const InvarianceCase& c, std::ostream* os) { *os << c.model; }

class BatchInvarianceTest : public ::testing::TestWithParam<InvarianceCase> {};

// Acceptance: greedy outputs of 64 prompts of mixed lengths run together equal each prompt run
// alone, with chunked prefill on and off and prefix caching on and off.
TEST_P(BatchInvarianceTest, BatchedEqualsAlone) {
  const InvarianceCase tc = GetParam();
  XI_REQUIRE_SHARED("models/" + tc.model);
  EngineConfig base = BaseConfig(tc.model);
  base.max_model_len = 512;
  base.dtype = tc.dtype;
  base.kv_cache_dtype = tc.kv_cache_dtype;
  auto alone_engine = MakeEngine(base);
  ASSERT_NE(alone_engine, nullptr);
  const int vocab = alone_engine->model_config().vocab_size;
  auto prompts = RandomPrompts(64, 1, 120, vocab, 1234);
  // Half of the prompts share a 40-token head so that prefix caching has something to hit.
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 40 && j < static_cast<int>(prompts[i].size()); ++j)
      prompts[i][j] = prompts[0][std::min<int>(j, prompts[0].size() - 1)];

  std::vector<std::vector<int32_t>> alone(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(alone_engine->AddRequest("r", {prompts[i], Greedy(tc.max_tokens)}).ok());
    auto done = RunToCompletion(*alone_engine);
    alone[i] = done["r/0"].token_ids;
    ASSERT_EQ(static_cast<int>(alone[i].size()), tc.max_tokens);
  }
  for (bool chunked : {true, false}) {
    for (bool prefix : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "chunked=" << chunked << " prefix=" << prefix);
      EngineConfig c = base;
      c.enable_chunked_prefill = chunked;
      c.enable_prefix_caching = prefix;
      c.max_num_seqs = 64;
      c.max_num_batched_tokens = chunked ? 200 : 512;  // small budget: prompts get split
      auto engine = MakeEngine(c);
      ASSERT_NE(engine, nullptr);
      for (size_t i = 0; i < prompts.size(); ++i)
        ASSERT_TRUE(
            engine->AddRequest(std::to_string(i), {prompts[i], Greedy(tc.max_tokens)}).ok());
      auto done = RunToCompletion(*engine);
      for (size_t i = 0; i < prompts.size(); ++i)
        EXPECT_EQ(done[std::to_string(i) + "/0"].token_ids, alone[i]) << "prompt " << i;
      if (prefix) {
        EXPECT_GT(engine->stats().prefix_cache_hits, 0);
      }
      EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
    }
  }
}

// A mixture-of-experts model (random router, top 2 of 4 experts): which tokens share an expert
// changes with the batch, a token's output must not. Sampled logprobs included.
TEST(MoeEngineTest, BatchedEqualsAloneWithRandomRouting) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  const std::filesystem::path dir = testing::WriteMoeModel(testing::MoeExperts::kSlices, 2,
                                                           /*random_router=*/true, "engine");
  EngineConfig base = BaseConfig("tiny-qwen3");
  base.model = dir.string();
  base.max_model_len = 512;
  auto alone_engine = MakeEngine(base);
  ASSERT_NE(alone_engine, nullptr);
  const auto prompts = RandomPrompts(16, 1, 120, alone_engine->model_config().vocab_size, 99);
  SamplingParams params = Greedy(6);
  params.logprobs = 2;
  std::vector<Completed> alone;
  for (const auto& p : prompts) {
    ASSERT_TRUE(alone_engine->AddRequest("r", {p, params}).ok());
    alone.push_back(RunToCompletion(*alone_engine)["r/0"]);
    ASSERT_EQ(alone.back().token_ids.size(), 6u);
  }
  EngineConfig c = base;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 200;  // prompts split into chunks, decodes batched with prefills
  auto engine = MakeEngine(c);
  ASSERT_NE(engine, nullptr);
  for (size_t i = 0; i < prompts.size(); ++i)
    ASSERT_TRUE(engine->AddRequest(std::to_string(i), {prompts[i], params}).ok());
  auto done = RunToCompletion(*engine);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Completed& b = done[std::to_string(i) + "/0"];
    EXPECT_EQ(b.token_ids, alone[i].token_ids) << "prompt " << i;
    ASSERT_EQ(b.logprobs.size(), alone[i].logprobs.size());
    for (size_t k = 0; k < b.logprobs.size(); ++k)
      EXPECT_EQ(b.logprobs[k].logprob, alone[i].logprobs[k].logprob) << i << " " << k;
  }
  // The experts are not split across tensor-parallel ranks: refused at startup, by name.
  EngineConfig tp = base;
  tp.tensor_parallel_size = 2;
  tp.threads = 2;
  auto refused = LLMEngine::Create(tp);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("experts are not split across ranks"),
            std::string::npos)
      << refused.status().ToString();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvarianceTest,
    ::testing::Values(InvarianceCase{"tiny-qwen3", 6}, InvarianceCase{"tiny-qwen3", 6, "bfloat16"},
                      InvarianceCase{"tinystories-656k", 16},
                      InvarianceCase{"tinystories-656k", 16, "auto", "bfloat16"},
                      // AWQ g128 under BF16 activations: the vdpbf16ps W4A16 panel kernel on
                      // AVX512-BF16 CPUs (one-row GEMV and multi-row tiles must agree).
                      InvarianceCase{"tinystories-656k-awq", 16, "bfloat16"}),
    [](const auto& info) {
      std::string name = info.param.model == "tiny-qwen3" ? std::string("TinyQwen3")
                         : info.param.model == "tinystories-656k-awq"
                             ? std::string("TinyStoriesAwq")
                             : std::string("TinyStories");
      if (info.param.dtype == "bfloat16") name += "Bf16";
      if (info.param.kv_cache_dtype == "bfloat16") name += "Bf16Kv";
      return name;
    });

// A completion that ends inside a UTF-8 character keeps the held bytes as U+FFFD, as a decode of
// all its ids gives them and as the logprobs' token strings show them (the server test compares
// those); before, a length-capped completion dropped them. Byte-level BPE: "é" is byte 0xE9, the
// lead byte of a 3-byte character, so every run of them stays incomplete. A stop string still
// cuts the text before its match, held bytes and all.
TEST(EngineTest, TextEndingInsideACharacterKeepsItsBytesAsReplacements) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  auto engine = MakeEngine(BaseConfig("tiny-qwen3"));
  ASSERT_NE(engine, nullptr);
  const Tokenizer& tok = engine->tokenizer();
  const std::optional<int32_t> lead = tok.TokenToId("\xC3\xA9");  // "é": byte 0xE9
  const std::optional<int32_t> word = tok.TokenToId("cat");
  ASSERT_TRUE(lead.has_value() && word.has_value());
  const std::string replacement = "\xEF\xBF\xBD";
  for (int max_tokens : {1, 2}) {
    SamplingParams p = Greedy(max_tokens);
    p.logit_bias = {{*lead, 100.f}};
    ASSERT_TRUE(engine->AddRequest("r", {{*word, *word}, p}).ok());
    const Completed out = RunToCompletion(*engine)["r/0"];
    ASSERT_EQ(out.token_ids, std::vector<int32_t>(max_tokens, *lead));
    EXPECT_EQ(out.finish_reason, "length");
    EXPECT_EQ(out.text, tok.Decode(out.token_ids, /*skip_special_tokens=*/true));
    std::string want;
    for (int i = 0; i < max_tokens; ++i) want += replacement;
    EXPECT_EQ(out.text, want) << "max_tokens " << max_tokens;
  }
  // " é" (a space, then byte 0xE9) matches the stop string " " and leaves its 0xE9 held: the text
  // ends before the match, with no U+FFFD after the cut.
  const std::optional<int32_t> space_lead = tok.TokenToId("\xC4\xA0\xC3\xA9");  // "Ġé"
  ASSERT_TRUE(space_lead.has_value());
  SamplingParams p = Greedy(4);
  p.logit_bias = {{*space_lead, 100.f}};
  p.stop = {" "};
  ASSERT_TRUE(engine->AddRequest("s", {{*word}, p}).ok());
  const Completed stopped = RunToCompletion(*engine)["s/0"];
  EXPECT_EQ(stopped.token_ids, std::vector<int32_t>{*space_lead});
  EXPECT_EQ(stopped.finish_reason, "stop");
  EXPECT_EQ(stopped.text, "");
}

// A guided request on the TinyStories engine, whose vocabulary has no '{': refused up front
// (instead of padding whitespace until no token is left) with `message`, nothing queued.
void ExpectRefusedOnTinyStories(const SamplingParams& p, const std::string& message) {
  EngineConfig small = BaseConfig("tinystories-656k");
  small.max_model_len = 512;
  auto stories = MakeEngine(small);
  ASSERT_NE(stories, nullptr);
  const Status refused = stories->AddRequest("r", {{1, 80}, p});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(message), std::string::npos) << refused.ToString();
  EXPECT_EQ(stories->stats().num_waiting, 0);
}

// Guided JSON on the engine: a model whose vocabulary cannot write '{' (the TinyStories one) is
// refused up front; on Qwen3's vocabulary a greedy guided output that ends is a JSON object.
TEST(EngineTest, GuidedJsonNeedsAVocabularyThatCanWriteIt) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  SamplingParams p = Greedy(16);
  p.ignore_eos = false;
  p.guided = GuidedDecoding::kJsonObject;
  ExpectRefusedOnTinyStories(p, "no token that can begin the JSON value");

  auto qwen = MakeEngine(BaseConfig("tiny-qwen3"));
  ASSERT_NE(qwen, nullptr);
  const Tokenizer& tok = qwen->tokenizer();
  const std::optional<int32_t> open = tok.TokenToId("{"), close = tok.TokenToId("}");
  ASSERT_TRUE(open.has_value() && close.has_value());
  // '{', '}' and the end favoured: the guide allows them in that order only.
  p.logit_bias = {{*close, 20.f}, {*open, 20.f}};
  for (int32_t eos : qwen->eos_token_ids()) p.logit_bias.emplace_back(eos, 20.f);
  ASSERT_TRUE(qwen->AddRequest("q", {{*open}, p}).ok());
  const Completed out = RunToCompletion(*qwen)["q/0"];
  EXPECT_EQ(out.text, "{}");
  EXPECT_EQ(out.finish_reason, "stop");
}

// Guided regex / choice on the engine: a match the vocabulary cannot begin is refused up front
// (TinyStories has no '{'); on Qwen3's vocabulary every choice of a guided_choice request ends
// as one of the choices, and a regex request's output is a whole match.
TEST(EngineTest, GuidedRegexAndChoiceOutputsAreWholeMatches) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  SamplingParams p = Greedy(24);
  p.ignore_eos = false;
  p.guided = GuidedDecoding::kRegex;
  p.regex = *RegexDfa::FromPattern("\\{+", "guided_regex");
  ExpectRefusedOnTinyStories(
      p, "guided_regex: the model's vocabulary has no token that can begin the match");

  auto qwen = MakeEngine(BaseConfig("tiny-qwen3"));
  ASSERT_NE(qwen, nullptr);
  const std::vector<std::string> choices = {"alpha", "beta gamma", "\u00e9t\u00e9"};
  p.regex = *RegexDfa::FromChoices(choices, "guided_choice");
  p.temperature = 1.0f;
  p.n = 4;
  p.seed = 3;
  ASSERT_TRUE(qwen->AddRequest("c", {{1, 2, 3}, p}).ok());
  p.regex = *RegexDfa::FromPattern("[0-9]{3}-[a-z]{2,4}", "guided_regex");
  p.n = 1;
  ASSERT_TRUE(qwen->AddRequest("x", {{4, 5}, p}).ok());
  auto done = RunToCompletion(*qwen);
  for (int i = 0; i < 4; ++i) {
    const Completed& c = done["c/" + std::to_string(i)];
    EXPECT_EQ(c.finish_reason, "stop") << c.text;
    EXPECT_NE(std::find(choices.begin(), choices.end(), c.text), choices.end()) << c.text;
  }
  EXPECT_EQ(done["x/0"].finish_reason, "stop");
  EXPECT_TRUE(std::regex_match(done["x/0"].text, std::regex("[0-9]{3}-[a-z]{2,4}")))
      << done["x/0"].text;
}

// Guided grammar on the engine: a grammar the vocabulary cannot begin is refused up front
// (TinyStories has no '{'); on Qwen3's vocabulary sampled outputs are whole matches.
TEST(EngineTest, GuidedGrammarOutputsAreWholeMatches) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  SamplingParams p = Greedy(40);
  p.ignore_eos = false;
  p.guided = GuidedDecoding::kGrammar;
  p.grammar = *ParseGbnf(R"g(root ::= "{" [a-z]+ "}")g", "guided_grammar");
  ExpectRefusedOnTinyStories(
      p, "guided_grammar: the model's vocabulary has no token that can begin the match");

  auto qwen = MakeEngine(BaseConfig("tiny-qwen3"));
  ASSERT_NE(qwen, nullptr);
  const char* grammar = R"g(
    root ::= "SELECT " column " FROM " table ";"
    column ::= "id" | "name" | "age"
    table ::= "users" | "orders"
  )g";
  p.grammar = *ParseGbnf(grammar, "guided_grammar");
  p.temperature = 1.0f;
  p.n = 4;
  p.seed = 5;
  ASSERT_TRUE(qwen->AddRequest("g", {{1, 2, 3}, p}).ok());
  auto done = RunToCompletion(*qwen);
  const std::regex oracle("SELECT (id|name|age) FROM (users|orders);");
  for (int i = 0; i < 4; ++i) {
    const Completed& c = done["g/" + std::to_string(i)];
    EXPECT_EQ(c.finish_reason, "stop") << c.text;
    EXPECT_TRUE(std::regex_match(c.text, oracle)) << c.text;
  }
}

// --kv-cache-dtype: a BF16 cache holds twice the blocks in the same memory; auto follows --dtype
// (vLLM's auto is the compute dtype); --dtype bfloat16's BF16 weights leave more of a budget to it;
// fp8 and unknown names are refused with a clear message.
TEST(EngineTest, KvCacheDtypeSizesTheCacheAndRefusesWhatItCannotStore) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  EngineConfig c = BaseConfig("tinystories-656k");
  c.max_model_len = 512;
  auto blocks_with_config = [&](EngineConfig e, const std::string& dtype, const std::string& kv) {
    e.dtype = dtype;
    e.kv_cache_dtype = kv;
    auto engine = MakeEngine(e);
    return engine ? engine->stats().num_blocks : -1;
  };
  auto blocks_with = [&](const std::string& dtype, const std::string& kv) {
    return blocks_with_config(c, dtype, kv);
  };
  const int f32 = blocks_with("auto", "auto");
  ASSERT_GT(f32, 0);
  EXPECT_EQ(blocks_with("auto", "float32"), f32);
  EXPECT_EQ(blocks_with("auto", "bfloat16"), 2 * f32);
  EXPECT_EQ(blocks_with("bfloat16", "auto"), 2 * f32);
  EXPECT_EQ(blocks_with("bfloat16", "float"), f32);

  // --dtype bfloat16 holds the F32 checkpoint's weights as BF16: in a budget the weights nearly
  // fill, the memory they no longer take goes to the KV cache.
  {
    EngineConfig e = c;
    e.kv_cache_memory = 0;            // sized from the budget instead
    e.cpu_memory_budget = 4'000'000;  // the F32 weights are ~2.6 MB
    e.gpu_memory_utilization = 1.0;
    const int f32_weights = blocks_with_config(e, "auto", "float");
    const int bf16_weights = blocks_with_config(e, "bfloat16", "float");
    ASSERT_GT(f32_weights, 0);
    EXPECT_GT(bf16_weights, f32_weights * 3 / 2) << "the weights were not converted";
  }

  // A BF16 cache serves requests to completion and frees every block.
  EngineConfig b = c;
  b.kv_cache_dtype = "bfloat16";
  auto engine = MakeEngine(b);
  ASSERT_NE(engine, nullptr);
  auto prompts = RandomPrompts(8, 5, 60, 2048, 5);
  for (size_t i = 0; i < prompts.size(); ++i)
    ASSERT_TRUE(engine->AddRequest(std::to_string(i), {prompts[i], Greedy(12)}).ok());
  auto done = RunToCompletion(*engine);
  ASSERT_EQ(done.size(), prompts.size());
  for (auto& [id, out] : done) EXPECT_EQ(out.token_ids.size(), 12u) << id;
  EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);

  for (const char* bad : {"fp8", "fp8_e4m3", "int8", "BF16", ""}) {
    EngineConfig e = c;
    e.kv_cache_dtype = bad;
    auto refused = LLMEngine::Create(e);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.status().message().find("kv_cache_dtype"), std::string::npos)
        << refused.status().ToString();
  }
}

// Acceptance: a second request sharing a 1,024-token prefix computes only its uncached tokens
// (engine counters), and its output equals an uncached run.
TEST(EngineTest, PrefixCacheSkipsSharedPrefix) {
  XI_REQUIRE_SHARED("models/tiny-qwen3");
  EngineConfig c = BaseConfig("tiny-qwen3");
  auto engine = MakeEngine(c);
  ASSERT_NE(engine, nullptr);
  const int vocab = engine->model_config().vocab_size;
  auto prefix = RandomPrompts(1, 1024, 1024, vocab, 7)[0];
  auto first = prefix, second = prefix;
  for (int i = 0; i < 10; ++i) first.push_back(100 + i), second.push_back(200 + i);

  ASSERT_TRUE(engine->AddRequest("a", {first, Greedy(4)}).ok());
  RunToCompletion(*engine);
  const int64_t computed_before = engine->stats().computed_tokens;
  ASSERT_TRUE(engine->AddRequest("b", {second, Greedy(4)}).ok());
  auto done = RunToCompletion(*engine);
  const int64_t computed = engine->stats().computed_tokens - computed_before;
  EXPECT_EQ(done["b/0"].cached_tokens, 1024);
  // 10 uncached prompt tokens in the prefill, then 3 decode steps of one token.
  EXPECT_EQ(computed, 10 + 3);
  EXPECT_GE(engine->stats().prefix_cache_hits, 1024);

  EngineConfig nc = c;
  nc.enable_prefix_caching = false;
  auto uncached = MakeEngine(nc);
  ASSERT_NE(uncached, nullptr);
  ASSERT_TRUE(uncached->AddRequest("b", {second, Greedy(4)}).ok());
  auto ref = RunToCompletion(*uncached);
  EXPECT_EQ(done["b/0"].token_ids, ref["b/0"].token_ids);
  EXPECT_EQ(ref["b/0"].cached_tokens, 0);
}

// Acceptance: with a KV pool too small for everyone at once, 32 requests complete with the same
// outputs as an unconstrained run, and preemptions happened.
TEST(EngineTest, PreemptionRecomputesToSameOutputs) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  EngineConfig big = BaseConfig("tinystories-656k");
  big.max_model_len = 512;
  auto reference = MakeEngine(big);
  ASSERT_NE(reference, nullptr);
  auto prompts = RandomPrompts(32, 10, 40, 2048, 99);
  for (size_t i = 0; i < prompts.size(); ++i) {
    prompts[i][0] = 1;  // BOS
    ASSERT_TRUE(reference->AddRequest(std::to_string(i), {prompts[i], Greedy(40)}).ok());
  }
  auto expected = RunToCompletion(*reference);
  EXPECT_EQ(reference->stats().num_preemptions, 0);

  EngineConfig small = big;
  small.num_gpu_blocks_override = 40;  // 640 slots for 32 x (10..40 + 40) tokens
  auto engine = MakeEngine(small);
  ASSERT_NE(engine, nullptr);
  for (size_t i = 0; i < prompts.size(); ++i)
    ASSERT_TRUE(engine->AddRequest(std::to_string(i), {prompts[i], Greedy(40)}).ok());
  auto got = RunToCompletion(*engine);
  ASSERT_EQ(got.size(), 32u);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string k = std::to_string(i) + "/0";
    EXPECT_EQ(got[k].token_ids, expected[k].token_ids) << k;
    EXPECT_EQ(got[k].finish_reason, "length");
  }
  EXPECT_GT(engine->stats().num_preemptions, 0);
  EXPECT_EQ(engine->stats().num_free_blocks, engine->stats().num_blocks);
}

// Acceptance: same seed, same tokens, alone or in a batch.
TEST(EngineTest, SeededSamplingIsBatchIndependent) {
  XI_REQUIRE_SHARED("models/tinystories-656k");
  EngineConfig c = BaseConfig("tinystories-656k");
  c.max_model_len = 512;
  auto engine = MakeEngine(c);
  ASSERT_NE(engine, nullptr);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  p.seed = 4242;
  p.max_tokens = 32;
  p.ignore_eos = true;
  std::vector<int32_t> prompt = {1, 147, 201};
  ASSERT_TRUE(engine->AddRequest("alone", {prompt, p}).ok());
  auto alone = RunToCompletion(*engine)["alone/0"].token_ids;
  ASSERT_EQ(alone.size(), 32u);

  auto others = RandomPrompts(8, 5, 30, 2048, 5);
  SamplingParams q = p;
  q.seed.reset();
  for (size_t i = 0; i < others.size(); ++i) {
    std::string id = "other";
    id += std::to_string(i);  // (operator+ on a literal trips GCC 12's -Wrestrict)
    ASSERT_TRUE(engine->AddRequest(id, {others[i], q}).ok());
  }
  ASSERT_TRUE(engine->AddRequest("batched", {prompt, p}).ok());
  auto done = RunToCompletion(*engine);
  EXPECT_EQ(done["batched/0"].token_ids, alone);

  SamplingParams other_seed = p;
  other_seed.seed = 4243;
  ASSERT_TRUE(engine->AddRequest("diff", {prompt, other_seed}).ok());
  EXPECT_NE(RunToCompletion(*engine)["diff/0"].token_ids, alone);
}

}  // namespace
}  // namespace xinfer
