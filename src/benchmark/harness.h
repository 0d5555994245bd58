// `dietcode bench`: this project's kernels beside the vendor libraries, in one run,
// interleaved so that machine drift hits all alike, each result checked against a
// float64 reference, each shape placed against the machine's measured roofline.
//
// run_bench is a straight line of phases (harness.cpp): resolve the layers to measure,
// measure the roofline and load the peers, then per layer build our candidates (tuned
// modules, sweep or given kernels), and per shape check every implementation against
// float64, time the best variant of each in interleaved rounds, re-measure a shape whose
// rounds were disturbed, and assemble the rows; last, probe the FMA peak again.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/result.h"
#include "runtime/module.h"
#include "schedule/micro_kernel.h"

namespace dietcode::bench {

// Which layers a run measures.
enum class LayerSource {
  kNamedWorkload,  // the layers of `workload` (workloads.h); each module on the layers it computes
  kEachModule,     // one layer per tuned module, computing that module's operator
};

struct BenchOptions {
  LayerSource layers = LayerSource::kNamedWorkload;
  std::string workload = "bert-dense";  // with kNamedWorkload
  std::vector<int64_t> t_values;        // sequence lengths (M for the dense layers)
  int threads = 1;
  std::vector<std::string> peers;  // empty: all; {"none"}: no peer
  std::string peers_dir;           // where the peer plugins are
  // Our candidates: these micro-kernels (validated per layer) instead of the sweep grid.
  std::vector<schedule::MicroKernelSchedule> kernels;
  // Tuned modules to measure (each as implementation "dietcode-<label>", or "dietcode"
  // when it is the only one of ours on its layer). With modules and no kernels, no sweep
  // runs unless `sweep` is set (then it is "dietcode-sweep").
  std::vector<std::pair<std::string, runtime::ModuleSpec>> modules;
  bool sweep = true;
  double seconds_per_measurement = 0.05;  // target timed time per implementation and shape
  // Dense layers only: every timed call meets the weights in memory, not in cache, as a
  // model's layers do (the caches are swept before each call, outside the timed span, and
  // the activations read back in: CacheSweeper in harness.cpp); the roofline then puts
  // the data in DRAM. A module tuned with cold weights is compared in that condition.
  // One thread only (a note says so at more).
  bool cold_weights = false;
  bool quiet = false;
};

// Throws dietcode::Error for bad options (unknown workload, empty M list, no module with
// kEachModule, unknown peer, ...).
BenchResult run_bench(const BenchOptions& options);

// Where the peer plugins are by default: `peers/` beside the running executable.
std::string default_peers_dir();

// The rows' rooflines in GFLOP/s with the FMA peak at `peak`: min(peak, the row's memory
// term, `memory_gflops[i]`: its FLOPs over its bytes at its level's rate). Rows in another
// unit (GB/s) keep theirs. run_bench probes the peak again after the timings and applies
// the faster rate: one probe at the start that met a neighbour put every product's roofline
// low (an encoder table's probe once read 141 GFLOP/s, the next table's 211).
void apply_peak(std::vector<Measurement>& rows, const std::vector<double>& memory_gflops,
                double peak);

// A bench that sleeps between implementations (so that their workers stop spinning) times
// each on a core that was idle, and an idle vCPU comes back slow: on a 2-vCPU VM a 2 us
// call ran at 3.6 us for its first 1.5-4 ms. Each timing then starts with this much untimed
// running of what it times, as in a model's back-to-back calls.
constexpr double kWarmUpSecondsAfterIdle = 0.005;

// Runs `fn` once, or for at least `seconds`.
void warm_up(const std::function<void()>& fn, double seconds);

// Waits until the other threads of this process stop running: a library's pool keeps its
// workers busy-waiting after a call (OpenBLAS's pthreads for 2^28 TSC cycles: 0.13 s on a
// 2.1 GHz TSC; libgomp's for a shorter while), and what is timed next on the same cores
// would share them. Quiet: the others' CPU time (their thread CPU clocks) grew by less
// than 5% of two consecutive 5 ms intervals. Waits at least `min_seconds`, at most
// `max_seconds`. `children`: processes whose CPU time counts too (a peer in a child
// process, its workers spinning after a request).
struct IdleWait {
  double seconds = 0;  // waited
  bool quiet = false;  // false: still busy at max_seconds
};
IdleWait wait_for_idle_threads(double min_seconds, double max_seconds,
                               const std::vector<pid_t>& children = {});

}  // namespace dietcode::bench
