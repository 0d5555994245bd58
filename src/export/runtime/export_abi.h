// The contract between an exported library's generated object code (export_llvm.cpp
// emits it) and the runtime it is linked with (export_runtime.cpp). The object holds
// one `dietcode_export_module` describing the module and a thin function per public C
// entry point (`<name>_run`, ...) that passes that descriptor to the generic
// `dietcode_export_*` implementation below. C layout, every field 8 bytes wide, so the
// LLVM struct the exporter builds lays out the same (the exporter checks the offsets).
//
// Nothing here is part of the exported library's public API: the runtime is linked
// with hidden visibility, and the generated header (<name>.h) is what users see.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bump when a field changes; the runtime refuses a descriptor of another version.
#define DIETCODE_EXPORT_ABI_VERSION 1

// The vector ISA a module's kernels need (checked against the CPU on every call).
#define DIETCODE_EXPORT_ISA_AVX2 0
#define DIETCODE_EXPORT_ISA_AVX512 1

// Error codes of the public API; the generated header repeats them as <NAME>_OK, ...
#define DIETCODE_EXPORT_OK 0
#define DIETCODE_EXPORT_ERROR_NULL_POINTER 1
#define DIETCODE_EXPORT_ERROR_BUFFER_SIZE 2
#define DIETCODE_EXPORT_ERROR_SHAPE 3
#define DIETCODE_EXPORT_ERROR_WEIGHTS 4
#define DIETCODE_EXPORT_ERROR_CPU 5
#define DIETCODE_EXPORT_ERROR_OUT_OF_MEMORY 6
#define DIETCODE_EXPORT_ERROR_ARGUMENT 7
#define DIETCODE_EXPORT_ERROR_INTERNAL 8

// A generated function: `compute` takes the shape (M) and one pointer per operator
// input then the output; `prepack` takes the shape and {raw weights, packed weights}.
typedef void (*dietcode_export_fn)(const int64_t* shape, float* const* buffers);

typedef struct {
  dietcode_export_fn compute;
  dietcode_export_fn prepack;  // null: the kernel reads the raw weights
  int64_t packed_elements;     // elements of its packed weights (0 without prepack)
} dietcode_export_kernel;

typedef struct {
  int64_t abi_version;  // DIETCODE_EXPORT_ABI_VERSION
  const char* name;     // the C prefix of the public API, for messages
  int64_t isa;          // DIETCODE_EXPORT_ISA_*
  int64_t default_threads;
  int64_t m_min, m_max;   // the declared range of M (informative: any M >= 1 runs)
  int64_t num_inputs;     // operator inputs; the output is buffer num_inputs
  int64_t weights_input;  // the constant input passed as a prepacked handle, or -1
  // Elements of buffer i (inputs, then the output) = per_m[i] * M + fixed[i].
  const int64_t* elements_per_m;
  const int64_t* elements_fixed;
  const char* const* buffer_names;
  int64_t num_kernels;
  const dietcode_export_kernel* kernels;
  int32_t (*select)(const int64_t* shape);  // the dispatcher: shape -> kernel index
} dietcode_export_module;

// The generic implementation behind the generated entry points. Each returns a
// DIETCODE_EXPORT_* code and records a message for dietcode_export_last_error.
// `inputs`/`elements` have num_inputs entries; the entry at weights_input is ignored
// (the handle `weights` is used instead).
int dietcode_export_prepack(const dietcode_export_module* m, const float* weights, int64_t elements,
                            void** handle);
void dietcode_export_free_weights(const dietcode_export_module* m, void* handle);
int dietcode_export_run(const dietcode_export_module* m, int64_t M, const float* const* inputs,
                        const int64_t* elements, const void* weights, float* output,
                        int64_t output_elements);
int dietcode_export_set_threads(const dietcode_export_module* m, int threads);
int dietcode_export_kernel_for(const dietcode_export_module* m, int64_t M);
// The message of this thread's most recent call; "" if it succeeded.
const char* dietcode_export_last_error(void);

#ifdef __cplusplus
}
#endif
