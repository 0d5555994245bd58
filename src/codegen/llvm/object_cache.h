// Compiled kernels cached on disk, so that loading a model a second time skips LLVM's
// code generation (the bulk of a module's load time).
//
//   {
//     codegen::ObjectCacheScope cache(model_dir + "/jit-cache");
//     Module::compile(spec);  // its kernels' objects are read from, or written to, the cache
//   }
//
// An entry is the relocatable object of one kernel or dispatcher, named by a key over
// everything that determines the code: its LLVM module before optimization (hashed as
// bitcode), or, for a module's kernels, what they are lowered from (the operator's spec
// and the schedule as JSON: found without emitting the LLVM module, codegen::jit_compile),
// the host CPU and its features, and the build of this program (its GNU build ID: a
// rebuilt compiler never reads another build's objects). Each object read from the
// cache is linked into a JITDylib of its own, so the same kernel may be loaded any number
// of times. Each file carries a header (magic, key, size, FNV-1a of the payload); a file
// that does not match is ignored, recompiled and rewritten. Files are written through a
// temporary file renamed into place. Without a build ID (a binary linked without one)
// nothing is cached. Scopes are per thread: Module::compile's helper threads take the
// caller's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dietcode::codegen {

// Caching is on, in `dir` (created if needed), for compiles on this thread while the
// scope lives. Scopes nest; an empty dir turns caching off.
class ObjectCacheScope {
 public:
  explicit ObjectCacheScope(std::string dir);
  ~ObjectCacheScope();
  ObjectCacheScope(const ObjectCacheScope&) = delete;
  ObjectCacheScope& operator=(const ObjectCacheScope&) = delete;

 private:
  std::string previous_;
};

// The cache directory of this thread's innermost scope; empty when caching is off.
const std::string& object_cache_dir();
// The running program's GNU build ID (hex), empty if it has none.
const std::string& program_build_id();

// Process-wide counts: objects read from a cache, compiled into one, found damaged (and
// rewritten).
struct ObjectCacheStats {
  int64_t hits = 0, misses = 0, damaged = 0;
};
ObjectCacheStats object_cache_stats();

// The object stored under (key, name), or nothing when absent or damaged.
std::optional<std::string> read_cached_object(const std::string& dir, uint64_t key,
                                              const std::string& name);
// Stores it (best effort: a read-only or full disk only loses the cache).
void write_cached_object(const std::string& dir, uint64_t key, const std::string& name,
                         const std::string& object);

}  // namespace dietcode::codegen
