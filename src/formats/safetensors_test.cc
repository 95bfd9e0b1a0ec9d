#include "formats/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "formats/hf_config.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("xinfer_st_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a safetensors file with the given header text and `data_bytes` bytes of data.
  std::string Write(const std::string& name, const std::string& header, size_t data_bytes,
                    int64_t header_len_override = -1) {
    std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    uint64_t len = header_len_override >= 0 ? header_len_override : header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
    out << header;
    for (size_t i = 0; i < data_bytes; ++i) out.put(static_cast<char>(i));
    return path;
  }

  static std::string ErrorOf(const std::string& path) {
    auto f = SafetensorsFile::Open(path);
    EXPECT_FALSE(f.ok());
    return f.ok() ? "" : f.status().ToString();
  }

  fs::path dir_;
};

TEST_F(SafetensorsTest, ReadsValidFile) {
  auto path =
      Write("ok.safetensors",
            R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],)"
            R"("data_offsets":[0,16]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]}})",
            22);
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  const TensorInfo& b = (*f)->tensors().at("b");
  EXPECT_EQ(b.dtype, DType::kBF16);
  Tensor t = (*f)->Get(b);
  EXPECT_EQ(t.shape(), (Shape{3}));
  EXPECT_EQ(t.data<uint8_t>()[0], 16);  // data byte i has value i
}

// Tensors are packed without padding and a header need not be padded to 8 bytes: a tensor whose
// bytes start off its element size's alignment comes back as an aligned copy of them (a view
// would have every typed read of it misaligned: undefined behaviour, a fault on some CPUs).
TEST_F(SafetensorsTest, MisalignedTensorsComeBackAsAlignedCopies) {
  // A U8 tensor of 3 bytes puts the F32 one at data offset 3 and the BF16 one at 11; with the
  // data section at a multiple of 4 in the file (the header padded with spaces to a multiple of
  // 4, the mapping page-aligned), both start off their alignment.
  std::string header = R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},)"
                       R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[11,15]}})";
  while (header.size() % 4 != 0) header += ' ';
  auto path = Write("packed.safetensors", header, 15);
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (const char* name : {"a", "b", "c"}) {
    const TensorInfo& info = (*f)->tensors().at(name);
    Tensor t = (*f)->Get(info);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % DTypeSize(info.dtype), 0u) << name;
    ASSERT_EQ(static_cast<size_t>(t.size_bytes()), info.size) << name;
    const size_t begin = info.offset - 8 - header.size();  // data byte i has value i
    if (info.dtype != DType::kU8) {
      EXPECT_NE(info.offset % DTypeSize(info.dtype), 0u) << name;
    }
    for (size_t i = 0; i < info.size; ++i)
      EXPECT_EQ(static_cast<const uint8_t*>(t.raw())[i], begin + i) << name << " byte " << i;
  }
}

TEST_F(SafetensorsTest, MissingFile) {
  EXPECT_NE(ErrorOf((dir_ / "nope.safetensors").string()).find("NotFound: no such file"),
            std::string::npos);
}

TEST_F(SafetensorsTest, TooShort) {
  std::string path = (dir_ / "short.safetensors").string();
  std::ofstream(path) << "abc";
  EXPECT_NE(ErrorOf(path).find("too short"), std::string::npos);
}

TEST_F(SafetensorsTest, HeaderLongerThanFile) {
  auto path = Write("trunc.safetensors", R"({"a":1})", 0, 4096);
  EXPECT_NE(ErrorOf(path).find("exceeds the file size"), std::string::npos);
}

TEST_F(SafetensorsTest, ImplausibleHeaderLength) {
  auto path = Write("huge.safetensors", "{}", 0, int64_t{1} << 40);
  EXPECT_NE(ErrorOf(path).find("implausible"), std::string::npos);
}

TEST_F(SafetensorsTest, HeaderNotJson) {
  auto path = Write("bad.safetensors", "{not json", 0);
  EXPECT_NE(ErrorOf(path).find("not a valid JSON object"), std::string::npos);
}

