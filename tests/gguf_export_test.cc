// `xinfer quantize --gguf` (cli/gguf_export.h) against the GGUF files llama.cpp's own tools made
// from the shared tiny-qwen3 folder (convert_hf_to_gguf.py for bf16, llama-quantize for q8_0 /
// q4_0): same metadata, tensor names, types, shapes and bytes; exports of every shared
// architecture load back through xinfer's GGUF loader with the golden logits and the folder's
// tokenization; bad input fails with a clear Status and leaves no file behind.
#include "cli/gguf_export.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <tuple>

#include "engine/gguf_tokenizer_loader.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "golden_util.h"
#include "model/causal_lm.h"
#include "moe_model_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace xinfer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kQwen3 = "models/tiny-qwen3";

std::string Shared(const std::string& rel) { return testing::SharedDir() + "/" + rel; }

// A fresh path in the temp folder (nothing there, no leftover .tmp either).
std::string TempGguf(const std::string& name) {
  fs::path p = fs::temp_directory_path() / fmt::format("xinfer-gguf-{}-{}.gguf", name, getpid());
  fs::remove(p);
  fs::remove(p.string() + ".tmp");
  return p.string();
}

// Exports `src` (relative to ../shared) as `type` into a temp file and opens it.
std::unique_ptr<GgufFile> Export(const std::string& src, const std::string& type,
                                 const std::string& path) {
  auto t = ParseGgufExportType(type);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  Status s = ExportGguf(Shared(src), path, {.type = *t});
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

std::unique_ptr<GgufFile> OpenShared(const std::string& rel) {
  auto f = GgufFile::Open(Shared(rel));
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

bool SameValue(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type || a.u64 != b.u64 || a.i64 != b.i64 || a.b != b.b || a.str != b.str)
    return false;
  // Both sides read the same float32 bits, so exact equality is right (NaN never appears here).
  if (a.f64 != b.f64 || a.array_type != b.array_type || a.array.size() != b.array.size())
    return false;
  for (size_t i = 0; i < a.array.size(); ++i)
    if (!SameValue(a.array[i], b.array[i])) return false;
  return true;
}

bool SameBytes(const GgufFile& fa, const GgufTensorInfo& a, const GgufFile& fb,
               const GgufTensorInfo& b) {
  return a.size == b.size && std::memcmp(fa.GetRaw(a).raw(), fb.GetRaw(b).raw(), a.size) == 0;
}

// Test 1: the bf16 export is what convert_hf_to_gguf.py wrote, key by key and tensor by tensor.
TEST(GgufExportTest, Bf16MatchesLlamaCppConverter) {
  XI_REQUIRE_SHARED(kQwen3);
  XI_REQUIRE_SHARED("models/tiny-qwen3-bf16.gguf");
  const std::string path = TempGguf("bf16");
  auto ours = Export(kQwen3, "bf16", path);
  auto ref = OpenShared("models/tiny-qwen3-bf16.gguf");
  ASSERT_TRUE(ours && ref);

  EXPECT_EQ(ours->metadata().size(), ref->metadata().size());
  for (const auto& [key, value] : ref->metadata()) {
    const GgufValue* v = ours->Find(key);
    if (v == nullptr) {
      ADD_FAILURE() << "missing metadata key " << key;
      continue;
    }
    EXPECT_TRUE(SameValue(*v, value))
        << key << ": ours " << v->ToString() << ", llama.cpp " << value.ToString();
  }
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  for (const GgufTensorInfo& r : ref->tensors()) {
    const GgufTensorInfo* o = ours->FindTensor(r.name);
    ASSERT_NE(o, nullptr) << r.name;
    EXPECT_EQ(o->type, r.type) << r.name;
    EXPECT_EQ(o->ne, r.ne) << r.name;
    EXPECT_TRUE(SameBytes(*ours, *o, *ref, r)) << r.name << " data differs";
  }
  fs::remove(path);
}

// Test 2: q8_0 / q4_0 against llama-quantize. The reference quantizers round exactly as
// llama.cpp's quantize_row_q8_0_ref / quantize_row_q4_0_ref, so equal types mean equal bytes.
// The shared q4_0 file is llama-quantize's default mix, not --pure: its token_embd is Q8_0,
// which is compared with our q8_0 export's instead.
TEST(GgufExportTest, QuantizedMatchLlamaQuantize) {
  XI_REQUIRE_SHARED(kQwen3);
  XI_REQUIRE_SHARED("models/tiny-qwen3-q8_0.gguf");
  XI_REQUIRE_SHARED("models/tiny-qwen3-q4_0.gguf");
  const std::string q8_path = TempGguf("q8_0"), q4_path = TempGguf("q4_0");
  auto q8 = Export(kQwen3, "q8_0", q8_path);
  auto q4 = Export(kQwen3, "q4_0", q4_path);
  auto ref_q8 = OpenShared("models/tiny-qwen3-q8_0.gguf");
  auto ref_q4 = OpenShared("models/tiny-qwen3-q4_0.gguf");
  ASSERT_TRUE(q8 && q4 && ref_q8 && ref_q4);

  struct Pair {
    const GgufFile* ours;
    const GgufFile* ref;
    uint32_t type;
  };
  for (const Pair& p :
       {Pair{q8.get(), ref_q8.get(), ggml::kQ8_0}, Pair{q4.get(), ref_q4.get(), ggml::kQ4_0}}) {
    SCOPED_TRACE(GgmlTypeName(p.type));
    EXPECT_EQ(*p.ours->GetInt("general.file_type"), *p.ref->GetInt("general.file_type"));
    ASSERT_EQ(p.ours->tensors().size(), p.ref->tensors().size());
    int identical = 0, other_type = 0;
    for (const GgufTensorInfo& r : p.ref->tensors()) {
      const GgufTensorInfo* o = p.ours->FindTensor(r.name);
      ASSERT_NE(o, nullptr) << r.name;
      EXPECT_EQ(o->ne, r.ne) << r.name;
      // --pure: every matrix in the export is of the requested type, vectors F32.
      EXPECT_EQ(o->type, o->ne.size() == 2 ? p.type : ggml::kF32) << r.name;
      if (o->type != r.type) {
        ++other_type;
        const GgufTensorInfo* same = q8->FindTensor(r.name);
        ASSERT_EQ(r.type, ggml::kQ8_0) << r.name << " has an unexpected type in the reference";
        EXPECT_TRUE(SameBytes(*q8, *same, *p.ref, r)) << r.name << " differs from our q8_0";
        continue;
      }
      EXPECT_TRUE(SameBytes(*p.ours, *o, *p.ref, r)) << r.name << " differs from llama-quantize";
      identical += SameBytes(*p.ours, *o, *p.ref, r);
    }
    std::cout << GgmlTypeName(p.type) << ": " << identical << " tensors byte-identical, "
              << other_type << " of another type in the reference\n";
    EXPECT_LE(other_type, 1);  // token_embd of the q4_0 file
  }

  // Same bytes, same model: our q8_0 export and llama-quantize's give the same logits.
  auto backend = CreateCpuBackend();
  std::vector<std::vector<float>> logits;
  for (const std::string& path : {q8_path, Shared("models/tiny-qwen3-q8_0.gguf"), q4_path}) {
    auto model = LoadCausalLM(path, *backend);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::vector<float> out((*model)->config().vocab_size);
    SingleSequence seq(**model, *backend, 8);
    const std::vector<int32_t> ids = {9707, 1879, 11};
    ASSERT_TRUE(seq.Append(ids, out).ok());
    for (float x : out) ASSERT_TRUE(std::isfinite(x)) << path;
    logits.push_back(std::move(out));
  }
  EXPECT_EQ(logits[0], logits[1]);
  fs::remove(q8_path);
  fs::remove(q4_path);
}

struct RoundTrip {
  std::string model;   // under models/
  std::string golden;  // under golden/logits/
  std::string type;
};
void PrintTo(const RoundTrip& c, std::ostream* os) { *os << c.model << " " << c.type; }

class GgufExportRoundTripTest : public ::testing::TestWithParam<RoundTrip> {};

// Test 3: the export, loaded by xinfer's GGUF loader, gives the golden logits (and the same
// logits as the folder it came from: the llama q/k permutation round-trips exactly), and its
// tokenizer encodes like the folder's tokenizer.json.
TEST_P(GgufExportRoundTripTest, LogitsAndTokenizerMatchTheFolder) {
  const RoundTrip c = GetParam();
  XI_REQUIRE_SHARED("models/" + c.model);
  XI_REQUIRE_SHARED("golden/logits/" + c.golden + "/golden.json");
  const std::string path = TempGguf(c.model + "-" + c.type);
  ASSERT_TRUE(Export("models/" + c.model, c.type, path));

  auto backend = CreateCpuBackend();
  auto gguf = LoadCausalLM(path, *backend);
  auto folder = LoadCausalLM(Shared("models/" + c.model), *backend);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const int vocab = (*gguf)->config().vocab_size;
  ASSERT_EQ(vocab, (*folder)->config().vocab_size);
  EXPECT_EQ((*gguf)->config().tie_word_embeddings, (*folder)->config().tie_word_embeddings);

  auto gguf_tok = LoadGgufTokenizer(path);
  auto folder_tok = Tokenizer::FromDir(Shared("models/" + c.model));
  ASSERT_TRUE(gguf_tok.ok()) << gguf_tok.status().ToString();
  ASSERT_TRUE(folder_tok.ok()) << folder_tok.status().ToString();
  EXPECT_EQ((*gguf_tok)->chat_template(), (*folder_tok)->chat_template());
  // (Not bos_id: like llama.cpp's converter, the export takes Qwen's BOS from config.json where
  // tokenizer_config.json has none; with add_bos_token false it never reaches a prompt.)
  EXPECT_EQ((*gguf_tok)->eos_id(), (*folder_tok)->eos_id());

  std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily. She loved to play outside!",
      "  two  spaces, a tab\tand\nnew lines\n\n", "numbers 12345 and 3.14, symbols #@!?",
      "Zürich naïve café 東京 🚀"};
  for (const testing::GoldenPrompt& prompt :
       testing::ReadLogitsGolden(Shared("golden/logits/" + c.golden))) {
    SCOPED_TRACE(prompt.name);
    const std::vector<int32_t>& ids = prompt.ids;
    std::vector<float> a(vocab), b(vocab);
    SingleSequence sa(**gguf, *backend, static_cast<int64_t>(ids.size()));
    SingleSequence sb(**folder, *backend, static_cast<int64_t>(ids.size()));
    ASSERT_TRUE(sa.Append(ids, a).ok());
    ASSERT_TRUE(sb.Append(ids, b).ok());
    EXPECT_LT(testing::MaxAbsDiff(a, prompt.logits), testing::kGoldenLogitTolerance);
    // Same weights in the same dtype: only the loader differs, and it must not change a thing.
    EXPECT_LT(testing::MaxAbsDiff(a, b), 1e-5);
    if (prompt.text) texts.push_back(*prompt.text);
  }
  for (const std::string& text : texts) {
    auto x = (*gguf_tok)->Encode(text), y = (*folder_tok)->Encode(text);
    ASSERT_TRUE(x.ok() && y.ok()) << text;
    EXPECT_EQ(*x, *y) << "'" << text << "'";
    EXPECT_EQ((*gguf_tok)->Decode(*x), (*folder_tok)->Decode(*y)) << "'" << text << "'";
  }
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, GgufExportRoundTripTest,
    ::testing::Values(RoundTrip{"tiny-qwen3", "tiny-qwen3", "bf16"},
                      RoundTrip{"tiny-qwen2", "tiny-qwen2", "bf16"},
                      RoundTrip{"tinystories-656k", "tinystories-656k", "f32"},
                      RoundTrip{"tinystories-656k-qwen2", "tinystories-656k", "f32"}),
    [](const auto& info) { return testing::ParamName(info.param.model + "_" + info.param.type); });

