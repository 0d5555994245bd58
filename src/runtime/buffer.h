// A 64-byte aligned float32 array owned by the caller: inputs, outputs, pre-packed weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <vector>

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

// An allocator for std::vector that aligns to 64 bytes, as AlignedBuffer and the tensors of
// ML frameworks are: for data handed to generated kernels and to other libraries alike (a
// plain std::vector of a large size starts 16 bytes into a page, which puts every other
// 32-byte load of a 64-byte-strided row across two cache lines).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlignment); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace dietcode::runtime
