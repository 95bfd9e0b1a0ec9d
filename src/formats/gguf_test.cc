// GGUF reader: well-formed files (metadata of every type, tensors, alignment) and broken ones
// (truncated, unknown types, misaligned or lying offsets), which must give a clear Status.
#include "formats/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "formats/gguf_writer.h"
#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

namespace xinfer {
namespace {

using ::testing::HasSubstr;

template <typename T>
void Put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}
void PutStr(std::string& s, const std::string& v) {
  Put<uint64_t>(s, v.size());
  s += v;
}

// Hand-assembled GGUF with full control over every field, for the broken-file tests.
struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type;
  uint64_t offset;
};
std::string RawGguf(uint32_t version, const std::string& kvs, uint64_t n_kv,
                    const std::vector<RawTensor>& tensors, const std::string& data,
                    size_t alignment = 32) {
  std::string s = "GGUF";
  Put<uint32_t>(s, version);
  Put<uint64_t>(s, tensors.size());
  Put<uint64_t>(s, n_kv);
  s += kvs;
  for (const auto& t : tensors) {
    PutStr(s, t.name);
    Put<uint32_t>(s, static_cast<uint32_t>(t.ne.size()));
    for (auto d : t.ne) Put<uint64_t>(s, d);
    Put<uint32_t>(s, t.type);
    Put<uint64_t>(s, t.offset);
  }
  s.resize((s.size() + alignment - 1) / alignment * alignment, '\0');
  return s + data;
}

class GgufTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& bytes) {
    const std::string path = ::testing::TempDir() + "/gguf_test_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             std::to_string(counter_++) + ".gguf";
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
    paths_.push_back(path);
    return path;
  }
  StatusOr<std::unique_ptr<GgufFile>> OpenBytes(const std::string& bytes) {
    return GgufFile::Open(Write(bytes));
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::string> paths_;
  int counter_ = 0;
};

std::string F32Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TEST_F(GgufTest, ReadsMetadataOfEveryType) {
  std::string kv;
  auto key = [&](const std::string& k, GgufType t) {
    PutStr(kv, k);
    Put<uint32_t>(kv, static_cast<uint32_t>(t));
  };
  key("u8", GgufType::kUint8), Put<uint8_t>(kv, 200);
  key("i8", GgufType::kInt8), Put<int8_t>(kv, -100);
  key("u16", GgufType::kUint16), Put<uint16_t>(kv, 60000);
  key("i16", GgufType::kInt16), Put<int16_t>(kv, -30000);
  key("u32", GgufType::kUint32), Put<uint32_t>(kv, 4000000000u);
  key("i32", GgufType::kInt32), Put<int32_t>(kv, -2000000000);
  key("u64", GgufType::kUint64), Put<uint64_t>(kv, 1ull << 40);
  key("i64", GgufType::kInt64), Put<int64_t>(kv, -(1ll << 40));
  key("f32", GgufType::kFloat32), Put<float>(kv, 1.5f);
  key("f64", GgufType::kFloat64), Put<double>(kv, -2.25);
  key("bool", GgufType::kBool), Put<uint8_t>(kv, 1);
  key("str", GgufType::kString), PutStr(kv, "héllo");
  key("arr", GgufType::kArray), Put<uint32_t>(kv, 8), Put<uint64_t>(kv, 2), PutStr(kv, "a"),
      PutStr(kv, "b c");
  key("nested", GgufType::kArray), Put<uint32_t>(kv, 9), Put<uint64_t>(kv, 1), Put<uint32_t>(kv, 5),
      Put<uint64_t>(kv, 2), Put<int32_t>(kv, 7), Put<int32_t>(kv, -7);
  for (uint32_t version : {2u, 3u}) {
    auto f = OpenBytes(RawGguf(version, kv, 14, {}, ""));
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    const GgufFile& g = **f;
    EXPECT_EQ(g.version(), version);
    EXPECT_EQ(*g.GetInt("u8"), 200);
    EXPECT_EQ(*g.GetInt("i8"), -100);
    EXPECT_EQ(*g.GetInt("u16"), 60000);
    EXPECT_EQ(*g.GetInt("i16"), -30000);
    EXPECT_EQ(*g.GetInt("u32"), 4000000000ll);
    EXPECT_EQ(*g.GetInt("i32"), -2000000000);
    EXPECT_EQ(*g.GetInt("u64"), 1ll << 40);
    EXPECT_EQ(*g.GetInt("i64"), -(1ll << 40));
    EXPECT_EQ(*g.GetDouble("f32"), 1.5);
    EXPECT_EQ(*g.GetDouble("f64"), -2.25);
    EXPECT_EQ(*g.GetDouble("u8"), 200.0);
    EXPECT_TRUE(*g.GetBool("bool"));
    EXPECT_EQ(*g.GetString("str"), "héllo");
    EXPECT_EQ(*g.GetStringArray("arr"), (std::vector<std::string>{"a", "b c"}));
    const GgufValue* nested = g.Find("nested");
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->array.size(), 1u);
    EXPECT_EQ(nested->array[0].array[1].i64, -7);
    EXPECT_EQ(g.metadata()[0].first, "u8");  // file order kept
    auto missing = g.GetInt("nope");
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    auto wrong = g.GetString("u8");
    EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(wrong.status().message(), HasSubstr("'u8'"));
  }
}

