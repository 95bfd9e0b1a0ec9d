#include "formats/gguf_writer.h"

#include <cstring>
#include <fstream>

#include "base/check.h"

namespace xinfer {
namespace {

template <typename T>
void Put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  s.append(b, sizeof(T));
}

void PutString(std::string& s, const std::string& v) {
  Put<uint64_t>(s, v.size());
  s += v;
}

}  // namespace

void GgufWriter::AddKv(const std::string& key, GgufType type, const std::string& encoded) {
  std::string s;
  PutString(s, key);
  Put<uint32_t>(s, static_cast<uint32_t>(type));
  s += encoded;
  kvs_.push_back(std::move(s));
}

void GgufWriter::SetString(const std::string& key, const std::string& v) {
  std::string e;
  PutString(e, v);
  AddKv(key, GgufType::kString, e);
}
void GgufWriter::SetU32(const std::string& key, uint32_t v) {
  std::string e;
  Put(e, v);
  AddKv(key, GgufType::kUint32, e);
}
void GgufWriter::SetI32(const std::string& key, int32_t v) {
  std::string e;
  Put(e, v);
  AddKv(key, GgufType::kInt32, e);
}
void GgufWriter::SetF32(const std::string& key, float v) {
  std::string e;
  Put(e, v);
  AddKv(key, GgufType::kFloat32, e);
}
void GgufWriter::SetBool(const std::string& key, bool v) {
  std::string e;
  Put<uint8_t>(e, v ? 1 : 0);
  AddKv(key, GgufType::kBool, e);
}
void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::string e;
  Put<uint32_t>(e, static_cast<uint32_t>(GgufType::kString));
  Put<uint64_t>(e, v.size());
  for (const auto& x : v) PutString(e, x);
  AddKv(key, GgufType::kArray, e);
}
void GgufWriter::SetF32Array(const std::string& key, const std::vector<float>& v) {
  std::string e;
  Put<uint32_t>(e, static_cast<uint32_t>(GgufType::kFloat32));
  Put<uint64_t>(e, v.size());
  for (float x : v) Put(e, x);
  AddKv(key, GgufType::kArray, e);
}
void GgufWriter::SetI32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::string e;
  Put<uint32_t>(e, static_cast<uint32_t>(GgufType::kInt32));
  Put<uint64_t>(e, v.size());
  for (int32_t x : v) Put(e, x);
  AddKv(key, GgufType::kArray, e);
}

void GgufWriter::AddTensor(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne,
                           std::string data) {
  const size_t n = data.size();
  tensors_.push_back({name, ggml_type, std::move(ne), std::move(data), n, false});
}

void GgufWriter::AddTensorInfo(const std::string& name, uint32_t ggml_type, std::vector<int64_t> ne,
                               size_t nbytes) {
  tensors_.push_back({name, ggml_type, std::move(ne), {}, nbytes, true});
}

std::string GgufWriter::SerializeHeader() const {
  std::string s = "GGUF";
  Put<uint32_t>(s, 3);
  Put<uint64_t>(s, tensors_.size());
  Put<uint64_t>(s, kvs_.size());
  for (const auto& kv : kvs_) s += kv;
  size_t offset = 0;
  for (const auto& t : tensors_) {
    PutString(s, t.name);
    Put<uint32_t>(s, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) Put<uint64_t>(s, static_cast<uint64_t>(d));
    Put<uint32_t>(s, t.type);
    Put<uint64_t>(s, offset);
    offset = Align(offset + t.nbytes);
  }
  s.resize(Align(s.size()), '\0');
  return s;
}

std::string GgufWriter::Serialize() const {
  std::string s = SerializeHeader();
  for (const auto& t : tensors_) {
    XI_CHECK_MSG(!t.streamed, "Serialize() needs every tensor's data; use WriteFile(path, fill)");
    s += t.data;
    s.resize(Align(s.size()), '\0');
  }
  return s;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  return WriteFile(path, [](const std::string& name) -> StatusOr<std::string> {
    return Internal("tensor '{}' was declared without data", name);
  });
}

Status GgufWriter::WriteFile(const std::string& path, const TensorFill& fill) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound("cannot create {}", path);
  auto put = [&out](const std::string& bytes) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  put(SerializeHeader());
  const std::string zeros(alignment_, '\0');
  for (const auto& t : tensors_) {
    if (!t.streamed) {
      put(t.data);
    } else {
      XI_ASSIGN_OR_RETURN(std::string data, fill(t.name));
      if (data.size() != t.nbytes)
        return Internal("tensor '{}': {} bytes produced, {} declared", t.name, data.size(),
                        t.nbytes);
      put(data);
    }
    out.write(zeros.data(), static_cast<std::streamsize>(Align(t.nbytes) - t.nbytes));
    if (!out) return Internal("write to {} failed (disk full?)", path);
  }
  out.close();
  if (!out) return Internal("write to {} failed (disk full?)", path);
  return Status::Ok();
}

}  // namespace xinfer
