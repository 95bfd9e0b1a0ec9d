// FastCpuOps' quantized Linear: which kernel takes a quantized weight (int8 activations on
// AVX512-VNNI / AVX2 / ARM64 DotProd, the vdpbf16ps 4-bit kernel, the F32-activation AVX-512
// kernels, Highway's panel path), x prepared in that kernel's layout, and LinearMany of quantized
// parts as one job. See fast_cpu_ops.h for ownership and threading.
#include <algorithm>
#include <array>

#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/fast_cpu_ops_internal.h"

namespace xinfer {

using fast_cpu_ops_internal::CeilDiv;
using fast_cpu_ops_internal::GrowTo;
using fast_cpu_ops_internal::kMinParallelMacs;
using fast_cpu_ops_internal::MinUnits;

FastCpuOps::Int8Isa FastCpuOps::Int8IsaFor(const QuantTensor& w) const {
  // Weights in the panel layouts (QuantLayoutFor) have one reader per CPU: the broadcast-x
  // kernel, AVX-512 where the CPU has AVX512-VNNI, else AVX2's (the same bits).
  if (w.data.layout() != Layout::kRowMajor) {
    if (cpu::avx512::Int8PanelsSupports(w, features_)) return Int8Isa::kAvx512Panels;
    return cpu::avx2::Int8PanelsSupports(w, features_) ? Int8Isa::kAvx2 : Int8Isa::kNone;
  }
  if (features_.avx512 && cpu::avx512::Int8DotSupports(w, features_)) return Int8Isa::kAvx512;
  if (cpu::avx2::Int8DotSupports(w, features_)) return Int8Isa::kAvx2;
  if (cpu::neon::Int8DotSupports(w, features_)) return Int8Isa::kNeon;
  return Int8Isa::kNone;
}

FastCpuOps::Ranges FastCpuOps::RangesFor(int64_t t_rows, Int8Isa isa) {
  // One row of x on the AVX-512 int8 panels streams its weights at the memory's rate only as one
  // long stream per thread: the AWQ decode step's 4-bit layers 0.66 -> 0.81 of the plain read in
  // a 2-core Zen 4's fast minutes, 0.89 -> 0.99 in its slow ones, together with no software
  // prefetch there (`stream_prefetch_bench` awq_layers_int8; docs/performance.md, session 27).
  // Batched calls keep the shrinking ranges: they are compute-bound, and the short last ranges
  // keep the threads' finishing times close.
  return t_rows == 1 && isa == Int8Isa::kAvx512Panels ? Ranges::kEqual : Ranges::kShrinking;
}

bool FastCpuOps::UsesInt8Activations(const QuantTensor& w) const {
  const bool uses = int8_activations_ && Int8IsaFor(w) != Int8Isa::kNone;
  // Only the broadcast-x kernels read the panel layouts, and PlaceWeights stores them only for
  // them: the int8 ones, or AVX2's W4A16 one for AWQ without int8 activations.
  XI_CHECK_MSG(uses || w.data.layout() == Layout::kRowMajor || W4A16Panels(w),
               "a quantized weight in a panel layout needs its panel kernel (QuantLayoutFor)");
  return uses;
}

bool FastCpuOps::W4A16Panels(const QuantTensor& w) const {
  // On AVX-512 CPUs too: the AVX-512 panel kernel runs ~1.5-2x the row-major vdpbf16ps one's FLOPs
  // at T >= 16 and about its rate at T = 1 (2-core Zen 4, docs/performance.md, session 19).
  return !int8_activations_ && cpu::avx2::W4A16PanelsSupports(w, features_);
}

bool FastCpuOps::W4A16Bf16(const QuantTensor& w) const {
  // Under --dtype bfloat16 on AVX512-BF16 CPUs: x rounded to BF16 as every other Linear of that
  // path, two weights per vdpbf16ps (2-core Zen 4, kernel_bench: T = 1 from cache 37 -> 50-61
  // GB/s, from DRAM 25 -> 33-36; T = 16 and 64 ~216 -> 360-408 GFLOP/s; docs/performance.md,
  // session 25).
  // XINFER_W4A16_BF16=0 keeps the F32-activation kernel (A/B measurements).
  static const bool enabled = fast_cpu_ops_internal::EnvSwitchOn("XINFER_W4A16_BF16");
  return enabled && bf16_path_ == cpu::Bf16Path::kBf16Dot && W4A16Panels(w) &&
         cpu::avx512::W4A16Bf16PanelsSupports(w, features_);
}

void FastCpuOps::RunW4A16Panels(const cpu::QuantLinearTask& task, int64_t t0, int64_t t1,
                                int64_t n0, int64_t n1) const {
  // PrepareW4A16X gave BF16 x (task.xs) exactly when W4A16Bf16 holds.
  if (task.xs != nullptr) return cpu::avx512::QuantLinearW4A16Bf16Panels(task, t0, t1, n0, n1);
  if (features_.avx512) return cpu::avx512::QuantLinearW4A16Panels(task, t0, t1, n0, n1);
  cpu::avx2::QuantLinearW4A16Panels(task, t0, t1, n0, n1);
}

Layout FastCpuOps::QuantLayoutFor(const QuantTensor& w) const {
  static const bool int8_enabled = fast_cpu_ops_internal::EnvSwitchOn("XINFER_INT8_PANELS");
  static const bool w4a16_enabled = fast_cpu_ops_internal::EnvSwitchOn("XINFER_W4A16_PANELS");
  if (w.data.layout() != Layout::kRowMajor || !cpu::avx2::Int8PanelsSupports(w, features_))
    return Layout::kRowMajor;
  // Every CPU with AVX2 reads them with int8 activations: AVX512-VNNI ones with the AVX-512
  // broadcast-x kernel (batched decode and prefill ~1.5-2x their row-major int8 kernel's;
  // docs/performance.md, session 14). AWQ with F32 activations on AVX2 CPUs: 2.5x the one-sequence
  // decode of Highway's dequantize-to-a-panel path (docs/performance.md, session 18); on AVX-512
  // CPUs ~1.7x the vdpbf16ps kernel's batched decode (session 19).
  if ((int8_activations_ && int8_enabled) || (W4A16Panels(w) && w4a16_enabled))
    return cpu::avx2::Int8PanelsLayout(w.type);
  return Layout::kRowMajor;
}

void FastCpuOps::RunInt8(Int8Isa isa, const cpu::QuantLinearTask& task, int64_t t0, int64_t t1,
                         int64_t n0, int64_t n1) const {
  switch (isa) {
    case Int8Isa::kAvx512:
      return cpu::avx512::QuantLinearInt8(task, t0, t1, n0, n1);
    case Int8Isa::kAvx512Panels:
      return cpu::avx512::QuantLinearInt8Panels(task, t0, t1, n0, n1);
    case Int8Isa::kAvx2:
      return cpu::avx2::QuantLinearInt8(task, t0, t1, n0, n1);
    case Int8Isa::kNeon:
      return cpu::neon::QuantLinearInt8(task, t0, t1, n0, n1);
    case Int8Isa::kNone:
      break;
  }
  XI_CHECK_MSG(false, "no int8 kernel for this weight");
}

FastCpuOps::QuantKernel FastCpuOps::QuantKernelFor(const QuantTensor& w) const {
  if (UsesInt8Activations(w)) return QuantKernel::kInt8;
  if (w.data.layout() != Layout::kRowMajor) return QuantKernel::kW4A16Panels;  // as checked above
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
        p.w->quant().cols != parts[0].w->quant().cols || QuantKernelFor(p.w->quant()) != kind ||
        p.w->quant().data.layout() != parts[0].w->quant().data.layout())
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
  const Int8Isa isa = PrepareQuantX(kind, x, parts[0].w->quant(), t_rows, tasks[0]);
  for (size_t i = 1; i < parts.size(); ++i) ShareQuantX(tasks[0], tasks[i]);
  ForEachPartRange(
      std::span(unit_start.data(), parts.size() + 1), MinUnits(kMinParallelMacs, 16 * t_rows * k),
      [&](size_t i, int64_t u0, int64_t u1) {
        RunQuant(kind, isa, tasks[i], 0, t_rows, u0 * 16, std::min(tasks[i].ldo, u1 * 16));
      },
      RangesFor(t_rows, isa));
  return true;
}

