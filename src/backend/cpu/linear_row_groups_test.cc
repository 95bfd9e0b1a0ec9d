// Ops::LinearRowGroups (a mixture-of-experts layer's experts, each weight on its own rows of one
// x) against a Linear per group on its rows: bitwise the same, for every kernel family the CPU
// backend runs (dense F32 / BF16 / F16 in the layouts it places them in, with and without BF16
// activations; Q4_0, Q8_0, AWQ g128, Q4_K with and without int8 activations), groups of 0, 1 and
// many rows, groups sharing an output or not, 1 and 3 threads; a mix of kernel families falls
// back to separate Linears and still agrees.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/linear_test_util.h"
#include "backend/cpu/quant_test_util.h"
#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace xinfer {
namespace {

// `w` as `backend` stores a Linear weight for its kernels (panels, tiles), as the model loader
// has it placed.
Weight Placed(Backend& backend, const Weight& w) {
  std::vector<Backend::WeightToPlace> host;
  if (!w.quantized()) {
    host.push_back({w.dense(), true, nullptr});
    return Weight(backend.PlaceWeights(host)[0]);
  }
  QuantTensor q = w.quant();
  std::vector<Tensor*> parts;
  for (Tensor* t : {&q.data, &q.scales, &q.zeros}) {
    if (t->empty()) continue;
    host.push_back({*t, false, &w.quant()});
    parts.push_back(t);
  }
  std::vector<Tensor> placed = backend.PlaceWeights(host);
  for (size_t i = 0; i < parts.size(); ++i) *parts[i] = placed[i];
  return Weight(std::move(q));
}

// Experts e = 0..4 over rows grouped by expert (sizes 3, 0, 1, 7, 2: 13 rows), each with a
// "gate" and an "up" weight sharing the group's rows but writing two outputs, as the decoder
// calls it; then the same groups against separate Linears on the same backend.
void ExpectGroupsMatchSeparate(Backend& backend, const std::vector<Weight>& gate,
                               const std::vector<Weight>& up, int64_t k, const std::string& label) {
  const std::vector<int64_t> sizes = {3, 0, 1, 7, 2};
  const int64_t rows = 13, n = gate[0].rows();
  std::mt19937 rng(11);
  Tensor x = RandomTensor(backend, DType::kF32, {rows, k}, rng);
  Tensor got_gate = backend.NewTensor(DType::kF32, {rows, n});
  Tensor got_up = backend.NewTensor(DType::kF32, {rows, n});
  Tensor want_gate = backend.NewTensor(DType::kF32, {rows, n});
  Tensor want_up = backend.NewTensor(DType::kF32, {rows, n});
  std::vector<Ops::RowGroupLinear> groups;
  int64_t b = 0;
  for (size_t e = 0; e < sizes.size(); ++e) {
    groups.push_back({&gate[e], &got_gate, b, b + sizes[e]});
    groups.push_back({&up[e], &got_up, b, b + sizes[e]});
    if (sizes[e] > 0) {
      Tensor out_g = want_gate.Slice0(b, b + sizes[e]), out_u = want_up.Slice0(b, b + sizes[e]);
      backend.ops().Linear(x.Slice0(b, b + sizes[e]), gate[e], nullptr, out_g);
      backend.ops().Linear(x.Slice0(b, b + sizes[e]), up[e], nullptr, out_u);
    }
    b += sizes[e];
  }
  backend.ops().LinearRowGroups(x, groups);
  EXPECT_TRUE(BitwiseEqual(got_gate.data<float>(), want_gate.data<float>(), rows * n)) << label;
  EXPECT_TRUE(BitwiseEqual(got_up.data<float>(), want_up.data<float>(), rows * n)) << label;
}

TEST(LinearRowGroupsTest, BitwiseALinearPerGroupOnItsRows) {
  const int64_t k = 256, n = 80;
  for (bool bf16_activations : {false, true}) {
    for (bool int8_activations : {false, true}) {
      for (int threads : {1, 3}) {
        auto backend = CreateCpuBackend({.num_threads = threads,
                                         .bf16_activations = bf16_activations,
                                         .int8_activations = int8_activations});
        const std::string options = " bf16_activations " + std::to_string(bf16_activations) +
                                    " int8_activations " + std::to_string(int8_activations) +
                                    " threads " + std::to_string(threads);
        std::mt19937 rng(3);
        for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
          std::vector<Weight> gate, up;
          for (int e = 0; e < 5; ++e) {
            gate.push_back(Placed(*backend, Weight(RandomTensor(*backend, dt, {n, k}, rng))));
            up.push_back(Placed(*backend, Weight(RandomTensor(*backend, dt, {n, k}, rng))));
          }
          ExpectGroupsMatchSeparate(*backend, gate, up, k, DTypeName(dt) + options);
        }
        for (QuantType type :
             {QuantType::kQ4_0, QuantType::kQ8_0, QuantType::kAwq4, QuantType::kQ4_K}) {
          std::vector<Weight> gate, up;
          for (uint32_t e = 0; e < 5; ++e) {
            gate.push_back(
                Placed(*backend, Weight(MakeQuant(*backend, type, n, k, 2 * e + 1, nullptr, 128))));
            up.push_back(
                Placed(*backend, Weight(MakeQuant(*backend, type, n, k, 2 * e + 2, nullptr, 128))));
          }
          ExpectGroupsMatchSeparate(*backend, gate, up, k, QuantTypeName(type) + options);
        }
        // Mixed kernel families: separate Linears.
        std::vector<Weight> gate, up;
        for (uint32_t e = 0; e < 5; ++e) {
          gate.push_back(
              Placed(*backend, Weight(RandomTensor(*backend, DType::kBF16, {n, k}, rng))));
          up.push_back(
              Placed(*backend, Weight(MakeQuant(*backend, QuantType::kQ8_0, n, k, e, nullptr))));
        }
        ExpectGroupsMatchSeparate(*backend, gate, up, k, "mixed" + options);
      }
    }
  }
}

}  // namespace
}  // namespace xinfer
