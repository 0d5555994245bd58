// The C functions generated code calls. Kernel::compile (kernel.cpp) hands their
// addresses to the JIT (codegen::jit_define_symbols), so they need not be exported
// from the executable.
#pragma once

#include <cstdint>

extern "C" {
// Runs body(begin, end, closure) over ranges that cover [0, n) once, on the runtime's thread
// pool (one range [0, n) when the caller runs alone, or when `work`, the operations of the
// whole call, is below the pool's serial threshold; work < 0: unknown); returns when all
// are done.
void dietcode_parallel_for(int64_t n, void (*body)(int64_t, int64_t, void*), void* closure,
                           int64_t work);
// 64-byte aligned scratch memory for packed panels, from a per-thread stack: frees
// must come in reverse order of allocation on each thread (generated code's
// allocations nest). Aborts with a message if memory runs out (generated code has
// no error path).
void* dietcode_alloc(int64_t bytes);
void dietcode_free(void* p);
}