TEST_F(SafetensorsTest, UnknownDtype) {
  auto path =
      Write("dt.safetensors", R"({"a":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]}})", 1);
  std::string err = ErrorOf(path);
  EXPECT_NE(err.find("unsupported dtype 'F8_E5M2'"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor 'a'"), std::string::npos) << err;
}

TEST_F(SafetensorsTest, TruncatedData) {
  auto path =
      Write("td.safetensors", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  std::string err = ErrorOf(path);
  EXPECT_NE(err.find("DataLoss"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
}

TEST_F(SafetensorsTest, ShapeDisagreesWithOffsets) {
  auto path =
      Write("sh.safetensors", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16);
  EXPECT_NE(ErrorOf(path).find("needs 12 bytes but data_offsets span 16"), std::string::npos);
}

TEST_F(SafetensorsTest, OffsetsReversedOrOverlapping) {
  auto p1 = Write("rev.safetensors", R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4);
  EXPECT_NE(ErrorOf(p1).find("begin > end"), std::string::npos);
  auto p2 = Write("ovl.safetensors",
                  R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                  6);
  EXPECT_NE(ErrorOf(p2).find("overlap"), std::string::npos);
}

TEST_F(SafetensorsTest, MalformedEntries) {
  auto p1 =
      Write("e1.safetensors", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(ErrorOf(p1).find("bad shape entry"), std::string::npos);
  auto p2 = Write("e2.safetensors", R"({"a":{"dtype":"F32","shape":[1]}})", 4);
  EXPECT_NE(ErrorOf(p2).find("data_offsets must be"), std::string::npos);
  auto p3 = Write("e3.safetensors", R"({"a":[1,2]})", 4);
  EXPECT_NE(ErrorOf(p3).find("not an object"), std::string::npos);
}

// A header or index nested 200,000 levels deep is an error: copying such a json value recursed
// once per level and overflowed the stack.
TEST_F(SafetensorsTest, DeeplyNestedHeaderOrIndexIsAnError) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto p = Write("deep.safetensors",
                 R"({"a":{"dtype":"F32","shape":[1],"data_offsets":)" + deep + "}}", 4);
  EXPECT_NE(ErrorOf(p).find("data_offsets must be"), std::string::npos);
  fs::remove(p);
  Write("shard.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map":{"a":)" + deep + "}}";
  auto s = WeightStore::OpenDir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("is not a file name"), std::string::npos)
      << s.status().ToString();
}

TEST_F(SafetensorsTest, WeightStoreSingleAndMissingTensor) {
  Write("model.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  auto store = WeightStore::OpenDir(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Get("w").ok());
  auto missing = (*store)->Get("lm_head.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("tensor 'lm_head.weight' is missing"),
            std::string::npos);
  auto wrong = (*store)->GetWithShape("w", {3});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has shape [2] but the config implies [3]"),
            std::string::npos);
}

TEST_F(SafetensorsTest, WeightStoreSharded) {
  Write("model-00001-of-00002.safetensors",
        R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  Write("model-00002-of-00002.safetensors",
        R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
      << R"("b":"model-00002-of-00002.safetensors"}})";
  auto store = WeightStore::OpenDir(dir_.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Has("a"));
  EXPECT_TRUE((*store)->Has("b"));
  EXPECT_EQ((*store)->Names().size(), 2u);
}

TEST_F(SafetensorsTest, WeightStoreShardErrors) {
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"weight_map":{"a":"missing-shard.safetensors"}})";
  auto s1 = WeightStore::OpenDir(dir_.string());
  ASSERT_FALSE(s1.ok());
  EXPECT_NE(s1.status().message().find("missing-shard.safetensors"), std::string::npos);

  Write("shard.safetensors", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"weight_map":{"a":"shard.safetensors"}})";
  auto s2 = WeightStore::OpenDir(dir_.string());
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.status().message().find("does not contain it"), std::string::npos);

  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map":{"a":"../../etc"}})";
  auto s3 = WeightStore::OpenDir(dir_.string());
  ASSERT_FALSE(s3.ok());
  EXPECT_NE(s3.status().message().find("plain file name"), std::string::npos);
}

TEST_F(SafetensorsTest, WeightStoreNoWeights) {
  auto s = WeightStore::OpenDir(dir_.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no model.safetensors"), std::string::npos);
  auto s2 = WeightStore::OpenDir((dir_ / "absent").string());
  ASSERT_FALSE(s2.ok());
  EXPECT_NE(s2.status().message().find("model folder not found"), std::string::npos);
}

constexpr const char* kQwen3Config = R"({
  "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 100,
  "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
  "eos_token_id": [1, 2], "torch_dtype": "bfloat16"})";

