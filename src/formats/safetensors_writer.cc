#include "formats/safetensors_writer.h"

#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace xinfer {
namespace {

using nlohmann::ordered_json;

uint64_t Bytes(const TensorSpec& t) {
  return static_cast<uint64_t>(NumElements(t.shape)) * DTypeSize(t.dtype);
}

Status WriteOneFile(const std::string& path, const std::vector<const TensorSpec*>& tensors,
                    const TensorFiller& fill, const std::map<std::string, std::string>& metadata) {
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorSpec* t : tensors) {
    header[t->name] = {{"dtype", DTypeName(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + Bytes(*t)}}};
    offset += Bytes(*t);
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // keep the data 8-byte aligned, as safetensors does
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("cannot write {}", path);
  uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  constexpr int64_t kChunk = 1 << 20;
  std::vector<uint8_t> buf;
  for (const TensorSpec* t : tensors) {
    const int64_t n = NumElements(t->shape);
    const size_t es = DTypeSize(t->dtype);
    for (int64_t first = 0; first < n; first += kChunk) {
      const int64_t count = std::min(kChunk, n - first);
      buf.resize(static_cast<size_t>(count) * es);
      fill(*t, first, count, buf.data());
      out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
    }
  }
  out.close();
  if (!out) return InvalidArgument("failed writing {} (disk full?)", path);
  return Status::Ok();
}

}  // namespace

Status WriteSafetensors(const std::string& dir, const std::vector<TensorSpec>& tensors,
                        const TensorFiller& fill, uint64_t max_shard_bytes,
                        const std::map<std::string, std::string>& metadata,
                        const std::string& base_name) {
  std::vector<std::vector<const TensorSpec*>> shards(1);
  uint64_t shard_bytes = 0;
  for (const TensorSpec& t : tensors) {
    if (shard_bytes > 0 && shard_bytes + Bytes(t) > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&t);
    shard_bytes += Bytes(t);
  }
  if (shards.size() == 1)
    return WriteOneFile(dir + "/" + base_name + ".safetensors", shards[0], fill, metadata);
  ordered_json weight_map = ordered_json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    std::string name =
        fmt::format("{}-{:05d}-of-{:05d}.safetensors", base_name, i + 1, shards.size());
    XI_RETURN_IF_ERROR(WriteOneFile(dir + "/" + name, shards[i], fill, metadata));
    for (const TensorSpec* t : shards[i]) {
      weight_map[t->name] = name;
      total += Bytes(*t);
    }
  }
  const std::string index = dir + "/" + base_name + ".safetensors.index.json";
  std::ofstream idx(index);
  idx << ordered_json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2);
  if (!idx) return InvalidArgument("cannot write {}", index);
  return Status::Ok();
}

}  // namespace xinfer
