// The runtime of an exported library (dietcode export): the generic C API behind the
// generated entry points, over the descriptor the exporter emits (export_abi.h). It is
// built, with the thread pool and the packing scratch of src/runtime, into the PIC
// static library `dietcode_export_runtime` with hidden visibility, and linked into each
// exported library, which then needs nothing of LLVM, XGBoost or this project.
//
// Every entry point validates its arguments before any generated code runs, returns an
// error code, and leaves a message for `<name>_last_error` (per thread). No exception
// leaves this file.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include "export/runtime/export_abi.h"
#include "runtime/thread_pool.h"
#include "support/int_math.h"

namespace {

thread_local std::string last_error;

// Records the message and returns `code`.
[[gnu::format(printf, 2, 3)]] int fail(int code, const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  last_error = text;
  return code;
}

long long ll(int64_t v) {
  return static_cast<long long>(v);
}

bool cpu_supports(int64_t isa) {
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  if (isa == DIETCODE_EXPORT_ISA_AVX2) return avx2;
  return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512cd");
}

const char* isa_name(int64_t isa) {
  return isa == DIETCODE_EXPORT_ISA_AVX2 ? "AVX2 + FMA (x86-64-v3)" : "AVX-512 (x86-64-v4)";
}

// Checks what every call needs: a descriptor this runtime understands, and a CPU that
// can run the kernels (the generated code would die of SIGILL otherwise).
int check_module(const dietcode_export_module* m, const char* function) {
  if (!m || m->abi_version != DIETCODE_EXPORT_ABI_VERSION)
    return fail(DIETCODE_EXPORT_ERROR_INTERNAL,
                "%s: the library's module descriptor does not match its runtime (ABI version)",
                function);
  static const bool avx2 = cpu_supports(DIETCODE_EXPORT_ISA_AVX2);
  static const bool avx512 = cpu_supports(DIETCODE_EXPORT_ISA_AVX512);
  bool ok = m->isa == DIETCODE_EXPORT_ISA_AVX2 ? avx2 : avx512;
  if (!ok)
    return fail(DIETCODE_EXPORT_ERROR_CPU,
                "%s: this library needs a CPU with %s; this one lacks it", function,
                isa_name(m->isa));
  return DIETCODE_EXPORT_OK;
}

// Elements of buffer i for M; false if the count overflows int64_t.
bool buffer_elements(const dietcode_export_module* m, int64_t i, int64_t M, int64_t* out) {
  int64_t scaled;
  return !__builtin_mul_overflow(m->elements_per_m[i], M, &scaled) &&
         !__builtin_add_overflow(scaled, m->elements_fixed[i], out);
}

void ensure_pool(const dietcode_export_module* m) {
  static std::once_flag once;
  std::call_once(once, [m] {
    dietcode::runtime::ThreadPool::global().set_num_threads(static_cast<int>(m->default_threads));
  });
}

// 64-byte aligned floats: packed panels are read with the alignment the JIT's
// AlignedBuffer gives them.
float* aligned_floats(int64_t elements) {
  size_t bytes = dietcode::round_up(static_cast<size_t>(elements) * sizeof(float), 64);
  return static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
}

constexpr uint64_t kWeightsMagic = 0x737468676965574BULL;  // "KWeights"

// What `<name>_prepack` returns: the weights packed for every kernel that reads them
// packed, and a copy of the raw weights if some kernel reads those.
struct Weights {
  uint64_t magic = kWeightsMagic;
  const dietcode_export_module* module = nullptr;
  float* raw = nullptr;
  std::vector<float*> packed;  // per kernel; null where the kernel reads `raw`

