// Helpers shared by the integration tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace xinfer::testing {

// Absolute path of ../shared (CI and developer machines have it beside the checkout).
inline std::string SharedDir() { return XINFER_SHARED_DIR; }

inline bool HaveShared(const std::string& rel) {
  return std::filesystem::exists(SharedDir() + "/" + rel);
}

// A raw little-endian float32 file (the golden *.logits.f32); empty when it cannot be read.
inline std::vector<float> ReadF32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

inline int32_t Argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// Largest element-wise difference; infinite when the sizes differ.
inline double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max<double>(m, std::fabs(a[i] - b[i]));
  return m;
}

// log(softmax(logits)) in double precision.
inline std::vector<double> LogSoftmax(const std::vector<float>& logits) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(l - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - lse;
  return out;
}

// A parameterized test's name from a model or file name: GoogleTest allows only [A-Za-z0-9_].
inline std::string ParamName(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace xinfer::testing

// Skips the current test, with the reason, when a file under ../shared is missing.
#define XI_REQUIRE_SHARED(rel)                                                      \
  do {                                                                              \
    if (!::xinfer::testing::HaveShared(rel))                                        \
      GTEST_SKIP() << "../shared/" << (rel) << " not found (tests need the shared " \
                   << "models and golden files beside the checkout)";               \
  } while (0)
