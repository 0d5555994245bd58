// Internal to src/export: what an exported library holds, decided once from the module
// (export_module.cpp) and then written out three ways: object code (export_llvm.cpp),
// the C header (export_header.cpp) and the linked shared library (export_link.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/llvm/target.h"
#include "lower/pipeline.h"
#include "runtime/module.h"
#include "te/tensor.h"

namespace dietcode::exporter {

// One operator buffer as the C API sees it: elements = per_m * M + fixed.
struct ExportedBuffer {
  std::string name;  // the tensor's name ("X"), a C identifier
  int64_t per_m = 0, fixed = 0;
  bool constant = false;  // a constant input (weights, bias)
};

struct ExportedKernel {
  lower::LoweredKernel lowered;
  int64_t packed_elements = 0;  // packed weights (no header), 0 unless it pre-packs
};

struct ExportPlan {
  std::string name;  // the C prefix
  runtime::ModuleSpec spec;
  te::Operator op;
  codegen::CpuTarget target;            // what the kernels are compiled for
  std::vector<ExportedBuffer> buffers;  // the operator's inputs, then its output
  int weights_input = -1;               // the constant input passed as a `<name>_weights` handle
  std::vector<ExportedKernel> kernels;

  int num_inputs() const { return static_cast<int>(buffers.size()) - 1; }
};

// The names of the C entry points the library exports (without the `<name>_` prefix),
// in the order the header declares them.
std::vector<std::string> api_functions(const ExportPlan& plan);

// Writes every kernel, the dispatcher, the module descriptor and the C entry points as
// one position-independent object file (export_llvm.cpp).
void write_object(const ExportPlan& plan, const std::string& path);

// The text of `<name>.h` (export_header.cpp).
std::string header_text(const ExportPlan& plan);

// Links the object with the export runtime into a shared library (export_link.cpp).
// Throws dietcode::Error with the linker's output if it fails.
void link_shared_library(const std::string& object, const std::string& library,
                         const std::string& soname);

}  // namespace dietcode::exporter