TEST_F(GgufTest, WriterRoundTripsTensorsWithAlignment) {
  GgufWriter w;
  w.set_alignment(64);
  w.SetU32("general.alignment", 64);
  w.SetString("general.architecture", "qwen3");
  w.SetF32Array("scores", {0.5f, -1.f});
  w.SetI32Array("types", {1, 3});
  w.AddTensor("norm", ggml::kF32, {3}, F32Bytes({1.f, 2.f, 3.f}));
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>(i % 7) - 3.f;
  std::string q8(2 * 34, '\0');
  QuantizeBlocksRef(QuantType::kQ8_0, x.data(), 64, reinterpret_cast<uint8_t*>(q8.data()));
  w.AddTensor("proj", ggml::kQ8_0, {32, 2}, q8);
  std::vector<uint16_t> bf = {F32ToBf16(1.f), F32ToBf16(-2.f)};
  w.AddTensor("bf", ggml::kBF16, {2, 1}, std::string(reinterpret_cast<char*>(bf.data()), 4));
  auto f = GgufFile::Open(Write(w.Serialize()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(*g.GetFloatArray("scores"), (std::vector<float>{0.5f, -1.f}));
  EXPECT_EQ(*g.GetIntArray("types"), (std::vector<int32_t>{1, 3}));
  ASSERT_EQ(g.tensors().size(), 3u);
  for (const auto& t : g.tensors()) EXPECT_EQ((t.offset - g.data_offset()) % 64, 0u) << t.name;

  auto norm = g.GetDense("norm");
  ASSERT_TRUE(norm.ok());
  EXPECT_EQ(norm->shape(), (Shape{3}));
  EXPECT_EQ(norm->data<float>()[2], 3.f);
  auto bfw = g.GetWeight("bf");
  ASSERT_TRUE(bfw.ok());
  EXPECT_EQ(bfw->dense().shape(), (Shape{1, 2}));
  EXPECT_EQ(Bf16ToF32(bfw->dense().data<uint16_t>()[1]), -2.f);

  auto proj = g.GetWeight("proj");
  ASSERT_TRUE(proj.ok()) << proj.status().ToString();
  ASSERT_TRUE(proj->quantized());
  EXPECT_EQ(proj->rows(), 2);
  EXPECT_EQ(proj->cols(), 32);
  EXPECT_EQ(proj->TypeName(), "Q8_0");
  std::vector<float> row(32);
  DequantizeRow(proj->quant(), 1, row.data());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(row[i], x[32 + i], 0.02f);
  EXPECT_EQ(g.GetDense("proj").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetWeight("absent").status().code(), StatusCode::kNotFound);
}

// Q4_1 and Q5_K tensors (llama.cpp's Q4_1 and Q5_K_M files) load through GetWeight by their ggml
// type ids, as [rows, ne0], and dequantize to what the format describes: the Q4_1 rows are built
// by hand (block b of row r: d = (r + 1) / 4, m = -(b + 1), element i < 16 code i, 16 + i code
// 15 - i), the Q5_K rows come from the reference quantizer and must stay near their source.
// general.alignment may be 1: tensors then lie wherever the previous one ended, and one starting
// off its element size's alignment comes back as an aligned copy (a view would make every typed
// read of it misaligned).
TEST_F(GgufTest, TensorsOffTheirAlignmentComeBackAsAlignedCopies) {
  GgufWriter w;
  w.set_alignment(1);
  w.SetU32("general.alignment", 1);
  std::vector<uint16_t> bf = {F32ToBf16(1.5f)};
  const std::string bf_bytes(reinterpret_cast<char*>(bf.data()), 2);
  // Relative offsets 0, 2, 6, 8 and 12: whatever the data section's start, some F32 tensor and
  // (at an odd start) every BF16 one lies off its alignment.
  w.AddTensor("b1", ggml::kBF16, {1}, bf_bytes);
  w.AddTensor("f1", ggml::kF32, {1}, F32Bytes({2.f}));
  w.AddTensor("b2", ggml::kBF16, {1}, bf_bytes);
  w.AddTensor("f2", ggml::kF32, {1}, F32Bytes({3.f}));
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 5) - 2.f;
  std::string q8(34, '\0');
  QuantizeBlocksRef(QuantType::kQ8_0, x.data(), 32, reinterpret_cast<uint8_t*>(q8.data()));
  w.AddTensor("q", ggml::kQ8_0, {32}, q8);
  auto f = GgufFile::Open(Write(w.Serialize()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  int misaligned = 0;
  for (const char* name : {"b1", "f1", "b2", "f2"}) {
    const GgufTensorInfo* info = g.FindTensor(name);
    ASSERT_NE(info, nullptr);
    auto t = g.GetDense(name);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const size_t size = DTypeSize(t->dtype());
    misaligned += info->offset % size != 0;  // the mapping starts on a page
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % size, 0u) << name;
    const float expected = name[0] == 'b' ? 1.5f : name[1] == '1' ? 2.f : 3.f;
    EXPECT_EQ(name[0] == 'b' ? Bf16ToF32(t->data<uint16_t>()[0]) : t->data<float>()[0], expected)
        << name;
  }
  EXPECT_GE(misaligned, 1);
  auto q = g.GetWeight("q");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q->quant().data.raw()) % 4, 0u);
  EXPECT_EQ(std::memcmp(q->quant().data.raw(), q8.data(), q8.size()), 0);
}

