#include "tensor/tensor.h"

namespace xinfer {

std::string ShapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Tensor::Tensor(std::shared_ptr<Buffer> buffer, size_t offset, DType dtype, Shape shape)
    : buffer_(std::move(buffer)), offset_(offset), dtype_(dtype), shape_(std::move(shape)) {
  XI_CHECK(buffer_ != nullptr);
  XI_CHECK_MSG(offset_ + size_bytes() <= buffer_->size_bytes(), "tensor exceeds its buffer");
}

Tensor Tensor::Reshaped(Shape shape) const {
  XI_CHECK(NumElements(shape) == numel());
  return Tensor(buffer_, offset_, dtype_, std::move(shape));
}

Tensor Tensor::Slice0(int64_t begin, int64_t end) const {
  XI_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0]);
  Shape s = shape_;
  s[0] = end - begin;
  int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  return Tensor(buffer_, offset_ + static_cast<size_t>(begin * row) * DTypeSize(dtype_), dtype_,
                std::move(s));
}

}  // namespace xinfer
