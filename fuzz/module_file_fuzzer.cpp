// Module files (runtime::load_module_spec): the bytes are written to a file and loaded
// exactly as `dietcode` and the public API load a module. A module the loader accepts
// must then behave: it survives a JSON round trip unchanged, its decision tree sends
// every shape to one of its kernels, it can be retargeted to either vector ISA, and its
// informative fields are JSON objects (the API, `dietcode show` and `dietcode bench`
// read them with .value() and .items(), which throw on anything else).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "runtime/module.h"
#include "schedule/isa.h"
#include "support/error.h"

namespace {

using dietcode::fuzz::must;
using dietcode::runtime::ModuleSpec;

void check_round_trip(const ModuleSpec& m, const char* what) {
  nlohmann::json j = must([&] { return dietcode::runtime::to_json(m); }, what);
  ModuleSpec again =
      must([&] { return dietcode::runtime::module_spec_from_json(j, "round trip"); }, what);
  FUZZ_CHECK(dietcode::runtime::to_json(again) == j, std::string(what) + " changed the module");
}

void check_dispatch(const ModuleSpec& m) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  for (int64_t value : {int64_t{1}, m.op.m_min, m.op.m_max, m.op.m_max + (m.op.m_max < big), big}) {
    int k = must([&] { return m.dispatch.select(std::vector<int64_t>{value}); }, "select");
    FUZZ_CHECK(k >= 0 && k < static_cast<int>(m.kernels.size()),
               "M = " + std::to_string(value) + " dispatches to kernel " + std::to_string(k));
  }
  must([&] { return m.dispatch.describe({"M"}); }, "describe");
  must([&] { return m.dispatch.depth(); }, "depth");
}

void check_informative_fields(const ModuleSpec& m) {
  FUZZ_CHECK(m.machine.is_object(), "field 'machine' is " + m.machine.dump().substr(0, 60));
  FUZZ_CHECK(m.provenance.is_object(),
             "field 'provenance' is " + m.provenance.dump().substr(0, 60));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static dietcode::fuzz::ScratchFile file;
  ModuleSpec m;
  try {
    m = dietcode::runtime::load_module_spec(file.write(data, size));
  } catch (const dietcode::Error&) {
    return 0;  // refused with a message: the expected answer to bad input
  }
  check_round_trip(m, "to_json + module_spec_from_json");
  check_dispatch(m);
  check_informative_fields(m);
  for (dietcode::schedule::Isa isa : {dietcode::schedule::Isa::Avx2, dietcode::schedule::Isa::Avx512}) {
    ModuleSpec r = must([&] { return dietcode::runtime::retarget(m, isa); }, "retarget");
    check_round_trip(r, "retarget");
  }
  return 0;
}