TEST_F(GgufTest, Q4_1AndQ5_KTensorsLoadAndDequantize) {
  GgufWriter w;
  w.SetString("general.architecture", "qwen3");
  std::string q41;
  for (int r = 0; r < 2; ++r)
    for (int b = 0; b < 2; ++b) {
      uint8_t blk[20];
      const uint16_t d = F32ToF16(0.25f * (r + 1)), m = F32ToF16(-1.f - b);
      std::memcpy(blk, &d, 2);
      std::memcpy(blk + 2, &m, 2);
      for (int i = 0; i < 16; ++i) blk[4 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
      q41.append(reinterpret_cast<const char*>(blk), sizeof(blk));
    }
  w.AddTensor("q41", ggml::kQ4_1, {64, 2}, q41);
  std::vector<float> x(3 * 512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.05f * static_cast<float>(i));
  std::string q5k(3 * 2 * 176, '\0');
  QuantizeBlocksRef(QuantType::kQ5_K, x.data(), 3 * 512, reinterpret_cast<uint8_t*>(q5k.data()));
  w.AddTensor("q5k", ggml::kQ5_K, {512, 3}, q5k);
  auto f = GgufFile::Open(Write(w.Serialize()));
  ASSERT_TRUE(f.ok()) << f.status().ToString();

  auto q4 = (*f)->GetWeight("q41");
  ASSERT_TRUE(q4.ok()) << q4.status().ToString();
  ASSERT_TRUE(q4->quantized());
  EXPECT_EQ(q4->TypeName(), "Q4_1");
  EXPECT_EQ(q4->rows(), 2);
  EXPECT_EQ(q4->cols(), 64);
  std::vector<float> row(64);
  for (int r = 0; r < 2; ++r) {
    DequantizeRow(q4->quant(), r, row.data());
    const float d = 0.25f * (r + 1);
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(row[32 * b + i], d * i - (1 + b)) << "row " << r << " block " << b << " " << i;
        EXPECT_EQ(row[32 * b + 16 + i], d * (15 - i) - (1 + b))
            << "row " << r << " block " << b << " " << 16 + i;
      }
  }

  auto q5 = (*f)->GetWeight("q5k");
  ASSERT_TRUE(q5.ok()) << q5.status().ToString();
  ASSERT_TRUE(q5->quantized());
  EXPECT_EQ(q5->TypeName(), "Q5_K");
  EXPECT_EQ(q5->rows(), 3);
  EXPECT_EQ(q5->cols(), 512);
  row.resize(512);
  for (int r = 0; r < 3; ++r) {
    DequantizeRow(q5->quant(), r, row.data());
    // Steps of at most 2 / 31 per sub-block, plus the rounding of the 6-bit scales.
    for (int i = 0; i < 512; ++i) EXPECT_NEAR(row[i], x[512 * r + i], 0.05f) << r << " " << i;
  }
}

