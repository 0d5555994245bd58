// `dietcode export`: a tuned module as a self-contained shared library and C header.
// The library holds every selected kernel and the dispatcher as object code emitted
// through LLVM, plus the small runtime they call (thread pool, scratch memory); a C or
// C++ program links it without LLVM, XGBoost or this project.
//
//   ExportResult r = export_module(load_module_spec("dense.json"), {.out_dir = "out",
//                                                                   .name = "dense"});
//   // r.library = "out/libdense.so", r.header = "out/dense.h"
//
// The generated C API (documented in the header it writes): `<name>_prepack` and
// `<name>_free_weights` (operators with constant weights), `<name>_run`,
// `<name>_set_threads`, `<name>_kernel_for`, `<name>_last_error`. Every entry point
// checks its arguments and returns an error code with a message; none aborts on bad
// input. Pieces: export_module.cpp (validation, the plan), export_llvm.cpp (object
// code), export_header.cpp (the header), export_link.cpp (the system linker),
// runtime/export_runtime.cpp (the runtime linked into every library).
#pragma once

#include <string>

#include "runtime/module.h"

namespace dietcode::exporter {

struct ExportOptions {
  std::string out_dir;  // created if missing
  std::string name;     // C identifier prefix and file names: lib<name>.so, <name>.h
  // false: code for the generic CPU of the module's ISA (x86-64-v3 for avx2, x86-64-v4 for
  // avx512), which runs on any such machine. true: code for this machine's CPU model
  // (needs the module's ISA here), which may not run elsewhere.
  bool native = false;
};

struct ExportResult {
  std::string library, header;
};

// A C identifier for the API prefix: a letter, then letters, digits or '_', at most 64
// characters, not starting with "dietcode" (reserved for the runtime's own symbols), and
// not the name of a system library lib<name>.so would shadow ("m", "c", "pthread", ...).
bool is_valid_name(const std::string& name);
// Throws dietcode::Error saying what a valid name is, unless `name` is one.
void check_name(const std::string& name);
// A valid name made from any text (e.g. a module file's name): "bert-2304x768" ->
// "bert_2304x768", "1x" -> "m_1x", "m" -> "m_m".
std::string name_from(const std::string& text);

// Throws dietcode::Error for a bad name or directory, or when the system linker fails.
// Both files are replaced atomically: a failed export leaves earlier ones intact.
ExportResult export_module(const runtime::ModuleSpec& module, const ExportOptions& options);

}  // namespace dietcode::exporter