TEST(HfConfigTest, ParsesQwen3) {
  auto c = ParseHfConfig(kQwen3Config);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->num_key_value_heads, 2);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
}

TEST(HfConfigTest, Errors) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto c = ParseHfConfig(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(needle), std::string::npos) << c.status().ToString();
  };
  expect_error("[1,2]", "not a JSON object");
  expect_error("{", "not a JSON object");
  expect_error(R"({"architectures": ["X"]})", "missing 'vocab_size'");
  expect_error(R"({"architectures": ["X"], "vocab_size": 10, "hidden_size": 64,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 5,
      "num_key_value_heads": 2})",
               "not a multiple");
  expect_error(R"({"architectures": ["X"], "vocab_size": -3})", "out of range");
  expect_error(R"({"architectures": ["X"], "vocab_size": 10, "hidden_size": 64,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4,
      "hidden_act": "gelu"})",
               "hidden_act 'gelu'");
  expect_error(R"({"vocab_size": 10})", "missing 'architectures'");
  // Wrong-typed string fields are errors, not a json exception that aborts the process.
  const std::string base = R"({"architectures": ["X"], "vocab_size": 10, "hidden_size": 64,
      "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4, )";
  expect_error(base + R"("model_type": 5})", "'model_type' must be a string");
  expect_error(base + R"("hidden_act": null, "model_type": []})", "'model_type' must be a string");
  expect_error(base + R"("hidden_act": 1})", "'hidden_act' must be a string");
  expect_error(base + R"("quantization_config": {"quant_method": 4}})",
               "'quant_method' must be a string");
  auto missing = LoadHfConfig("/nonexistent/model");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// vLLM's --hf-overrides: merged onto config.json before it is read (objects key by key, null
// removing a key), so they reach every field; matryoshka declarations among them.
TEST_F(SafetensorsTest, HfOverridesMergeOntoConfigJson) {
  std::string with_scaling = kQwen3Config;
  with_scaling.insert(
      with_scaling.size() - 1,
      R"(, "rope_scaling": {"rope_type": "longrope", "factor": 4.0}, "x": {"a": 1})");
  std::ofstream(dir_ / "config.json") << with_scaling;
  const std::string dir = dir_.string();
  EXPECT_EQ(LoadHfConfig(dir).status().code(), StatusCode::kUnimplemented);  // longrope
  auto c = LoadHfConfig(dir, R"({"rope_scaling": null, "max_position_embeddings": 65536,
      "x": {"b": 2}, "is_matryoshka": true})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->max_position_embeddings, 65536);
  EXPECT_TRUE(c->is_matryoshka);
  EXPECT_TRUE(c->matryoshka_dimensions.empty());
  EXPECT_EQ(c->hidden_size, 64);  // untouched fields as they were
  auto dims = LoadHfConfig(dir, R"({"rope_scaling": null, "matryoshka_dimensions": [16, 32]})");
  ASSERT_TRUE(dims.ok()) << dims.status().ToString();
  EXPECT_TRUE(dims->is_matryoshka);
  EXPECT_EQ(dims->matryoshka_dimensions, (std::vector<int>{16, 32}));
  for (const auto& [overrides, needle] : std::vector<std::pair<std::string, std::string>>{
           {"[1]", "hf_overrides must be a JSON object"},
           {"{", "hf_overrides must be a JSON object"},
           {R"({"rope_scaling": null, "matryoshka_dimensions": [128]})",
            "matryoshka_dimensions must be integers in [1, 64]"},
           {R"({"rope_scaling": null, "is_matryoshka": "yes"})",
            "'is_matryoshka' must be a boolean"},
           {R"({"rope_scaling": null, "hidden_size": 0})", "hidden_size"}}) {
    auto bad = LoadHfConfig(dir, overrides);
    ASSERT_FALSE(bad.ok()) << overrides;
    EXPECT_NE(bad.status().message().find(needle), std::string::npos) << bad.status().ToString();
  }
}

