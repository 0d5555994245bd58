// Decisions made side by side (the last step of a joint run, before selection).
//
// On a shared machine two kernels measured minutes apart differ by the machine's drift
// as much as by their speed, so the kernels selection actually chooses between are
// measured again, together:
//
//   plan_finalists   a sample of the declared shapes (dense at small extents, where
//                    padding changes fastest; even beyond); on each, the few best
//                    candidates by measurement-or-model and the one measured fastest
//                    there, plus its neighbours' best
//                    (so the dispatch tree's boundaries are measured too): a window
//   Measurer::measure_side_by_side   each window in interleaved rounds, one time window
//   append as Origin::Final          durable: a killed run resumes without the windows
//                                    already done (window_done)
//   final_scores     the score matrix the first selection decides from: the paired numbers on the
//                    sampled shapes; between them, each finalist's prediction scaled by
//                    its measured/predicted ratio, interpolated from the nearest sampled
//                    shapes on either side; on a sampled shape, a finalist that was not in
//                    its window ranks no higher than the window's slowest kernel
//   crosscheck       the kernels of that first selection (and a few challengers: a
//                    finalist it left out that was measured well ahead of it on a shape),
//                    all of them side by side on each shape of the finals, more
//                    challengers where the finals measured them (plan_crosscheck;
//                    appended as Origin::Crosscheck): a kernel
//                    that won only at its own few shapes was never paired with the others
//                    elsewhere, where its score was the model's guess; the selection and
//                    the dispatch tree are then decided again among these kernels, from
//                    these paired numbers
//   dispatch check   on every declared shape the finals did not sample, the selected
//                    kernels that score best there (at most dispatch_check of them, within
//                    kDispatchCheckMargin of the best), side by side (Origin::DispatchCheck);
//                    the selection and the dispatch tree decided the last time, from the
//                    crosscheck's and these paired numbers: between the sampled shapes a
//                    score is the model's guess scaled by ratios measured elsewhere, and
//                    the guess misses what one shape's padding does (qkv at M = 24 went to
//                    a 7 x 48 tile, four tiles of 28 rows, at 124-135 GFLOP/s, beside an
//                    8 x 48 tile in the same module at 170-172, the winner at M = 25 of the
//                    finals having been the 7 x 48)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "schedule/any_schedule.h"
#include "tune/records.h"

