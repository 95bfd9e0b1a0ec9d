// CPU backend: aligned host buffers and the ISA-dispatched kernels of FastCpuOps.
#include <algorithm>
#include <atomic>
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
#include "base/cpu_topology.h"
#include "base/huge_pages.h"
#include "base/logging.h"

namespace xinfer {
namespace {

// Large buffers (weights, the KV cache) are huge-page mappings (base/huge_pages.h): zero pages
// are mapped lazily, so a big cache costs memory only as it fills. Small ones use aligned_alloc.
constexpr size_t kMmapThreshold = 1 << 20;

class HostBuffer : public Buffer {
 public:
  // numa_node >= 0: the mapping's pages prefer that node (CpuBackendOptions::numa_node);
  // *numa_refused is set when the kernel refuses.
  HostBuffer(size_t bytes, int numa_node, bool* numa_refused) : size_(bytes) {
    // 64-byte alignment for full-width AVX-512 loads; never allocate 0 bytes.
    size_t rounded = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    if (rounded >= kMmapThreshold) {
      data_ = MapHugePages(rounded);
      mapped_ = rounded;
      if (numa_node >= 0 && !PreferNumaNode(data_, rounded, numa_node)) *numa_refused = true;
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
      : ops_(options.bf16_activations,
             options.num_threads > 0 ? options.num_threads : static_cast<int>(options.cpus.size()),
             options.int8_activations, options.cpus),
        cpus_(options.cpus),
        numa_node_(options.numa_node),
        int8_activations_(options.int8_activations),
        mmap_weights_(options.mmap_weights),
        weight_copy_limit_(options.weight_copy_limit_bytes) {}
  const char* name() const override { return "cpu"; }
  std::string description() const override {
    return std::string("cpu: kernels ") + cpu::KernelIsaName() + ", BF16 Linear path " +
           cpu::Bf16PathName(ops_.bf16_path()) +
           (int8_activations_ ? ", int8 activations for GGUF/AWQ weights" : "") + ", " +
           std::to_string(ops_.num_threads()) + " threads" +
           (cpus_.empty() ? "" : " on CPUs " + FormatCpuList(cpus_)) +
           (numa_node_ < 0 ? "" : " (NUMA node " + std::to_string(numa_node_) + ")") +
           ", weights " +
           (mmap_weights_
                ? std::string("read from the mapped file")
                : std::string("copied to huge pages (THP ") + TransparentHugePageMode() + ")");
  }
  std::shared_ptr<Buffer> Allocate(size_t bytes) override { return NewBuffer(bytes); }
  void BindCallerThread() override {
    if (!cpus_.empty() && !PinCurrentThread(std::span<const int>(cpus_).first(1)))
      XI_LOG_WARN("could not bind a rank's thread to CPU {}", cpus_.front());
  }
  Ops& ops() override { return ops_; }
  std::vector<Tensor> PlaceWeights(std::span<const WeightToPlace> weights) override;
  void ParallelForHost(int64_t n, const std::function<void(int64_t)>& fn) override {
    ops_.pool().Run(n, [&fn](int64_t i, int) { fn(i); });
  }

 private:
  std::shared_ptr<HostBuffer> NewBuffer(size_t bytes) {
    bool refused = false;
    auto buffer = std::make_shared<HostBuffer>(bytes, numa_node_, &refused);
    if (refused && !numa_warned_.exchange(true))
      XI_LOG_WARN(
          "the kernel refused to place buffers on NUMA node {}; they go where first "
          "touched",
          numa_node_);
    return buffer;
  }

  FastCpuOps ops_;
  std::vector<int> cpus_;
  int numa_node_;
  std::atomic<bool> numa_warned_{false};
  bool int8_activations_;
  bool mmap_weights_;
  size_t weight_copy_limit_;
};

// All weights go into one huge-page region, so only its end can hold a partial huge page, and
// the pool copies them (page faults and the copy itself spread over the cores). Dense Linear
// weights go into the layout their kernel reads (FastCpuOps::DenseLayoutFor: 16-row panels on
// AVX2 CPUs without AVX-512, row tiles for the other SIMD kernels; tensor.h); AWQ and Q4_0
// weights the AVX2 int8 broadcast-x kernel takes in its tiles (QuantLayoutFor).
std::vector<Tensor> CpuBackend::PlaceWeights(std::span<const WeightToPlace> weights) {
  auto as_they_are = [&] {
    std::vector<Tensor> same;
    for (const WeightToPlace& w : weights) same.push_back(w.tensor);
    return same;
  };
  if (mmap_weights_) return as_they_are();
  struct Range {
    size_t offset;
    int64_t row_bytes;  // of the tensor that asked for a tiled layout
    Layout layout;
  };
  std::map<std::pair<const void*, size_t>, Range> ranges;  // distinct byte ranges
  size_t total = 0;
  for (const WeightToPlace& w : weights) {
    const Tensor& t = w.tensor;
    XI_CHECK(t.layout() == Layout::kRowMajor);
    auto [it, inserted] =
        ranges.try_emplace({t.raw(), t.size_bytes()}, Range{total, 0, Layout::kRowMajor});
    if (inserted) total += (t.size_bytes() + 63) / 64 * 64;
    Layout want = Layout::kRowMajor;
    if (w.linear) want = ops_.DenseLayoutFor(t);
    if (w.quant_of != nullptr) want = ops_.QuantLayoutFor(*w.quant_of);
    if (want != Layout::kRowMajor) {
      XI_CHECK(it->second.layout == Layout::kRowMajor ||
               (it->second.layout == want && it->second.row_bytes == RowBytes(t)));
      it->second = {it->second.offset, RowBytes(t), want};
    }
  }
  const size_t limit =
      weight_copy_limit_ > 0 ? weight_copy_limit_ : AvailableMemoryBytes() / 10 * 9;
  if (limit > 0 && total > limit) {
    XI_LOG_WARN(
        "weights ({:.2f} GB) exceed the memory available for a copy ({:.2f} GB): reading them "
        "from the mapped file, as --mmap-weights does (slower decode)",
        total / 1e9, limit / 1e9);
    return as_they_are();
  }
  auto buffer = NewBuffer(total);
  uint8_t* base = static_cast<uint8_t*>(buffer->data());
  // Pieces of about 4 MiB: byte ranges, or whole row groups of a tiled matrix.
  struct Piece {
    const uint8_t* src;
    uint8_t* dst;
    size_t bytes;                                     // plain copy
    int64_t rows = 0, row_bytes = 0, g0 = 0, g1 = 0;  // tiled copy of groups [g0, g1)
    Layout layout = Layout::kRowMajor;
  };
  constexpr size_t kPieceBytes = size_t{4} << 20;
  std::vector<Piece> pieces;
  for (const auto& [range, where] : ranges) {
    const auto* src = static_cast<const uint8_t*>(range.first);
    if (where.layout != Layout::kRowMajor) {
      const int64_t row_bytes = where.row_bytes;
      const int64_t rows = static_cast<int64_t>(range.second) / row_bytes;
      const int64_t g_rows = TileGeometryOf(where.layout).rows;
      const int64_t groups = (rows + g_rows - 1) / g_rows;
      const int64_t per_piece =
          std::max<int64_t>(1, static_cast<int64_t>(kPieceBytes) / (g_rows * row_bytes));
      for (int64_t g = 0; g < groups; g += per_piece)
        pieces.push_back({src, base + where.offset, 0, rows, row_bytes, g,
                          std::min(groups, g + per_piece), where.layout});
    } else {
      for (size_t b = 0; b < range.second; b += kPieceBytes)
        pieces.push_back(
            {src + b, base + where.offset + b, std::min(kPieceBytes, range.second - b)});
    }
  }
  ops_.pool().ParallelRanges(
      static_cast<int64_t>(pieces.size()), 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
          const Piece& p = pieces[i];
          if (p.rows > 0) {
            PackRowTiles(p.layout, p.src, p.dst, p.rows, p.row_bytes, p.g0, p.g1);
          } else {
            std::memcpy(p.dst, p.src, p.bytes);
          }
        }
      });
  std::vector<Tensor> placed;
  placed.reserve(weights.size());
  for (const WeightToPlace& w : weights) {
    const Tensor& t = w.tensor;
    const Range& r = ranges.at({t.raw(), t.size_bytes()});
    placed.emplace_back(buffer, r.offset, t.dtype(), t.shape(), r.layout);
  }
  return placed;
}

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace xinfer
