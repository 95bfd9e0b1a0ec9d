// Read-only memory-mapped file. Model files are read through it; the backend then places the
// weights (a copy into huge pages on the CPU, unless `--mmap-weights` keeps reading the mapping,
// which the page cache shares across processes). Move-only; the mapping lives as long as the
// object. Reading is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace xinfer {

class MappedFile {
 public:
  static StatusOr<std::shared_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) file into a string, e.g. config.json.
StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace xinfer
