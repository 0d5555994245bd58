// A 64-byte aligned float32 array owned by the caller: inputs, outputs, pre-packed weights.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace dietcode::runtime {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(int64_t elements);  // uninitialized
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  std::span<float> span() { return {data_.get(), static_cast<size_t>(size_)}; }
  std::span<const float> span() const { return {data_.get(), static_cast<size_t>(size_)}; }
  float& operator[](int64_t i) { return data_[i]; }
  const float& operator[](int64_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  int64_t size_ = 0;
};

}  // namespace dietcode::runtime