// Streaming (AddTensorInfo + WriteFile with a fill callback) writes the same bytes as the
// in-memory writer, asks for each tensor once, and stops with a Status when a fill is wrong.
TEST_F(GgufTest, StreamingWriterMatchesInMemoryWriter) {
  const std::string a = F32Bytes({1.f, 2.f, 3.f}), b = F32Bytes({4.f, 5.f});
  GgufWriter mem, streamed;
  for (GgufWriter* w : {&mem, &streamed}) w->SetString("general.architecture", "qwen3");
  mem.AddTensor("a", ggml::kF32, {3}, a);
  mem.AddTensor("b", ggml::kF32, {2}, b);
  streamed.AddTensorInfo("a", ggml::kF32, {3}, a.size());
  streamed.AddTensor("b", ggml::kF32, {2}, b);  // the two kinds mix
  const std::string path = Write("");
  std::vector<std::string> asked;
  auto fill = [&](const std::string& name) -> StatusOr<std::string> {
    asked.push_back(name);
    return a;
  };
  ASSERT_TRUE(streamed.WriteFile(path, fill).ok());
  EXPECT_EQ(asked, std::vector<std::string>{"a"});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes, mem.Serialize());

  Status s = streamed.WriteFile(
      path, [](const std::string&) -> StatusOr<std::string> { return std::string("short"); });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("'a'"));
  s = streamed.WriteFile(path, [](const std::string& n) -> StatusOr<std::string> {
    return NotFound("no data for {}", n);
  });
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  // Without a fill, a declared tensor is an error rather than garbage.
  EXPECT_EQ(streamed.WriteFile(path).code(), StatusCode::kInternal);
}

std::string OneTensorFile(uint32_t type, std::vector<uint64_t> ne, uint64_t offset,
                          const std::string& data, const std::string& kvs = "", uint64_t n_kv = 0) {
  return RawGguf(3, kvs, n_kv, {{"w", std::move(ne), type, offset}}, data);
}

