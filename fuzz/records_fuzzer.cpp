// Tuning records files (tune::read_records_any_machine: the header line, then one
// record_from_json per line, a torn last line dropped). The bytes are written to a file
// and read as `dietcode tune --warm-start` reads one. Every record read must survive a
// JSON round trip.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "support/error.h"
#include "tune/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dietcode::fuzz::must;
  static dietcode::fuzz::ScratchFile file;
  std::vector<dietcode::tune::TuningRecord> records;
  try {
    records = dietcode::tune::read_records_any_machine(file.write(data, size));
  } catch (const dietcode::Error&) {
    return 0;
  }
  for (const dietcode::tune::TuningRecord& r : records) {
    nlohmann::json j = dietcode::tune::to_json(r);
    dietcode::tune::TuningRecord again =
        must([&] { return dietcode::tune::record_from_json(j); }, "record_from_json(to_json(r))");
    FUZZ_CHECK(dietcode::tune::to_json(again) == j, "a record changed in a round trip");
  }
  return 0;
}
