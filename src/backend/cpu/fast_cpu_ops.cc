#include "backend/cpu/fast_cpu_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace xinfer {
namespace {

// A Linear's range of weight rows holds at least this many multiply-adds (a few microseconds):
// below that, handing it to another thread costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 15;
// Row-wise and elementwise ops: at least this many elements per range.
constexpr int64_t kMinParallelElems = 1 << 15;

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
int64_t CeilDiv(int64_t v, int64_t m) { return (v + m - 1) / m; }

// Grows scratch `v` to at least n elements (never shrinks: the largest step's size is kept).
template <class T>
T* GrowTo(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(n);
  return v.data();
}

// Fewest units of `unit_cost` multiply-adds (or elements) worth a range of their own.
int64_t MinUnits(int64_t min_cost, int64_t unit_cost) {
  return CeilDiv(min_cost, std::max<int64_t>(1, unit_cost));
}

}  // namespace

FastCpuOps::FastCpuOps(bool bf16_activations, int num_threads, bool int8_activations)
    : CpuOps(num_threads),
      features_(cpu::DetectCpuFeatures()),
      bf16_path_(cpu::SelectBf16Path(features_, bf16_activations)),
      int8_activations_(int8_activations) {
  if (features_.avx512) cpu::avx512::QuantKernelTablesInit();
}

template <class Fn>
void FastCpuOps::ForEachColumnRange(int64_t n, int64_t row_cost, Fn&& fn, int64_t unit) {
  pool().ParallelRanges(CeilDiv(n, unit), MinUnits(kMinParallelMacs, unit * row_cost),
                        [&](int64_t u0, int64_t u1, int thread) {
                          const int64_t n0 = std::min(n, u0 * unit), n1 = std::min(n, u1 * unit);
                          if (n0 < n1) fn(n0, n1, thread);
                        });
}

template <class Fn>
void FastCpuOps::ForEachPartRange(std::span<const int64_t> unit_start, int64_t min_units, Fn&& fn) {
  const size_t parts = unit_start.size() - 1;
  pool().ParallelRanges(unit_start[parts], min_units, [&](int64_t u0, int64_t u1, int) {
    for (size_t i = 0; i < parts; ++i) {
      const int64_t b = std::max(u0, unit_start[i]), e = std::min(u1, unit_start[i + 1]);
      if (b < e) fn(i, b - unit_start[i], e - unit_start[i]);
    }
  });
}

template <class Fn>
void FastCpuOps::ForEachRowRange(int64_t rows, int64_t row_elems, Fn&& fn) {
  pool().ParallelRanges(rows, MinUnits(kMinParallelElems, row_elems),
                        [&](int64_t r0, int64_t r1, int) { fn(r0, r1); });
}

template <class Fn>
void FastCpuOps::ForEachElementRange(int64_t n, Fn&& fn) {
  pool().ParallelRanges(CeilDiv(n, 16), kMinParallelElems / 16, [&](int64_t u0, int64_t u1, int) {
    const int64_t i0 = std::min(n, u0 * 16), i1 = std::min(n, u1 * 16);
    if (i0 < i1) fn(i0, i1);
  });
}

const float* FastCpuOps::ToF32(const Tensor& t, std::vector<float>& dst) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::kF32) return t.data<float>();
  if (static_cast<int64_t>(dst.size()) < n) dst.resize(n);
  const uint16_t* s = t.data<uint16_t>();
  if (t.dtype() == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToF32(s[i]);
  } else {
    XI_CHECK_MSG(t.dtype() == DType::kF16, "unsupported dtype for a bias or norm weight");
    for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(s[i]);
  }
  return dst.data();
}

bool FastCpuOps::WantsRowTiles(const Tensor& w) const {
  static const bool enabled = [] {
    const char* e = std::getenv("XINFER_ROW_TILES");
    return e == nullptr || std::string_view(e) != "0";
  }();
  if (!enabled || w.rank() != 2 || RowBytes(w) % kTileUnitBytes != 0) return false;
  const DenseKernel kind = DenseKernelFor(w);
  return kind != DenseKernel::kReference && kind != DenseKernel::kSimd;  // the AVX-512 kernels
}

