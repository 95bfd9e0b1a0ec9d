// FastCpuOps: the CPU backend's ops. The hot ones (Linear, RmsNorm, Rope, SiluMul, Add,
// PagedAttention) run ISA-dispatched kernels (cpu_kernels.h) on CpuOps' thread pool; anything the
// CPU or the shape does not suit falls back to the portable reference in CpuOps.
//
// No allocation on the hot path: scratch (BF16 activations, converted biases/norm weights, the
// RoPE cos/sin table, per-thread attention scores) grows to the largest step seen and is then
// reused. One op runs at a time (backend.h), so the scratch needs no locking.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/cpu_ops.h"

namespace xinfer {

class FastCpuOps : public CpuOps {
 public:
  // bf16_activations, int8_activations: see CpuBackendOptions; num_threads, cpus: see CpuOps.
  explicit FastCpuOps(bool bf16_activations = false, int num_threads = 0,
                      bool int8_activations = false, std::vector<int> cpus = {});
  cpu::Bf16Path bf16_path() const { return bf16_path_; }
  // Whether QuantLinear runs `w` with int8 activations: int8_activations was asked for and the
  // CPU and the format allow it (every GGUF format of Q4_0 / Q5_0 / Q4_1 / Q5_1 / Q8_0 / Q4_K /
  // Q5_K / Q6_K on AVX512-VNNI, AVX2 or ARM64 DotProd CPUs; AWQ g128 on AVX512-VNNI).
  bool UsesInt8Activations(const QuantTensor& w) const;
  // The layout CpuBackend::PlaceWeights stores a dense Linear weight in, for the kernel Linear
  // will run it on: on AVX2 and AVX-512 CPUs, panels for the broadcast-x kernels
  // (cpu::DensePanelsLayout: 16-row kDwordTiles / kWordTiles on AVX2, 64-row kDwordTiles64 /
  // kWordPairTiles64 (BF16) / kWordTiles64 (F16) on AVX-512; kDwordTiles64 over k-pairs for BF16
  // under vdpbf16ps, `--dtype bfloat16`, K even); else row tiles (kRowTiles) where a kernel reads
  // them as one stream (Highway's where a unit is whole vectors); else row-major.
  // XINFER_DENSE_PANELS=0 skips the panels, XINFER_ROW_TILES=0 the row tiles (A/B measurements).
  Layout DenseLayoutFor(const Tensor& w) const;
  // The layout CpuBackend::PlaceWeights stores a quantized Linear weight's parts in: with int8
  // activations on AVX2 and AVX-512 CPUs, AWQ g128 in kDwordTiles and Q4_0 in kQ4_0Tiles
  // (tensor.h) for the broadcast-x kernels (AVX-512's with AVX512-VNNI, else AVX2's); without
  // them, AWQ g128 in kDwordTiles on AVX2 and AVX-512 CPUs (the W4A16 broadcast-x kernels: F32
  // x, or BF16 x in vdpbf16ps under bf16_activations on AVX512-BF16 CPUs); QuantLinear then runs
  // them on those kernels; else row-major.
  // XINFER_INT8_PANELS=0 / XINFER_W4A16_PANELS=0 keep them row-major (A/B measurements).
  Layout QuantLayoutFor(const QuantTensor& w) const;

