// Collectives among the ranks of a tensor-parallel group: each rank holds a shard of the model
// on its own Backend and runs on its own thread; after a row-parallel projection every rank holds
// a partial sum that the group adds up (vLLM's device communicator, NCCL's all-reduce).
//
// Ownership: whoever builds the group owns the Communicator and keeps it alive while any rank
// may call it. Thread-safety: each rank calls from its own thread, one collective at a time, and
// every rank calls the same collectives in the same order (a rank that skips one leaves the
// others waiting: model code calls them unconditionally, after any early return).
#pragma once

#include <memory>

#include "tensor/tensor.h"

namespace xinfer {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  // x (F32, contiguous, the same shape on every rank) becomes the elementwise sum of all ranks'
  // x, added in rank order, so every rank holds the same bits. Returns when every rank's x holds
  // the sum; blocks until every rank has called it.
  virtual void AllReduceSum(int rank, Tensor& x) = 0;
};

// Ranks that are threads of this process with host-addressable tensors (the CPU backend): the
// sum is read and written in place through shared memory, each rank adding up one slice of the
// elements for everyone. size >= 1.
std::unique_ptr<Communicator> CreateHostCommunicator(int size);

}  // namespace xinfer