FastCpuOps::DenseKernel FastCpuOps::DenseKernelFor(const Tensor& w) const {
  const DType wt = w.dtype();
  const bool supported = wt == DType::kF32 || wt == DType::kF16 ||
                         (wt == DType::kBF16 && bf16_path_ != cpu::Bf16Path::kReference);
  const bool tiled = w.layout() == Layout::kRowTiles;
  // Row tiles only come from WantsRowTiles, i.e. for the AVX-512 kernels; the reference reads
  // either layout.
  if (!(features_.avx512 || features_.simd) || !supported || (tiled && !features_.avx512))
    return DenseKernel::kReference;
  // Without AVX-512, Highway's kernels take every dtype with F32 activations as they are.
  if (!features_.avx512) return DenseKernel::kSimd;
  if (wt != DType::kBF16) return DenseKernel::kF32Acc;
  if (bf16_path_ == cpu::Bf16Path::kBf16Dot) return DenseKernel::kBf16Dot;
  // XINFER_BF16_WIDEN=shuffle keeps the older vpmovzxwd widening (for A/B measurements).
  static const bool shuffle_widen = [] {
    const char* e = std::getenv("XINFER_BF16_WIDEN");
    return e != nullptr && std::string_view(e) == "shuffle";
  }();
  return shuffle_widen ? DenseKernel::kF32Acc : DenseKernel::kBf16Widen;
}

int64_t FastCpuOps::PrepareDenseTask(const Tensor& x, const Tensor& w, const Tensor* bias,
                                     Tensor& out, std::vector<float>& bias_scratch,
                                     cpu::LinearTask& task) {
  XI_CHECK(w.rank() == 2 && x.dtype() == DType::kF32 && out.dtype() == DType::kF32);
  const int64_t k = w.dim(1), n = w.dim(0);
  XI_CHECK(k > 0 && x.numel() % k == 0);
  const int64_t t_rows = x.numel() / k;
  XI_CHECK(out.numel() == t_rows * n);
  task.x = x.data<float>();
  task.ldx = k;
  task.w = w.raw();
  task.wdtype = w.dtype();
  task.tiled = w.layout() == Layout::kRowTiles;
  task.k = k;
  task.out = out.data<float>();
  task.ldo = n;
  if (bias != nullptr) {
    XI_CHECK(bias->numel() == n);
    task.bias = ToF32(*bias, bias_scratch);
  }
  return t_rows;
}

void FastCpuOps::PrepareDenseX(DenseKernel kind, int64_t t_rows, cpu::LinearTask& task) {
  const int64_t k = task.k;
  if (kind == DenseKernel::kBf16Dot) {
    task.ldxb = RoundUp(k, 32);
    const size_t need = static_cast<size_t>(t_rows * task.ldxb);
    if (xb_.size() < need) xb_.resize(need);
    task.xb = xb_.data();
  } else if (kind == DenseKernel::kBf16Widen) {
    task.ldxp = RoundUp(k, 32);
    const size_t need = static_cast<size_t>(t_rows * task.ldxp);
    if (xp_.size() < need) xp_.resize(need);
    task.xp = xp_.data();
  } else {
    return;
  }
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    if (kind == DenseKernel::kBf16Dot) {
      cpu::avx512::RoundRowsToBf16(task.x + r0 * k, r1 - r0, k, xb_.data() + r0 * task.ldxb,
                                   task.ldxb);
    } else {
      cpu::avx512::PermuteEvenOdd(task.x + r0 * k, r1 - r0, k, xp_.data() + r0 * task.ldxp,
                                  task.ldxp);
    }
  });
}

void FastCpuOps::RunDense(DenseKernel kind, const cpu::LinearTask& task, int64_t t_rows, int64_t n0,
                          int64_t n1) {
  switch (kind) {
    case DenseKernel::kSimd:
      return cpu::simd::Linear(task, 0, t_rows, n0, n1);
    case DenseKernel::kBf16Dot:
      return cpu::avx512::LinearBf16Dot(task, 0, t_rows, n0, n1);
    case DenseKernel::kBf16Widen:
      return cpu::avx512::LinearBf16Widen(task, 0, t_rows, n0, n1);
    case DenseKernel::kF32Acc:
      return cpu::avx512::LinearF32Acc(task, 0, t_rows, n0, n1);
    case DenseKernel::kReference:
      break;
  }
  XI_CHECK_MSG(false, "RunDense on the reference path");
}