FastCpuOps::Int8Isa FastCpuOps::PrepareQuantX(QuantKernel kind, const Tensor& x,
                                              const QuantTensor& w, int64_t t_rows,
                                              cpu::QuantLinearTask& task) {
  if (kind == QuantKernel::kInt8) return PrepareInt8X(x, w, t_rows, task);
  if (kind == QuantKernel::kW4A16Panels) {
    PrepareW4A16X(x, t_rows, task);
  } else {
    PrepareNibbleBf16X(x, w.type, t_rows, task);
  }
  return Int8Isa::kNone;
}

void FastCpuOps::RunQuant(QuantKernel kind, Int8Isa isa, const cpu::QuantLinearTask& task,
                          int64_t t0, int64_t t1, int64_t n0, int64_t n1) const {
  if (kind == QuantKernel::kInt8) return RunInt8(isa, task, t0, t1, n0, n1);
  if (kind == QuantKernel::kW4A16Panels) return RunW4A16Panels(task, t0, t1, n0, n1);
  cpu::avx512::QuantLinearNibbleBf16(task, t0, t1, n0, n1);
}

void FastCpuOps::ShareQuantX(const cpu::QuantLinearTask& from, cpu::QuantLinearTask& to) {
  to.x = from.x;
  to.hi_only = from.hi_only;
  to.xs = from.xs;
  to.ldxs = from.ldxs;
  to.xsum = from.xsum;
  to.ldxsum = from.ldxsum;
  to.xq = from.xq;
  to.ldxq = from.ldxq;
  to.xaux = from.xaux;
  to.ldxaux = from.ldxaux;
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
    const Int8Isa isa = PrepareInt8X(x, w, t_rows, task);
    ForEachColumnRange(
        n, t_rows * k, [&](int64_t n0, int64_t n1, int) { RunInt8(isa, task, 0, t_rows, n0, n1); },
        16, RangesFor(t_rows, isa));
    return;
  }
  // AWQ g128 with F32 activations, placed in the int8 kernels' tiles.
  if (w.data.layout() != Layout::kRowMajor) {
    cpu::QuantLinearTask task;
    const int64_t t_rows = PrepareQuantTask(x, w, bias, out, task);
    if (t_rows == 0) return;
    PrepareW4A16X(x, t_rows, task);
    ForEachColumnRange(n, t_rows * k, [&](int64_t n0, int64_t n1, int) {
      RunW4A16Panels(task, 0, t_rows, n0, n1);
    });
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
  task.ldxsum = k / 4;  // per group of 128: 16 lane sums of x, then the same of 16 x
  task.xs = GrowTo(xb_, t_rows * task.ldxs);
  task.xsum = GrowTo(xsum_, t_rows * task.ldxsum);
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    cpu::avx512::NibbleBf16PrepareX(type, x.data<float>() + r0 * k, r1 - r0, k, k,
                                    xb_.data() + r0 * task.ldxs, task.ldxs,
                                    xsum_.data() + r0 * task.ldxsum, task.ldxsum, task.hi_only);
  });
}