  void RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) override;
  using Ops::Linear;  // the Weight overload (quantized weights) beside the override below
  void Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) override;
  // Dense parts of one kernel family (up to kMaxLinearParts) run as one job: x prepared once, one
  // fork-join; anything else as separate Linears.
  void LinearMany(const Tensor& x, std::span<const LinearOut> parts) override;
  // Groups whose weights all take one kernel family (fast_cpu_ops_groups.cc) run as one job: x
  // prepared once for all its rows, one fork-join; anything else as a Linear per group.
  void LinearRowGroups(const Tensor& x, std::span<const RowGroupLinear> groups) override;
  void QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out) override;
  void Rope(Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) override;
  void SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) override;
  void Add(const Tensor& a, const Tensor& b, Tensor& out) override;
  void PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const PagedAttentionBatch& batch, Tensor& out) override;

  // How a quantized Linear's weight rows are cut among the pool's threads for t_rows rows of x
  // (ThreadPool::Split): one equal range per thread (one long weight stream each) for one row of
  // x on the AVX-512 int8 panel kernels, else shrinking ranges claimed as threads come free.
  using Ranges = ThreadPool::Split;
  Ranges QuantRangesFor(const QuantTensor& w, int64_t t_rows) const {
    return RangesFor(t_rows, UsesInt8Activations(w) ? Int8IsaFor(w) : Int8Isa::kNone);
  }

 private:
  // The kernel family a dense Linear on `w` runs.
  enum class DenseKernel {
    kReference,
    kSimd,
    kBf16Dot,
    kBf16Widen,
    kF32Acc,
    kPanels,
    kBf16DotPanels
  };
  DenseKernel DenseKernelFor(const Tensor& w) const;
  bool ReadsRowTiles(DType dtype) const;
  bool ReadsPanels(DType dtype) const;
  // BF16 weights under vdpbf16ps (`--dtype bfloat16`): panels of k-pairs, LinearPanelsBf16Dot.
  bool Bf16DotPanels(DType dtype) const;
  // The panel layout a dense weight of this dtype is placed in when ReadsPanels(dtype).
  Layout PanelLayout(DType dtype) const;
  // Checks a dense Linear's arguments and fills `task` (bias converted to F32 into
  // `bias_scratch` where needed, x not yet prepared); returns the rows of x.
  int64_t PrepareDenseTask(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out,
                           std::vector<float>& bias_scratch, cpu::LinearTask& task);
  // The activations in the form `kind` reads (BF16-rounded or even/odd-permuted copies).
  void PrepareDenseX(DenseKernel kind, int64_t t_rows, cpu::LinearTask& task);
  void RunDense(DenseKernel kind, const cpu::LinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                int64_t n1);
  static int64_t ColumnUnit(const cpu::LinearTask& task);
  // Checks QuantLinear's arguments and fills `task` (bias converted to F32); returns the rows of
  // x, 0 when there is nothing to compute.
  int64_t PrepareQuantTask(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out,
                           cpu::QuantLinearTask& task, std::vector<float>* bias_scratch = nullptr);
  // x split into BF16 halves (and its group sums) for the vdpbf16ps 4-bit kernel.
  void PrepareNibbleBf16X(const Tensor& x, QuantType type, int64_t t_rows,
                          cpu::QuantLinearTask& task);
  // Which int8 kernel takes `w` on this CPU (with int8 activations).
  enum class Int8Isa { kNone, kAvx512, kAvx512Panels, kAvx2, kNeon };
  // QuantRangesFor for a kernel already chosen (the Linear paths know their int8 ISA).
  static Ranges RangesFor(int64_t t_rows, Int8Isa isa);
  Int8Isa Int8IsaFor(const QuantTensor& w) const;
  // x quantized to int8 blocks (and their scales, and the AVX-512 kernel's lane corrections) in
  // the layout of w's int8 kernel.
  // Returns the kernel that layout is for, to hand to RunInt8 for every range.
  Int8Isa PrepareInt8X(const Tensor& x, const QuantTensor& w, int64_t t_rows,
                       cpu::QuantLinearTask& task);
  void RunInt8(Int8Isa isa, const cpu::QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
               int64_t n1) const;
  // AWQ `w` without int8 activations on a W4A16 panel kernel (placed so by QuantLayoutFor): with
  // BF16 activations on AVX512-BF16 CPUs the vdpbf16ps one (W4A16Bf16); with F32 activations
  // AVX-512's where the CPU has it, else AVX2's (the same bits).
  bool W4A16Panels(const QuantTensor& w) const;
  bool W4A16Bf16(const QuantTensor& w) const;
  void RunW4A16Panels(const cpu::QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                      int64_t n1) const;
  // x for that kernel (into xp_ or xb_, and xsum_): BF16 in pair order, or F32 prescaled per
  // element; summed per group of 128.
  void PrepareW4A16X(const Tensor& x, int64_t t_rows, cpu::QuantLinearTask& task);
  // The 4-bit / int8 kernels that run quantized weights as one job with x prepared once.
  enum class QuantKernel { kOther, kNibbleBf16, kInt8, kW4A16Panels };
  QuantKernel QuantKernelFor(const QuantTensor& w) const;
  // LinearMany of quantized parts that all take the same such kernel (vdpbf16ps 4-bit or int8)
  // on the same x layout; false: not applicable.
  bool LinearManyQuant(const Tensor& x, std::span<const LinearOut> parts);
  // LinearRowGroups of quantized / dense weights of one kernel family; false: not applicable.
  bool LinearRowGroupsQuant(const Tensor& x, std::span<const RowGroupLinear> groups);
  bool LinearRowGroupsDense(const Tensor& x, std::span<const RowGroupLinear> groups);
  // Points `to` at the x that `from` was prepared with (every prepared form of it).
  static void ShareQuantX(const cpu::QuantLinearTask& from, cpu::QuantLinearTask& to);
  static void ShareDenseX(const cpu::LinearTask& from, cpu::LinearTask& to);
  // The one-job quantized paths (LinearMany, LinearRowGroups): x prepared for `kind` into `task`
  // (returns the int8 kernel for kInt8, else kNone), and a range run on `kind`'s kernel.
  Int8Isa PrepareQuantX(QuantKernel kind, const Tensor& x, const QuantTensor& w, int64_t t_rows,
                        cpu::QuantLinearTask& task);
  void RunQuant(QuantKernel kind, Int8Isa isa, const cpu::QuantLinearTask& task, int64_t t0,
                int64_t t1, int64_t n0, int64_t n1) const;
  // QuantLinear with Highway's kernels (CPUs without AVX-512, or formats it lacks).
  void QuantLinearSimd(const cpu::QuantLinearTask& task, int64_t t_rows);
  // Converts a small F32/BF16/F16 vector (bias, norm weight) to F32 into `dst`.
  const float* ToF32(const Tensor& t, std::vector<float>& dst);
  void EnsureRopeTable(const RopeSpec& rope, int64_t max_pos);
  // Runs fn(n0, n1, thread) over ranges of the weight rows [0, n) that start at multiples of
  // `unit`, spread over the pool; `row_cost`: multiply-adds per weight row (T x K).
  template <class Fn>
  void ForEachColumnRange(int64_t n, int64_t row_cost, Fn&& fn, int64_t unit = 16,
                          Ranges ranges = Ranges::kShrinking);
  // LinearMany's one job: several parts' units side by side, part i owning units
  // [unit_start[i], unit_start[i + 1]); runs fn(i, u0, u1) for each range cut at part
  // boundaries, u0 and u1 counted from the part's first unit.
  template <class Fn>
  void ForEachPartRange(std::span<const int64_t> unit_start, int64_t min_units, Fn&& fn,
                        Ranges ranges = Ranges::kShrinking);
  // Runs fn(r0, r1) over ranges of the rows [0, rows) of `row_elems` elements each (x rows to
  // prepare, rows to normalize).
  template <class Fn>
  void ForEachRowRange(int64_t rows, int64_t row_elems, Fn&& fn);
  // Runs fn(i0, i1) over ranges of [0, n) that start at multiples of 16.
  template <class Fn>
  void ForEachElementRange(int64_t n, Fn&& fn);

  cpu::CpuFeatures features_;
  cpu::Bf16Path bf16_path_;
  // ReadsRowTiles for 16-bit and 32-bit weights, fixed per CPU (asked once, not per Linear).
  bool row_tiles_16_ = false, row_tiles_32_ = false;
  bool int8_activations_;
  std::vector<uint16_t> xb_;
  std::vector<float> xp_;
  std::vector<float> xsum_;  // per-block sums of x for the 4-bit kernels
  std::vector<int8_t> xq_;   // x quantized to int8 (QuantLinearInt8)
  std::vector<float> xaux_;  // its lane scales and corrections
  std::vector<float> bias_;
  static constexpr size_t kMaxLinearParts = 4;
  std::array<std::vector<float>, kMaxLinearParts> part_bias_;  // LinearMany's converted biases
  // LinearRowGroups' per-group tasks and each group's first unit of the job.
  std::vector<cpu::QuantLinearTask> group_quant_tasks_;
  std::vector<cpu::LinearTask> group_dense_tasks_;
  std::vector<int64_t> group_units_;
  std::vector<float> norm_w_;
  RopeSpec rope_spec_;  // the table's
  int64_t rope_rows_ = 0;
  std::vector<float> rope_cos_, rope_sin_;  // [rope_rows_, dim / 2]
  std::vector<std::vector<float>> scores_;  // per thread
  std::vector<std::vector<float>> panels_;  // per thread: dequantized weight rows
  // Per thread: the cache row offsets of one query row's keys (slot * hkv * d, the KV head's
  // d * kvh added to the base pointers), and which row they are for (-1: none yet this call).
  std::vector<std::vector<int64_t>> offsets_;
  std::vector<int64_t> offsets_row_;
  std::vector<int32_t> seq_of_;
};

}  // namespace xinfer
