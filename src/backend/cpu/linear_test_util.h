// Test helpers shared by the kernel suites: random tensors, bitwise comparison, QuantLinear's
// batch and thread invariance, LinearMany against separate Linear calls, paged attention's block
// tables.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace xinfer {

// A new F32 / BF16 / F16 tensor of N(0, scale) values drawn from `rng`.
inline Tensor RandomTensor(Backend& backend, DType dtype, Shape shape, std::mt19937& rng,
                           float scale = 1.f) {
  Tensor t = backend.NewTensor(dtype, std::move(shape));
  std::normal_distribution<float> dist(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng);
    if (dtype == DType::kF32) t.data<float>()[i] = v;
    if (dtype == DType::kBF16) t.data<uint16_t>()[i] = F32ToBf16(v);
    if (dtype == DType::kF16) t.data<uint16_t>()[i] = F32ToF16(v);
  }
  return t;
}

inline bool BitwiseEqual(const float* a, const float* b, int64_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// Block tables [ctx.size() * max_blocks] for sequences of ctx[s] tokens whose blocks are drawn
// without repeats from a shuffled pool of num_blocks (scattered, as a paged cache holds them);
// unused entries 0.
inline std::vector<int32_t> ScatteredBlockTables(const std::vector<int32_t>& ctx, int block,
                                                 int num_blocks, int max_blocks,
                                                 std::mt19937& rng) {
  std::vector<int32_t> perm(num_blocks);
  for (int i = 0; i < num_blocks; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> tables(ctx.size() * max_blocks, 0);
  for (size_t s = 0, next = 0; s < ctx.size(); ++s)
    for (int j = 0; j < (ctx[s] + block - 1) / block; ++j)
      tables[s * max_blocks + j] = perm[next++];
  return tables;
}

// QuantLinear of the rows of x in calls of 1..5 and 19 rows, on ops made for 1 and 3 threads
// (make_ops(threads)), gives bitwise `full` (x times w in one call): the kernels' results depend
// on neither the batch nor the threads.
inline void ExpectQuantLinearBatchInvariant(
    Backend& backend, const std::function<std::unique_ptr<Ops>(int)>& make_ops,
    const QuantTensor& w, const Tensor& x, const Tensor* bias, const Tensor& full,
    const std::string& label) {
  const int64_t t = x.dim(0), k = w.cols, n = w.rows;
  for (int threads : {1, 3}) {
    const std::unique_ptr<Ops> ops = make_ops(threads);
    for (int64_t chunk : {1, 2, 3, 4, 5, 19}) {
      for (int64_t r = 0; r < t; r += chunk) {
        const int64_t e = std::min(t, r + chunk);
        Tensor xs = backend.NewTensor(DType::kF32, {e - r, k});
        std::memcpy(xs.raw(), x.data<float>() + r * k, (e - r) * k * sizeof(float));
        Tensor ys = backend.NewTensor(DType::kF32, {e - r, n});
        ops->QuantLinear(xs, w, bias, ys);
        ASSERT_TRUE(BitwiseEqual(ys.data<float>(), full.data<float>() + r * n, (e - r) * n))
            << label << " rows " << r << ".." << e << " threads " << threads;
      }
    }
  }
}

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
