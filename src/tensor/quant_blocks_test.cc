// Block formats: bit layouts pinned by hand-built blocks, and round trips of random data through
// the reference quantizers (written from the format descriptions) and the engine's dequantizer.
#include "tensor/quant_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/dtype.h"

namespace xinfer {
namespace {

std::vector<float> RandomData(int64_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct RoundTripCase {
  QuantType type;
  // Worst-case error bound relative to the largest magnitude in a block (from the step size:
  // Q8_0 amax/254, Q4_0 amax/8 (the side opposite the largest value clips at 7/8), Q4_1 / Q5_1
  // half a step of (max - min) / 15 or 31, at most amax/15 or amax/31, K-quants add the rounding of
  // their 6/8-bit sub-scales).
  double max_rel_error;
  // Bound on the RMS error relative to the RMS of the data.
  double rms_rel_error;
};

class RoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTripTest, RandomDataSurvivesQuantizeDequantize) {
  const auto c = GetParam();
  const int64_t be = QuantBlockElems(c.type), bb = QuantBlockBytes(c.type);
  const int64_t n = be * 64;
  for (uint32_t seed : {1u, 2u, 3u}) {
    auto x = RandomData(n, seed, seed == 3 ? 1e-2f : 1.f);
    if (seed == 2) x[5] = 40.f;  // an outlier
    std::vector<uint8_t> blocks(n / be * bb);
    QuantizeBlocksRef(c.type, x.data(), n, blocks.data());
    std::vector<float> y(n);
    DequantizeBlocks(c.type, blocks.data(), n, y.data());
    double se = 0, sx = 0;
    for (int64_t b = 0; b < n / be; ++b) {
      float amax = 0;
      for (int64_t i = 0; i < be; ++i) amax = std::max(amax, std::fabs(x[b * be + i]));
      for (int64_t i = 0; i < be; ++i) {
        const double e = std::fabs(x[b * be + i] - y[b * be + i]);
        ASSERT_LE(e, c.max_rel_error * amax + 1e-7)
            << QuantTypeName(c.type) << " seed " << seed << " element " << b * be + i;
        se += e * e;
        sx += static_cast<double>(x[b * be + i]) * x[b * be + i];
      }
    }
    if (seed != 2) {
      EXPECT_LT(std::sqrt(se / sx), c.rms_rel_error) << QuantTypeName(c.type);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, RoundTripTest,
                         ::testing::Values(RoundTripCase{QuantType::kQ8_0, 0.0045, 0.01},
                                           RoundTripCase{QuantType::kQ4_0, 0.13, 0.12},
                                           RoundTripCase{QuantType::kQ5_0, 0.07, 0.06},
                                           RoundTripCase{QuantType::kQ4_1, 0.07, 0.09},
                                           RoundTripCase{QuantType::kQ5_1, 0.035, 0.045},
                                           RoundTripCase{QuantType::kQ4_K, 0.12, 0.12},
                                           RoundTripCase{QuantType::kQ5_K, 0.06, 0.045},
                                           RoundTripCase{QuantType::kQ6_K, 0.04, 0.04}),
                         [](const auto& info) {
                           return std::string(QuantTypeName(info.param.type));
                         });

TEST(BlockLayoutTest, ZerosStayZero) {
  for (QuantType t : {QuantType::kQ8_0, QuantType::kQ4_0, QuantType::kQ5_0, QuantType::kQ4_1,
                      QuantType::kQ5_1, QuantType::kQ4_K, QuantType::kQ5_K, QuantType::kQ6_K}) {
    const int64_t n = QuantBlockElems(t);
    std::vector<float> x(n, 0.f), y(n, 1.f);
    std::vector<uint8_t> b(QuantBlockBytes(t));
    QuantizeBlocksRef(t, x.data(), n, b.data());
    DequantizeBlocks(t, b.data(), n, y.data());
    for (float v : y) EXPECT_EQ(v, 0.f) << QuantTypeName(t);
  }
}

TEST(BlockLayoutTest, Q8_0IsScaleThenInt8) {
  uint8_t b[34] = {};
  const uint16_t d = F32ToF16(0.5f);
  std::memcpy(b, &d, 2);
  for (int i = 0; i < 32; ++i) b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
  float y[32];
  DequantizeBlocks(QuantType::kQ8_0, b, 32, y);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.5f * (i - 16));
}

TEST(BlockLayoutTest, Q4_0LowNibblesAreTheFirstHalf) {
  uint8_t b[18] = {};
  const uint16_t d = F32ToF16(2.f);
  std::memcpy(b, &d, 2);
  for (int i = 0; i < 16; ++i) b[2 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  float y[32];
  DequantizeBlocks(QuantType::kQ4_0, b, 32, y);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], 2.f * (i - 8));
    EXPECT_EQ(y[16 + i], 2.f * (15 - i - 8));
  }
}

// ggml's block_q5_0: f16 d, then qh (4 bytes, little-endian: bit i is the 5th bit of element i,
// bit 16 + i that of element 16 + i), then the low nibbles as Q4_0; x = d * (q - 16).
TEST(BlockLayoutTest, Q5_0HighBitsComeFromQh) {
  uint8_t b[22] = {};
  const uint16_t d = F32ToF16(0.25f);
  std::memcpy(b, &d, 2);
  const uint32_t qh = 0xA5C3'0F96u;
  std::memcpy(b + 2, &qh, 4);
  for (int i = 0; i < 16; ++i) b[6 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  float y[32];
  DequantizeBlocks(QuantType::kQ5_0, b, 32, y);
  for (int i = 0; i < 16; ++i) {
    const int lo = i | static_cast<int>(((qh >> i) & 1) << 4);
    const int hi = (15 - i) | static_cast<int>(((qh >> (16 + i)) & 1) << 4);
    EXPECT_EQ(y[i], 0.25f * (lo - 16)) << i;
    EXPECT_EQ(y[16 + i], 0.25f * (hi - 16)) << i;
  }
}

// ggml's block_q4_1: f16 d, f16 m, then the nibbles as Q4_0 (element i < 16 in the low nibble of
// q[i], 16 + i in the high one); x = d * q + m with q in 0..15.
TEST(BlockLayoutTest, Q4_1IsScaleMinThenNibbles) {
  uint8_t b[20] = {};
  const uint16_t d = F32ToF16(0.5f), m = F32ToF16(-3.f);
  std::memcpy(b, &d, 2);
  std::memcpy(b + 2, &m, 2);
  for (int i = 0; i < 16; ++i) b[4 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  float y[32];
  DequantizeBlocks(QuantType::kQ4_1, b, 32, y);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(y[i], 0.5f * i - 3.f) << i;
    EXPECT_EQ(y[16 + i], 0.5f * (15 - i) - 3.f) << i;
  }
}

// ggml's block_q5_1: f16 d, f16 m, then qh as Q5_0's (4 bytes, little-endian: bit i is the 5th bit
// of element i, bit 16 + i that of element 16 + i), then the low nibbles; x = d * q + m, q 0..31.
TEST(BlockLayoutTest, Q5_1HighBitsComeFromQh) {
  uint8_t b[24] = {};
  const uint16_t d = F32ToF16(0.25f), m = F32ToF16(-2.5f);
  std::memcpy(b, &d, 2);
  std::memcpy(b + 2, &m, 2);
  const uint32_t qh = 0xA5C3'0F96u;
  std::memcpy(b + 4, &qh, 4);
  for (int i = 0; i < 16; ++i) b[8 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  float y[32];
  DequantizeBlocks(QuantType::kQ5_1, b, 32, y);
  for (int i = 0; i < 16; ++i) {
    const int lo = i + 16 * static_cast<int>((qh >> i) & 1);
    const int hi = (15 - i) + 16 * static_cast<int>((qh >> (16 + i)) & 1);
    EXPECT_EQ(y[i], 0.25f * lo - 2.5f) << i;
    EXPECT_EQ(y[16 + i], 0.25f * hi - 2.5f) << i;
  }
}

// ggml's block_q5_K: f16 d, f16 dmin, the 12 scale bytes of Q4_K, qh[32], q[128]. Chunk c (64
// values) has its first 32 in the low nibbles of q[32c .. 32c+31] with 5th bit (qh[l] >> 2c) & 1,
// its last 32 in the high nibbles with 5th bit (qh[l] >> (2c + 1)) & 1; sub-block j = e / 32 gives
// x = d * sc[j] * q - dmin * m[j].
TEST(BlockLayoutTest, Q5_KHighBitsAndSubBlockScales) {
  uint8_t b[176] = {};
  const uint16_t d = F32ToF16(0.5f), dmin = F32ToF16(0.25f);
  std::memcpy(b, &d, 2);
  std::memcpy(b + 2, &dmin, 2);
  uint8_t* s = b + 4;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) sc[j] = 3 + 7 * j, m[j] = 60 - 5 * j;  // 6 bits, split for j >= 4
  for (int j = 0; j < 4; ++j) s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
  for (int j = 0; j < 4; ++j) s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
  for (int j = 4; j < 8; ++j) s[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
  uint8_t* qh = b + 16;
  uint8_t* q = b + 48;
  for (int l = 0; l < 32; ++l) qh[l] = static_cast<uint8_t>(37 * l + 11);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      q[32 * c + l] = static_cast<uint8_t>(((l + c) % 16) | (((3 * l + 5 * c) % 16) << 4));
  float y[256];
  DequantizeBlocks(QuantType::kQ5_K, b, 256, y);
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, l = e % 32, high = (e % 64) / 32, j = e / 32;
    const int low4 = high ? (3 * l + 5 * c) % 16 : (l + c) % 16;
    const int bit5 = (((37 * l + 11) & 0xFF) >> (2 * c + high)) & 1;
    const float expected = 0.5f * sc[j] * (low4 + 16 * bit5) - 0.25f * m[j];
    EXPECT_EQ(y[e], expected) << "element " << e;
  }
}

TEST(BlockLayoutTest, Q4_KSubBlockScalesAndMins) {
  // d = 1, dmin = 1; sub-block j gets scale j + 1 and min 2j (6 bits, split for j >= 4); all
  // nibbles 1 except in chunk 0 whose high nibbles (sub-block 1) are 3.
  uint8_t b[144] = {};
  const uint16_t one = F32ToF16(1.f);
  std::memcpy(b, &one, 2);
  std::memcpy(b + 2, &one, 2);
  uint8_t* s = b + 4;
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) sc[j] = j + 1 + (j >= 4 ? 40 : 0), m[j] = 2 * j + (j >= 6 ? 30 : 0);
  for (int j = 0; j < 4; ++j) s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
  for (int j = 0; j < 4; ++j) s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
  for (int j = 4; j < 8; ++j) s[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
  for (int i = 0; i < 128; ++i) b[16 + i] = i < 32 ? 0x31 : 0x11;
  float y[256];
  DequantizeBlocks(QuantType::kQ4_K, b, 256, y);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const int q = j == 1 ? 3 : 1;
    EXPECT_EQ(y[e], static_cast<float>(sc[j] * q - m[j])) << "element " << e;
  }
}

TEST(BlockLayoutTest, Q6_KBitPlanes) {
  // Element r of each 128-half: q = r % 64 (6 bits); scale of sub-block k is k - 8; d = 1.
  uint8_t b[210] = {};
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 128; ++r) {
      const int q = r % 64;
      b[64 * h + r % 64] |= static_cast<uint8_t>((q & 0xF) << (r < 64 ? 0 : 4));
      b[128 + 32 * h + r % 32] |= static_cast<uint8_t>((q >> 4) << (2 * (r / 32)));
    }
  for (int k = 0; k < 16; ++k) b[192 + k] = static_cast<uint8_t>(static_cast<int8_t>(k - 8));
  const uint16_t one = F32ToF16(1.f);
  std::memcpy(b + 208, &one, 2);
  float y[256];
  DequantizeBlocks(QuantType::kQ6_K, b, 256, y);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(y[e], static_cast<float>((e / 16 - 8) * ((e % 128) % 64 - 32))) << "element " << e;
}

TEST(AwqGroupTest, RoundTripWithinHalfAStep) {
  auto x = RandomData(128, 7);
  std::vector<uint8_t> q(128);
  AwqGroup g = QuantizeAwqGroupRef(x.data(), 128, q.data());
  const float s = F16ToF32(g.scale_f16);
  float lo = x[0], hi = x[0];
  for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  for (int i = 0; i < 128; ++i) {
    ASSERT_LE(q[i], 15);
    EXPECT_LE(std::fabs((q[i] - g.zero) * s - x[i]), 0.51f * s + 1e-3f * (hi - lo)) << i;
  }
}

}  // namespace
}  // namespace xinfer
