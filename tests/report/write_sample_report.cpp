// Writes the sample tuning report (sample_input.h) to the folder given, for the browser
// test (check_images_in_chromium.sh) and for looking at the page by hand.
#include <fmt/format.h>

#include "sample_input.h"
#include "support/error.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} DIR\n", argv[0]);
    return 2;
  }
  try {
    dietcode::bench::BenchResult bench;
    dietcode::report::write_tuning_report(
        dietcode::report::testing::sample_input(
            DIETCODE_TEST_DATA "/records_dense_2304x768_random600.jsonl", bench),
        argv[1]);
  } catch (const dietcode::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  fmt::print("{}/index.html\n", argv[1]);
  return 0;
}
