// What the fuzz targets share.
//
//   ScratchFile   an in-memory file holding the current input, for loaders that
//                 take a path (so the target reads bytes exactly as the tool does)
//   must(f, what) runs a step that must succeed on input a loader accepted: any
//                 exception there is a bug, reported as a crash
//   FUZZ_CHECK    an invariant of a loaded object; a failure is a crash
//
// The contract every target checks: a loader answers bad input with dietcode::Error
// only. The targets catch that one type; anything else (another exception, a sanitizer
// report, an assertion, a hang, running out of memory) reaches libFuzzer as a crash.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace dietcode::fuzz {

[[noreturn]] inline void fail(const std::string& message) {
  std::fprintf(stderr, "\nfuzz invariant broken: %s\n", message.c_str());
  std::abort();
}

#define FUZZ_CHECK(cond, message)                                             \
  do {                                                                        \
    if (!(cond)) ::dietcode::fuzz::fail(std::string(#cond ": ") + (message)); \
  } while (false)

template <typename F>
auto must(F&& step, const char* what) -> decltype(step()) {
  try {
    return step();
  } catch (const std::exception& e) {
    fail(std::string(what) + " threw on input the loader accepted: " + e.what());
  }
}

// An anonymous in-memory file (memfd, Linux): nothing is left behind by a crashing run,
// and no file system flushes it (ext4 writes back a truncated file on every close, which
// cut the runs tenfold). Loaders open it by its /proc/self/fd path, which starts at
// offset 0 like any fresh open.
class ScratchFile {
 public:
  ScratchFile() {
    fd_ = ::memfd_create("dietcode-fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) fail("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() { ::close(fd_); }

  // Replaces the contents with `data` and returns the path to read them from.
  const std::string& write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("cannot truncate the scratch file");
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("cannot write the scratch file");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace dietcode::fuzz
