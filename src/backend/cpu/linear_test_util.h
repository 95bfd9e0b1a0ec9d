// Test helper shared by the kernel suites: LinearMany against separate Linear calls.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace xinfer {

// LinearMany of x with the weights `w` (biases b, none on part 1) against separate Linears:
// bitwise the same, part by part.
inline void ExpectLinearManyMatchesSeparate(Backend& backend, Ops& ops, const Tensor& x,
                                            const std::vector<Weight>& w,
                                            const std::vector<Tensor>& b,
                                            const std::string& label) {
  const int64_t t = x.dim(0);
  std::vector<Tensor> want, got;
  std::vector<Ops::LinearOut> parts;
  for (size_t i = 0; i < w.size(); ++i) {
    want.push_back(backend.NewTensor(DType::kF32, {t, w[i].rows()}));
    got.push_back(backend.NewTensor(DType::kF32, {t, w[i].rows()}));
    ops.Linear(x, w[i], i == 1 ? nullptr : &b[i], want[i]);
  }
  for (size_t i = 0; i < w.size(); ++i) parts.push_back({&w[i], i == 1 ? nullptr : &b[i], &got[i]});
  ops.LinearMany(x, parts);
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_EQ(
        std::memcmp(got[i].data<float>(), want[i].data<float>(), t * w[i].rows() * sizeof(float)),
        0)
        << label << " T=" << t << " part " << i;
}

}  // namespace xinfer
