#include "backend/cpu/quant_ops.h"

#include <vector>

#include "backend/backend.h"

namespace xinfer {
namespace cpu {
namespace {

// Sum in 16 independent lanes, then a fixed tree: vectorizes without -ffast-math and gives the
// same bits whatever the alignment of `a` (rows of a batch start at different alignments).
float Dot16(const float* a, const float* b, int64_t n) {
  float acc[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) acc[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

void BiasToF32(const Tensor& bias, int64_t n, std::vector<float>& dst) {
  XI_CHECK(bias.numel() == n);
  dst.resize(n);
  XI_CHECK_MSG(WidenToF32(bias, dst.data()), "unsupported bias dtype");
}

}  // namespace

void QuantLinearRef(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out,
                    ThreadPool* pool) {
  XI_CHECK(x.dtype() == DType::kF32 && out.dtype() == DType::kF32);
  const int64_t k = w.cols, n = w.rows;
  XI_CHECK(k > 0 && x.numel() % k == 0);
  const int64_t t_rows = x.numel() / k;
  XI_CHECK(out.numel() == t_rows * n);
  std::vector<float> b;
  if (bias != nullptr) BiasToF32(*bias, n, b);
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  // Each row of w is dequantized once per call into a per-range buffer and reused for all T
  // rows of x: memory traffic stays one pass over the (small) quantized weight.
  auto rows = [&](int64_t j0, int64_t j1, int) {
    std::vector<float> wrow(k);
    for (int64_t j = j0; j < j1; ++j) {
      DequantizeRow(w, j, wrow.data());
      const float bj = b.empty() ? 0.f : b[j];
      for (int64_t t = 0; t < t_rows; ++t) os[t * n + j] = Dot16(xs + t * k, wrow.data(), k) + bj;
    }
  };
  if (pool != nullptr) {
    pool->ParallelRanges(n, 1, rows);
  } else {
    rows(0, n, 0);
  }
}

void QuantEmbeddingRef(const QuantTensor& table, std::span<const int32_t> ids, Tensor& out) {
  XI_CHECK(out.dtype() == DType::kF32);
  const int64_t h = table.cols;
  XI_CHECK(out.numel() == static_cast<int64_t>(ids.size()) * h);
  for (size_t t = 0; t < ids.size(); ++t) {
    XI_CHECK(ids[t] >= 0 && ids[t] < table.rows);
    DequantizeRow(table, ids[t], out.data<float>() + t * h);
  }
}

}  // namespace cpu

// The Ops front doors and defaults (declared in backend/backend.h) live here, beside the only
// kernels they default to, so that backend.h stays free of device code.
void Ops::Embedding(const Weight& table, std::span<const int32_t> ids, Tensor& out) {
  if (table.quantized()) {
    QuantEmbedding(table.quant(), ids, out);
  } else {
    Embedding(table.dense(), ids, out);
  }
}

void Ops::Linear(const Tensor& x, const Weight& w, const Tensor* bias, Tensor& out) {
  if (w.quantized()) {
    QuantLinear(x, w.quant(), bias, out);
  } else {
    Linear(x, w.dense(), bias, out);
  }
}

void Ops::LinearMany(const Tensor& x, std::span<const LinearOut> parts) {
  for (const LinearOut& p : parts) Linear(x, *p.w, p.bias, *p.out);
}

void Ops::LinearRowGroups(const Tensor& x, std::span<const RowGroupLinear> groups) {
  for (const RowGroupLinear& g : groups) {
    if (g.row_begin == g.row_end) continue;
    Tensor out = g.out->Slice0(g.row_begin, g.row_end);
    Linear(x.Slice0(g.row_begin, g.row_end), *g.w, nullptr, out);
  }
}

void Ops::QuantEmbedding(const QuantTensor& table, std::span<const int32_t> ids, Tensor& out) {
  cpu::QuantEmbeddingRef(table, ids, out);
}

void Ops::QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out) {
  cpu::QuantLinearRef(x, w, bias, out);
}

}  // namespace xinfer
