#include "backend/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/quant_ops.h"

namespace xinfer {
namespace {

// Converts n elements of a weight row in its stored dtype to F32.
void RowToF32(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::kBF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(s[i]);
      return;
    }
    case DType::kF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(s[i]);
      return;
    }
    default:
      XI_CHECK_MSG(false, "unsupported weight dtype for CPU kernels");
  }
}

// Row `row` of a 2-D weight as F32, in either layout (tensor.h); `bytes` is scratch for a row of
// row tiles.
void WeightRowToF32(const Tensor& t, int64_t row, float* dst, std::vector<uint8_t>& bytes) {
  const int64_t n = t.dim(1);
  if (t.layout() == Layout::kRowMajor) {
    RowToF32(static_cast<const uint8_t*>(t.raw()) + row * n * DTypeSize(t.dtype()), t.dtype(), n,
             dst);
    return;
  }
  bytes.resize(static_cast<size_t>(RowBytes(t)));
  ReadRow(t, row, bytes.data());
  RowToF32(bytes.data(), t.dtype(), n, dst);
}

float Dot(const float* a, const float* b, int64_t n) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

}  // namespace

void CpuOps::Embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  XI_CHECK(table.rank() == 2 && out.dtype() == DType::kF32);
  const int64_t h = table.dim(1);
  XI_CHECK(out.numel() == static_cast<int64_t>(ids.size()) * h);
  std::vector<uint8_t> bytes;
  for (size_t t = 0; t < ids.size(); ++t) {
    XI_CHECK(ids[t] >= 0 && ids[t] < table.dim(0));
    WeightRowToF32(table, ids[t], out.data<float>() + t * h, bytes);
  }
}

void CpuOps::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t n = weight.numel();
  XI_CHECK(x.numel() % n == 0 && out.numel() == x.numel());
  const int64_t rows = x.numel() / n;
  std::vector<float> w(n);
  RowToF32(weight.raw(), weight.dtype(), n, w.data());
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = xs + r * n;
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    float inv = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
    float* orow = os + r * n;
    for (int64_t i = 0; i < n; ++i) orow[i] = xr[i] * inv * w[i];
  }
}

void CpuOps::Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  XI_CHECK(w.rank() == 2 && x.dtype() == DType::kF32 && out.dtype() == DType::kF32);
  const int64_t k = w.dim(1), n = w.dim(0);
  XI_CHECK(x.numel() % k == 0);
  const int64_t t_rows = x.numel() / k;
  XI_CHECK(out.numel() == t_rows * n);
  std::vector<float> b;
  if (bias != nullptr) {
    XI_CHECK(bias->numel() == n);
    b.resize(n);
    RowToF32(bias->raw(), bias->dtype(), n, b.data());
  }
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  pool().ParallelRanges(n, 1, [&](int64_t j0, int64_t j1, int) {
    std::vector<float> wrow(k);
    std::vector<uint8_t> bytes;
    for (int64_t j = j0; j < j1; ++j) {
      WeightRowToF32(w, j, wrow.data(), bytes);
      const float bj = b.empty() ? 0.f : b[j];
      for (int64_t t = 0; t < t_rows; ++t) os[t * n + j] = Dot(xs + t * k, wrow.data(), k) + bj;
    }
  });
}

void CpuOps::QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out) {
  cpu::QuantLinearRef(x, w, bias, out, &pool());
}

void CpuOps::Rope(Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) {
  XI_CHECK(x.rank() == 3 && x.dim(0) == static_cast<int64_t>(positions.size()));
  const int64_t heads = x.dim(1), dim = x.dim(2), half = dim / 2;
  XI_CHECK(static_cast<int64_t>(rope.inv_freq.size()) == half);
  std::vector<float> cos_v(half), sin_v(half);
  float* xs = x.data<float>();
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int64_t i = 0; i < half; ++i) {
      double angle = positions[t] * rope.inv_freq[i];
      cos_v[i] = static_cast<float>(std::cos(angle) * rope.scale);
      sin_v[i] = static_cast<float>(std::sin(angle) * rope.scale);
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = xs + (t * heads + h) * dim;
      for (int64_t i = 0; i < half; ++i) {
        float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * cos_v[i] - x2 * sin_v[i];
        v[i + half] = x2 * cos_v[i] + x1 * sin_v[i];
      }
    }
  }
}