// rope_scaling as vLLM's get_rope reads it (keyed rope_type, or type as older configs spell it),
// and the context it gives (vLLM's derived max_model_len).
TEST(HfConfigTest, RopeScalingAndTheLengthItGives) {
  const auto parse = [](const std::string& fields) {
    std::string text = kQwen3Config;
    text.insert(text.size() - 1, ", " + fields);
    return ParseHfConfig(text);
  };
  auto plain = parse(R"("max_position_embeddings": 40960)");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->rope_scaling.type, "");
  EXPECT_EQ(DerivedMaxModelLen(*plain), 40960);
  // Qwen3's long-context recipe: 32768 trained positions stretched 4 times.
  auto yarn = parse(R"("max_position_embeddings": 40960, "rope_scaling": {"rope_type": "yarn",
      "factor": 4.0, "original_max_position_embeddings": 32768, "beta_fast": 16})");
  ASSERT_TRUE(yarn.ok()) << yarn.status().ToString();
  EXPECT_EQ(yarn->rope_scaling.type, "yarn");
  EXPECT_EQ(yarn->rope_scaling.factor, 4.0);
  EXPECT_EQ(yarn->rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(yarn->rope_scaling.beta_fast, 16);
  EXPECT_EQ(yarn->rope_scaling.beta_slow, 1);
  EXPECT_EQ(DerivedMaxModelLen(*yarn), 131072);
  // Qwen2.5's spelling ("type"), and yarn's trained context defaulting to max_position_embeddings.
  auto qwen25 = parse(R"("max_position_embeddings": 32768,
      "rope_scaling": {"type": "yarn", "factor": 2.0})");
  ASSERT_TRUE(qwen25.ok()) << qwen25.status().ToString();
  EXPECT_EQ(qwen25->rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_EQ(DerivedMaxModelLen(*qwen25), 65536);
  auto linear = parse(R"("max_position_embeddings": 4096,
      "rope_scaling": {"type": "linear", "factor": 2.0})");
  ASSERT_TRUE(linear.ok()) << linear.status().ToString();
  EXPECT_EQ(DerivedMaxModelLen(*linear), 8192);
  auto dynamic = parse(R"("max_position_embeddings": 4096,
      "rope_scaling": {"rope_type": "dynamic", "factor": 3.0})");
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().ToString();
  EXPECT_EQ(DerivedMaxModelLen(*dynamic), 12288);
  // Llama 3.1 states its full length in max_position_embeddings already.
  auto llama3 = parse(R"("max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3",
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})");
  ASSERT_TRUE(llama3.ok()) << llama3.status().ToString();
  EXPECT_EQ(llama3->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(DerivedMaxModelLen(*llama3), 131072);
  auto none = parse(R"("max_position_embeddings": 4096, "rope_scaling": {"rope_type": "default"})");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->rope_scaling.type, "");
  EXPECT_EQ(ParseHfConfig(kQwen3Config).value().rope_scaling.type, "");

  for (const auto& [fields, code, needle] :
       std::vector<std::tuple<std::string, StatusCode, std::string>>{
           {R"("rope_scaling": {"rope_type": "longrope", "factor": 4})", StatusCode::kUnimplemented,
            "rope_scaling type 'longrope' is not supported"},
           {R"("rope_scaling": {"rope_type": "default", "mrope_section": [16, 24, 24]})",
            StatusCode::kUnimplemented, "mrope_section"},
           {R"("rope_scaling": "yarn")", StatusCode::kInvalidArgument, "must be an object"},
           {R"("rope_scaling": {"rope_type": 4})", StatusCode::kInvalidArgument,
            "'rope_type' must be a string"},
           {R"("max_position_embeddings": 8, "rope_scaling": {"rope_type": "linear"})",
            StatusCode::kInvalidArgument, "needs a 'factor'"},
           {R"("max_position_embeddings": 8, "rope_scaling": {"type": "linear", "factor": 0})",
            StatusCode::kInvalidArgument, "'factor' must be a positive number"},
           {R"("max_position_embeddings": 8, "rope_scaling": {"type": "yarn", "factor": 0.5})",
            StatusCode::kInvalidArgument, "factor must be at least 1"},
           {R"("rope_scaling": {"type": "yarn", "factor": 2})", StatusCode::kInvalidArgument,
            "needs 'original_max_position_embeddings'"},
           {R"("max_position_embeddings": 8, "rope_scaling": {"type": "yarn", "factor": 2,
               "beta_fast": "fast"})",
            StatusCode::kInvalidArgument, "'beta_fast' must be a positive number"},
           {R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "high_freq_factor": 4,
               "original_max_position_embeddings": 8192})",
            StatusCode::kInvalidArgument, "llama3 needs 'low_freq_factor'"},
           {R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
               "high_freq_factor": 1, "original_max_position_embeddings": 8192})",
            StatusCode::kInvalidArgument, "high_freq_factor 1 is below low_freq_factor 4"}}) {
    auto bad = parse(fields);
    ASSERT_FALSE(bad.ok()) << fields;
    EXPECT_EQ(bad.status().code(), code) << bad.status().ToString();
    EXPECT_NE(bad.status().message().find(needle), std::string::npos) << bad.status().ToString();
  }
}

