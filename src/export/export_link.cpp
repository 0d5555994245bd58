// Linking an exported library: the system's C++ driver (the compiler this project was
// built with, else `c++`) links the generated object with the export runtime archive.
// The runtime's symbols stay hidden (--exclude-libs), every undefined symbol must be
// resolved now (-z defs) rather than when a user loads the library.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "export/export_plan.h"
#include "support/error.h"

extern char** environ;

namespace dietcode::exporter {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRuntimeArchive = "libdietcode_export_runtime.a";

// Beside the running executable (an installed tool), else where the build put it.
std::string runtime_archive() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(exe.parent_path() / kRuntimeArchive);
#ifdef DIETCODE_EXPORT_RUNTIME_ARCHIVE
  candidates.push_back(DIETCODE_EXPORT_RUNTIME_ARCHIVE);
#endif
  for (const fs::path& p : candidates)
    if (fs::is_regular_file(p, ec)) return p.string();
  std::string looked;
  for (const fs::path& p : candidates) looked += (looked.empty() ? "" : ", ") + p.string();
  user_error(
      "export: the runtime archive {} was not found (looked at {}); build the target "
      "dietcode_export_runtime",
      kRuntimeArchive, looked);
}

std::string cxx_driver() {
#ifdef DIETCODE_EXPORT_CXX
  std::error_code ec;
  if (fs::is_regular_file(DIETCODE_EXPORT_CXX, ec)) return DIETCODE_EXPORT_CXX;
#endif
  return "c++";
}

// Runs argv, returns its exit status and its stdout + stderr.
int run(const std::vector<std::string>& argv, std::string& output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    user_error("export: cannot create a pipe to the linker: {}", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    user_error(
        "export: cannot run the linker '{}': {} (install g++, which the export needs to "
        "link)",
        argv[0], std::strerror(rc));
  }
  char buffer[4096];
  for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buffer, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

void link_shared_library(const std::string& object, const std::string& library,
                         const std::string& soname) {
  std::vector<std::string> argv = {cxx_driver(),
                                   "-shared",
                                   "-o",
                                   library,
                                   object,
                                   runtime_archive(),
                                   "-Wl,--exclude-libs,ALL",
                                   "-Wl,-z,defs",
                                   "-Wl,-z,noexecstack",
                                   "-Wl,--as-needed",
                                   "-Wl,-soname," + soname,
                                   "-lpthread",
                                   "-lm"};
  std::string output;
  int status = run(argv, output);
  if (status != 0) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    user_error("export: linking {} failed (exit status {}):\n  {}\n{}", library, status, command,
               output);
  }
}

}  // namespace dietcode::exporter
