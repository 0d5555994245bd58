// export_module: checks the request, plans the library (buffer sizes as functions of
// M, the weights input, every kernel lowered) and writes object, header and library.
#include "export/export_module.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "export/export_plan.h"
#include "ops/contraction.h"
#include "support/error.h"

namespace dietcode::exporter {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxNameLength = 64;

// Libraries of the C and C++ toolchain a program links by -l<name> (most of them
// implicitly): lib<name>.so in a directory given with -L (or rpath) would be found first
// and shadow them. Only names that are C identifiers can be asked for (not stdc++).
struct SystemLibrary {
  const char* name;
  const char* what;
};
constexpr SystemLibrary kSystemLibraries[] = {
    {"c", "the C library"},
    {"m", "the C math library"},
    {"pthread", "POSIX threads"},
    {"dl", "dynamic loading"},
    {"rt", "POSIX real-time extensions"},
    {"util", "glibc's login and pty utilities"},
    {"resolv", "the DNS resolver"},
    {"anl", "asynchronous name lookup"},
    {"nsl", "the network services library"},
    {"crypt", "password hashing"},
    {"mvec", "glibc's vector math library"},
    {"gcc", "GCC's runtime support"},
    {"gcc_s", "GCC's shared runtime support"},
    {"atomic", "GCC's atomics library"},
    {"gomp", "GCC's OpenMP runtime"},
    {"quadmath", "GCC's quad-precision math library"},
    {"ssp", "GCC's stack protector"},
    {"asan", "the address sanitizer runtime"},
    {"ubsan", "the undefined-behaviour sanitizer runtime"},
    {"omp", "LLVM's OpenMP runtime"},
    {"unwind", "the unwinder"},
};

// What the system library `name` is, or null if there is none by that name.
const char* shadowed_system_library(const std::string& name) {
  for (const SystemLibrary& lib : kSystemLibraries)
    if (name == lib.name) return lib.what;
  return nullptr;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Sizes are checked at a few M values to be exactly per_m * M + fixed.
ExportedBuffer affine_buffer(const te::Operator& op, size_t index, const std::string& name,
                             bool constant) {
  auto size_at = [&](int64_t M) { return op.buffer_sizes(op.bind({M}))[index]; };
  ExportedBuffer b{name, size_at(2) - size_at(1), 0, constant};
  b.fixed = size_at(1) - b.per_m;
  for (int64_t M : {3, 17, 1000, 123457})
    if (size_at(M) != b.per_m * M + b.fixed)
      user_error(
          "export: buffer {} of {} has {} elements at M = {}, not an affine function of M; the "
          "exported C API sizes buffers as a + b * M (tune N or K as fixed sizes to export)",
          name, op.name, size_at(M), M);
  return b;
}

ExportPlan plan_export(const runtime::ModuleSpec& spec, const std::string& name,
                       const codegen::CpuTarget& target) {
  ExportPlan plan;
  plan.name = name;
  plan.spec = spec;
  plan.op = spec.op.build();
  plan.target = target;
  const te::Operator& op = plan.op;
  DC_INTERNAL_CHECK(op.shape_vars.size() == 1, "operators with one shape variable (M)");
  for (size_t i = 0; i < op.inputs.size(); ++i)
    plan.buffers.push_back(affine_buffer(op, i, op.inputs[i].tensor.name(), op.inputs[i].constant));
  plan.buffers.push_back(
      affine_buffer(op, op.inputs.size(), op.compute.output.name(), /*constant=*/false));
  for (const ExportedBuffer& b : plan.buffers)
    DC_INTERNAL_CHECK(is_c_identifier(b.name), "buffer name {}", b.name);

  // Only a contraction's constant operand is pre-packed (row operators and attention
  // read every input as it is).
  if (schedule::kind_of_operator(spec.op) == schedule::Kind::Contraction) {
    ops::Contraction c = ops::match_contraction(op);
    if (c.b.constant) plan.weights_input = c.b_input_index;
  }
  if (plan.weights_input >= 0)
    DC_INTERNAL_CHECK(plan.buffers[plan.weights_input].per_m == 0, "weights that grow with M");

  const int64_t m_values[] = {spec.op.m_min, spec.op.m_max, 1, 1000};
  for (const schedule::AnySchedule& s : spec.kernels) {
    ExportedKernel k;
    k.lowered = lower::lower(op, s);
    if (k.lowered.prepacked_b) {
      DC_INTERNAL_CHECK(k.lowered.prepacked_input == plan.weights_input,
                        "a kernel pre-packs input {} but the weights are input {}",
                        k.lowered.prepacked_input, plan.weights_input);
      k.packed_elements = ir::evaluate_int(k.lowered.packed_b_size, op.bind({m_values[0]}));
      for (int64_t M : m_values)
        DC_INTERNAL_CHECK(
            ir::evaluate_int(k.lowered.packed_b_size, op.bind({M})) == k.packed_elements,
            "packed weights whose size depends on M");
    }
    plan.kernels.push_back(std::move(k));
  }
  return plan;
}

void check_out_dir(const std::string& dir) {
  if (dir.empty()) user_error("export: --out: expected a directory");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) user_error("export: --out {}: cannot create the directory: {}", dir, ec.message());
  if (!fs::is_directory(dir, ec)) user_error("export: --out {}: not a directory", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    user_error("export: --out {}: cannot write there: {}", dir, std::strerror(errno));
}

void write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) user_error("export: {}: cannot write: {}", tmp, std::strerror(errno));
    f << text;
    f.close();
    if (!f) user_error("export: {}: cannot write: {}", tmp, std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) user_error("export: {}: cannot write: {}", path, ec.message());
}

