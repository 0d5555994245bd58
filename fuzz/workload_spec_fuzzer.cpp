// Workload spec files (tune::parse_workload_spec, what `dietcode tune --workload
// spec.json` reads). An accepted spec's operators must build, and each operator must
// survive the JSON form that tuning records and modules store.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz/fuzz_support.h"
#include "support/error.h"
#include "tune/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dietcode::fuzz::must;
  std::string text(reinterpret_cast<const char*>(data), size);
  dietcode::tune::WorkloadSpec w;
  try {
    w = dietcode::tune::parse_workload_spec(text, "spec.json");
  } catch (const dietcode::Error&) {
    return 0;
  }
  FUZZ_CHECK(!w.name.empty() && !w.operators.empty(), "an empty workload was accepted");
  for (const dietcode::tune::WorkloadOperator& o : w.operators) {
    must([&] { return o.op.build(); }, "OperatorSpec::build");
    dietcode::ops::OperatorSpec again =
        must([&] { return dietcode::ops::operator_spec_from_json(dietcode::ops::to_json(o.op)); },
             "operator_spec_from_json(to_json(op))");
    FUZZ_CHECK(again == o.op, "operator " + o.name + " changed in a JSON round trip");
  }
  return 0;
}
