// Counting operator new calls on the calling thread, for tests that check a path
// allocates nothing. Not available under AddressSanitizer (it owns operator new).
#pragma once

#include <cstdint>

namespace testing_alloc {
bool counting_supported();
void start();    // count from now on, on this thread, from zero
int64_t stop();  // stop counting; the count
}  // namespace testing_alloc
