// Portable CPU kernels (plain C++ the compiler vectorizes, rows split across the thread pool).
// Issue 6 replaces the hot ones with ISA-dispatched kernels; this file stays as the reference
// they are tested against.
//
// CpuOps owns the thread pool its ops (and FastCpuOps') run on: one op at a time (backend.h).
#pragma once

#include "backend/backend.h"
#include "base/thread_pool.h"

namespace xinfer {

class CpuOps : public Ops {
 public:
  // num_threads: threads per op, the calling one included; <= 0: every CPU this process may use.
  // cpus: the CPUs the pool's workers are bound to (ThreadPool); empty: unbound.
  explicit CpuOps(int num_threads = 0, std::vector<int> cpus = {})
      : pool_(num_threads, std::move(cpus)) {}
  int num_threads() const { return pool_.size(); }
  // The ops' pool, for backend work that runs between ops (weight placement at load); the same
  // one-at-a-time rule applies.
  ThreadPool& pool() { return pool_; }

  // Keep the Weight overloads (quantized weights) visible beside the overrides below.
  using Ops::Embedding;
  using Ops::Linear;
  void Embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) override;
  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  void QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out) override;
  void Rope(Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void Add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void CopyRows(const Tensor& src, Tensor& dst, int64_t dst_row) override;
  void CopyColumns(const Tensor& src, Tensor& dst, int64_t dst_col) override;
  void GatherRows(const Tensor& src, std::span<const int32_t> rows, Tensor& dst) override;
  void ScatterAddRows(const Tensor& src, std::span<const int32_t> rows,
                      std::span<const float> weights, Tensor& dst) override;
  void WriteKvSlots(const Tensor& k, const Tensor& v, std::span<const int32_t> slots,
                    Tensor& k_cache, Tensor& v_cache) override;
  void PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const PagedAttentionBatch& batch, Tensor& out) override;

 private:
  ThreadPool pool_;
};

}  // namespace xinfer