// Ranges of weight rows start at multiples of 16, or of whole row tiles for tiled weights; each
// range runs with every row of x, so an element's arithmetic never depends on the split.
int64_t FastCpuOps::ColumnUnit(const cpu::LinearTask& task) { return task.tiled ? kTileRows : 16; }

void FastCpuOps::Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const DenseKernel kind = DenseKernelFor(w);
  if (kind == DenseKernel::kReference) return CpuOps::Linear(x, w, bias, out);
  cpu::LinearTask task;
  const int64_t t_rows = PrepareDenseTask(x, w, bias, out, bias_, task);
  if (t_rows == 0 || task.ldo == 0) return;
  PrepareDenseX(kind, t_rows, task);
  ForEachColumnRange(
      task.ldo, t_rows * task.k,
      [&](int64_t n0, int64_t n1, int) { RunDense(kind, task, t_rows, n0, n1); }, ColumnUnit(task));
}

void FastCpuOps::LinearMany(const Tensor& x, std::span<const LinearOut> parts) {
  if (LinearManyQuant(x, parts)) return;
  // One kernel family for all parts, or each part on its own.
  DenseKernel kind = DenseKernel::kReference;
  bool same = !parts.empty() && parts.size() <= kMaxLinearParts;
  for (size_t i = 0; same && i < parts.size(); ++i) {
    same = !parts[i].w->quantized() && parts[i].w->dense().dtype() == parts[0].w->dense().dtype();
    if (same) {
      const DenseKernel k = DenseKernelFor(parts[i].w->dense());
      same = k != DenseKernel::kReference && (i == 0 || k == kind);
      kind = k;
    }
  }
  if (!same) return Ops::LinearMany(x, parts);
  std::array<cpu::LinearTask, kMaxLinearParts> tasks;
  std::array<int64_t, kMaxLinearParts + 1> unit_start{};  // each part's first unit of the job
  int64_t t_rows = 0, macs_per_unit = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t rows = PrepareDenseTask(x, parts[i].w->dense(), parts[i].bias, *parts[i].out,
                                          part_bias_[i], tasks[i]);
    XI_CHECK(i == 0 || (rows == t_rows && tasks[i].k == tasks[0].k));
    t_rows = rows;
    unit_start[i + 1] = unit_start[i] + CeilDiv(tasks[i].ldo, ColumnUnit(tasks[i]));
    macs_per_unit = std::max(macs_per_unit, ColumnUnit(tasks[i]) * t_rows * tasks[i].k);
  }
  if (t_rows == 0) return;
  // x is prepared once (same x for every part), into the scratch all tasks then point at.
  PrepareDenseX(kind, t_rows, tasks[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    tasks[i].xb = tasks[0].xb;
    tasks[i].ldxb = tasks[0].ldxb;
    tasks[i].xp = tasks[0].xp;
    tasks[i].ldxp = tasks[0].ldxp;
  }
  ForEachPartRange(std::span(unit_start.data(), parts.size() + 1),
                   MinUnits(kMinParallelMacs, macs_per_unit),
                   [&](size_t i, int64_t u0, int64_t u1) {
                     const int64_t unit = ColumnUnit(tasks[i]);
                     RunDense(kind, tasks[i], t_rows, u0 * unit, std::min(tasks[i].ldo, u1 * unit));
                   });
}

FastCpuOps::Int8Isa FastCpuOps::Int8IsaFor(const QuantTensor& w) const {
  if (features_.avx512 && cpu::avx512::Int8DotSupports(w, features_)) return Int8Isa::kAvx512;
  if (cpu::avx2::Int8DotSupports(w, features_)) return Int8Isa::kAvx2;
  if (cpu::neon::Int8DotSupports(w, features_)) return Int8Isa::kNeon;
  return Int8Isa::kNone;
}

bool FastCpuOps::UsesInt8Activations(const QuantTensor& w) const {
  return int8_activations_ && Int8IsaFor(w) != Int8Isa::kNone;
}

