// CPU backend: aligned host buffers and the ISA-dispatched kernels of FastCpuOps.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/fast_cpu_ops.h"
#include "base/huge_pages.h"

namespace xinfer {
namespace {

// Large buffers (weights, the KV cache) are huge-page mappings (base/huge_pages.h): zero pages
// are mapped lazily, so a big cache costs memory only as it fills. Small ones use aligned_alloc.
constexpr size_t kMmapThreshold = 1 << 20;

class HostBuffer : public Buffer {
 public:
  explicit HostBuffer(size_t bytes) : size_(bytes) {
    // 64-byte alignment for full-width AVX-512 loads; never allocate 0 bytes.
    size_t rounded = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    if (rounded >= kMmapThreshold) {
      data_ = MapHugePages(rounded);
      mapped_ = rounded;
    } else {
      data_ = std::aligned_alloc(64, rounded);
      XI_CHECK_MSG(data_ != nullptr, "host allocation failed");
      std::memset(data_, 0, rounded);
    }
  }
  ~HostBuffer() override {
    if (mapped_) {
      UnmapHugePages(data_, mapped_);
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
      : ops_(options.bf16_activations, options.num_threads), mmap_weights_(options.mmap_weights) {}
  const char* name() const override { return "cpu"; }
  std::string description() const override {
    return std::string("cpu: kernels ") + cpu::KernelIsaName() + ", BF16 Linear path " +
           cpu::Bf16PathName(ops_.bf16_path()) + ", " + std::to_string(ops_.num_threads()) +
           " threads, weights " +
           (mmap_weights_
                ? std::string("read from the mapped file")
                : std::string("copied to huge pages (THP ") + TransparentHugePageMode() + ")");
  }
  std::shared_ptr<Buffer> Allocate(size_t bytes) override {
    return std::make_shared<HostBuffer>(bytes);
  }
  Ops& ops() override { return ops_; }
  std::vector<Tensor> PlaceWeights(std::span<const Tensor> host) override;

 private:
  FastCpuOps ops_;
  bool mmap_weights_;
};

// All weights go into one huge-page region, so only its end can hold a partial huge page, and
// the pool copies them (page faults and the copy itself spread over the cores).
std::vector<Tensor> CpuBackend::PlaceWeights(std::span<const Tensor> host) {
  if (mmap_weights_) return {host.begin(), host.end()};
  std::map<std::pair<const void*, size_t>, size_t> offset_of;  // distinct byte ranges
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const Tensor& t : host) {
    auto [it, inserted] = offset_of.try_emplace({t.raw(), t.size_bytes()}, total);
    if (inserted) total += (t.size_bytes() + 63) / 64 * 64;
    offsets.push_back(it->second);
  }
  auto buffer = std::make_shared<HostBuffer>(total);
  uint8_t* base = static_cast<uint8_t*>(buffer->data());
  struct Piece {
    const uint8_t* src;
    size_t offset, bytes;
  };
  constexpr size_t kPieceBytes = size_t{4} << 20;
  std::vector<Piece> pieces;
  for (const auto& [range, offset] : offset_of)
    for (size_t b = 0; b < range.second; b += kPieceBytes)
      pieces.push_back({static_cast<const uint8_t*>(range.first) + b, offset + b,
                        std::min(kPieceBytes, range.second - b)});
  ops_.pool().ParallelRanges(
      static_cast<int64_t>(pieces.size()), 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i)
          std::memcpy(base + pieces[i].offset, pieces[i].src, pieces[i].bytes);
      });
  std::vector<Tensor> placed;
  placed.reserve(host.size());
  for (size_t i = 0; i < host.size(); ++i)
    placed.emplace_back(buffer, offsets[i], host[i].dtype(), host[i].shape());
  return placed;
}

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace xinfer