// Removes a temporary file on every path out of export_module.
struct TemporaryFile {
  std::string path;
  ~TemporaryFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

}  // namespace

bool is_valid_name(const std::string& name) {
  return name.size() <= kMaxNameLength && is_c_identifier(name) &&
         std::isalpha(static_cast<unsigned char>(name[0])) && name.rfind("dietcode", 0) != 0 &&
         !shadowed_system_library(name);
}

void check_name(const std::string& name) {
  if (const char* what = shadowed_system_library(name))
    user_error(
        "export: --name '{}': lib{}.so would shadow the system's lib{} ({}): a program linked "
        "with -L<dir> -l{} would get this library instead; choose another name",
        name, name, name, what, name);
  if (!is_valid_name(name))
    user_error(
        "export: name '{}': expected a C identifier (a letter, then letters, digits or '_', at "
        "most {} characters) not starting with 'dietcode'",
        name, kMaxNameLength);
}

std::string name_from(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || !std::isalpha(static_cast<unsigned char>(out[0]))) out = "m_" + out;
  if (out.rfind("dietcode", 0) == 0 || shadowed_system_library(out)) out = "m_" + out;
  if (out.size() > kMaxNameLength) out.resize(kMaxNameLength);
  return out;
}

ExportResult export_module(const runtime::ModuleSpec& module, const ExportOptions& options) {
  check_name(options.name);
  check_out_dir(options.out_dir);
  codegen::CpuTarget target = codegen::target_for_isa(module.isa);
  if (options.native) {
    if (!codegen::host_supports(module.isa))
      user_error("export: --native: the module is for {} but this CPU ({}) only has {}",
                 to_string(module.isa), codegen::host_target().cpu,
                 to_string(codegen::host_target().isa));
    target = codegen::host_target();
  }
  ExportPlan plan = plan_export(module, options.name, target);

  const fs::path dir(options.out_dir);
  ExportResult result{(dir / ("lib" + options.name + ".so")).string(),
                      (dir / (options.name + ".h")).string()};
  const std::string tag = std::to_string(::getpid());
  TemporaryFile object{(dir / ("." + options.name + "." + tag + ".o")).string()};
  TemporaryFile library{result.library + "." + tag + ".tmp"};
  write_object(plan, object.path);
  link_shared_library(object.path, library.path, "lib" + options.name + ".so");
  write_file(result.header, header_text(plan));
  std::error_code ec;
  fs::rename(library.path, result.library, ec);
  if (ec) user_error("export: {}: cannot write: {}", result.library, ec.message());
  return result;
}

}  // namespace dietcode::exporter