void FastCpuOps::RunInt8(const cpu::QuantLinearTask& task, int64_t t_rows, int64_t n0,
                         int64_t n1) const {
  switch (Int8IsaFor(*task.w)) {
    case Int8Isa::kAvx512:
      return cpu::avx512::QuantLinearInt8(task, 0, t_rows, n0, n1);
    case Int8Isa::kAvx2:
      return cpu::avx2::QuantLinearInt8(task, 0, t_rows, n0, n1);
    case Int8Isa::kNeon:
      return cpu::neon::QuantLinearInt8(task, 0, t_rows, n0, n1);
    case Int8Isa::kNone:
      break;
  }
  XI_CHECK_MSG(false, "no int8 kernel for this weight");
}

FastCpuOps::QuantKernel FastCpuOps::QuantKernelFor(const QuantTensor& w) const {
  if (UsesInt8Activations(w)) return QuantKernel::kInt8;
  if (!features_.avx512 || !cpu::avx512::QuantKernelSupports(w)) return QuantKernel::kOther;
  if (cpu::avx512::NibbleBf16Supports(w, features_)) return QuantKernel::kNibbleBf16;
  return QuantKernel::kOther;
}

// Quantized parts that all take the vdpbf16ps 4-bit kernel (AWQ g128 / Q4_0), or all the int8
// one, with one x layout (same format and K): one job, x prepared once.
bool FastCpuOps::LinearManyQuant(const Tensor& x, std::span<const LinearOut> parts) {
  if (parts.empty() || parts.size() > kMaxLinearParts || !parts[0].w->quantized()) return false;
  const QuantKernel kind = QuantKernelFor(parts[0].w->quant());
  if (kind == QuantKernel::kOther) return false;
  for (const LinearOut& p : parts)
    if (!p.w->quantized() || p.w->quant().type != parts[0].w->quant().type ||
        p.w->quant().cols != parts[0].w->quant().cols || QuantKernelFor(p.w->quant()) != kind)
      return false;
  std::array<cpu::QuantLinearTask, kMaxLinearParts> tasks;
  std::array<int64_t, kMaxLinearParts + 1> unit_start{};
  int64_t t_rows = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    t_rows = PrepareQuantTask(x, parts[i].w->quant(), parts[i].bias, *parts[i].out, tasks[i],
                              &part_bias_[i]);
    if (t_rows == 0) return false;  // nothing to compute: separate calls return at once
    unit_start[i + 1] = unit_start[i] + CeilDiv(parts[i].w->quant().rows, 16);
  }
  const int64_t k = parts[0].w->quant().cols;
  if (kind == QuantKernel::kInt8) {
    PrepareInt8X(x, parts[0].w->quant(), t_rows, tasks[0]);
  } else {
    PrepareNibbleBf16X(x, parts[0].w->quant().type, t_rows, tasks[0]);
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    tasks[i].hi_only = tasks[0].hi_only;
    tasks[i].xs = tasks[0].xs;
    tasks[i].ldxs = tasks[0].ldxs;
    tasks[i].xsum = tasks[0].xsum;
    tasks[i].ldxsum = tasks[0].ldxsum;
    tasks[i].xq = tasks[0].xq;
    tasks[i].ldxq = tasks[0].ldxq;
    tasks[i].xaux = tasks[0].xaux;
    tasks[i].ldxaux = tasks[0].ldxaux;
  }
  ForEachPartRange(std::span(unit_start.data(), parts.size() + 1),
                   MinUnits(kMinParallelMacs, 16 * t_rows * k),
                   [&](size_t i, int64_t u0, int64_t u1) {
                     const int64_t n0 = u0 * 16, n1 = std::min(tasks[i].ldo, u1 * 16);
                     if (kind == QuantKernel::kInt8) {
                       RunInt8(tasks[i], t_rows, n0, n1);
                     } else {
                       cpu::avx512::QuantLinearNibbleBf16(tasks[i], 0, t_rows, n0, n1);
                     }
                   });
  return true;
}