void CpuOps::SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) {
  XI_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  const float* g = gate.data<float>();
  const float* u = up.data<float>();
  float* o = out.data<float>();
  const int64_t n = gate.numel();
  for (int64_t i = 0; i < n; ++i) o[i] = g[i] / (1.f + std::exp(-g[i])) * u[i];
}

void CpuOps::Add(const Tensor& a, const Tensor& b, Tensor& out) {
  XI_CHECK(a.numel() == b.numel() && out.numel() == a.numel());
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* o = out.data<float>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) o[i] = pa[i] + pb[i];
}

void CpuOps::CopyRows(const Tensor& src, Tensor& dst, int64_t dst_row) {
  XI_CHECK(src.dtype() == dst.dtype() && src.rank() >= 1 && dst.rank() >= 1);
  const int64_t row = dst.dim(0) == 0 ? 0 : dst.numel() / dst.dim(0);
  XI_CHECK(src.numel() == src.dim(0) * row);
  XI_CHECK(dst_row >= 0 && dst_row + src.dim(0) <= dst.dim(0));
  std::memcpy(static_cast<uint8_t*>(dst.raw()) + dst_row * row * DTypeSize(dst.dtype()), src.raw(),
              src.size_bytes());
}

void CpuOps::GatherRows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) {
  XI_CHECK(src.dtype() == DType::kF32 && dst.dtype() == DType::kF32);
  XI_CHECK(src.rank() == 2 && dst.rank() == 2 && src.dim(1) == dst.dim(1));
  XI_CHECK(static_cast<int64_t>(rows.size()) <= dst.dim(0));
  const int64_t n = src.dim(1);
  for (size_t i = 0; i < rows.size(); ++i) {
    XI_CHECK(rows[i] >= 0 && rows[i] < src.dim(0));
    std::memcpy(dst.data<float>() + i * n, src.data<float>() + rows[i] * n, n * sizeof(float));
  }
}

void CpuOps::ScatterAddRows(const Tensor& src, std::span<const int32_t> rows,
                            std::span<const float> weights, Tensor& dst) {
  XI_CHECK(src.dtype() == DType::kF32 && dst.dtype() == DType::kF32);
  XI_CHECK(src.rank() == 2 && dst.rank() == 2 && src.dim(1) == dst.dim(1));
  XI_CHECK(rows.size() == weights.size() && static_cast<int64_t>(rows.size()) <= src.dim(0));
  const int64_t n = src.dim(1);
  for (size_t i = 0; i < rows.size(); ++i) {
    XI_CHECK(rows[i] >= 0 && rows[i] < dst.dim(0));
    const float* s = src.data<float>() + i * n;
    float* d = dst.data<float>() + rows[i] * n;
    const float w = weights[i];
    for (int64_t j = 0; j < n; ++j) d[j] += w * s[j];
  }
}

void CpuOps::CopyColumns(const Tensor& src, Tensor& dst, int64_t dst_col) {
  XI_CHECK(src.dtype() == DType::kF32 && dst.dtype() == DType::kF32);
  XI_CHECK(src.rank() == 2 && dst.rank() == 2 && src.dim(0) == dst.dim(0));
  const int64_t cols = src.dim(1);
  XI_CHECK(dst_col >= 0 && dst_col + cols <= dst.dim(1));
  for (int64_t r = 0; r < src.dim(0); ++r)
    std::memcpy(dst.data<float>() + r * dst.dim(1) + dst_col, src.data<float>() + r * cols,
                cols * sizeof(float));
}

void CpuOps::WriteKvSlots(const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                          Tensor& k_cache, Tensor& v_cache) {
  XI_CHECK(k.dtype() == DType::kF32 && v.dtype() == DType::kF32);
  XI_CHECK(k_cache.dtype() == v_cache.dtype() &&
           (k_cache.dtype() == DType::kF32 || k_cache.dtype() == DType::kBF16));
  const int64_t row = k.numel() / k.dim(0);
  XI_CHECK(k.dim(0) == static_cast<int64_t>(slots.size()) && v.numel() == k.numel());
  XI_CHECK(k_cache.numel() / k_cache.dim(0) == row && v_cache.numel() == k_cache.numel());
  const bool bf16 = k_cache.dtype() == DType::kBF16;
  for (size_t t = 0; t < slots.size(); ++t) {
    XI_CHECK(slots[t] >= 0 && slots[t] < k_cache.dim(0));
    const float* kr = k.data<float>() + t * row;
    const float* vr = v.data<float>() + t * row;
    if (bf16) {
      // Rounded to nearest even, as PyTorch stores a BF16 cache (vLLM's kv-cache-dtype auto).
      uint16_t* kc = k_cache.data<uint16_t>() + slots[t] * row;
      uint16_t* vc = v_cache.data<uint16_t>() + slots[t] * row;
      for (int64_t i = 0; i < row; ++i) {
        kc[i] = F32ToBf16(kr[i]);
        vc[i] = F32ToBf16(vr[i]);
      }
      continue;
    }
    std::memcpy(k_cache.data<float>() + slots[t] * row, kr, row * sizeof(float));
    std::memcpy(v_cache.data<float>() + slots[t] * row, vr, row * sizeof(float));
  }
}

