#include "backend/cpu/fast_cpu_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "backend/cpu/fast_cpu_ops_internal.h"

namespace xinfer {

using fast_cpu_ops_internal::CeilDiv;
using fast_cpu_ops_internal::EnvSwitchOn;
using fast_cpu_ops_internal::kMinParallelMacs;
using fast_cpu_ops_internal::MinUnits;
using fast_cpu_ops_internal::RoundUp;

FastCpuOps::FastCpuOps(bool bf16_activations, int num_threads, bool int8_activations,
                       std::vector<int> cpus)
    : CpuOps(num_threads, std::move(cpus)),
      features_(cpu::DetectCpuFeatures()),
      bf16_path_(cpu::SelectBf16Path(features_, bf16_activations)),
      int8_activations_(int8_activations) {
  if (features_.avx512) cpu::avx512::QuantKernelTablesInit();
  row_tiles_16_ = features_.avx512 || (features_.simd && cpu::simd::RowTilesFit(2));
  row_tiles_32_ = features_.avx512 || (features_.simd && cpu::simd::RowTilesFit(4));
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

Layout FastCpuOps::DenseLayoutFor(const Tensor& w) const {
  static const bool row_tiles = EnvSwitchOn("XINFER_ROW_TILES");
  static const bool panels = EnvSwitchOn("XINFER_DENSE_PANELS");
  if (w.rank() != 2 || w.layout() != Layout::kRowMajor ||
      DenseKernelFor(w) == DenseKernel::kReference)
    return Layout::kRowMajor;
  const Layout panel_layout = PanelLayout(w.dtype());
  if (panels && ReadsPanels(w.dtype()) &&
      RowBytes(w) % TileGeometryOf(panel_layout).unit_bytes == 0)
    return panel_layout;
  if (row_tiles && RowBytes(w) % kTileUnitBytes == 0 && ReadsRowTiles(w.dtype()))
    return Layout::kRowTiles;
  return Layout::kRowMajor;
}

bool FastCpuOps::ReadsPanels(DType dtype) const {
  return cpu::DensePanelsSupport(dtype, features_);
}

bool FastCpuOps::Bf16DotPanels(DType dtype) const {
  return dtype == DType::kBF16 && bf16_path_ == cpu::Bf16Path::kBf16Dot;
}

Layout FastCpuOps::PanelLayout(DType dtype) const {
  // vdpbf16ps takes k-pairs: BF16 weights under `--dtype bfloat16` are dword panels of pairs.
  return Bf16DotPanels(dtype) ? Layout::kDwordTiles64 : cpu::DensePanelsLayout(dtype, features_);
}

bool FastCpuOps::ReadsRowTiles(DType dtype) const {
  return DTypeSize(dtype) == 4 ? row_tiles_32_ : row_tiles_16_;
}

FastCpuOps::DenseKernel FastCpuOps::DenseKernelFor(const Tensor& w) const {
  const DType wt = w.dtype();
  const bool supported = wt == DType::kF32 || wt == DType::kF16 ||
                         (wt == DType::kBF16 && bf16_path_ != cpu::Bf16Path::kReference);
  // Tiled layouts come from DenseLayoutFor; the reference reads every layout.
  if (!(features_.avx512 || features_.simd) || !supported) return DenseKernel::kReference;
  switch (w.layout()) {
    case Layout::kRowMajor:
      break;
    case Layout::kRowTiles:
      if (!ReadsRowTiles(wt)) return DenseKernel::kReference;
      break;
    default:
      if (w.layout() != PanelLayout(wt) || !ReadsPanels(wt)) return DenseKernel::kReference;
      return Bf16DotPanels(wt) ? DenseKernel::kBf16DotPanels : DenseKernel::kPanels;
  }
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
  task.column_unit = w.layout() == Layout::kRowMajor ? 16 : TileGeometryOf(w.layout()).rows;
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
  const bool rounds_x = kind == DenseKernel::kBf16Dot || kind == DenseKernel::kBf16DotPanels;
  if (rounds_x) {
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
    if (rounds_x) {
      cpu::avx512::RoundRowsToBf16(task.x + r0 * k, r1 - r0, k, xb_.data() + r0 * task.ldxb,
                                   task.ldxb);
    } else {
      cpu::avx512::PermuteEvenOdd(task.x + r0 * k, r1 - r0, k, xp_.data() + r0 * task.ldxp,
                                  task.ldxp);
    }
  });
}

void FastCpuOps::ShareDenseX(const cpu::LinearTask& from, cpu::LinearTask& to) {
  to.xb = from.xb;
  to.ldxb = from.ldxb;
  to.xp = from.xp;
  to.ldxp = from.ldxp;
}

void FastCpuOps::RunDense(DenseKernel kind, const cpu::LinearTask& task, int64_t t0, int64_t t1,
                          int64_t n0, int64_t n1) {
  switch (kind) {
    case DenseKernel::kSimd:
      return cpu::simd::Linear(task, t0, t1, n0, n1);
    case DenseKernel::kBf16Dot:
      return cpu::avx512::LinearBf16Dot(task, t0, t1, n0, n1);
    case DenseKernel::kBf16Widen:
      return cpu::avx512::LinearBf16Widen(task, t0, t1, n0, n1);
    case DenseKernel::kF32Acc:
      return cpu::avx512::LinearF32Acc(task, t0, t1, n0, n1);
    case DenseKernel::kBf16DotPanels:
      return cpu::avx512::LinearPanelsBf16Dot(task, t0, t1, n0, n1);
    case DenseKernel::kPanels:
      return features_.avx512 ? cpu::avx512::LinearPanels(task, t0, t1, n0, n1)
                              : cpu::avx2::LinearPanels(task, t0, t1, n0, n1);
    case DenseKernel::kReference:
      break;
  }
  XI_CHECK_MSG(false, "RunDense on the reference path");
}

// Ranges of weight rows start at multiples of the layout's group (a row tile, a 16-row panel, a
// 64-row group; 16 rows for row-major weights); each range runs with every row of x, so an
// element's arithmetic never depends on the split.
int64_t FastCpuOps::ColumnUnit(const cpu::LinearTask& task) { return task.column_unit; }

void FastCpuOps::Linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  const DenseKernel kind = DenseKernelFor(w);
  if (kind == DenseKernel::kReference) return CpuOps::Linear(x, w, bias, out);
  cpu::LinearTask task;
  const int64_t t_rows = PrepareDenseTask(x, w, bias, out, bias_, task);
  if (t_rows == 0 || task.ldo == 0) return;
  PrepareDenseX(kind, t_rows, task);
  ForEachColumnRange(
      task.ldo, t_rows * task.k,
      [&](int64_t n0, int64_t n1, int) { RunDense(kind, task, 0, t_rows, n0, n1); },
      ColumnUnit(task));
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
  for (size_t i = 1; i < parts.size(); ++i) ShareDenseX(tasks[0], tasks[i]);
  ForEachPartRange(
      std::span(unit_start.data(), parts.size() + 1), MinUnits(kMinParallelMacs, macs_per_unit),
      [&](size_t i, int64_t u0, int64_t u1) {
        const int64_t unit = ColumnUnit(tasks[i]);
        RunDense(kind, tasks[i], 0, t_rows, u0 * unit, std::min(tasks[i].ldo, u1 * unit));
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

void FastCpuOps::EnsureRopeTable(const RopeSpec& rope, int64_t max_pos) {
  if (max_pos <= rope_rows_ && rope == rope_spec_) return;
  if (!(rope == rope_spec_)) {
    rope_spec_ = rope;
    rope_rows_ = 0;
  }
  const int64_t half = static_cast<int64_t>(rope.inv_freq.size());
  // Doubling keeps decode (one new position per step) from rebuilding the table every step.
  const int64_t rows = std::max<int64_t>(4096, RoundUp(max_pos, 4096) * 2);
  rope_cos_.resize(rows * half);
  rope_sin_.resize(rows * half);
  // Same formula as the reference (double angle, rounded to float), so results match it bitwise.
  for (int64_t p = rope_rows_; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(static_cast<int32_t>(p)) * rope.inv_freq[i];
      rope_cos_[p * half + i] = static_cast<float>(std::cos(angle) * rope.scale);
      rope_sin_[p * half + i] = static_cast<float>(std::sin(angle) * rope.scale);
    }
  rope_rows_ = rows;
}

void FastCpuOps::Rope(Tensor& x, std::span<const int32_t> positions, const RopeSpec& rope) {
  XI_CHECK(x.rank() == 3 && x.dim(0) == static_cast<int64_t>(positions.size()));
  const int64_t t_rows = x.dim(0), heads = x.dim(1), dim = x.dim(2), half = dim / 2;
  XI_CHECK(static_cast<int64_t>(rope.inv_freq.size()) == half);
  int32_t max_pos = 0;
  for (int32_t p : positions) {
    XI_CHECK(p >= 0);
    max_pos = std::max(max_pos, p);
  }
  EnsureRopeTable(rope, static_cast<int64_t>(max_pos) + 1);
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
  const bool avx2 = !features_.avx512 && features_.avx2 && cpu::avx2::AttentionGroupSupports(d);
  const bool simd = !features_.avx512 && !avx2 && features_.simd && cpu::simd::AttentionSupports(d);
  if (!avx512 && !avx2 && !simd) return CpuOps::PagedAttention(q, k_cache, v_cache, b, out);
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
  offsets_row_.assign(nth, -1);
  for (int i = 0; i < nth; ++i) {
    if (static_cast<int64_t>(scores_[i].size()) < 6 * max_keys + 24)
      scores_[i].resize(6 * max_keys + 24);
    if (static_cast<int64_t>(offsets_[i].size()) < max_keys) offsets_[i].resize(max_keys);
  }
  XI_CHECK(k_cache.dtype() == v_cache.dtype() &&
           (k_cache.dtype() == DType::kF32 || k_cache.dtype() == DType::kBF16));
  const bool bf16_cache = k_cache.dtype() == DType::kBF16;
  const float* qs = q.data<float>();
  float* os = out.data<float>();
  const bool grouped = avx512 && cpu::avx512::AttentionGroupSupports(d);
  // Under BF16 activations on AVX512-BF16 CPUs a BF16 cache meets the query (two BF16 parts) in
  // vdpbf16ps (cpu_kernels.h: AttentionGroupBf16), without widening the cached K/V.
  const bool bf16_dot = bf16_cache && avx512 && bf16_path_ == cpu::Bf16Path::kBf16Dot &&
                        cpu::avx512::AttentionGroupBf16Supports(d);
  // One work item per (query row, KV head): its `group` query heads share the K/V rows.
  // The kernels take the cache's element type (float, or uint16_t BF16 bits) as their K/V rows'.
  auto attend_in = [&]<class T>(const T* k_cache_base, const T* v_cache_base, int64_t item,
                                int thread) {
    const int64_t t = item / hkv, kvh = item % hkv;
    float* scores = scores_[thread].data();
    int64_t* off = offsets_[thread].data();
    const int64_t n_keys = b.positions[t] + 1;
    XI_CHECK(n_keys <= max_keys);
    // The row offsets are the same for every KV head of row t (the head is in the base
    // pointers), so a thread computes them once for consecutive items of one row.
    if (offsets_row_[thread] != t) {
      const int32_t* table = b.block_tables.data() + seq_of_[t] * b.max_blocks_per_seq;
      for (int64_t p0 = 0; p0 < n_keys; p0 += b.block_size) {
        const int64_t block = table[p0 / b.block_size];
        const int64_t in_block = std::min<int64_t>(b.block_size, n_keys - p0);
        XI_CHECK(block >= 0 && block * b.block_size + in_block <= num_slots);
        const int64_t first = block * b.block_size * hkv * d;
        for (int64_t i = 0; i < in_block; ++i) off[p0 + i] = first + i * hkv * d;
      }
      offsets_row_[thread] = t;
    }
    const T* ks = k_cache_base + kvh * d;
    const T* vs = v_cache_base + kvh * d;
    if constexpr (std::is_same_v<T, uint16_t>) {
      if (bf16_dot) {
        const int max_heads = cpu::avx512::AttentionGroupBf16MaxHeads(d);
        for (int64_t h = kvh * group; h < (kvh + 1) * group; h += max_heads) {
          const int heads = static_cast<int>(std::min<int64_t>(max_heads, (kvh + 1) * group - h));
          cpu::avx512::AttentionGroupBf16(qs + (t * hq + h) * d, d, heads, ks, vs, off, n_keys, d,
                                          scale, scores, os + (t * hq + h) * d, d);
        }
        return;
      }
    }
    if (grouped || avx2) {
      // Up to 4 of the group's query heads per call (2 at d = 128 on AVX-512) share each K/V
      // row load.
      using GroupKernel = void (*)(const float*, int64_t, int, const T*, const T*, const int64_t*,
                                   int64_t, int64_t, float, float*, float*, int64_t);
      const GroupKernel kernel =
          avx2 ? GroupKernel{cpu::avx2::AttentionGroup} : GroupKernel{cpu::avx512::AttentionGroup};
      const int max_heads = avx2 ? 4 : cpu::avx512::AttentionGroupMaxHeads(d);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; h += max_heads) {
        const int heads = static_cast<int>(std::min<int64_t>(max_heads, (kvh + 1) * group - h));
        kernel(qs + (t * hq + h) * d, d, heads, ks, vs, off, n_keys, d, scale, scores,
               os + (t * hq + h) * d, d);
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
  auto attend = [&](int64_t item, int thread) {
    if (bf16_cache) {
      attend_in(k_cache.data<uint16_t>(), v_cache.data<uint16_t>(), item, thread);
    } else {
      attend_in(k_cache.data<float>(), v_cache.data<float>(), item, thread);
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