void FastCpuOps::QuantLinear(const Tensor& x, const QuantTensor& w, const Tensor* bias,
                             Tensor& out) {
  const int64_t k = w.cols, n = w.rows;
  // GGUF Q4_0 / Q5_0 / Q8_0 / K-quants and AWQ g128 with int8 activations (--int8-activations)
  // on AVX512-VNNI CPUs.
  if (UsesInt8Activations(w)) {
    cpu::QuantLinearTask task;
    const int64_t t_rows = PrepareQuantTask(x, w, bias, out, task);
    if (t_rows == 0) return;
    PrepareInt8X(x, w, t_rows, task);
    ForEachColumnRange(n, t_rows * k,
                       [&](int64_t n0, int64_t n1, int) { RunInt8(task, t_rows, n0, n1); });
    return;
  }
  // Highway's kernels take every format on CPUs without AVX-512, and on AVX-512 CPUs the formats
  // the AVX-512 kernels do not (Q5_0, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K: Highway's AVX-512 target, not
  // the reference).
  const bool avx512 = features_.avx512 && cpu::avx512::QuantKernelSupports(w);
  if (!avx512 && !features_.simd) return CpuOps::QuantLinear(x, w, bias, out);
  cpu::QuantLinearTask task;
  const int64_t t_rows = PrepareQuantTask(x, w, bias, out, task);
  if (t_rows == 0) return;
  if (!avx512) return QuantLinearSimd(task, t_rows);
  // AWQ g128 and Q4_0 on AVX512-BF16 CPUs: vdpbf16ps with x split in two BF16 halves, or with
  // BF16 activations (the hi halves only) under --dtype bfloat16.
  if (cpu::avx512::NibbleBf16Supports(w, features_)) {
    PrepareNibbleBf16X(x, w.type, t_rows, task);
    ForEachColumnRange(n, t_rows * k, [&](int64_t n0, int64_t n1, int) {
      cpu::avx512::QuantLinearNibbleBf16(task, 0, t_rows, n0, n1);
    });
    return;
  }
  const bool permute = w.type == QuantType::kAwq4;
  if (permute) {
    const size_t need = static_cast<size_t>(t_rows * k);
    if (xp_.size() < need) xp_.resize(need);
    task.x = xp_.data();
  }
  const bool q8 = w.type == QuantType::kQ8_0;
  int64_t sum_block = 0;
  if (!q8) {
    sum_block = cpu::avx512::QuantBlockElemsForSums(w);
    task.ldxsum = k / sum_block * 16;
    const size_t need = static_cast<size_t>(t_rows * task.ldxsum);
    if (xsum_.size() < need) xsum_.resize(need);
    task.xsum = xsum_.data();
  }
  const bool q8_direct = t_rows <= cpu::kQ8DirectMaxRows;
  // Q8_0 panel path: each thread dequantizes blocks of its weight rows into an L2-sized F32 panel
  // and multiplies all T rows of x with it, so dequantization is paid once per call.
  const int64_t panel_rows = std::max<int64_t>(16, (256 << 10) / (k * 4) / 16 * 16);
  if (q8 && !q8_direct && static_cast<int>(panels_.size()) < num_threads())
    panels_.resize(num_threads());
  if (permute || !q8) {
    ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
      if (permute)
        cpu::avx512::PermuteEvenOdd(x.data<float>() + r0 * k, r1 - r0, k, xp_.data() + r0 * k, k);
      if (!q8)
        cpu::avx512::QuantBlockSums(task.x + r0 * k, r1 - r0, k, k, sum_block,
                                    w.type == QuantType::kQ4_0 ? -1.5f : 1.f,
                                    xsum_.data() + r0 * task.ldxsum, task.ldxsum);
    });
  }
  ForEachColumnRange(n, t_rows * k, [&](int64_t n0, int64_t n1, int thread) {
    if (!q8) {
      cpu::avx512::QuantLinearNibble(task, 0, t_rows, n0, n1);
    } else if (q8_direct) {
      cpu::avx512::QuantLinearQ8Direct(task, 0, t_rows, n0, n1);
    } else {
      std::vector<float>& panel = panels_[thread];
      if (static_cast<int64_t>(panel.size()) < panel_rows * k) panel.resize(panel_rows * k);
      for (int64_t bs = n0; bs < n1; bs += panel_rows) {
        const int64_t be = std::min(n1, bs + panel_rows);
        cpu::avx512::DequantizeRowsQ8(w, bs, be, panel.data());
        cpu::LinearTask dense;
        dense.x = task.x;
        dense.ldx = k;
        dense.w = panel.data();
        dense.wdtype = DType::kF32;
        dense.k = k;
        dense.bias = task.bias != nullptr ? task.bias + bs : nullptr;
        dense.out = task.out + bs;
        dense.ldo = n;
        cpu::avx512::LinearF32Acc(dense, 0, t_rows, 0, be - bs);
      }
    }
  });
}