// Qwen3-MoE as llama.cpp's qwen3moe: each layer's experts stacked into one tensor per projection,
// ne = {cols, rows, n_experts} with expert e's bytes after expert e - 1's (checked against the
// folder's own tensors, so that a layout both our writer and our reader got wrong cannot pass),
// the router F32, the expert keys; the file loads back with the folder's logits, which are the
// dense float64 reference's (moe_model_util.h). A Q8_0 export of identical experts quantizes each
// expert's rows as the dense export does its MLP's, so the two give the same logits: the
// quantized experts are cut at the right bytes.
TEST(GgufExportTest, MoeExpertsStackAsLlamaCppsQwen3Moe) {
  XI_REQUIRE_SHARED(kQwen3);
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen3/golden.json");
  const fs::path dir = testing::WriteMoeModel(testing::MoeExperts::kIdentical, 2,
                                              /*random_router=*/true, "gguf");
  const std::string bf16_path = TempGguf("moe-bf16");
  Status s = ExportGguf(dir.string(), bf16_path, {.type = GgufExportType::kBF16});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto file = GgufFile::Open(bf16_path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(*(*file)->GetString("general.architecture"), "qwen3moe");
  EXPECT_EQ(*(*file)->GetInt("qwen3moe.expert_count"), testing::kMoeExperts);
  EXPECT_EQ(*(*file)->GetInt("qwen3moe.expert_used_count"), 2);
  EXPECT_EQ(*(*file)->GetInt("qwen3moe.expert_feed_forward_length"), 192);
  auto folder_store = WeightStore::OpenDir(dir.string());
  ASSERT_TRUE(folder_store.ok());
  for (int l = 0; l < 2; ++l) {
    const GgufTensorInfo* router =
        (*file)->FindTensor(fmt::format("blk.{}.ffn_gate_inp.weight", l));
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->type, ggml::kF32);
    EXPECT_EQ(router->ne, (std::vector<int64_t>{64, testing::kMoeExperts}));
    EXPECT_EQ((*file)->FindTensor(fmt::format("blk.{}.ffn_gate.weight", l)), nullptr);
    for (const auto& [proj, gguf, rows, cols] : {std::tuple{"gate_proj", "ffn_gate_exps", 192, 64},
                                                 {"up_proj", "ffn_up_exps", 192, 64},
                                                 {"down_proj", "ffn_down_exps", 64, 192}}) {
      const GgufTensorInfo* info = (*file)->FindTensor(fmt::format("blk.{}.{}.weight", l, gguf));
      ASSERT_NE(info, nullptr) << gguf;
      EXPECT_EQ(info->type, ggml::kBF16);
      ASSERT_EQ(info->ne, (std::vector<int64_t>{cols, rows, testing::kMoeExperts})) << gguf;
      const auto* bytes = static_cast<const uint8_t*>((*file)->GetRaw(*info).raw());
      for (int e = 0; e < testing::kMoeExperts; ++e) {
        Tensor t = (*folder_store)
                       ->Get(fmt::format("model.layers.{}.mlp.experts.{}.{}.weight", l, e, proj))
                       .value();
        ASSERT_EQ(t.size_bytes(), static_cast<size_t>(rows * cols * 2));
        EXPECT_EQ(std::memcmp(bytes + e * t.size_bytes(), t.raw(), t.size_bytes()), 0)
            << gguf << " expert " << e;
      }
    }
  }

  auto backend = CreateCpuBackend();
  auto gguf = LoadCausalLM(bf16_path, *backend);
  auto folder = LoadCausalLM(dir.string(), *backend);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  EXPECT_EQ((*gguf)->config().architecture, "Qwen3MoeForCausalLM");
  EXPECT_TRUE((*gguf)->config().norm_topk_prob);
  // The same bytes but the routers': F32 (2 layers x 4 experts x 64) against the folder's BF16.
  EXPECT_EQ((*gguf)->weight_bytes(), (*folder)->weight_bytes() + 2 * 4 * 64 * 2);
  testing::ExpectMatchesGolden(**gguf, *backend, Shared("golden/logits/tiny-qwen3"));
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 3555, 374, 279, 6722};
  EXPECT_LT(testing::MaxAbsDiff(testing::LastLogits(**gguf, *backend, ids),
                                testing::LastLogits(**folder, *backend, ids)),
            1e-5);

  const std::string moe_q8 = TempGguf("moe-q8_0"), dense_q8 = TempGguf("dense-q8_0");
  ASSERT_TRUE(ExportGguf(dir.string(), moe_q8, {.type = GgufExportType::kQ8_0}).ok());
  ASSERT_TRUE(ExportGguf(Shared(kQwen3), dense_q8, {.type = GgufExportType::kQ8_0}).ok());
  auto moe = LoadCausalLM(moe_q8, *backend);
  auto dense = LoadCausalLM(dense_q8, *backend);
  ASSERT_TRUE(moe.ok()) << moe.status().ToString();
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  const auto want = testing::LastLogits(**dense, *backend, ids);
  const auto got = testing::LastLogits(**moe, *backend, ids);
  EXPECT_LT(testing::MaxAbsDiff(got, want), 1e-4);
  // Not just close to the BF16 model: the experts are quantized (Q8_0 moves logits ~1e-2).
  EXPECT_GT(testing::MaxAbsDiff(got, testing::LastLogits(**gguf, *backend, ids)), 1e-4);
  for (const std::string& p : {bf16_path, moe_q8, dense_q8}) fs::remove(p);
  fs::remove_all(dir);
}

