// FastCpuOps::LinearRowGroups: a mixture-of-experts layer's expert Linears, each on its own rows
// of one x, as one job: x prepared once for all its rows in the layout the groups' one kernel
// family reads, then every group's weight rows cut into ranges spread over the pool, each range
// running its group's rows of x. Each output element is computed exactly as a Linear of that
// group on its rows computes it (the kernels take any row range). See fast_cpu_ops.h for
// ownership and threading.
#include <algorithm>

#include "backend/cpu/fast_cpu_ops.h"
#include "backend/cpu/fast_cpu_ops_internal.h"

namespace xinfer {

using fast_cpu_ops_internal::CeilDiv;
using fast_cpu_ops_internal::kMinParallelMacs;
using fast_cpu_ops_internal::MinUnits;

void FastCpuOps::LinearRowGroups(const Tensor& x, std::span<const RowGroupLinear> groups) {
  // XINFER_ROW_GROUPS=0 runs a Linear per group (A/B measurements).
  static const bool enabled = fast_cpu_ops_internal::EnvSwitchOn("XINFER_ROW_GROUPS");
  if (groups.empty()) return;
  if (enabled && (LinearRowGroupsQuant(x, groups) || LinearRowGroupsDense(x, groups))) return;
  Ops::LinearRowGroups(x, groups);
}

bool FastCpuOps::LinearRowGroupsQuant(const Tensor& x, std::span<const RowGroupLinear> groups) {
  if (!groups[0].w->quantized() || x.rank() != 2) return false;
  const QuantTensor& q0 = groups[0].w->quant();
  const QuantKernel kind = QuantKernelFor(q0);
  if (kind == QuantKernel::kOther || x.dim(1) != q0.cols) return false;
  for (const RowGroupLinear& g : groups) {
    if (!g.w->quantized()) return false;
    const QuantTensor& q = g.w->quant();
    if (q.type != q0.type || q.cols != q0.cols || q.data.layout() != q0.data.layout() ||
        QuantKernelFor(q) != kind)
      return false;
  }
  const int64_t t_rows = x.dim(0), k = q0.cols;
  if (t_rows == 0) return true;
  // Fresh tasks: a field an earlier call's kernel set (say, BF16 x) must not linger.
  group_quant_tasks_.assign(groups.size(), cpu::QuantLinearTask{});
  group_units_.assign(groups.size() + 1, 0);
  int64_t max_rows = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const RowGroupLinear& g = groups[i];
    XI_CHECK(0 <= g.row_begin && g.row_begin <= g.row_end && g.row_end <= t_rows);
    PrepareQuantTask(x, g.w->quant(), nullptr, *g.out, group_quant_tasks_[i]);
    const int64_t units = g.row_begin == g.row_end ? 0 : CeilDiv(g.w->quant().rows, 16);
    group_units_[i + 1] = group_units_[i] + units;
    max_rows = std::max(max_rows, g.row_end - g.row_begin);
  }
  cpu::QuantLinearTask& first = group_quant_tasks_[0];
  const Int8Isa isa = PrepareQuantX(kind, x, q0, t_rows, first);
  for (size_t i = 1; i < groups.size(); ++i) ShareQuantX(first, group_quant_tasks_[i]);
  ForEachPartRange(
      group_units_, MinUnits(kMinParallelMacs, 16 * max_rows * k),
      [&](size_t i, int64_t u0, int64_t u1) {
        const cpu::QuantLinearTask& task = group_quant_tasks_[i];
        RunQuant(kind, isa, task, groups[i].row_begin, groups[i].row_end, u0 * 16,
                 std::min(task.ldo, u1 * 16));
      },
      RangesFor(max_rows, isa));
  return true;
}

bool FastCpuOps::LinearRowGroupsDense(const Tensor& x, std::span<const RowGroupLinear> groups) {
  if (groups[0].w->quantized() || x.rank() != 2) return false;
  const Tensor& d0 = groups[0].w->dense();
  const DenseKernel kind = DenseKernelFor(d0);
  if (kind == DenseKernel::kReference) return false;
  for (const RowGroupLinear& g : groups) {
    if (g.w->quantized()) return false;
    const Tensor& d = g.w->dense();
    if (d.dtype() != d0.dtype() || d.rank() != 2 || d.dim(1) != x.dim(1) ||
        DenseKernelFor(d) != kind)
      return false;
  }
  const int64_t t_rows = x.dim(0), k = x.dim(1);
  if (t_rows == 0) return true;
  group_dense_tasks_.assign(groups.size(), cpu::LinearTask{});
  group_units_.assign(groups.size() + 1, 0);
  int64_t max_rows = 0, max_unit = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const RowGroupLinear& g = groups[i];
    XI_CHECK(0 <= g.row_begin && g.row_begin <= g.row_end && g.row_end <= t_rows);
    cpu::LinearTask& task = group_dense_tasks_[i];
    PrepareDenseTask(x, g.w->dense(), nullptr, *g.out, bias_, task);
    const int64_t units = g.row_begin == g.row_end ? 0 : CeilDiv(task.ldo, ColumnUnit(task));
    group_units_[i + 1] = group_units_[i] + units;
    max_rows = std::max(max_rows, g.row_end - g.row_begin);
    max_unit = std::max(max_unit, ColumnUnit(task));
  }
  cpu::LinearTask& first = group_dense_tasks_[0];
  PrepareDenseX(kind, t_rows, first);
  for (size_t i = 1; i < groups.size(); ++i) ShareDenseX(first, group_dense_tasks_[i]);
  ForEachPartRange(group_units_, MinUnits(kMinParallelMacs, max_unit * max_rows * k),
                   [&](size_t i, int64_t u0, int64_t u1) {
                     const cpu::LinearTask& task = group_dense_tasks_[i];
                     const int64_t unit = ColumnUnit(task);
                     RunDense(kind, task, groups[i].row_begin, groups[i].row_end, u0 * unit,
                              std::min(task.ldo, u1 * unit));
                   });
  return true;
}

}  // namespace xinfer