int64_t FastCpuOps::PrepareQuantTask(const Tensor& x, const QuantTensor& w, const Tensor* bias,
                                     Tensor& out, cpu::QuantLinearTask& task,
                                     std::vector<float>* bias_scratch) {
  XI_CHECK(x.dtype() == DType::kF32 && out.dtype() == DType::kF32);
  const int64_t k = w.cols, n = w.rows;
  XI_CHECK(k > 0 && x.numel() % k == 0);
  const int64_t t_rows = x.numel() / k;
  XI_CHECK(out.numel() == t_rows * n);
  if (t_rows == 0 || n == 0) return 0;
  task.x = x.data<float>();
  task.ldx = k;
  task.w = &w;
  task.out = out.data<float>();
  task.ldo = n;
  if (bias != nullptr) {
    XI_CHECK(bias->numel() == n);
    task.bias = ToF32(*bias, bias_scratch != nullptr ? *bias_scratch : bias_);
  }
  return t_rows;
}

void FastCpuOps::PrepareNibbleBf16X(const Tensor& x, QuantType type, int64_t t_rows,
                                    cpu::QuantLinearTask& task) {
  const int64_t k = task.ldx;
  task.hi_only = bf16_path_ == cpu::Bf16Path::kBf16Dot;
  task.ldxs = 2 * k;
  task.ldxsum = k / 8;
  task.xs = GrowTo(xb_, t_rows * task.ldxs);
  task.xsum = GrowTo(xsum_, t_rows * task.ldxsum);
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    cpu::avx512::NibbleBf16PrepareX(type, x.data<float>() + r0 * k, r1 - r0, k, k,
                                    xb_.data() + r0 * task.ldxs, task.ldxs,
                                    xsum_.data() + r0 * task.ldxsum, task.ldxsum, task.hi_only);
  });
}

void FastCpuOps::PrepareInt8X(const Tensor& x, const QuantTensor& w, int64_t t_rows,
                              cpu::QuantLinearTask& task) {
  const int64_t k = task.ldx;
  const Int8Isa isa = Int8IsaFor(w);
  task.ldxq = k;
  task.ldxaux = isa == Int8Isa::kAvx512 ? cpu::avx512::Int8AuxPerRow(w.type, k) : k / 16;
  task.xq = GrowTo(xq_, t_rows * task.ldxq);
  task.xaux = GrowTo(xaux_, t_rows * task.ldxaux);
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    const float* xr = x.data<float>() + r0 * k;
    int8_t* xq = xq_.data() + r0 * task.ldxq;
    float* aux = xaux_.data() + r0 * task.ldxaux;
    if (isa == Int8Isa::kAvx512) {
      cpu::avx512::Int8PrepareX(w.type, xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux);
    } else if (isa == Int8Isa::kAvx2) {
      cpu::avx2::Int8PrepareX(xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux);
    } else {
      cpu::neon::Int8PrepareX(xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux);
    }
  });
}

void FastCpuOps::QuantLinearSimd(const cpu::QuantLinearTask& task, int64_t t_rows) {
  const int64_t k = task.w->cols, n = task.w->rows;
  const int64_t panel_rows = cpu::simd::QuantPanelRows(t_rows, k);
  const int nth = num_threads();
  if (static_cast<int>(panels_.size()) < nth) panels_.resize(nth);
  for (int i = 0; i < nth; ++i)
    if (static_cast<int64_t>(panels_[i].size()) < panel_rows * k) panels_[i].resize(panel_rows * k);
  ForEachColumnRange(n, t_rows * k, [&](int64_t n0, int64_t n1, int thread) {
    cpu::simd::QuantLinear(task, 0, t_rows, n0, n1, panels_[thread].data(), panel_rows);
  });
}

void FastCpuOps::RmsNorm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  if (!features_.avx512 && !features_.simd) return CpuOps::RmsNorm(x, weight, eps, out);
  const int64_t n = weight.numel();
  XI_CHECK(n > 0 && x.numel() % n == 0 && out.numel() == x.numel());
  const int64_t rows = x.numel() / n;
  const float* w = ToF32(weight, norm_w_);
  const float* xs = x.data<float>();
  float* os = out.data<float>();
  ForEachRowRange(rows, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      if (features_.avx512) {
        cpu::avx512::RmsNormRow(xs + r * n, w, n, eps, os + r * n);
      } else {
        cpu::simd::RmsNormRow(xs + r * n, w, n, eps, os + r * n);
      }
    }
  });
}

