// `<name>.h`: the C API of an exported library, generated from the plan so that it
// names the operator's own buffers (X, W, bias, Y) and documents their sizes.
#include <fmt/format.h>

#include <cctype>
#include <sstream>
#include <vector>

#include "export/export_plan.h"
#include "export/runtime/export_abi.h"

namespace dietcode::exporter {

namespace {

std::string upper(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Text safe inside a C block comment, each line prefixed.
std::string comment_lines(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    for (size_t at; (at = line.find("*/")) != std::string::npos;) line.replace(at, 2, "* /");
    out += prefix + line + "\n";
  }
  return out;
}

std::string size_formula(const ExportedBuffer& b) {
  if (b.per_m == 0) return std::to_string(b.fixed);
  std::string s = b.per_m == 1 ? "M" : fmt::format("M * {}", b.per_m);
  if (b.fixed != 0) s += fmt::format(" + {}", b.fixed);
  return s;
}

}  // namespace

std::string header_text(const ExportPlan& plan) {
  const std::string& p = plan.name;
  const std::string P = upper(p);
  const int n = plan.num_inputs();
  const bool has_weights = plan.weights_input >= 0;
  const ExportedBuffer& out_buffer = plan.buffers.back();
  const std::string weights_type = p + "_weights";

  std::string h;
  auto line = [&h](const std::string& s) { h += s + "\n"; };
  line(fmt::format("/* {}.h: the C API of lib{}.so, a tuned DietCode module exported by", p, p));
  line(" * `dietcode export`. The library holds the selected micro-kernels as object code, the");
  line(" * decision tree that picks one for each M, and a small runtime (thread pool, packing");
  line(" * scratch); it needs only libc, libm, libpthread and libstdc++.");
  line(fmt::format(" *   cc prog.c -I<dir> -L<dir> -l{} -Wl,-rpath,<dir>", p));
  line(" *");
  line(" * Operator: " + plan.spec.op.describe());
  h += comment_lines(plan.op.describe(), " *   ");
  line(
      fmt::format(" * Kernels: {} micro-kernel(s) for {}, tuned with {} thread(s) for M in {}..{};",
                  plan.kernels.size(), to_string(plan.spec.isa), plan.spec.threads, plan.spec.op.m_min,
                  plan.spec.op.m_max));
  line(" * any M >= 1 runs (the decision tree dispatches shapes outside that range too).");
  line(fmt::format(" * CPU: needs {}; on a CPU without it every call returns {}_ERROR_CPU.",
                   plan.spec.isa == schedule::Isa::Avx512 ? "AVX-512 (x86-64-v4)" : "AVX2 + FMA (x86-64-v3)",
                   P));
  if (plan.target.cpu != "x86-64-v3" && plan.target.cpu != "x86-64-v4")
    line(" * Compiled for the CPU " + plan.target.cpu +
         " (dietcode export --native): it may use every feature of that CPU.");
  line(" *");
  line(" * Buffers: float32, row-major, contiguous; element counts as functions of M:");
  for (int i = 0; i <= n; ++i) {
    const ExportedBuffer& b = plan.buffers[i];
    std::string role = i == n ? "output (every element is written)" : "input";
    if (i == plan.weights_input)
      role +=
          fmt::format(", constant weights: pass the {} handle from {}_prepack", weights_type, p);
    else if (b.constant)
      role += ", constant";
    line(fmt::format(" *   {:<6} {:<14} {}", b.name, size_formula(b), role));
  }
  line(" *");
  line(fmt::format(
      " * Every function checks its arguments (null pointers, element counts, M >= 1)"));
  line(fmt::format(" * before computing, returns {}_OK (0) or an error code, and leaves a message",
                   P));
  line(fmt::format(" * for {}_last_error(). Calls may come from several threads at once.", p));
  line(" *");
  line(" * Example:");
  std::vector<std::string> run_args = {"M"};
  for (int i = 0; i < n; ++i) {
    const std::string& b = plan.buffers[i].name;
    run_args.push_back(i == plan.weights_input ? "w"
                                               : fmt::format("{0}, {1}_{0}_elements(M)", b, p));
  }
  run_args.push_back(fmt::format("{0}, {1}_{0}_elements(M)", out_buffer.name, p));
  if (has_weights) {
    const std::string& w = plan.buffers[plan.weights_input].name;
    line(fmt::format(" *   {}* w;", weights_type));
    line(fmt::format(" *   if ({0}_prepack({1}, {0}_{1}_elements(1), &w) != {2}_OK) {{", p, w, P));
    line(fmt::format(" *     fprintf(stderr, \"%s\\n\", {}_last_error());", p));
    line(" *     return 1;");
    line(" *   }");
  }
  // The call wrapped at 90 columns.
  std::string call = fmt::format(" *   if ({}_run(", p);
  const std::string call_indent = " *" + std::string(call.size() - 2, ' ');
  size_t line_start = 0;
  for (size_t i = 0; i < run_args.size(); ++i) {
    std::string arg = run_args[i] + (i + 1 < run_args.size() ? "," : "");
    if (i > 0 && call.size() - line_start + arg.size() + 1 > 90) {
      call += "\n" + call_indent;
      line_start = call.size() - call_indent.size();
    } else if (i > 0) {
      call += " ";
    }
    call += arg;
  }
  line(fmt::format("{}) != {}_OK)", call, P));
  line(fmt::format(" *     fprintf(stderr, \"%s\\n\", {}_last_error());", p));
  if (has_weights) line(fmt::format(" *   {}_free_weights(w);", p));
  line(" */");
  line(fmt::format("#ifndef {}_H_", P));
  line(fmt::format("#define {}_H_", P));
  line("");
  line("#include <stdint.h>");
  line("");
  line("#ifdef __cplusplus");
  line("extern \"C\" {");
  line("#endif");
  line("");
  line("/* Return codes. */");
  line("enum {");
  auto code = [&](const char* suffix, int value, const char* doc) {
    line(fmt::format("  {}_{} = {}, /* {} */", P, suffix, value, doc));
  };
  code("OK", DIETCODE_EXPORT_OK, "success");
  code("ERROR_NULL_POINTER", DIETCODE_EXPORT_ERROR_NULL_POINTER, "a buffer or handle is null");
  code("ERROR_BUFFER_SIZE", DIETCODE_EXPORT_ERROR_BUFFER_SIZE,
       "an element count differs from the one for this M");
  code("ERROR_SHAPE", DIETCODE_EXPORT_ERROR_SHAPE, "M < 1, or so large that a size overflows");
  code("ERROR_WEIGHTS", DIETCODE_EXPORT_ERROR_WEIGHTS,
       "the weights handle was not made by this library");
  code("ERROR_CPU", DIETCODE_EXPORT_ERROR_CPU, "this CPU lacks the vector ISA of the kernels");
  code("ERROR_OUT_OF_MEMORY", DIETCODE_EXPORT_ERROR_OUT_OF_MEMORY, "allocation failed");
  code("ERROR_ARGUMENT", DIETCODE_EXPORT_ERROR_ARGUMENT, "another argument is out of range");
  code("ERROR_INTERNAL", DIETCODE_EXPORT_ERROR_INTERNAL, "a bug; the message says where");
  line("};");
  line("");
  line("/* Element counts of the buffers for a given M (no overflow check: run has one). */");
  for (const ExportedBuffer& b : plan.buffers) {
    std::string body = fmt::format("return M * INT64_C({});", b.per_m);
    if (b.per_m == 0) body = fmt::format("(void)M;\n  return INT64_C({});", b.fixed);
    if (b.per_m != 0 && b.fixed != 0)
      body = fmt::format("return M * INT64_C({}) + INT64_C({});", b.per_m, b.fixed);
    line(fmt::format("static inline int64_t {}_{}_elements(int64_t M) {{\n  {}\n}}", p, b.name,
                     body));
  }
  line("");
  if (has_weights) {
    const ExportedBuffer& w = plan.buffers[plan.weights_input];
    line(fmt::format("/* The weights {} packed for every micro-kernel (opaque). */", w.name));
    line(fmt::format("typedef struct {0} {0};", weights_type));
    line("");
    line(fmt::format("/* Packs the weights {0} ({1} floats) for every micro-kernel that reads them",
                     w.name, w.fixed));
    line(fmt::format(" * packed; {} may be freed afterwards. On success *weights is a new handle;",
                     w.name));
    line(" * pass it to every run with these weights and free it with");
    line(fmt::format(" * {}_free_weights. On failure *weights is NULL (if weights is not NULL). */",
                     p));
    line(fmt::format("int {0}_prepack(const float* {1}, int64_t {1}_elements, {2}** weights);", p,
                     w.name, weights_type));
    line("");
    line(fmt::format("/* Frees a handle from {0}_prepack; NULL is ignored. */", p));
    line(fmt::format("void {}_free_weights({}* weights);", p, weights_type));
    line("");
  }
  line(fmt::format("/* Computes {} for M rows (any M >= 1) with the micro-kernel the decision",
                   out_buffer.name));
  line(" * tree picks for M. Each buffer comes with its element count, checked against the");
  line(" * count for M listed above. */");
  // One buffer (pointer and element count) per line.
  const std::string indent(p.size() + 9, ' ');
  std::string params = "int64_t M";
  for (int i = 0; i < n; ++i) {
    const std::string& b = plan.buffers[i].name;
    params += i == plan.weights_input
                  ? fmt::format(",\n{}const {}* weights", indent, weights_type)
                  : fmt::format(",\n{0}const float* {1}, int64_t {1}_elements", indent, b);
  }
  params += fmt::format(",\n{0}float* {1}, int64_t {1}_elements", indent, out_buffer.name);
  line(fmt::format("int {}_run({});", p, params));
  line("");
  line("/* Threads for the parallel loops (1..4096), the caller included; until it is");
  line(fmt::format(" * called, {} (the count the module was tuned with). */", plan.spec.threads));
  line(fmt::format("int {}_set_threads(int threads);", p));
  line("");
  line(fmt::format("/* The index of the micro-kernel that runs for M (0..{}), or -1 if M < 1. */",
                   plan.kernels.size() - 1));
  line(fmt::format("int {}_kernel_for(int64_t M);", p));
  line("");
  line("/* What went wrong in this thread's most recent call; \"\" if it succeeded. The text");
  line(" * stays valid until this thread's next call. */");
  line(fmt::format("const char* {}_last_error(void);", p));
  line("");
  line("#ifdef __cplusplus");
  line("}  /* extern \"C\" */");
  line("#endif");
  line("");
  line(fmt::format("#endif /* {}_H_ */", P));
  return h;
}

}  // namespace dietcode::exporter
