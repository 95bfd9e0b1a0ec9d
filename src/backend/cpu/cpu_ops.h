// Portable CPU kernels (plain C++ the compiler vectorizes, OpenMP across rows). Issue 6 replaces
// the hot ones with ISA-dispatched kernels; this file stays as the reference they are tested
// against.
#pragma once

#include "backend/backend.h"

namespace xinfer {

class CpuOps : public Ops {
 public:
  // Keep the Weight overloads (quantized weights) visible beside the overrides below.
  using Ops::Embedding;
  using Ops::Linear;
  void Embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  void Rope(Tensor& x, std::span<const int32_t> positions, double theta) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void Add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void CopyRows(const Tensor& src, Tensor& dst, int64_t dst_row) override;
  void WriteKvSlots(const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                    Tensor& k_cache, Tensor& v_cache) override;
  void PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const PagedAttentionBatch& batch, Tensor& out) override;
};

}  // namespace xinfer