// Qwen3-MoE's expert settings, and which layers are sparse (transformers' rule).
TEST(HfConfigTest, Qwen3MoeExperts) {
  std::string text = kQwen3Config;
  text.replace(text.find("Qwen3ForCausalLM"), 16, "Qwen3MoeForCausalLM");
  const auto parse = [&](const std::string& fields) {
    std::string t = text;
    t.insert(t.size() - 1, ", " + fields);
    return ParseHfConfig(t);
  };
  auto c = parse(R"("num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
      "norm_topk_prob": true, "decoder_sparse_step": 2, "mlp_only_layers": [3])");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_moe());
  EXPECT_EQ(c->num_experts_per_tok, 8);
  EXPECT_TRUE(c->norm_topk_prob);
  EXPECT_FALSE(c->IsSparseLayer(0));  // every 2nd layer: 1, 3, 5, ... but not 3
  EXPECT_TRUE(c->IsSparseLayer(1));
  EXPECT_FALSE(c->IsSparseLayer(3));
  EXPECT_TRUE(c->IsSparseLayer(5));
  EXPECT_FALSE(ParseHfConfig(kQwen3Config).value().is_moe());
  for (const auto& [fields, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"("num_experts_per_tok": 8, "moe_intermediate_size": 768)", "missing 'num_experts'"},
           {R"("num_experts": 4, "num_experts_per_tok": 8, "moe_intermediate_size": 768)",
            "num_experts_per_tok 8 exceeds num_experts 4"},
           {R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
               "norm_topk_prob": 1)",
            "'norm_topk_prob' must be a boolean"},
           {R"("num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
               "mlp_only_layers": [0.5])",
            "'mlp_only_layers' must be a list of layer indices"}}) {
    auto bad = parse(fields);
    ASSERT_FALSE(bad.ok()) << fields;
    EXPECT_NE(bad.status().message().find(needle), std::string::npos) << bad.status().ToString();
  }
}

// A sequence classification model's labels: id2label by index whatever the key order, num_labels
// generic names, transformers' two by default; the lm_head recipe (classifier_from_token) or a
// head of its own.
TEST(HfConfigTest, ClassifierLabels) {
  std::string text = kQwen3Config;
  text.replace(text.find("Qwen3ForCausalLM"), 16, "Qwen3ForSequenceClassification");
  const auto parse = [&](const std::string& fields) {
    std::string t = text;
    if (!fields.empty()) t.insert(t.size() - 1, ", " + fields);
    return ParseHfConfig(t);
  };
  auto c = parse(R"("id2label": {"1": "yes", "0": "no", "2": "maybe"})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_classifier());
  EXPECT_TRUE(c->has_score_head());
  EXPECT_EQ(c->id2label, (std::vector<std::string>{"no", "yes", "maybe"}));
  c = parse(R"("num_labels": 3)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id2label, (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  c = parse("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->id2label.size(), 2u);
  c = parse(R"("classifier_from_token": ["no", "yes"])");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_classifier());
  EXPECT_FALSE(c->has_score_head());
  EXPECT_TRUE(ParseHfConfig(kQwen3Config).value().id2label.empty());
  for (const char* bad :
       {R"("id2label": {"0": "a", "0x": "b"})", R"("id2label": {"0": "a", "2": "b"})",
        R"("id2label": [])", R"("id2label": {"0": 5})", R"("num_labels": 0)"}) {
    auto e = parse(bad);
    EXPECT_FALSE(e.ok()) << bad;
  }
}

}  // namespace
}  // namespace xinfer
