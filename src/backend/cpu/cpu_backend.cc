// CPU backend: aligned host buffers and the ISA-dispatched kernels of FastCpuOps.
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/fast_cpu_ops.h"

namespace xinfer {
namespace {

// Large buffers (the KV cache) come from anonymous mmap: zero pages are mapped lazily, so a big
// cache costs memory only as it fills. Small ones use aligned_alloc.
constexpr size_t kMmapThreshold = 1 << 20;

class HostBuffer : public Buffer {
 public:
  explicit HostBuffer(size_t bytes) : size_(bytes) {
    // 64-byte alignment for full-width AVX-512 loads; never allocate 0 bytes.
    size_t rounded = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    if (rounded >= kMmapThreshold) {
      void* p =
          ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      XI_CHECK_MSG(p != MAP_FAILED, "host allocation (mmap) failed");
      data_ = p;
      mapped_ = rounded;
    } else {
      data_ = std::aligned_alloc(64, rounded);
      XI_CHECK_MSG(data_ != nullptr, "host allocation failed");
      std::memset(data_, 0, rounded);
    }
  }
  ~HostBuffer() override {
    if (mapped_) {
      ::munmap(data_, mapped_);
    } else {
      std::free(data_);
    }
  }
  void* data() override { return data_; }
  size_t size_bytes() const override { return size_; }
  const char* device_name() const override { return "cpu"; }

 private:
  void* data_;
  size_t size_;
  size_t mapped_ = 0;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options)
      : ops_(options.bf16_activations, options.num_threads) {}
  const char* name() const override { return "cpu"; }
  std::string description() const override {
    return std::string("cpu: kernels ") + cpu::KernelIsaName() + ", BF16 Linear path " +
           cpu::Bf16PathName(ops_.bf16_path()) + ", " + std::to_string(ops_.num_threads()) +
           " threads";
  }
  std::shared_ptr<Buffer> Allocate(size_t bytes) override {
    return std::make_shared<HostBuffer>(bytes);
  }
  Ops& ops() override { return ops_; }

 private:
  FastCpuOps ops_;
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace xinfer
