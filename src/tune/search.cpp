#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dietcode::tune {

namespace {

std::vector<std::vector<double>> predict(const SearchContext& ctx,
                                         const std::vector<schedule::MicroKernelSchedule>& pop) {
  return ctx.model->predict_generic(pop, ctx.space->extents());
}

// Fitness of each candidate; the exponent sharpens selection as the model learns.
std::vector<double> fitness(const SearchContext& ctx,
                            const std::vector<std::vector<double>>& predicted) {
  size_t shapes = ctx.space->extents().size();
  std::vector<double> best(shapes, 1e-30);
  for (const auto& row : predicted)
    for (size_t i = 0; i < shapes; ++i) best[i] = std::max(best[i], row[i]);
  double exponent = std::ceil(double(ctx.trials_so_far) / 100.0) + 1.0;
  std::vector<double> out;
  for (const auto& row : predicted) {
    double m = 0;
    for (size_t i = 0; i < shapes; ++i) m = std::max(m, row[i] / best[i]);
    out.push_back(std::pow(m, exponent));
  }
  return out;
}

size_t roulette(const std::vector<double>& cumulative, std::mt19937_64& rng) {
  double x = std::uniform_real_distribution<double>(0, cumulative.back())(rng);
  return std::min<size_t>(
      std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin(),
      cumulative.size() - 1);
}

void dedupe(std::vector<schedule::MicroKernelSchedule>& pop) {
  ScheduleSet seen;
  std::vector<schedule::MicroKernelSchedule> out;
  for (auto& s : pop)
    if (seen.insert(s).second) out.push_back(std::move(s));
  pop = std::move(out);
}

}  // namespace

std::vector<schedule::MicroKernelSchedule> propose_batch(
    const SearchContext& ctx, const SearchParams& params,
    const std::vector<schedule::MicroKernelSchedule>& seeds, const ScheduleSet& measured, int count,
    std::mt19937_64& rng) {
  const SearchSpace& space = *ctx.space;
  const ShapeExtents& shapes = space.extents();
  // Initial population: the measured winners, the rule seeds, then fresh samples.
  std::vector<schedule::MicroKernelSchedule> pop;
  for (size_t i = 0; i < seeds.size() && int(pop.size()) < params.population / 4; ++i)
    pop.push_back(seeds[i]);
  for (size_t i = 0; i < ctx.rule_seeds.size() && int(pop.size()) < params.population / 2; ++i)
    pop.push_back(ctx.rule_seeds[i]);
  while (int(pop.size()) < params.population) pop.push_back(space.sample(rng));
  dedupe(pop);

  std::uniform_real_distribution<double> unit(0, 1);
  for (int g = 0; g < params.generations; ++g) {
    std::vector<std::vector<double>> predicted = predict(ctx, pop);
    std::vector<double> fit = fitness(ctx, predicted);
    std::vector<double> cumulative(fit.size());
    std::partial_sum(fit.begin(), fit.end(), cumulative.begin());
    if (!(cumulative.back() > 0)) break;
    std::vector<schedule::MicroKernelSchedule> next;
    next.reserve(pop.size());
    // Elites survive unchanged, so a generation never loses its best.
    std::vector<size_t> order(pop.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + std::min<size_t>(order.size(), 16),
                      order.end(), [&](size_t a, size_t b) { return fit[a] > fit[b]; });
    for (size_t i = 0; i < std::min<size_t>(order.size(), 16); ++i) next.push_back(pop[order[i]]);
    while (int(next.size()) < params.population) {
      size_t parent = roulette(cumulative, rng);
      if (unit(rng) < params.mutation_probability) {
        // A shape in proportion to weight * predicted latency: slow shapes get attention.
        std::vector<double> latency(shapes.size());
        for (size_t i = 0; i < shapes.size(); ++i)
          latency[i] = ctx.weights[i] * shapes[i].flops() / std::max(predicted[parent][i], 1e-9);
        std::partial_sum(latency.begin(), latency.end(), latency.begin());
        size_t shape = roulette(latency, rng);
        if (auto child = space.mutate(rng, pop[parent], shape)) {
          next.push_back(*child);
          continue;
        }
      }
      next.push_back(pop[parent]);
    }
    dedupe(next);
    pop = std::move(next);
  }

  // The batch: the best unmeasured candidates, with a few random ones for exploration.
  std::vector<std::vector<double>> predicted = predict(ctx, pop);
  std::vector<double> fit = fitness(ctx, predicted);
  std::vector<size_t> order(pop.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fit[a] > fit[b]; });
  std::vector<schedule::MicroKernelSchedule> pool, batch;
  ScheduleSet chosen = measured;
  for (const auto& s : ctx.rule_seeds) {
    if (int(batch.size()) >= count / 2) break;
    if (chosen.insert(s).second) batch.push_back(s);
  }
  for (size_t i : order) {
    if (int(pool.size()) >= params.top_pool) break;
    if (chosen.insert(pop[i]).second) pool.push_back(pop[i]);
  }
  int random_count = int(std::round(count * params.random_fraction));
  for (const auto& s : pool) {
    if (int(batch.size()) >= count - random_count) break;
    batch.push_back(s);
  }
  for (int tries = 0; int(batch.size()) < count && tries < 100 * count; ++tries) {
    schedule::MicroKernelSchedule s = space.sample(rng);
    if (chosen.insert(s).second) batch.push_back(s);
  }
  return batch;
}

}  // namespace dietcode::tune
