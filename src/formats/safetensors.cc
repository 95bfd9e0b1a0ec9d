#include "formats/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

namespace xinfer {
namespace {

using nlohmann::json;

// The format caps the header at 100 MB; a larger length means a corrupt or hostile file.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

Status ParseTensorEntry(const std::string& name, const json& entry, size_t data_start,
                        size_t data_size, TensorInfo* out) {
  if (!entry.is_object()) return InvalidArgument("tensor '{}': entry is not an object", name);
  if (!entry.contains("dtype") || !entry["dtype"].is_string())
    return InvalidArgument("tensor '{}': missing dtype", name);
  auto dtype = ParseDType(entry["dtype"].get<std::string>());
  if (!dtype.ok()) return dtype.status().WithContext("tensor '" + name + "'");
  if (!entry.contains("shape") || !entry["shape"].is_array())
    return InvalidArgument("tensor '{}': missing shape", name);
  Shape shape;
  uint64_t numel = 1;
  for (const auto& d : entry["shape"]) {
    if (!d.is_number_unsigned()) return InvalidArgument("tensor '{}': bad shape entry", name);
    uint64_t v = d.get<uint64_t>();
    if (v > (1ull << 40) || (v != 0 && numel > (1ull << 50) / v))
      return InvalidArgument("tensor '{}': shape too large", name);
    numel *= v;
    shape.push_back(static_cast<int64_t>(v));
  }
  // By reference: entry.value() returns a copy, and copying a json value recurses once per
  // level (a data_offsets nested 200,000 deep overflowed the stack).
  const auto offs_it = entry.find("data_offsets");
  if (offs_it == entry.end() || !offs_it->is_array() || offs_it->size() != 2 ||
      !(*offs_it)[0].is_number_unsigned() || !(*offs_it)[1].is_number_unsigned())
    return InvalidArgument("tensor '{}': data_offsets must be [begin, end]", name);
  const json& offs = *offs_it;
  uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
  if (begin > end) return InvalidArgument("tensor '{}': data_offsets begin > end", name);
  if (end > data_size)
    return DataLoss("tensor '{}': data_offsets [{}, {}) beyond the {} data bytes (truncated file?)",
                    name, begin, end, data_size);
  uint64_t expected = numel * DTypeSize(*dtype);
  if (end - begin != expected)
    return InvalidArgument("tensor '{}': shape {} x {} needs {} bytes but data_offsets span {}",
                           name, ShapeToString(shape), DTypeName(*dtype), expected, end - begin);
  out->name = name;
  out->dtype = *dtype;
  out->shape = std::move(shape);
  out->offset = data_start + begin;
  out->size = expected;
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  XI_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  auto st = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  st->file_ = file;
  const size_t size = file->size();
  if (size < 8)
    return DataLoss("{}: file too short for a safetensors header ({} bytes)", path, size);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file->data()[i];
  if (header_len > kMaxHeaderBytes)
    return InvalidArgument("{}: header length {} is implausible (corrupt file?)", path, header_len);
  if (header_len > size - 8)
    return DataLoss("{}: header length {} exceeds the file size {} (truncated file?)", path,
                    header_len, size);
  const char* hdr = reinterpret_cast<const char*>(file->data() + 8);
  json header = json::parse(hdr, hdr + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return InvalidArgument("{}: header is not a valid JSON object", path);
  const size_t data_start = 8 + header_len;
  const size_t data_size = size - data_start;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (it.value().is_object()) {
        for (auto m = it.value().begin(); m != it.value().end(); ++m)
          if (m.value().is_string()) st->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    TensorInfo info;
    Status s = ParseTensorEntry(it.key(), it.value(), data_start, data_size, &info);
    if (!s.ok()) return s.WithContext(path);
    if (info.size) ranges.emplace_back(info.offset, info.offset + info.size);
    st->tensors_.emplace(it.key(), std::move(info));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return InvalidArgument("{}: tensors overlap in the data section", path);
  return st;
}

Tensor SafetensorsFile::Get(const TensorInfo& info) const {
  uint8_t* data = const_cast<uint8_t*>(file_->data() + info.offset);
  // The format packs tensors without padding, and a header whose length is not a multiple of 8
  // (writers other than Hugging Face's pad it) shifts them all: a tensor whose bytes do not start
  // at a multiple of its element size is copied into aligned memory, since every reader of a
  // Tensor (loaders, kernels) accesses its elements as typed values.
  if (reinterpret_cast<uintptr_t>(data) % DTypeSize(info.dtype) != 0) {
    Tensor copy = NewHostTensor(info.dtype, info.shape);
    std::memcpy(copy.raw(), data, info.size);
    return copy;
  }
  auto buffer = std::make_shared<PinnedHostBuffer>(file_, data, info.size);
  return Tensor(std::move(buffer), 0, info.dtype, info.shape);
}

StatusOr<std::unique_ptr<WeightStore>> WeightStore::OpenDir(const std::string& model_dir) {
  namespace fs = std::filesystem;
  auto store = std::unique_ptr<WeightStore>(new WeightStore());
  store->dir_ = model_dir;
  std::vector<std::string> shard_files;
  fs::path dir(model_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return NotFound("model folder not found: {}", model_dir);
  fs::path index = dir / "model.safetensors.index.json";
  fs::path single = dir / "model.safetensors";
  json weight_map;
  if (fs::exists(index, ec)) {
    XI_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index.string()));
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object())
      return InvalidArgument("{}: not a valid index (needs a weight_map object)", index.string());
    weight_map = std::move(j["weight_map"]);  // moved: a copy recurses once per nesting level
    std::set<std::string> names;
    for (auto it = weight_map.begin(); it != weight_map.end(); ++it) {
      if (!it.value().is_string())
        return InvalidArgument("{}: weight_map['{}'] is not a file name", index.string(), it.key());
      std::string f = it.value().get<std::string>();
      if (f.find('/') != std::string::npos || f.find("..") != std::string::npos)
        return InvalidArgument("{}: shard name '{}' must be a plain file name", index.string(), f);
      names.insert(f);
    }
    shard_files.assign(names.begin(), names.end());
  } else if (fs::exists(single, ec)) {
    shard_files.push_back("model.safetensors");
  } else {
    return NotFound("no model.safetensors or model.safetensors.index.json in {}", model_dir);
  }
  for (const auto& name : shard_files) {
    XI_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open((dir / name).string()));
    size_t idx = store->files_.size();
    for (const auto& [tname, info] : f->tensors()) {
      if (!weight_map.is_null()) {
        auto it = weight_map.find(tname);
        if (it == weight_map.end() || it->get<std::string>() != name) continue;
      }
      if (!store->index_.emplace(tname, std::make_pair(idx, info)).second)
        return InvalidArgument("tensor '{}' appears in more than one shard", tname);
    }
    store->files_.push_back(std::move(f));
  }
  if (!weight_map.is_null()) {
    for (auto it = weight_map.begin(); it != weight_map.end(); ++it)
      if (!store->index_.count(it.key()))
        return DataLoss("index lists tensor '{}' in {} but that shard does not contain it",
                        it.key(), it.value().get<std::string>());
  }
  return store;
}

const TensorInfo* WeightStore::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &it->second.second;
}

StatusOr<Tensor> WeightStore::Get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return NotFound("tensor '{}' is missing from {}", name, dir_);
  return files_[it->second.first]->Get(it->second.second);
}

StatusOr<Tensor> WeightStore::GetWithShape(const std::string& name, const Shape& shape) const {
  XI_ASSIGN_OR_RETURN(Tensor t, Get(name));
  if (t.shape() != shape)
    return InvalidArgument("tensor '{}' has shape {} but the config implies {}", name,
                           ShapeToString(t.shape()), ShapeToString(shape));
  return t;
}

std::vector<std::string> WeightStore::Names() const {
  std::vector<std::string> names;
  for (const auto& [n, _] : index_) names.push_back(n);
  return names;
}

}  // namespace xinfer