// Qwen2-MoE as llama.cpp's qwen2moe: the routed experts stacked as qwen3moe's, and each layer's
// shared expert as ffn_{gate,up,down}_shexp with its gate's one row as the F32 vector
// ffn_gate_inp_shexp, expert_shared_feed_forward_length, the weights not renormalized. Two
// checkpoints whose MLP is carried by one path while the other adds 0 (moe_model_util.h) load
// back with the float64 reference's logits: the shared expert alone (doubled down under a zero
// gate) and the routed slices alone (unnormalized routing at 1/4 each). Q8_0: the shared expert
// quantizes as the dense MLP does (doubling is exact in its scales), so the file gives the dense
// Q8_0 export's logits — its quantized bytes are read where they were written.
TEST(GgufExportTest, Qwen2MoeSharedExpertAsLlamaCppsQwen2Moe) {
  XI_REQUIRE_SHARED("models/tiny-qwen2");
  XI_REQUIRE_SHARED("golden/logits/tiny-qwen2/golden.json");
  auto backend = CreateCpuBackend();
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 3555, 374, 279, 6722};
  for (const auto& [kind, shared, top_k] :
       {std::tuple{testing::MoeExperts::kZeroOutput, testing::SharedExpert::kDoubledMlp, 2},
        std::tuple{testing::MoeExperts::kSlices, testing::SharedExpert::kZeroOutput,
                   testing::kMoeExperts}}) {
    SCOPED_TRACE(kind == testing::MoeExperts::kSlices ? "routed slices" : "shared expert");
    const fs::path dir = testing::WriteQwen2MoeModel(kind, shared, top_k, "gguf-qwen2moe");
    const std::string path = TempGguf("qwen2moe-bf16");
    Status s = ExportGguf(dir.string(), path, {.type = GgufExportType::kBF16});
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    EXPECT_EQ(*(*file)->GetString("general.architecture"), "qwen2moe");
    EXPECT_EQ(*(*file)->GetInt("qwen2moe.expert_shared_feed_forward_length"), 160);
    auto folder_store = WeightStore::OpenDir(dir.string());
    ASSERT_TRUE(folder_store.ok());
    for (int l = 0; l < 2; ++l) {
      const GgufTensorInfo* gate =
          (*file)->FindTensor(fmt::format("blk.{}.ffn_gate_inp_shexp.weight", l));
      ASSERT_NE(gate, nullptr);
      EXPECT_EQ(gate->type, ggml::kF32);
      EXPECT_EQ(gate->ne, (std::vector<int64_t>{64}));
      for (const auto& [proj, gguf, rows, cols] :
           {std::tuple{"gate_proj", "ffn_gate_shexp", 160, 64},
            {"up_proj", "ffn_up_shexp", 160, 64},
            {"down_proj", "ffn_down_shexp", 64, 160}}) {
        const GgufTensorInfo* info = (*file)->FindTensor(fmt::format("blk.{}.{}.weight", l, gguf));
        ASSERT_NE(info, nullptr) << gguf;
        EXPECT_EQ(info->type, ggml::kBF16);
        ASSERT_EQ(info->ne, (std::vector<int64_t>{cols, rows})) << gguf;
        Tensor t = (*folder_store)
                       ->Get(fmt::format("model.layers.{}.mlp.shared_expert.{}.weight", l, proj))
                       .value();
        EXPECT_EQ(std::memcmp((*file)->GetRaw(*info).raw(), t.raw(), t.size_bytes()), 0) << gguf;
      }
    }
    auto gguf = LoadCausalLM(path, *backend);
    auto folder = LoadCausalLM(dir.string(), *backend);
    ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
    ASSERT_TRUE(folder.ok()) << folder.status().ToString();
    EXPECT_EQ((*gguf)->config().architecture, "Qwen2MoeForCausalLM");
    EXPECT_FALSE((*gguf)->config().norm_topk_prob);
    EXPECT_EQ((*gguf)->config().shared_expert_intermediate_size, 160);
    testing::ExpectMatchesGolden(**gguf, *backend, Shared("golden/logits/tiny-qwen2"));
    EXPECT_LT(testing::MaxAbsDiff(testing::LastLogits(**gguf, *backend, ids),
                                  testing::LastLogits(**folder, *backend, ids)),
              1e-5);
    fs::remove(path);
    fs::remove_all(dir);
  }

  const fs::path dir = testing::WriteQwen2MoeModel(
      testing::MoeExperts::kZeroOutput, testing::SharedExpert::kDoubledMlp, 2, "gguf-qwen2moe-q8");
  const std::string moe_q8 = TempGguf("qwen2moe-q8_0"), dense_q8 = TempGguf("qwen2-q8_0");
  ASSERT_TRUE(ExportGguf(dir.string(), moe_q8, {.type = GgufExportType::kQ8_0}).ok());
  ASSERT_TRUE(
      ExportGguf(Shared("models/tiny-qwen2"), dense_q8, {.type = GgufExportType::kQ8_0}).ok());
  auto moe = LoadCausalLM(moe_q8, *backend);
  auto dense = LoadCausalLM(dense_q8, *backend);
  auto folder = LoadCausalLM(dir.string(), *backend);
  ASSERT_TRUE(moe.ok()) << moe.status().ToString();
  ASSERT_TRUE(dense.ok() && folder.ok());
  const auto got = testing::LastLogits(**moe, *backend, ids);
  EXPECT_LT(testing::MaxAbsDiff(got, testing::LastLogits(**dense, *backend, ids)), 1e-4);
  EXPECT_GT(testing::MaxAbsDiff(got, testing::LastLogits(**folder, *backend, ids)), 1e-4);
  fs::remove(moe_q8);
  fs::remove(dense_q8);

  // Tied embeddings: llama.cpp's qwen2moe loader requires output.weight, so the file carries the
  // embedding's copy (and gives the tied folder's logits).
  {
    json config = json::parse(std::ifstream(dir / "config.json"));
    config["tie_word_embeddings"] = true;
    std::ofstream(dir / "config.json") << config.dump();
  }
  const std::string tied = TempGguf("qwen2moe-tied");
  ASSERT_TRUE(ExportGguf(dir.string(), tied, {.type = GgufExportType::kBF16}).ok());
  auto tied_file = GgufFile::Open(tied);
  ASSERT_TRUE(tied_file.ok());
  const GgufTensorInfo* output = (*tied_file)->FindTensor("output.weight");
  const GgufTensorInfo* embd = (*tied_file)->FindTensor("token_embd.weight");
  ASSERT_NE(output, nullptr);
  ASSERT_NE(embd, nullptr);
  ASSERT_EQ(output->size, embd->size);
  EXPECT_EQ(std::memcmp((*tied_file)->GetRaw(*output).raw(), (*tied_file)->GetRaw(*embd).raw(),
                        embd->size),
            0);
  auto tied_gguf = LoadCausalLM(tied, *backend);
  auto tied_folder = LoadCausalLM(dir.string(), *backend);
  ASSERT_TRUE(tied_gguf.ok() && tied_folder.ok());
  EXPECT_LT(testing::MaxAbsDiff(testing::LastLogits(**tied_gguf, *backend, ids),
                                testing::LastLogits(**tied_folder, *backend, ids)),
            1e-5);
  fs::remove(tied);

  // What llama.cpp's qwen2moe graph cannot express is refused: renormalized weights, no shared
  // expert.
  {
    json config = json::parse(std::ifstream(dir / "config.json"));
    config["norm_topk_prob"] = true;
    std::ofstream(dir / "config.json") << config.dump();
  }
  const std::string refused = TempGguf("qwen2moe-refused");
  Status s = ExportGguf(dir.string(), refused, {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("norm_topk_prob true"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(refused));
  fs::remove_all(dir);
  const fs::path unshared = testing::WriteQwen2MoeModel(
      testing::MoeExperts::kZeroOutput, testing::SharedExpert::kNone, 2, "gguf-qwen2moe-none");
  s = ExportGguf(unshared.string(), refused, {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("shared expert"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(refused));
  fs::remove_all(unshared);
}

// A stacked expert tensor whose dimensions are not {cols, rows, n_experts} (here gate's rows and
// columns swapped: the same bytes, so the file itself is well-formed) is a load error naming it.
TEST(GgufExportTest, MoeExpertTensorOfTheWrongShapeIsALoadError) {
  XI_REQUIRE_SHARED(kQwen3);
  const fs::path dir = testing::WriteMoeModel(testing::MoeExperts::kIdentical, 2,
                                              /*random_router=*/true, "gguf-bad");
  const std::string path = TempGguf("moe-bad");
  ASSERT_TRUE(ExportGguf(dir.string(), path, {.type = GgufExportType::kF32}).ok());
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::string name = "blk.1.ffn_gate_exps.weight";
    const size_t at = bytes.find(name);
    ASSERT_NE(at, std::string::npos);
    // name, u32 n_dims, u64 ne[0], u64 ne[1]: swap ne[0] (64) and ne[1] (192).
    const size_t ne0 = at + name.size() + 4;
    uint64_t a, b;
    std::memcpy(&a, bytes.data() + ne0, 8);
    std::memcpy(&b, bytes.data() + ne0 + 8, 8);
    ASSERT_EQ(a, 64u);
    ASSERT_EQ(b, 192u);
    f.seekp(static_cast<std::streamoff>(ne0));
    f.write(reinterpret_cast<const char*>(&b), 8);
    f.write(reinterpret_cast<const char*>(&a), 8);
  }
  auto backend = CreateCpuBackend();
  auto model = LoadCausalLM(path, *backend);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("blk.1.ffn_gate_exps.weight"), std::string::npos)
      << model.status().ToString();
  EXPECT_NE(model.status().message().find("expected [64, 192, 4]"), std::string::npos)
      << model.status().ToString();
  fs::remove(path);
  fs::remove_all(dir);
}

// What llama.cpp's qwen3moe graph cannot express is refused, naming it, and nothing is written.
TEST(GgufExportTest, MoeWithoutRenormalizationOrWithDenseLayersIsRefused) {
  XI_REQUIRE_SHARED(kQwen3);
  const fs::path dir = testing::WriteMoeModel(testing::MoeExperts::kIdentical, 2,
                                              /*random_router=*/true, "gguf-refused");
  const json original = json::parse(std::ifstream(dir / "config.json"));
  for (const auto& [key, value, want] : std::vector<std::tuple<std::string, json, std::string>>{
           {"norm_topk_prob", false, "norm_topk_prob false"},
           {"mlp_only_layers", json::array({1}), "layer 1 is dense"},
           {"decoder_sparse_step", 2, "layer 0 is dense"}}) {
    json config = original;
    config[key] = value;
    std::ofstream(dir / "config.json") << config.dump();
    const std::string path = TempGguf("moe-refused");
    Status s = ExportGguf(dir.string(), path, {});
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << key << ": " << s.ToString();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.ToString();
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".tmp"));
  }
  fs::remove_all(dir);
}

