// Portable reference kernels for quantized weights (tensor/quant.h): fused
// dequantize-and-multiply Linear and row lookup, F32 accumulation, output rows split across a
// thread pool when one is given.
// They are the default implementations of Ops::QuantLinear / Ops::QuantEmbedding, so every Ops
// class (CpuOps, FastCpuOps, ...) runs quantized models until it overrides them with faster ones,
// and they are the reference such kernels are tested against.
//
// Batch invariance: output element (t, n) is a fixed-order 16-lane dot product of x row t with the
// dequantized row n, independent of the number of rows T and of pointer alignment.
#pragma once

#include <span>

#include "base/thread_pool.h"
#include "tensor/quant.h"

namespace xinfer::cpu {

// `pool`: splits the output rows across its threads; nullptr runs on the calling thread.
void QuantLinearRef(const Tensor& x, const QuantTensor& w, const Tensor* bias, Tensor& out,
                    ThreadPool* pool = nullptr);
void QuantEmbeddingRef(const QuantTensor& table, std::span<const int32_t> ids, Tensor& out);

}  // namespace xinfer::cpu