TEST_F(GgufTest, EveryTruncationOfAValidFileIsAStatus) {
  const std::string good = OneTensorFile(ggml::kF32, {4, 2}, 0, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_TRUE(OpenBytes(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    auto f = OpenBytes(good.substr(0, n));
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes opened";
    EXPECT_TRUE(f.status().code() == StatusCode::kDataLoss ||
                f.status().code() == StatusCode::kInvalidArgument)
        << f.status().ToString();
  }
}

TEST_F(GgufTest, TruncatedTensorDataIsDataLoss) {
  const std::string bytes = OneTensorFile(ggml::kF32, {4, 2}, 0, F32Bytes({1, 2, 3, 4, 5, 6}));
  auto f = OpenBytes(bytes);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(f.status().message(), HasSubstr("tensor 'w'"));
  EXPECT_THAT(f.status().message(), HasSubstr("truncated"));
}

TEST_F(GgufTest, UnknownTensorTypeIsNamed) {
  auto f = OpenBytes(OneTensorFile(99, {4}, 0, std::string(64, '\0')));
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("tensor 'w': unknown ggml type 99"));
}

TEST_F(GgufTest, KnownButUnsupportedTypeOpensAndFailsOnUse) {
  auto f = OpenBytes(OneTensorFile(ggml::kQ2_K, {256}, 0, std::string(84, '\0')));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto w = (*f)->GetWeight("w");
  EXPECT_EQ(w.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(w.status().message(), HasSubstr("type Q2_K"));
}

TEST_F(GgufTest, MisalignedOffsetIsRejected) {
  auto f = OpenBytes(OneTensorFile(ggml::kF32, {4}, 4, std::string(64, '\0')));
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("not a multiple of the alignment 32"));
}

TEST_F(GgufTest, LyingSizesAreCaught) {
  // Two tensors whose dimensions claim more bytes than lie between their offsets.
  const std::string data(128, '\0');
  auto overlap =
      OpenBytes(RawGguf(3, "", 0, {{"a", {16}, ggml::kF32, 0}, {"b", {4}, ggml::kF32, 32}}, data));
  ASSERT_FALSE(overlap.ok());
  EXPECT_THAT(overlap.status().message(), HasSubstr("overlap"));
  // A dimension so large that the tensor runs past the end of the file.
  auto beyond = OpenBytes(OneTensorFile(ggml::kF32, {1ull << 30}, 0, data));
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().code(), StatusCode::kDataLoss);
  // A row that is not a whole number of blocks.
  auto partial = OpenBytes(OneTensorFile(ggml::kQ4_0, {48}, 0, data));
  ASSERT_FALSE(partial.ok());
  EXPECT_THAT(partial.status().message(), HasSubstr("not a multiple of the Q4_0 block size 32"));
  // A string length beyond the file.
  std::string kv;
  PutStr(kv, "k");
  Put<uint32_t>(kv, static_cast<uint32_t>(GgufType::kString));
  Put<uint64_t>(kv, 1ull << 40);
  auto str = OpenBytes(RawGguf(3, kv, 1, {}, ""));
  ASSERT_FALSE(str.ok());
  EXPECT_EQ(str.status().code(), StatusCode::kDataLoss);
  // An array count far beyond what the file could hold (no giant allocation).
  kv.clear();
  PutStr(kv, "k");
  Put<uint32_t>(kv, static_cast<uint32_t>(GgufType::kArray));
  Put<uint32_t>(kv, static_cast<uint32_t>(GgufType::kUint64));
  Put<uint64_t>(kv, 1ull << 60);
  auto arr = OpenBytes(RawGguf(3, kv, 1, {}, ""));
  ASSERT_FALSE(arr.ok());
  EXPECT_THAT(arr.status().message(), HasSubstr("array of"));
  // Counts that cannot fit.
  auto counts = OpenBytes(RawGguf(3, "", 1ull << 50, {}, ""));
  ASSERT_FALSE(counts.ok());
  EXPECT_THAT(counts.status().message(), HasSubstr("metadata count"));
}

TEST_F(GgufTest, BadHeadersAreRejected) {
  auto magic = OpenBytes("GGML" + std::string(60, '\0'));
  EXPECT_THAT(magic.status().message(), HasSubstr("not a GGUF file"));
  auto v1 = OpenBytes(RawGguf(1, "", 0, {}, ""));
  EXPECT_EQ(v1.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(v1.status().message(), HasSubstr("version 1"));
  auto v9 = OpenBytes(RawGguf(9, "", 0, {}, ""));
  EXPECT_THAT(v9.status().message(), HasSubstr("version 9"));

  std::string kv;
  PutStr(kv, "general.alignment");
  Put<uint32_t>(kv, static_cast<uint32_t>(GgufType::kUint32));
  Put<uint32_t>(kv, 24);
  auto align = OpenBytes(RawGguf(3, kv, 1, {}, ""));
  EXPECT_THAT(align.status().message(), HasSubstr("power of two"));

  kv.clear();
  PutStr(kv, "k");
  Put<uint32_t>(kv, 77);
  auto type = OpenBytes(RawGguf(3, kv, 1, {}, ""));
  EXPECT_THAT(type.status().message(), HasSubstr("metadata 'k': unknown value type 77"));

  kv.clear();
  for (int i = 0; i < 2; ++i) {
    PutStr(kv, "dup");
    Put<uint32_t>(kv, static_cast<uint32_t>(GgufType::kUint8));
    Put<uint8_t>(kv, 1);
  }
  auto dup = OpenBytes(RawGguf(3, kv, 2, {}, ""));
  EXPECT_THAT(dup.status().message(), HasSubstr("'dup' appears twice"));

  auto rank = OpenBytes(OneTensorFile(ggml::kF32, {1, 1, 1, 1, 1}, 0, std::string(32, '\0')));
  EXPECT_THAT(rank.status().message(), HasSubstr("rank 5"));
  auto twice = OpenBytes(RawGguf(3, "", 0, {{"a", {8}, ggml::kF32, 0}, {"a", {8}, ggml::kF32, 32}},
                                 std::string(64, '\0')));
  EXPECT_THAT(twice.status().message(), HasSubstr("'a' appears twice"));
}

TEST_F(GgufTest, ErrorsNameTheFile) {
  const std::string path = Write("nonsense");
  auto f = GgufFile::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace xinfer
