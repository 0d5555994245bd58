// The fuzz build links tune/machine.cpp (records.cpp needs MachineInfo) but not the LLVM
// code generator. machine.cpp's this_machine() asks codegen for the host CPU; no loader
// calls it, so the fuzz targets get this stand-in, which fails loudly if that changes.
#include "codegen/llvm/target.h"
#include "support/error.h"

namespace dietcode::codegen {

const CpuTarget& host_target() {
  internal_error(__FILE__, __LINE__, "host_target() is not available in the fuzz build");
}

}  // namespace dietcode::codegen
