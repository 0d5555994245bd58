// How `dietcode bench` interleaves the implementations it times on one shape (harness.cpp,
// phase 6): rounds of bursts, one burst per implementation per round.
//
// - Each burst takes about the same time, its share of a round: as many calls as the
//   implementation's screened time per call fits, kMinCalls to kMaxCalls. Sized by the
//   slowest implementation instead, a fast one got 2 calls right after a slow library's
//   burst: the 2304 x 768 layer at M = 25-71 measured 0.90-0.98 of the sweep beside BLIS
//   (7 ms a call), 0.99-1.02 without.
// - The order reverses every other round: every implementation sees the same machine
//   drift, and follows a different one in alternate rounds (each burst's first call, which
//   reloads its own weights into cache after its predecessor's, is dropped anyway).
#pragma once

#include <algorithm>
#include <cstddef>

namespace dietcode::bench {

struct BurstPlan {
  static constexpr int kMinCalls = 2, kMaxCalls = 40;
};

// Timed calls per burst for an implementation whose call takes `seconds_per_call`, when a
// shape's measurement lasts `seconds_per_measurement` over `rounds` rounds.
inline int calls_per_burst(double seconds_per_call, double seconds_per_measurement, int rounds) {
  const double per_call = std::max(seconds_per_call, 1e-7);
  const double calls = seconds_per_measurement / std::max(rounds, 1) / per_call;
  return static_cast<int>(
      std::clamp(calls, double(BurstPlan::kMinCalls), double(BurstPlan::kMaxCalls)));
}

// Which of `count` implementations runs `position`-th in round `round`: in order in even
// rounds, reversed in odd ones.
inline size_t implementation_at(int round, size_t position, size_t count) {
  return round % 2 ? count - 1 - position : position;
}

}  // namespace dietcode::bench