void CpuOps::PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                            const PagedAttentionBatch& b, Tensor& out) {
  XI_CHECK(q.rank() == 3 && k_cache.rank() == 3 && v_cache.rank() == 3);
  const int64_t t_rows = q.dim(0), hq = q.dim(1), d = q.dim(2), hkv = k_cache.dim(1);
  XI_CHECK(k_cache.dim(2) == d && hq % hkv == 0 && out.numel() == q.numel());
  XI_CHECK(static_cast<int64_t>(b.positions.size()) == t_rows && b.block_size > 0);
  const int64_t num_seqs = static_cast<int64_t>(b.query_start.size()) - 1;
  XI_CHECK(num_seqs >= 0 && b.query_start[num_seqs] == t_rows);
  const int64_t group = hq / hkv;
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const int64_t num_slots = k_cache.dim(0);
  // Owner sequence of each query row.
  std::vector<int32_t> seq_of(t_rows);
  for (int64_t s = 0; s < num_seqs; ++s)
    for (int32_t t = b.query_start[s]; t < b.query_start[s + 1]; ++t) seq_of[t] = s;
  XI_CHECK(k_cache.dtype() == v_cache.dtype() &&
           (k_cache.dtype() == DType::kF32 || k_cache.dtype() == DType::kBF16));
  const DType kv_dtype = k_cache.dtype();
  const size_t kv_elem = DTypeSize(kv_dtype);
  const uint8_t* ks = static_cast<const uint8_t*>(k_cache.raw());
  const uint8_t* vs = static_cast<const uint8_t*>(v_cache.raw());
  const float* qs = q.data<float>();
  float* os = out.data<float>();
  pool().ParallelRanges(t_rows * hq, 1, [&](int64_t i0, int64_t i1, int) {
    std::vector<float> scores;
    std::vector<int64_t> slot_of;
    std::vector<float> row(d);
    // K/V row of (slot, kvh) as F32 (a BF16 cache widened exactly).
    auto kv_row = [&](const uint8_t* base, int64_t slot, int64_t kvh) -> const float* {
      const uint8_t* src = base + ((slot * hkv + kvh) * d) * kv_elem;
      if (kv_dtype == DType::kF32) return reinterpret_cast<const float*>(src);
      RowToF32(src, kv_dtype, d, row.data());
      return row.data();
    };
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t t = item / hq, h = item % hq;
      const int32_t* table = b.block_tables.data() + seq_of[t] * b.max_blocks_per_seq;
      const int64_t n_keys = b.positions[t] + 1;
      XI_CHECK(n_keys <= static_cast<int64_t>(b.max_blocks_per_seq) * b.block_size);
      scores.resize(n_keys);
      slot_of.resize(n_keys);
      const int64_t kvh = h / group;
      const float* qv = qs + (t * hq + h) * d;
      float max_score = -INFINITY;
      for (int64_t p = 0; p < n_keys; ++p) {
        const int64_t slot =
            static_cast<int64_t>(table[p / b.block_size]) * b.block_size + p % b.block_size;
        XI_CHECK(slot >= 0 && slot < num_slots);
        slot_of[p] = slot;
        scores[p] = Dot(qv, kv_row(ks, slot, kvh), d) * scale;
        max_score = std::max(max_score, scores[p]);
      }
      double denom = 0;
      for (int64_t p = 0; p < n_keys; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        denom += scores[p];
      }
      float* o = os + (t * hq + h) * d;
      std::fill(o, o + d, 0.f);
      for (int64_t p = 0; p < n_keys; ++p) {
        const float w = static_cast<float>(scores[p] / denom);
        const float* vv = kv_row(vs, slot_of[p], kvh);
        for (int64_t i = 0; i < d; ++i) o[i] += w * vv[i];
      }
    }
  });
}

}  // namespace xinfer