void FastCpuOps::EnsureRopeTable(double theta, int64_t dim, int64_t max_pos) {
  if (theta == rope_theta_ && dim == rope_dim_ && max_pos <= rope_rows_) return;
  if (theta != rope_theta_ || dim != rope_dim_) rope_rows_ = 0;
  const int64_t half = dim / 2;
  // Doubling keeps decode (one new position per step) from rebuilding the table every step.
  const int64_t rows = std::max<int64_t>(4096, RoundUp(max_pos, 4096) * 2);
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(dim));
  rope_cos_.resize(rows * half);
  rope_sin_.resize(rows * half);
  // Same formula as the reference (double angle, rounded to float), so results match it bitwise.
  for (int64_t p = rope_rows_; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(static_cast<int32_t>(p)) * inv_freq[i];
      rope_cos_[p * half + i] = static_cast<float>(std::cos(angle));
      rope_sin_[p * half + i] = static_cast<float>(std::sin(angle));
    }
  rope_theta_ = theta;
  rope_dim_ = dim;
  rope_rows_ = rows;
}

void FastCpuOps::Rope(Tensor& x, std::span<const int32_t> positions, double theta) {
  XI_CHECK(x.rank() == 3 && x.dim(0) == static_cast<int64_t>(positions.size()));
  const int64_t t_rows = x.dim(0), heads = x.dim(1), dim = x.dim(2), half = dim / 2;
  int32_t max_pos = 0;
  for (int32_t p : positions) {
    XI_CHECK(p >= 0);
    max_pos = std::max(max_pos, p);
  }
  EnsureRopeTable(theta, dim, static_cast<int64_t>(max_pos) + 1);
  float* xs = x.data<float>();
  ForEachRowRange(t_rows, heads * dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* c = rope_cos_.data() + positions[t] * half;
      const float* s = rope_sin_.data() + positions[t] * half;
      for (int64_t h = 0; h < heads; ++h) {
        float* v = xs + (t * heads + h) * dim;
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = v[i], x2 = v[i + half];
          v[i] = x1 * c[i] - x2 * s[i];
          v[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  });
}

void FastCpuOps::SiluMul(const Tensor& gate, const Tensor& up, Tensor& out) {
  if (!features_.avx512 && !features_.simd) return CpuOps::SiluMul(gate, up, out);
  XI_CHECK(gate.numel() == up.numel() && out.numel() == gate.numel());
  const int64_t n = gate.numel();
  const float* g = gate.data<float>();
  const float* u = up.data<float>();
  float* o = out.data<float>();
  ForEachElementRange(n, [&](int64_t i0, int64_t i1) {
    if (features_.avx512) {
      cpu::avx512::SiluMul(g + i0, u + i0, i1 - i0, o + i0);
    } else {
      cpu::simd::SiluMul(g + i0, u + i0, i1 - i0, o + i0);
    }
  });
}

void FastCpuOps::Add(const Tensor& a, const Tensor& b, Tensor& out) {
  if (!features_.avx512 && !features_.simd) return CpuOps::Add(a, b, out);
  XI_CHECK(a.numel() == b.numel() && out.numel() == a.numel());
  const int64_t n = a.numel();
  const float* as = a.data<float>();
  const float* bs = b.data<float>();
  float* os = out.data<float>();
  ForEachElementRange(n, [&](int64_t i0, int64_t i1) {
    if (features_.avx512) {
      cpu::avx512::Add(as + i0, bs + i0, i1 - i0, os + i0);
    } else {
      cpu::simd::Add(as + i0, bs + i0, i1 - i0, os + i0);
    }
  });
}

void FastCpuOps::PagedAttention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                const PagedAttentionBatch& b, Tensor& out) {
  XI_CHECK(q.rank() == 3 && k_cache.rank() == 3 && v_cache.rank() == 3);
  const int64_t t_rows = q.dim(0), hq = q.dim(1), d = q.dim(2), hkv = k_cache.dim(1);
  const bool avx512 = features_.avx512 && d % 16 == 0;
  const bool simd = !features_.avx512 && features_.simd && cpu::simd::AttentionSupports(d);
  if (!avx512 && !simd) return CpuOps::PagedAttention(q, k_cache, v_cache, b, out);
  XI_CHECK(k_cache.dim(2) == d && hq % hkv == 0 && out.numel() == q.numel());
  XI_CHECK(v_cache.numel() == k_cache.numel());
  XI_CHECK(static_cast<int64_t>(b.positions.size()) == t_rows && b.block_size > 0);
  const int64_t num_seqs = static_cast<int64_t>(b.query_start.size()) - 1;
  XI_CHECK(num_seqs >= 0 && b.query_start[num_seqs] == t_rows);
  const int64_t group = hq / hkv;
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const int64_t num_slots = k_cache.dim(0);
  const int64_t max_keys = static_cast<int64_t>(b.max_blocks_per_seq) * b.block_size;
  if (static_cast<int64_t>(seq_of_.size()) < t_rows) seq_of_.resize(t_rows);
  for (int64_t s = 0; s < num_seqs; ++s)
    for (int32_t t = b.query_start[s]; t < b.query_start[s + 1]; ++t) seq_of_[t] = s;
  const int nth = num_threads();
  if (static_cast<int>(scores_.size()) < nth) {
    scores_.resize(nth);
    offsets_.resize(nth);
  }
  for (int i = 0; i < nth; ++i) {
    if (static_cast<int64_t>(scores_[i].size()) < 4 * max_keys + 16)
      scores_[i].resize(4 * max_keys + 16);
    if (static_cast<int64_t>(offsets_[i].size()) < max_keys) offsets_[i].resize(max_keys);
  }
  const float* qs = q.data<float>();
  const float* ks = k_cache.data<float>();
  const float* vs = v_cache.data<float>();
  float* os = out.data<float>();
  const bool grouped = avx512 && cpu::avx512::AttentionGroupSupports(d);
  // One work item per (query row, KV head): its `group` query heads share the K/V rows.
  auto attend = [&](int64_t item, int thread) {
    const int64_t t = item / hkv, kvh = item % hkv;
    float* scores = scores_[thread].data();
    int64_t* off = offsets_[thread].data();
    const int32_t* table = b.block_tables.data() + seq_of_[t] * b.max_blocks_per_seq;
    const int64_t n_keys = b.positions[t] + 1;
    XI_CHECK(n_keys <= max_keys);
    for (int64_t p = 0; p < n_keys; ++p) {
      const int64_t slot =
          static_cast<int64_t>(table[p / b.block_size]) * b.block_size + p % b.block_size;
      XI_CHECK(slot >= 0 && slot < num_slots);
      off[p] = (slot * hkv + kvh) * d;
    }
    if (grouped) {
      // Up to 4 of the group's query heads per call share each K/V row load.
      for (int64_t h = kvh * group; h < (kvh + 1) * group; h += 4) {
        const int heads = static_cast<int>(std::min<int64_t>(4, (kvh + 1) * group - h));
        cpu::avx512::AttentionGroup(qs + (t * hq + h) * d, d, heads, ks, vs, off, n_keys, d, scale,
                                    scores, os + (t * hq + h) * d, d);
      }
      return;
    }
    for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
      if (simd) {
        cpu::simd::AttentionRow(qs + (t * hq + h) * d, ks, vs, off, n_keys, d, scale, scores,
                                os + (t * hq + h) * d);
        continue;
      }
      cpu::avx512::AttentionRow(qs + (t * hq + h) * d, ks, vs, off, n_keys, d, scale, scores,
                                os + (t * hq + h) * d);
    }
  };
  // Rows of a prefill have different lengths, hence small chunks claimed as threads come free.
  const int64_t items = t_rows * hkv;
  const int64_t per_chunk = items >= 4 * nth ? 2 : 1;
  pool().Run(CeilDiv(items, per_chunk), [&](int64_t chunk, int thread) {
    const int64_t end = std::min(items, (chunk + 1) * per_chunk);
    for (int64_t item = chunk * per_chunk; item < end; ++item) attend(item, thread);
  });
}

}  // namespace xinfer