// `--dtype bfloat16` on GGUF files (ModelLoadOptions::bf16_weights): an F32 export of the BF16
// folder is held as BF16 again and gives the folder's BF16 logits bit for bit in half the F32
// bytes; a Q8_0 export keeps its codes (the same bytes held).
TEST(GgufExportTest, Bf16WeightsConvertF32FilesAndKeepQuantizedOnes) {
  XI_REQUIRE_SHARED(kQwen3);
  const std::string f32_path = TempGguf("bf16-weights-f32"), q8_path = TempGguf("bf16-weights-q8");
  ASSERT_TRUE(Export(kQwen3, "f32", f32_path));
  ASSERT_TRUE(Export(kQwen3, "q8_0", q8_path));
  auto backend = CreateCpuBackend({.bf16_activations = true});
  auto folder = LoadCausalLM(Shared(kQwen3), *backend, {.bf16_weights = true});
  auto converted = LoadCausalLM(f32_path, *backend, {.bf16_weights = true});
  auto f32 = LoadCausalLM(f32_path, *backend);
  auto q8 = LoadCausalLM(q8_path, *backend),
       q8_bf16 = LoadCausalLM(q8_path, *backend, {.bf16_weights = true});
  ASSERT_TRUE(folder.ok() && converted.ok() && f32.ok() && q8.ok() && q8_bf16.ok());
  const std::vector<int32_t> ids = {9707, 11, 1879, 0, 3555, 374, 279, 6722};
  const auto want = testing::LastLogits(**folder, *backend, ids);
  const auto got = testing::LastLogits(**converted, *backend, ids);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
      << "max |diff| " << testing::MaxAbsDiff(got, want);
  EXPECT_LT((*converted)->weight_bytes(), (*f32)->weight_bytes() * 51 / 100);
  EXPECT_EQ((*q8_bf16)->weight_bytes(), (*q8)->weight_bytes());
  fs::remove(f32_path);
  fs::remove(q8_path);
}

