// `dietcode refine`: a tuned model's dispatch decided again inside the model.
//
// The tuner measures each operator alone, in its worker process. Inside a model at two
// threads the tuner's ranking of a module's own kernels was 10-19% off at T = 24-48 (qkv
// and ffn2 of a BERT-base, stop 61 in docs/results.md); why is not settled (not the input
// being written by both cores just before: stop 62). Refinement times, inside the forward
// of the model, each module's kernel at a set of lengths against the other kernels its
// dispatch selects near that length: pairs of forward calls, one with each kernel, in ABBA
// order, the operator's own time per call compared (support/stats.h, paired_ratio). Where
// another kernel's time ratio has its whole 95% interval below `accept_below`, and again in
// a second set of pairs, the lengths around that probe that the old kernel served move to
// it; the decision tree is refitted over every length of the tuned range and the module
// file rewritten (the old one kept beside it as <name>.module.json.before-refine). The
// module's kernels are not changed, only which one runs where, so no kernel is compiled
// and every result stays checked.
//
//   RefineOptions o;  o.model_dir = "dietcode-out/bert-base-2t";  o.threads = 2;
//   RefineResult r = refine_model(o);   // r.changes: what moved, with its ratio
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model.h"

namespace dietcode::workflow {

struct RefineOptions {
  std::string model_dir;
  std::string weights;  // empty: <model_dir>/random-12-layers.safetensors (the main job's)
  int threads = 1;
  // Probe lengths; empty: the encoder table's 18 lengths inside the tuned range.
  std::vector<int64_t> lengths;
  std::vector<std::string> modules = {"qkv", "out", "ffn1", "ffn2"};
  int pairs = 20;  // pairs of forward calls per comparison
  // Pairs after which a comparison stops when they rule the kernel out: no faster than the
  // dispatched one, or the lower end of its 95% interval already above accept_below (most
  // of a refinement's candidates are slower; 0: every comparison runs all its pairs).
  // Even, so the pairs stay ABBA.
  int screen_pairs = 8;
  double accept_below = 0.97;  // a move needs the interval's upper end below this
  bool dry_run = false;        // report, write nothing
  bool quiet = false;          // no progress on stderr
};

struct RefineChange {
  std::string module;
  int64_t probe = 0;  // the length it was measured at
  // The first and last length that moved; between them, lengths the old kernel did not
  // serve keep theirs.
  int64_t first = 0, last = 0;
  int from = 0, to = 0;                 // kernel indices
  double ratio = 0, low = 0, high = 0;  // the operator's time, new / old
};

struct RefineResult {
  std::vector<RefineChange> changes;
  int comparisons = 0;
  int screened_out = 0;  // comparisons stopped after screen_pairs pairs
  int64_t pairs = 0;     // pairs of calls timed in all
  double seconds = 0;
  // The model's load before the comparisons (the first load of a freshly tuned model
  // compiles every kernel into its code cache, so a later load, the encoder table's in
  // `tune --refine`, finds them there).
  model::ModelLoadTimes load;
  std::vector<std::string> written;  // module files rewritten
};

// Throws dietcode::Error for a model directory or weights that do not load, unknown
// module names, or no probe length inside the tuned range.
RefineResult refine_model(const RefineOptions& o);

// The report `dietcode refine` prints: the comparisons, each move, the files written.
std::string format_refine_result(const RefineOptions& o, const RefineResult& r);

// The kernel of every length from `first_length` on (labels[i]: length first_length + i)
// after the accepted moves (probe length -> new kernel): a move applies to the lengths on
// the probe's side of the midpoints to the neighbouring probes (of `probes`, sorted) that
// the probe's old kernel served. Lengths elsewhere keep their kernel.
std::vector<int> apply_moves(const std::vector<int>& labels, int64_t first_length,
                             const std::vector<int64_t>& probes,
                             const std::map<int64_t, int>& moves);

}  // namespace dietcode::workflow
