// The evolutionary search over micro-kernels (../../shared/DIETCODE.md, "Joint
// search"): one round proposes the next batch of candidates to measure.
//
//   population  measured winners + the round-1 rule seeds + fresh samples, mutated;
//               `population` in all
//   generations fitness-proportional selection; with `mutation_probability` a child
//               is its parent mutated toward one shape, picked with probability
//               proportional to weight(S) * predicted latency(S)
//   fitness     (max_S predicted(S) / best_predicted(S))^(ceil(n/100) + 1)
//   batch       the best `top_pool` unmeasured candidates by fitness, of which
//               `measure_per_round` are measured, `random_fraction` of them random
//
// One change from the paper's fitness: predicted throughput at S is divided by the
// best prediction for S in the population. On a CPU the small-M shapes are bound by
// memory bandwidth and never win a max over raw FLOP/s, so without it the search
// would stop looking for kernels that serve them.
#pragma once

#include <random>
#include <unordered_set>
#include <vector>

#include "tune/cost_model.h"
#include "tune/search_space.h"

namespace dietcode::tune {

// Every parameter of the search, with the paper's (Ansor's) defaults.
struct SearchParams {
  int population = 2048;
  int generations = 4;
  double mutation_probability = 0.85;
  int measure_per_round = 64;
  int top_pool = 128;
  double random_fraction = 0.05;
  // Share of each round's measurements spent measuring promising measured kernels on
  // the declared shapes themselves (not only on their S*): the cost model learns how
  // throughput changes with the shape, and selection uses measured numbers where it
  // can. 0 reproduces the paper.
  double shape_probe_fraction = 0.25;
};

using ScheduleSet = std::unordered_set<schedule::MicroKernelSchedule, schedule::ScheduleHash>;

// What the search knows: the space, the cost model (its predict_generic form) and the
// shapes' weights.
struct SearchContext {
  const SearchSpace* space = nullptr;
  const CostModel* model = nullptr;
  std::vector<double> weights;  // per shape in space->extents()
  int64_t trials_so_far = 0;
  // The sketch-rule seeds (SearchSpace::seeds_for_shapes), given in round 1: they join
  // the initial population, and up to half of the round's batch measures the unmeasured
  // ones (in the tie-heavy first round, fitness alone would pick among them by chance).
  std::vector<schedule::MicroKernelSchedule> rule_seeds;
};

// One round: up to `count` new candidates (none of them in `measured`).
// `seeds`: measured schedules, best first, to start the population from.
std::vector<schedule::MicroKernelSchedule> propose_batch(
    const SearchContext& ctx, const SearchParams& params,
    const std::vector<schedule::MicroKernelSchedule>& seeds, const ScheduleSet& measured, int count,
    std::mt19937_64& rng);

}  // namespace dietcode::tune
