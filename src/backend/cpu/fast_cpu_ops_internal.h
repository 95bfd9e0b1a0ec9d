// FastCpuOps' private pieces shared by its source files (fast_cpu_ops.cc: dense Linear and the
// other ops; fast_cpu_ops_quant.cc: quantized Linear): how work is cut into ranges for the pool.
// Not part of the backend's interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>
#include <vector>

#include "backend/cpu/fast_cpu_ops.h"

namespace xinfer {
namespace fast_cpu_ops_internal {

// A Linear's range of weight rows holds at least this many multiply-adds (a few microseconds):
// below that, handing it to another thread costs more than it saves.
constexpr int64_t kMinParallelMacs = 1 << 15;
// Row-wise and elementwise ops: at least this many elements per range.
constexpr int64_t kMinParallelElems = 1 << 15;

inline int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
inline int64_t CeilDiv(int64_t v, int64_t m) { return (v + m - 1) / m; }

// Grows scratch `v` to at least n elements (never shrinks: the largest step's size is kept).
template <class T>
T* GrowTo(std::vector<T>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(n);
  return v.data();
}

// An A/B switch read from the environment: on unless `name` is set to "0" (XINFER_ROW_TILES,
// XINFER_DENSE_PANELS, XINFER_INT8_PANELS). Callers keep the answer in a static: read once.
inline bool EnvSwitchOn(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::string_view(e) != "0";
}

// Fewest units of `unit_cost` multiply-adds (or elements) worth a range of their own.
inline int64_t MinUnits(int64_t min_cost, int64_t unit_cost) {
  return CeilDiv(min_cost, std::max<int64_t>(1, unit_cost));
}

}  // namespace fast_cpu_ops_internal

template <class Fn>
void FastCpuOps::ForEachColumnRange(int64_t n, int64_t row_cost, Fn&& fn, int64_t unit,
                                    Ranges ranges) {
  pool().ParallelRanges(
      fast_cpu_ops_internal::CeilDiv(n, unit),
      fast_cpu_ops_internal::MinUnits(fast_cpu_ops_internal::kMinParallelMacs, unit * row_cost),
      [&](int64_t u0, int64_t u1, int thread) {
        const int64_t n0 = std::min(n, u0 * unit), n1 = std::min(n, u1 * unit);
        if (n0 < n1) fn(n0, n1, thread);
      },
      ranges);
}

template <class Fn>
void FastCpuOps::ForEachPartRange(std::span<const int64_t> unit_start, int64_t min_units, Fn&& fn,
                                  Ranges ranges) {
  const size_t parts = unit_start.size() - 1;
  pool().ParallelRanges(
      unit_start[parts], min_units,
      [&](int64_t u0, int64_t u1, int) {
        for (size_t i = 0; i < parts; ++i) {
          const int64_t b = std::max(u0, unit_start[i]), e = std::min(u1, unit_start[i + 1]);
          if (b < e) fn(i, b - unit_start[i], e - unit_start[i]);
        }
      },
      ranges);
}

template <class Fn>
void FastCpuOps::ForEachRowRange(int64_t rows, int64_t row_elems, Fn&& fn) {
  pool().ParallelRanges(
      rows, fast_cpu_ops_internal::MinUnits(fast_cpu_ops_internal::kMinParallelElems, row_elems),
      [&](int64_t r0, int64_t r1, int) { fn(r0, r1); });
}

template <class Fn>
void FastCpuOps::ForEachElementRange(int64_t n, Fn&& fn) {
  pool().ParallelRanges(fast_cpu_ops_internal::CeilDiv(n, 16),
                        fast_cpu_ops_internal::kMinParallelElems / 16,
                        [&](int64_t u0, int64_t u1, int) {
                          const int64_t i0 = std::min(n, u0 * 16), i1 = std::min(n, u1 * 16);
                          if (i0 < i1) fn(i0, i1);
                        });
}

}  // namespace xinfer