namespace dietcode::tune {

struct FinalistParams {
  int shapes = 16;            // declared shapes sampled geometrically, plus shapes / 4 evenly
                              // (all of them when fewer); 0: no finals
  int dense = 16;             // and every one of the first (smallest) this many
  int per_shape = 3;          // best candidates of each sampled shape
  int max_per_window = 5;     // kernels timed side by side on one shape
  bool crosscheck = true;     // then the first selection's kernels on every finals shape,
  int challengers = 3;        // with at most this many crosscheck_challengers on each shape,
  int local_challengers = 5;  // and this many more where the finals measured them,
  int dispatch_check = 2;     // then at most this many on each other declared shape (< 2: none)
};

struct FinalistWindow {
  std::vector<int64_t> shape;
  std::vector<schedule::AnySchedule> kernels;
};

// `score[shape][kernel]`: the candidates' measured-or-predicted GFLOP/s on `declared`.
// `measured_best[shape]`: the candidate measured fastest there, or -1 (none measured;
// empty: unknown): it joins the shape's window first, since the model may predict kernels
// never measured there above it (S V at T = 3: a kernel measured at 56 GFLOP/s was left out
// for three predicted higher that the finals measured at 29-38).
std::vector<FinalistWindow> plan_finalists(const std::vector<std::vector<int64_t>>& declared,
                                           const std::vector<schedule::AnySchedule>& candidates,
                                           const std::vector<std::vector<double>>& score,
                                           const FinalistParams& params,
                                           const std::vector<int>& measured_best = {});

// For each declared shape, the index of the candidate whose record there (of the search or
// its probes, not of the finals) is fastest, or -1.
std::vector<int> measured_best(const std::vector<std::vector<int64_t>>& declared,
                               const std::vector<schedule::AnySchedule>& candidates,
                               const std::vector<TuningRecord>& records);

// Every kernel of the window has a record of `origin` (a final, or a crosscheck) on its
// shape already.
bool window_done(const FinalistWindow& w, const std::vector<TuningRecord>& records,
                 Origin origin = Origin::Final);

struct FinalScores {
  std::vector<schedule::AnySchedule> kernels;  // the finalists (union of windows)
  std::vector<std::vector<double>> score;      // [declared shape][finalist]
  // [declared shape][finalist]: its paired figure there was marked disturbed (every attempt's
  // spread past the threshold). Empty: none was.
  std::vector<std::vector<char>> disturbed;
  bool disturbed_at(size_t shape, size_t kernel) const {
    return shape < disturbed.size() && disturbed[shape][kernel];
  }
  int measured = 0;  // final records used
};
// `predicted(kernels)` gives [kernel][declared shape] GFLOP/s from the cost model.
// The latest final record of each (kernel, shape) counts; a wrong one scores 0.
template <typename Predict>
FinalScores final_scores(const std::vector<std::vector<int64_t>>& declared,
                         const std::vector<FinalistWindow>& windows,
                         const std::vector<TuningRecord>& records, const Predict& predicted);

// The non-template core of final_scores; the records of `origins` count (the crosscheck
// scores the first selection's kernels from their crosscheck records, the last selection
// from those and the dispatch check's).
FinalScores final_scores_from(const std::vector<std::vector<int64_t>>& declared,
                              std::vector<schedule::AnySchedule> kernels,
                              const std::vector<std::vector<double>>& predicted,
                              const std::vector<TuningRecord>& records,
                              const std::vector<Origin>& origins = {Origin::Final});

// The dispatch check's windows: on each declared shape outside `measured` (the shapes the
// finals sampled), the `per_shape` kernels of `kernels` that score best there by `score`
// ([declared shape][kernel]), of those within kDispatchCheckMargin of the best, and the
// shape's challenger if it has one and it is not among them (`challengers`, per declared
// shape); a window where at least two are.
constexpr double kDispatchCheckMargin = 0.25;
std::vector<FinalistWindow> plan_dispatch_check(
    const std::vector<std::vector<int64_t>>& declared,
    const std::vector<schedule::AnySchedule>& kernels,
    const std::vector<std::vector<double>>& score,
    const std::vector<std::vector<int64_t>>& measured, int per_shape,
    const std::vector<std::optional<schedule::AnySchedule>>& challengers = {});

// Whether two kernels run the same loops on declared shape `s` (tune::same_loops_at for
// contractions); empty: only when they are equal.
using SameAt =
    std::function<bool(size_t s, const schedule::AnySchedule&, const schedule::AnySchedule&)>;

// The dispatch check's challengers, per declared shape, from the search's measurements
// there (`measured_best`, of the search and its probes):
// - where the candidate measured fastest is a selected kernel, or runs the same loops
//   there as one (`same_at`), that selected kernel, whatever its score: at M = 23 of the
//   two-thread 2304 x 768 layer, a 12 x 32 probe with mc = 132 measured 417 GFLOP/s, the
//   module's 12 x 32 kernel with mc = 108 was never paired there, and the module ran a
//   13 x 32 tile that the dispatch check had measured at 392;
// - else the candidate itself, where it is not among `selected` and its search
//   measurement is at least kChallengerGain above every selected kernel's score there
//   (`score`, [declared shape][selected kernel]).
// Paired with the selected kernels on that shape, a challenger may enter the last
// selection: the 1000-trial module of the 2304 x 768 layer served M = 17 with a 13 x 32
// tile at 202 GFLOP/s in the dispatch check, where the search's probes had measured a
// 9 x 48 tile at 219 and `dietcode bench` ran it 4-8% ahead.
std::vector<std::optional<schedule::AnySchedule>> dispatch_challengers(
    const std::vector<std::vector<int64_t>>& declared,
    const std::vector<schedule::AnySchedule>& candidates, const std::vector<TuningRecord>& records,
    const std::vector<schedule::AnySchedule>& selected,
    const std::vector<std::vector<double>>& score, const SameAt& same_at = {});

// Finalists the first selection left out that the finals measured fastest on one of their
// shapes, at least kChallengerGain faster there than every selected kernel (or faster at
// all where either figure was disturbed: a lead the noise may have hidden is settled side
// by side in the crosscheck): the `count` with the largest such gains, largest first. They join the
// crosscheck, so that the selection decided again can take one where the first cover (which counts
// a shape covered by any of its top k) left a shape on a kernel well below its best: S V at T = 1,
// 20 GFLOP/s by a heads-innermost kernel and 12.8 by the 1 x 64 tile that covered T = 1..4.
constexpr double kChallengerGain = 0.05;
std::vector<schedule::AnySchedule> crosscheck_challengers(
    const std::vector<std::vector<int64_t>>& declared, const std::vector<FinalistWindow>& windows,
    const FinalScores& finals, const std::vector<schedule::AnySchedule>& selected, int count);

// The crosscheck's windows: on each shape of the finals (`windows`), every kernel of the
// first selection and the first `everywhere` of the `challengers` (largest gain first, as
// crosscheck_challengers orders them), and each later challenger only where the finals
// measured it (the windows that held it). Those are specialists the finals measured well
// ahead on their own shapes; timed on every shape, each cost what a selected kernel costs,
// and three of the ten a 250-trial qkv run found were: an 8 x 48 tile the finals measured
// 53% above the selection at M = 8 was left out, and the module ran M = 8 at 0.88 of the
// sweep (paired, that tile was 15% ahead of the 14 x 32 serving M = 8, in `dietcode bench`
// and in the encoder alike). Elsewhere a local challenger's score stays capped by each
// window's slowest kernel (final_scores_from): it may take only the shapes it was paired on.
std::vector<FinalistWindow> plan_crosscheck(const std::vector<FinalistWindow>& windows,
                                            const std::vector<schedule::AnySchedule>& selected,
                                            const std::vector<schedule::AnySchedule>& challengers,
                                            int everywhere);

// The union of the windows' kernels, in first-seen order.
std::vector<schedule::AnySchedule> finalists_of(const std::vector<FinalistWindow>& w);

template <typename Predict>
FinalScores final_scores(const std::vector<std::vector<int64_t>>& declared,
                         const std::vector<FinalistWindow>& windows,
                         const std::vector<TuningRecord>& records, const Predict& predicted) {
  std::vector<schedule::AnySchedule> kernels = finalists_of(windows);
  return final_scores_from(declared, kernels, predicted(kernels), records);
}

}  // namespace dietcode::tune