  ~Weights() {
    magic = 0;  // a handle used after free is refused (while its memory is not reused)
    std::free(raw);
    for (float* p : packed) std::free(p);
  }
};

// Runs `body`, turning any exception into an error code and message.
template <typename Body>
int guarded(const char* name, const char* function, Body body) {
  try {
    last_error.clear();
    return body();
  } catch (const std::bad_alloc&) {
    return fail(DIETCODE_EXPORT_ERROR_OUT_OF_MEMORY, "%s_%s: out of memory", name, function);
  } catch (const std::system_error& e) {
    return fail(DIETCODE_EXPORT_ERROR_INTERNAL, "%s_%s: cannot start threads: %s", name, function,
                e.what());
  } catch (const std::exception& e) {
    return fail(DIETCODE_EXPORT_ERROR_INTERNAL, "%s_%s: internal error: %s", name, function,
                e.what());
  } catch (...) {
    return fail(DIETCODE_EXPORT_ERROR_INTERNAL, "%s_%s: internal error", name, function);
  }
}

// The name of the module (for messages) even if the descriptor is broken.
const char* module_name(const dietcode_export_module* m) {
  return m && m->name ? m->name : "dietcode_export";
}

}  // namespace

extern "C" {

int dietcode_export_prepack(const dietcode_export_module* m, const float* weights, int64_t elements,
                            void** handle) {
  const char* name = module_name(m);
  return guarded(name, "prepack", [&]() -> int {
    std::string function = std::string(name) + "_prepack";
    if (int rc = check_module(m, function.c_str())) return rc;
    if (!handle)
      return fail(DIETCODE_EXPORT_ERROR_NULL_POINTER,
                  "%s: the result pointer (weights handle out) is null", function.c_str());
    *handle = nullptr;
    if (m->weights_input < 0)
      return fail(DIETCODE_EXPORT_ERROR_ARGUMENT, "%s: this operator has no constant weights",
                  function.c_str());
    const int64_t w = m->weights_input;
    const char* buffer = m->buffer_names[w];
    if (!weights)
      return fail(DIETCODE_EXPORT_ERROR_NULL_POINTER, "%s: buffer %s is a null pointer",
                  function.c_str(), buffer);
    if (elements != m->elements_fixed[w])
      return fail(DIETCODE_EXPORT_ERROR_BUFFER_SIZE,
                  "%s: buffer %s has %lld elements, expected %lld", function.c_str(), buffer,
                  ll(elements), ll(m->elements_fixed[w]));
    ensure_pool(m);
    auto h = std::make_unique<Weights>();
    h->module = m;
    h->packed.assign(static_cast<size_t>(m->num_kernels), nullptr);
    bool any_raw = false;
    for (int64_t k = 0; k < m->num_kernels; ++k) {
      const dietcode_export_kernel& kernel = m->kernels[k];
      if (!kernel.prepack) {
        any_raw = true;
        continue;
      }
      float* packed = aligned_floats(kernel.packed_elements);
      if (!packed) throw std::bad_alloc();
      h->packed[k] = packed;
      // The packed layout does not depend on M; any valid shape will do.
      const int64_t shape[1] = {m->m_min};
      float* const buffers[2] = {const_cast<float*>(weights), packed};
      kernel.prepack(shape, buffers);
    }
    if (any_raw) {
      h->raw = aligned_floats(elements);
      if (!h->raw) throw std::bad_alloc();
      std::memcpy(h->raw, weights, static_cast<size_t>(elements) * sizeof(float));
    }
    *handle = h.release();
    return DIETCODE_EXPORT_OK;
  });
}

void dietcode_export_free_weights(const dietcode_export_module*, void* handle) {
  auto* h = static_cast<Weights*>(handle);
  if (h && h->magic == kWeightsMagic) delete h;
}

int dietcode_export_run(const dietcode_export_module* m, int64_t M, const float* const* inputs,
                        const int64_t* elements, const void* weights, float* output,
                        int64_t output_elements) {
  const char* name = module_name(m);
  return guarded(name, "run", [&]() -> int {
    std::string function = std::string(name) + "_run";
    const char* f = function.c_str();
    if (int rc = check_module(m, f)) return rc;
    if (M < 1) return fail(DIETCODE_EXPORT_ERROR_SHAPE, "%s: M = %lld: expected M >= 1", f, ll(M));
    const int64_t n = m->num_inputs;
    std::vector<float*> buffers(static_cast<size_t>(n + 1));
    auto check_buffer = [&](int64_t i, const float* data, int64_t given) -> int {
      const char* buffer = m->buffer_names[i];
      int64_t expected;
      if (!buffer_elements(m, i, M, &expected))
        return fail(DIETCODE_EXPORT_ERROR_SHAPE, "%s: M = %lld is too large: buffer %s overflows",
                    f, ll(M), buffer);
      if (!data)
        return fail(DIETCODE_EXPORT_ERROR_NULL_POINTER, "%s: buffer %s is a null pointer", f,
                    buffer);
      if (given != expected)
        return fail(DIETCODE_EXPORT_ERROR_BUFFER_SIZE,
                    "%s: buffer %s has %lld elements, expected %lld for M = %lld", f, buffer,
                    ll(given), ll(expected), ll(M));
      buffers[static_cast<size_t>(i)] = const_cast<float*>(data);  // kernels only read inputs
      return DIETCODE_EXPORT_OK;
    };
    for (int64_t i = 0; i < n; ++i)
      if (i != m->weights_input)
        if (int rc = check_buffer(i, inputs[i], elements[i])) return rc;
    if (int rc = check_buffer(n, output, output_elements)) return rc;
    const Weights* h = static_cast<const Weights*>(weights);
    if (m->weights_input >= 0) {
      if (!h)
        return fail(DIETCODE_EXPORT_ERROR_NULL_POINTER,
                    "%s: the weights handle is null; create it with %s_prepack", f, name);
      if (h->magic != kWeightsMagic || h->module != m)
        return fail(DIETCODE_EXPORT_ERROR_WEIGHTS,
                    "%s: the weights handle was not made by %s_prepack (or was freed)", f, name);
    }
    const int64_t shape[1] = {M};
    const int32_t k = m->select(shape);
    if (k < 0 || k >= m->num_kernels)
      return fail(DIETCODE_EXPORT_ERROR_INTERNAL, "%s: the dispatcher chose kernel %d of %lld", f,
                  static_cast<int>(k), ll(m->num_kernels));
    if (m->weights_input >= 0) {
      float* packed = h->packed[static_cast<size_t>(k)];
      buffers[static_cast<size_t>(m->weights_input)] = packed ? packed : h->raw;
    }
    ensure_pool(m);
    m->kernels[k].compute(shape, buffers.data());
    return DIETCODE_EXPORT_OK;
  });
}

int dietcode_export_set_threads(const dietcode_export_module* m, int threads) {
  const char* name = module_name(m);
  return guarded(name, "set_threads", [&]() -> int {
    if (threads < 1 || threads > 4096)
      return fail(DIETCODE_EXPORT_ERROR_ARGUMENT, "%s_set_threads: %d threads: expected 1..4096",
                  name, threads);
    ensure_pool(m);
    dietcode::runtime::ThreadPool::global().set_num_threads(threads);
    return DIETCODE_EXPORT_OK;
  });
}

int dietcode_export_kernel_for(const dietcode_export_module* m, int64_t M) {
  const char* name = module_name(m);
  int kernel = -1;
  int rc = guarded(name, "kernel_for", [&]() -> int {
    if (M < 1)
      return fail(DIETCODE_EXPORT_ERROR_SHAPE, "%s_kernel_for: M = %lld: expected M >= 1", name,
                  ll(M));
    const int64_t shape[1] = {M};
    kernel = m->select(shape);
    return DIETCODE_EXPORT_OK;
  });
  return rc == DIETCODE_EXPORT_OK ? kernel : -1;
}

const char* dietcode_export_last_error(void) {
  return last_error.c_str();
}

}  // extern "C"