// Test 4: bad input is a Status naming the problem, and no file (nor .tmp) is left behind.
TEST(GgufExportTest, BadInputFailsCleanly) {
  const std::string dst = TempGguf("bad");
  Status s = ExportGguf("/nonexistent/model", dst, {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/model"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(dst));

  auto bad_type = ParseGgufExportType("q4_k");
  EXPECT_EQ(bad_type.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_type.status().message().find("supported: f32, f16, bf16, q8_0, q4_0"),
            std::string::npos)
      << bad_type.status().ToString();
  EXPECT_EQ(*ParseGgufExportType("Q8_0"), GgufExportType::kQ8_0);

  if (!testing::HaveShared(kQwen3)) GTEST_SKIP() << "../shared/" << kQwen3 << " not found";
  // An existing destination is refused and left untouched.
  std::ofstream(dst) << "keep";
  s = ExportGguf(Shared(kQwen3), dst, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("refusing to overwrite"), std::string::npos) << s.ToString();
  EXPECT_EQ(fs::file_size(dst), 4u);
  fs::remove(dst);

  s = ExportGguf(Shared(kQwen3), dst + ".bin", {});
  EXPECT_NE(s.message().find("must end in .gguf"), std::string::npos) << s.ToString();
  s = ExportGguf(Shared(kQwen3), "/nonexistent/dir/x.gguf", {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();

  // A folder of an architecture llama.cpp's layout here does not cover, and one whose tokenizer
  // is broken: both fail after the checks above, and still leave nothing.
  const fs::path dir = fs::temp_directory_path() / fmt::format("xinfer-gguf-src-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"model.safetensors", "tokenizer_config.json"})
    fs::create_symlink(Shared(kQwen3) + "/" + f, dir / f);
  std::ifstream in(Shared(kQwen3) + "/config.json");
  json config = json::parse(in);
  config["architectures"] = {"MistralForCausalLM"};
  std::ofstream(dir / "config.json") << config.dump();
  std::ofstream(dir / "tokenizer.json") << "{}";
  s = ExportGguf(dir.string(), dst, {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("MistralForCausalLM"), std::string::npos) << s.ToString();
  config["architectures"] = {"Qwen3ForCausalLM"};
  std::ofstream(dir / "config.json") << config.dump();
  s = ExportGguf(dir.string(), dst, {});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenizer.json"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(dst));
  EXPECT_FALSE(fs::exists(dst + ".tmp"));
  fs::remove_all(dir);

  // An already-quantized (AWQ) source.
  if (testing::HaveShared("models/tinystories-656k-awq")) {
    s = ExportGguf(Shared("models/tinystories-656k-awq"), dst, {});
    EXPECT_NE(s.message().find("already quantized"), std::string::npos) << s.ToString();
    EXPECT_FALSE(fs::exists(dst));
  }
}

// A folder whose config.json stretches RoPE with YaRN (Qwen's long-context recipe) exports the
// scaling as llama.cpp's converter does (rope.scaling.type / factor / original_context_length),
// and the file computes as the folder; Llama 3's scaling, which GGUF keeps as a rope_freqs
// tensor, is refused rather than dropped.
TEST(GgufExportTest, YarnRopeScalingTravels) {
  XI_REQUIRE_SHARED(kQwen3);
  const fs::path dir = fs::temp_directory_path() / fmt::format("xinfer-gguf-yarn-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"model.safetensors", "tokenizer_config.json", "tokenizer.json"})
    fs::create_symlink(Shared(kQwen3) + "/" + f, dir / f);
  std::ifstream in(Shared(kQwen3) + "/config.json");
  json config = json::parse(in);
  config["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 1024}};
  std::ofstream(dir / "config.json") << config.dump();
  const std::string path = TempGguf("tiny-qwen3-yarn");
  Status s = ExportGguf(dir.string(), path, {.type = GgufExportType::kBF16});
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->GetString("qwen3.rope.scaling.type").value(), "yarn");
  EXPECT_EQ((*file)->GetDouble("qwen3.rope.scaling.factor").value(), 4.0);
  EXPECT_EQ((*file)->GetInt("qwen3.rope.scaling.original_context_length").value(), 1024);

  auto backend = CreateCpuBackend();
  auto gguf = LoadCausalLM(path, *backend);
  auto folder = LoadCausalLM(dir.string(), *backend);
  auto unscaled = LoadCausalLM(Shared(kQwen3), *backend);
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  ASSERT_TRUE(folder.ok() && unscaled.ok());
  const RopeScaling& r = (*gguf)->config().rope_scaling;
  EXPECT_EQ(r.type, "yarn");
  EXPECT_EQ(r.original_max_position_embeddings, 1024);
  EXPECT_EQ(DerivedMaxModelLen((*gguf)->config()), 4096);
  std::vector<int32_t> ids;
  for (int i = 0; i < 1500; ++i) ids.push_back(100 + (i * 7919) % 5000);
  const std::vector<float> a = testing::LastLogits(**gguf, *backend, ids);
  EXPECT_LT(testing::MaxAbsDiff(a, testing::LastLogits(**folder, *backend, ids)), 1e-5);
  EXPECT_GT(testing::MaxAbsDiff(a, testing::LastLogits(**unscaled, *backend, ids)), 1e-3);

  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 1024}};
  std::ofstream(dir / "config.json") << config.dump();
  fs::remove(path);
  s = ExportGguf(dir.string(), path, {});
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("rope_scaling 'llama3'"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xinfer