void FastCpuOps::PrepareW4A16X(const Tensor& x, int64_t t_rows, cpu::QuantLinearTask& task) {
  const int64_t k = task.ldx;
  task.ldxsum = k / 128;
  if (W4A16Bf16(*task.w)) {
    task.ldxs = k;
    task.xs = GrowTo(xb_, t_rows * k);
    task.xsum = GrowTo(xsum_, t_rows * task.ldxsum);
    ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
      cpu::avx512::W4A16Bf16PrepareX(x.data<float>() + r0 * k, r1 - r0, k, k, xb_.data() + r0 * k,
                                     k, xsum_.data() + r0 * task.ldxsum, task.ldxsum);
    });
    return;
  }
  task.x = GrowTo(xp_, t_rows * k);
  task.xsum = GrowTo(xsum_, t_rows * task.ldxsum);
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    cpu::avx2::W4A16PrepareX(x.data<float>() + r0 * k, r1 - r0, k, k, xp_.data() + r0 * k, k,
                             xsum_.data() + r0 * task.ldxsum, task.ldxsum);
  });
}

FastCpuOps::Int8Isa FastCpuOps::PrepareInt8X(const Tensor& x, const QuantTensor& w, int64_t t_rows,
                                             cpu::QuantLinearTask& task) {
  const int64_t k = task.ldx;
  const Int8Isa isa = Int8IsaFor(w);
  const cpu::avx2::Int8XLayout x_layout =
      w.data.layout() == Layout::kRowMajor ? cpu::avx2::Int8XLayout::kRowKernel
      : w.type == QuantType::kAwq4         ? cpu::avx2::Int8XLayout::kAwqPanels
                                           : cpu::avx2::Int8XLayout::kQ4_0Panels;
  task.ldxq = k;
  task.ldxaux = isa == Int8Isa::kAvx512 ? cpu::avx512::Int8AuxPerRow(w.type, k)
                                        : cpu::avx2::Int8AuxPerRow(x_layout, k);
  task.xq = GrowTo(xq_, t_rows * task.ldxq);
  task.xaux = GrowTo(xaux_, t_rows * task.ldxaux);
  ForEachRowRange(t_rows, k, [&](int64_t r0, int64_t r1) {
    const float* xr = x.data<float>() + r0 * k;
    int8_t* xq = xq_.data() + r0 * task.ldxq;
    float* aux = xaux_.data() + r0 * task.ldxaux;
    if (isa == Int8Isa::kAvx512) {
      cpu::avx512::Int8PrepareX(w.type, xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux);
    } else if (isa == Int8Isa::kAvx2 || isa == Int8Isa::kAvx512Panels) {
      cpu::avx2::Int8PrepareX(xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux, x_layout);
    } else {
      cpu::neon::Int8PrepareX(xr, r1 - r0, k, k, xq, task.ldxq, aux, task.ldxaux);
    }
  });
  return isa;
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

}  // namespace xinfer
