#include "tune/search_space.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "support/cpu_caches.h"
#include "support/error.h"
#include "support/int_math.h"

namespace dietcode::tune {

namespace {

using schedule::Axis;
using schedule::MicroKernelSchedule;
using schedule::ParallelAxis;

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  DC_INTERNAL_CHECK(!v.empty(), "search space: picking from an empty list");
  return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
}

bool chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

// Ansor's blocks: the multiples of `tile` up to `cap` that divide `extent`.
std::vector<int64_t> dividing_multiples(int64_t tile, int64_t cap, int64_t extent) {
  std::vector<int64_t> out;
  for (int64_t b = tile; b <= cap; b += tile)
    if (extent % b == 0) out.push_back(b);
  return out;
}

void unique_sorted(std::vector<int64_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Per-core cache sizes the blocks are biased to where the host's are unknown (Zen 4 and
// recent Intel cores are at least this large; a block that overflows a little is still
// sampled, just less often).
constexpr int64_t kDefaultL1Bytes = 32 * 1024, kDefaultL2Bytes = 1024 * 1024;

}  // namespace

SearchSpace::SearchSpace(const te::Operator& op, schedule::Isa isa, int threads,
                         std::vector<std::vector<int64_t>> shapes, SpaceKind kind,
                         bool cold_weights)
    : op_(op),
      c_(ops::match_contraction(op)),
      dot_(schedule::operands_contiguous_along_k(c_)),
      b_along_n_(schedule::b_contiguous_along_n(c_)),
      vec_(schedule::vector_isa(isa)),
      threads_(threads),
      extents_(op, shapes),
      kind_(kind),
      cold_weights_(cold_weights),
      l1_bytes_(host_cache_sizes().l1 > 0 ? host_cache_sizes().l1 : kDefaultL1Bytes),
      l2_bytes_(host_cache_sizes().l2 > 0 ? host_cache_sizes().l2 : kDefaultL2Bytes) {
  if (shapes.empty()) user_error("operator {}: no shapes to tune for", op.name);
  if (kind == SpaceKind::Divisors && shapes.size() != 1)
    internal_error(__FILE__, __LINE__, "the divisor space is for one shape");
  for (size_t i = 0; i < extents_.size(); ++i) {
    max_.batch = std::max(max_.batch, extents_[i].batch);
    max_.m = std::max(max_.m, extents_[i].m);
    max_.n = std::max(max_.n, extents_[i].n);
    max_.k = std::max(max_.k, extents_[i].k);
  }
  // Fail early, with the validator's reason, if nothing at all fits.
  std::mt19937_64 rng(1);
  sample(rng);
}

bool SearchSpace::valid(const MicroKernelSchedule& s) const {
  // Ansor's space: every tile level divides the shape's extent (where N has no
  // vector-multiple divisor, the register tile alone is exempt; a tile of dot products,
  // any count of columns, is not).
  const bool n_divides = max_.n % s.nr == 0;
  if (kind_ == SpaceKind::Divisors &&
      (max_.m % s.mr != 0 || max_.m % s.mc != 0 || max_.k % s.kc != 0 ||
       (n_divides && max_.n % s.nc != 0) || (s.vector_axis == Axis::K && !n_divides)))
    return false;
  try {
    schedule::bind(s, op_, c_);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::vector<int64_t> SearchSpace::vector_choices(const Extents* fit) const {
  const Extents& e = fit ? *fit : max_;
  std::vector<int64_t> out;
  int64_t cap = std::min<int64_t>(8, ceil_div(e.n, vec_.width));
  for (int64_t v = 1; v <= cap; ++v) {
    if (schedule::tile_registers(1, v) > vec_.registers) break;  // at least one row must fit
    if (kind_ == SpaceKind::Divisors && e.n % (v * vec_.width) != 0) continue;
    out.push_back(v);
  }
  if (out.empty()) out.push_back(1);  // N smaller than, or not a multiple of, any vector tile
  return out;
}

std::vector<int64_t> SearchSpace::dot_columns(const Extents* fit) const {
  const Extents& e = fit ? *fit : max_;
  std::vector<int64_t> out;
  for (int64_t nr = 1; nr <= std::min<int64_t>(8, e.n); ++nr)
    if (schedule::dot_tile_registers(1, nr) <= vec_.registers) out.push_back(nr);
  if (out.empty()) out.push_back(1);
  return out;
}

std::vector<int64_t> SearchSpace::mr_choices(int64_t vectors, const Extents* fit) const {
  int64_t cap = std::min(schedule::max_tile_rows(vectors, vec_.registers), max_.m);
  std::vector<int64_t> out;
  if (kind_ == SpaceKind::Divisors) {
    for (int64_t mr = 1; mr <= cap; ++mr)
      if (max_.m % mr == 0) out.push_back(mr);
  } else if (fit) {
    // Heights that cover this shape's M with little padding: M split into t tiles.
    for (int64_t t = 1; t <= fit->m; ++t) {
      int64_t mr = ceil_div(fit->m, t);
      if (mr <= cap) out.push_back(mr);
      if (mr <= 2) break;
    }
  } else {
    for (int64_t mr = 1; mr <= cap; ++mr) out.push_back(mr);
  }
  if (out.empty() && cap >= 1) out.push_back(std::min<int64_t>(cap, 1));
  unique_sorted(out);
  return out;
}

std::vector<int64_t> SearchSpace::kc_choices(const Extents* fit) const {
  const Extents& e = fit ? *fit : max_;
  std::vector<int64_t> out;
  if (kind_ == SpaceKind::Divisors) {
    for (int64_t kc = 1; kc <= e.k; ++kc)
      if (e.k % kc == 0 && (kc >= 16 || kc == e.k)) out.push_back(kc);
  } else {
    for (int64_t kc : {32, 64, 96, 128, 192, 256, 320, 384, 512, 768, 1024})
      if (kc <= max_.k) out.push_back(kc);
    for (int64_t j = 1; j <= 4; ++j) out.push_back(std::min(max_.k, round_up(ceil_div(e.k, j), 8)));
    out.push_back(max_.k);
  }
  unique_sorted(out);
  return out;
}

std::vector<int64_t> SearchSpace::mc_choices(int64_t mr, int64_t kc, const Extents* fit) const {
  const Extents& e = fit ? *fit : max_;
  int64_t cap = round_up(max_.m, mr);
  std::vector<int64_t> out;
  if (kind_ == SpaceKind::Divisors) {
    out = dividing_multiples(mr, cap, max_.m);
  } else {
    // Powers of two of tiles, a split across the cores, and the whole M; blocks whose
    // A panel fits in L2 (the packed A block is reused across the N tiles).
    for (int64_t j = 1; j * mr <= cap; j *= 2)
      if (j * mr * kc * 4 <= l2_bytes_ || j == 1) out.push_back(j * mr);
    for (int64_t t = 1; t <= 2; ++t)
      out.push_back(std::min(cap, round_up(ceil_div(e.m, threads_ * t), mr)));
    out.push_back(std::min(cap, round_up(e.m, mr)));
  }
  if (out.empty()) out.push_back(mr);
  unique_sorted(out);
  return out;
}

std::vector<int64_t> SearchSpace::nc_choices(int64_t nr, int64_t kc, const Extents* fit) const {
  const Extents& e = fit ? *fit : max_;
  int64_t cap = round_up(max_.n, nr);
  std::vector<int64_t> out;
  if (kind_ == SpaceKind::Divisors) {
    out = dividing_multiples(nr, cap, max_.n);
  } else {
    // Splits of N across the cores (1..4 tasks per core), and power-of-two panels whose
    // packed B block fits in L2.
    for (int64_t t = 1; t <= 4; ++t)
      out.push_back(std::min(cap, round_up(ceil_div(e.n, threads_ * t), nr)));
    for (int64_t j = 1; j * nr <= cap; j *= 2)
      if (j * nr * kc * 4 <= l2_bytes_) out.push_back(j * nr);
    out.push_back(cap);
  }
  if (out.empty()) out.push_back(nr);
  unique_sorted(out);
  return out;
}

namespace {

// One stream usually (B in cache), two or four for B that streams from memory; at most
// the k-unroll (schedule::validate).
int64_t sample_k_streams(std::mt19937_64& rng, int64_t unroll_k) {
  std::vector<int64_t> streams = {1, 1};
  for (int64_t s : {2, 4})
    if (s <= unroll_k) streams.push_back(s);
  return pick(rng, streams);
}

}  // namespace

void SearchSpace::sample_knobs(std::mt19937_64& rng, MicroKernelSchedule& s) const {
  static const std::vector<schedule::LoopOrder> orders = {
      {Axis::N, Axis::K, Axis::M}, {Axis::N, Axis::M, Axis::K}, {Axis::K, Axis::N, Axis::M},
      {Axis::K, Axis::M, Axis::N}, {Axis::M, Axis::N, Axis::K}, {Axis::M, Axis::K, Axis::N}};
  // The BLIS order n, k, m is the usual winner; the others stay reachable.
  s.loop_order = chance(rng, 0.6) ? orders[0] : pick(rng, orders);
  std::vector<ParallelAxis> parallel = {ParallelAxis::N, ParallelAxis::M};
  if (!c_.batch_axes.empty()) parallel.push_back(ParallelAxis::Batch);
  if (threads_ == 1) parallel.push_back(ParallelAxis::None);
  s.parallel = pick(rng, parallel);
  s.inner_tile_loop = chance(rng, 0.5) ? Axis::M : Axis::N;
  s.unroll_k = pick(rng, std::vector<int64_t>{1, 2, 4, 4, 8});
  s.k_streams = sample_k_streams(rng, s.unroll_k);
  s.pack_a = chance(rng, 0.5) ? schedule::PackA::Packed : schedule::PackA::Direct;
  // B prefetched ahead only where it comes from memory: constant B measured cold. The best
  // distance depends on the tile: a tuned 12-layer BERT with every dense kernel prefetching 16
  // k-steps ahead ran T = 5 in 9.9-10.7 ms against 11.3-12.3 at 32, but T = 2 and T >= 13
  // slower.
  s.prefetch_b =
      cold_weights_ && c_.b.constant ? pick(rng, std::vector<int64_t>{0, 16, 32, 64}) : int64_t{0};
  // The next column tile's B prefetched (into L2) while a tile's rows compute: drawn with
  // m the inner tile loop (with n inner the next block competed with the block in use for
  // L2: qkv and ffn1 of BERT at T = 16 and 64 ran 3-10% slower).
  s.prefetch_next =
      cold_weights_ && c_.b.constant && s.inner_tile_loop == Axis::M && chance(rng, 0.5);
}

MicroKernelSchedule SearchSpace::sample(std::mt19937_64& rng) const {
  bool prepack = c_.b.constant;
  const bool b_direct = b_along_n_;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    MicroKernelSchedule s;
    s.isa = vec_.isa;
    int64_t v = pick(rng, vector_choices(nullptr));
    std::vector<int64_t> mrs = mr_choices(v, nullptr);
    if (mrs.empty()) continue;
    s.mr = pick(rng, mrs);
    s.nr = v * vec_.width;
    std::vector<int64_t> kcs = kc_choices(nullptr);
    // Bias toward micro-panels that stay in L1 for the k-loop.
    std::vector<int64_t> l1;
    for (int64_t kc : kcs)
      if (kc * (s.mr + s.nr) * 4 <= l1_bytes_ * 2) l1.push_back(kc);
    s.kc = pick(rng, !l1.empty() && chance(rng, 0.7) ? l1 : kcs);
    s.mc = pick(rng, mc_choices(s.mr, s.kc, nullptr));
    s.nc = pick(rng, nc_choices(s.nr, s.kc, nullptr));
    sample_knobs(rng, s);
    // B that changes per call and whose rows run along n (NN batch_matmul) may be read in
    // place: no per-call copy, masked loads on the n tail.
    s.pack_b = prepack                        ? schedule::PackB::Prepacked
               : b_direct && chance(rng, 0.5) ? schedule::PackB::Direct
                                              : schedule::PackB::PerBlock;
    // Dot products where A and B both run along k: often for a small N (attention's
    // scores), now and then for a wide one (a dense layer's weights read as rows).
    if (dot_ && chance(rng, max_.n <= 128 ? 0.3 : 0.05)) {
      s.vector_axis = Axis::K;
      s.nr = pick(rng, dot_columns(nullptr));
      std::vector<int64_t> dot_mrs = mr_choices(s.nr, nullptr);
      if (dot_mrs.empty()) continue;
      s.mr = pick(rng, dot_mrs);
      s.mc = pick(rng, mc_choices(s.mr, s.kc, nullptr));
      s.nc = pick(rng, nc_choices(s.nr, s.kc, nullptr));
      s.pack_a = schedule::PackA::Direct;
      s.pack_b = schedule::PackB::Direct;
      s.k_streams = 1;
      s.prefetch_b = 0;
      s.prefetch_next = false;
    }
    // Heads innermost now and then in a batched product (valid where nothing is packed per
    // block).
    if (!c_.batch_axes.empty() && chance(rng, 0.25)) {
      s.batch_inner = true;
      s.pack_a = schedule::PackA::Direct;
      if (s.parallel == ParallelAxis::Batch)
        s.parallel = threads_ == 1 ? ParallelAxis::None : ParallelAxis::M;
    }
    if (valid(s)) return s;
  }
  // Report why with a representative schedule.
  MicroKernelSchedule s;
  s.isa = vec_.isa;
  s.mr = 1;
  s.nr = vec_.width;
  s.kc = std::max<int64_t>(1, std::min<int64_t>(256, max_.k));
  s.mc = 1;
  s.nc = vec_.width;
  schedule::bind(s, op_, c_);
  user_error("operator {}: the search space has no valid micro-kernel", op_.name);
}

std::vector<MicroKernelSchedule> SearchSpace::seeds_for(const Extents& e) const {
  // The widest tile the registers hold beside mr rows, no wider than N needs and than the
  // sampled space goes (8 vectors); < 1 where no tile of mr rows fits.
  auto widest_vectors = [&](int64_t mr) {
    return std::min(
        {schedule::max_tile_vectors(mr, vec_.registers), int64_t(8), ceil_div(e.n, vec_.width)});
  };
  // How much of the multiply-add rate a tile of mr rows x v vectors can use: enough
  // independent accumulators (kSeedFullTile of the most any tile the registers hold has)
  // and enough multiply-adds per loaded element (mr v / (mr + v) >= kSeedFmasPerLoad).
  const int64_t max_mr = schedule::max_tile_rows(1, vec_.registers);  // one vector wide
  int64_t most_accumulators = 1;
  for (int64_t mr = 1; mr <= max_mr; ++mr)
    most_accumulators =
        std::max(most_accumulators, mr * schedule::max_tile_vectors(mr, vec_.registers));
  auto tile_strength = [&](int64_t mr, int64_t v) {
    const double acc = double(mr * v);
    return std::min(1.0, acc / (kSeedFullTile * double(most_accumulators))) *
           std::min(1.0, acc / double(mr + v) / kSeedFmasPerLoad);
  };
  // The tile heights that waste at most kSeedPadding of the rows, at most three of them,
  // best first by the work each k-step of the widest tile beside them does:
  // tile_strength (the tallest one-vector tiles that 32 registers allow are load-bound:
  // 16 x 16 ran at 0.87 of an 8 x 48 tile at M = 16), then tallest (fewer tiles).
  std::vector<std::pair<double, int64_t>> ranked_heights;  // (score, mr)
  for (int64_t mr = std::min(max_mr, e.m); mr >= 1; --mr) {
    double used = double(e.m) / double(round_up(e.m, mr));
    if (used < 1.0 - kSeedPadding || widest_vectors(mr) < 1) continue;
    ranked_heights.push_back({used * tile_strength(mr, widest_vectors(mr)), mr});
  }
  std::stable_sort(ranked_heights.begin(), ranked_heights.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first + 1e-9; });
  std::vector<int64_t> heights;
  for (size_t i = 0; i < ranked_heights.size() && heights.size() < 3; ++i)
    heights.push_back(ranked_heights[i].second);
  std::vector<MicroKernelSchedule> out;
  const bool b_direct = !c_.b.constant && b_along_n_;
  // Blocks in L2 (half of it for each packed operand), the parallel axis where the tasks
  // fill the cores, the loop order, packing; kept when valid.
  auto finish = [&](MicroKernelSchedule s) {
    int64_t mc_cap = std::max(s.mr, (l2_bytes_ / 2) / (4 * s.kc) / s.mr * s.mr);
    int64_t nc_cap = std::max(s.nr, (l2_bytes_ / 2) / (4 * s.kc) / s.nr * s.nr);
    s.mc = std::min(mc_cap, round_up(max_.m, s.mr));
    s.nc = std::min(nc_cap, round_up(max_.n, s.nr));
    if (threads_ == 1) {
      s.parallel = ParallelAxis::None;
    } else if (!c_.batch_axes.empty()) {
      s.parallel = ParallelAxis::Batch;  // 12 heads x batch: tasks enough for the cores
    } else if (ceil_div(e.m, s.mr) >= threads_) {
      s.parallel = ParallelAxis::M;
      s.mc = std::min(mc_cap, round_up(ceil_div(e.m, threads_), s.mr));
    } else {
      s.parallel = ParallelAxis::N;
      s.nc = std::min(nc_cap, round_up(ceil_div(e.n, threads_), s.nr));
    }
    s.loop_order = {Axis::N, Axis::K, Axis::M};
    s.inner_tile_loop = Axis::M;
    s.unroll_k = 4;
    s.pack_a = schedule::PackA::Packed;
    s.pack_b = c_.b.constant ? schedule::PackB::Prepacked : schedule::PackB::PerBlock;
    // Both operands in place where B may be read so (dot products; S V, whose B changes
    // per call and runs along n): a call copies nothing, and a short K (a short
    // sequence's S V) is not unrolled past its length.
    if (s.vector_axis == Axis::K || b_direct) {
      s.pack_a = schedule::PackA::Direct;
      s.pack_b = schedule::PackB::Direct;
    }
    if (b_direct)
      while (s.unroll_k > 1 && s.unroll_k > e.k) s.unroll_k /= 2;
    if (s.vector_axis == Axis::K) s.unroll_k = std::clamp<int64_t>(e.k / vec_.width, 1, 8);
    if (!valid(s)) return;
    // A head of a few tiles (a short sequence's S V or scores) first with the heads
    // innermost: the block loops and row pointers are then set up once for all heads
    // (S V at T = 2-8 and Q K^T at T = 1-8, 5-30% faster per call), then as usual.
    MicroKernelSchedule inner = s;
    inner.batch_inner = true;
    if (inner.parallel == ParallelAxis::Batch) {  // the heads are no longer the tasks
      if (ceil_div(e.m, s.mr) >= threads_) {
        inner.parallel = ParallelAxis::M;
        inner.mc = std::min(mc_cap, round_up(ceil_div(e.m, threads_), s.mr));
      } else {
        inner.parallel = ParallelAxis::N;
        inner.nc = std::min(nc_cap, round_up(ceil_div(e.n, threads_), s.nr));
      }
    }
    if (!c_.batch_axes.empty() && s.pack_a == schedule::PackA::Direct &&
        s.pack_b == schedule::PackB::Direct && e.m * e.n * e.k <= kFewTilesPerHead && valid(inner))
      out.push_back(inner);
    out.push_back(s);
  };
  // k-block: the A and B micro-panels (mr + nr floats per k) in L1, split evenly over K.
  auto l1_kc = [&](const MicroKernelSchedule& s) {
    int64_t kc_cap = std::max<int64_t>(8, l1_bytes_ / (4 * (s.mr + s.nr)) / 8 * 8);
    int64_t kc = max_.k;
    for (int64_t j = 1; j <= 64; ++j) {
      kc = std::min(max_.k, round_up(ceil_div(e.k, j), 8));
      if (kc <= kc_cap) break;
    }
    return kc;
  };
  // A short product of constant B streams B from memory (a model's weights at a short
  // sequence): there each tile walks four ranges of k at once (k_streams), and the
  // tallest also with one, after the first.
  const bool streaming = e.m <= kStreamingRows && c_.b.constant;
  for (int64_t mr : heights) {
    MicroKernelSchedule s;
    s.isa = vec_.isa;
    s.mr = mr;
    int64_t v = widest_vectors(mr);
    if (v < 1) continue;
    s.nr = v * vec_.width;
    s.kc = l1_kc(s);
    finish(s);
    if (streaming && !out.empty() && out.back().mr == mr && out.back().k_streams == 1) {
      MicroKernelSchedule one = out.back();
      out.back().k_streams = 4;
      if (!valid(out.back()))
        out.back() = one;
      else if (out.size() == 1)
        out.push_back(one);
    }
  }
  // Long k blocks with A read in place, for the first height's tile of a product at least kDeepK
  // long in k (BERT's dense layers, K = 768 and 3072): C is loaded and stored once per
  // ~768 k-steps instead of once per L1 block, A's rows stay in L1 across the N tiles and
  // B streams through L2 (the sweep oracle's winners at most M there: AVX-512, M = 8 to
  // 77 of the 2304 x 768 layer; with cold weights 35 of the 36 winners of the four BERT
  // layers at M = 1..16, where the streaming tile won none). It comes first: listed after
  // the three heights it was a fourth-rank seed, and second behind the streaming tile a
  // second-rank one, that round 1 never measured (M = 3 then ran at 0.82 of the oracle).
  if (!heights.empty() && max_.k >= kDeepK && widest_vectors(heights.front()) >= 1) {
    MicroKernelSchedule s;
    s.isa = vec_.isa;
    s.mr = heights.front();
    s.nr = widest_vectors(s.mr) * vec_.width;
    // About kDeepK, split evenly over K, and no longer than keeps A's rows in L1.
    const int64_t cap = std::max<int64_t>(8, l1_bytes_ / (4 * s.mr) / 8 * 8);
    const int64_t target = std::min(kDeepK, cap);
    s.kc = std::min({max_.k, cap, round_up(ceil_div(e.k, ceil_div(e.k, target)), 8)});
    const size_t before = out.size();
    finish(s);
    if (out.size() > before) {
      out.back().pack_a = schedule::PackA::Direct;
      out.back().inner_tile_loop = Axis::N;
      if (!valid(out.back())) {
        out.pop_back();
      } else {
        std::rotate(out.begin(), out.end() - 1, out.end());
        // Warm constant B and all of M in one row of tiles: a call reads B once, from the
        // cache, and reads it fastest from tile-wide panels, one contiguous stream: so the
        // same tile in such panels at most kTilePanelVectors wide comes first, the deep seed
        // in vector panels after it. The 2304 x 768 layer side by side with oneDNN
        // (docs/bench/tuning-zen5/stop45/): 3 x 64 at M = 2-3 1.00-1.08x, 5 x 80 at M = 4-5
        // 1.00x on geomean, 0.90x in vector panels. At stop 51 tile panels won 26 of the 28
        // one-thread cells of the four BERT layers at M = 1, 2, 4, 6, 8 and 13, and the
        // two-thread sweep's winners at M = 1, 2, 4 and 8; listed second, behind the deep
        // seed of every other shape, a two-thread 1000-trial search never measured one, and
        // its module ran M = 1..8 at 0.84-0.97 of the sweep.
        if (!cold_weights_ && c_.b.constant && e.m <= s.mr) {
          const MicroKernelSchedule deep = out.front();
          auto at = out.begin();
          for (int64_t vectors : kTilePanelVectors) {
            MicroKernelSchedule tile_panel = schedule::in_tile_panels(deep, vectors * vec_.width);
            // Split over n, each thread one block of columns: with no B reused, the L2 cap
            // on nc buys nothing, and one contiguous range per thread streams fastest (the
            // two-thread sweep's winners at M = 1..7 of the 2304 x 768 layer all took nc =
            // N / 2; the same 6 x 64 tile at nc = 128 ran 4-10% slower, stop 52).
            if (tile_panel.parallel == ParallelAxis::N) {
              MicroKernelSchedule split = tile_panel;
              split.nc = round_up(ceil_div(e.n, threads_), split.nr);
              if (valid(split)) tile_panel = split;
            }
            if (valid(tile_panel) && std::find(out.begin(), out.end(), tile_panel) == out.end())
              at = out.insert(at, tile_panel) + 1;
          }
        }
        // Cold weights past the streaming rows: first the same tile with m the inner tile
        // loop, the next tile's B prefetched (below) while a tile's rows compute: a 7 x 48
        // tile so, on the 2304 x 768 layer with cold weights at M = 16..128, ran 5-15% faster
        // than without the prefetch and 0-7% faster than the tuned 12 x 32 tile with n inner.
        MicroKernelSchedule m_inner = out.front();
        m_inner.inner_tile_loop = Axis::M;
        if (cold_weights_ && c_.b.constant && e.m > kStreamingRows && valid(m_inner))
          out.insert(out.begin(), m_inner);
      }
    }
  }
  // Dot products for a few columns: first among the shape's seeds for the fewest.
  if (dot_ && e.n <= kDotSeedColumns) {
    MicroKernelSchedule s;
    s.isa = vec_.isa;
    s.vector_axis = Axis::K;
    // The tile of least padding and most FMAs per loaded vector, (MR * NR) / (MR + NR).
    double best = 0;
    for (int64_t nr : dot_columns(&e))
      for (int64_t mr = 1; mr <= std::min(schedule::max_tile_rows(nr, vec_.registers), e.m); ++mr) {
        double used = double(e.m * e.n) / double(round_up(e.m, mr) * round_up(e.n, nr));
        double score = used * double(mr * nr) / double(mr + nr);
        if (score > best + 1e-9) {
          best = score;
          s.mr = mr;
          s.nr = nr;
        }
      }
    s.kc = max_.k;  // one k block: C is written once
    const size_t before = out.size();
    finish(s);  // unroll_k: K's vectors, up to 8 (finish)
    if (e.n <= kDotFirstColumns)
      std::rotate(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  }
  // One or two rows of a product whose constant B streams from memory (a model's weights
  // at a sequence of one or two): a narrow tile with two accumulators, which the
  // micro-kernel runs as four copies over four ranges of k, reading B as four streams at
  // once (micro_kernel_emitter.cpp).
  if (e.m <= 2 && c_.b.constant) {
    MicroKernelSchedule s;
    s.isa = vec_.isa;
    s.mr = e.m;
    s.nr = std::min<int64_t>(3 - e.m, ceil_div(e.n, vec_.width)) * vec_.width;
    s.kc = l1_kc(s);
    finish(s);
  }
  if (cold_weights_ && c_.b.constant && e.m <= kPrefetchRows) {
    for (MicroKernelSchedule& s : out)
      if (s.vector_axis == Axis::N) s.prefetch_b = kSeedPrefetch;
    // At the fewest rows reading B is the whole bound, and whether the software prefetch
    // speeds it up depends on the machine's hardware prefetcher: the first seed also
    // without it, second. On a Zen 1 VM the 1 x 64 deep seed, cold, ran M = 1 of the 2304 x
    // 768 layer 3-15% faster without it, in three side-by-side runs (stop 54); the module,
    // which never measured it, ran M = 1 at 0.89-0.94 of the sweep on three BERT layers.
    if (e.m <= kPlainPrefetchRows && !out.empty() && out.front().prefetch_b > 0) {
      MicroKernelSchedule plain = out.front();
      plain.prefetch_b = 0;
      if (valid(plain)) out.insert(out.begin() + 1, plain);
    }
  }
  // Cold weights, past the streaming rows: every seed with m the inner tile loop prefetches
  // the next tile's B. At fewer rows B's stream is the bound and the early lines compete
  // with it (the 7 x 48 tile at M = 2 and 8: 10-20% slower with the prefetch).
  if (cold_weights_ && c_.b.constant && e.m > kStreamingRows)
    for (MicroKernelSchedule& s : out)
      if (s.vector_axis == Axis::N && s.inner_tile_loop == Axis::M &&
          s.pack_b == schedule::PackB::Prepacked)
        s.prefetch_next = true;
  return out;
}

std::vector<MicroKernelSchedule> SearchSpace::seeds_for_shapes() const {
  std::vector<MicroKernelSchedule> out;
  for (RuleSeed& r : rule_seeds()) out.push_back(std::move(r.schedule));
  return out;
}

std::vector<SearchSpace::RuleSeed> SearchSpace::rule_seeds() const {
  // The kSeedShapesDense smallest shapes first, each of them (a tile height of its own:
  // M = 11's 11 x 32 tile ran 1.2-1.3x the 9 x 48 one that served it, on all four BERT
  // layers, when 11 was not among the shapes seeded first), then shapes spread
  // geometrically (..., 19, 28, 42, 63, 128), then from the ends inward (64, 32, 96, ...):
  // a prefix of the seeds covers the range, not just its start.
  std::vector<size_t> order;
  std::vector<std::pair<size_t, size_t>> spans = {{0, extents_.size()}};
  std::vector<bool> taken(extents_.size(), false);
  auto take = [&](size_t i) {
    if (i < taken.size() && !taken[i]) {
      taken[i] = true;
      order.push_back(i);
    }
  };
  std::vector<size_t> by_m(extents_.size());
  std::iota(by_m.begin(), by_m.end(), size_t{0});
  std::stable_sort(by_m.begin(), by_m.end(),
                   [&](size_t a, size_t b) { return extents_[a].m < extents_[b].m; });
  for (size_t i = 0; i < std::min<size_t>(by_m.size(), kSeedShapesDense); ++i) take(by_m[i]);
  for (size_t i : geometric_positions(extents_.size(), kSeedShapesGeometric)) take(i);
  for (size_t head = 0; head < spans.size(); ++head) {
    auto [lo, hi] = spans[head];
    if (hi - lo < 2) continue;
    size_t mid = lo + (hi - lo) / 2;
    take(mid);
    spans.push_back({lo, mid});
    spans.push_back({mid + 1, hi});
  }
  for (size_t i = 0; i < extents_.size(); ++i) take(i);
  // Each shape's seeds in ranks: a seed and, with it, the next one when that is the same
  // kernel without the prefetch of B (kPlainPrefetchRows): the two are measured together.
  std::vector<std::vector<std::vector<MicroKernelSchedule>>> per_shape;
  for (size_t i : order) {
    std::vector<std::vector<MicroKernelSchedule>>& ranks = per_shape.emplace_back();
    for (MicroKernelSchedule& s : seeds_for(extents_[i])) {
      bool twin = false;
      if (!ranks.empty() && ranks.back().size() == 1 && s.prefetch_b == 0) {
        MicroKernelSchedule plain = ranks.back().front();
        plain.prefetch_b = 0;
        twin = plain == s;
      }
      if (twin)
        ranks.back().push_back(std::move(s));
      else
        ranks.push_back({std::move(s)});
    }
  }
  // Each shape's first rank, then each shape's second, ...
  std::vector<RuleSeed> out;
  std::unordered_set<MicroKernelSchedule, schedule::ScheduleHash> seen;
  for (size_t rank = 0; rank < 4; ++rank)
    for (size_t j = 0; j < per_shape.size(); ++j)
      if (rank < per_shape[j].size())
        for (const MicroKernelSchedule& s : per_shape[j][rank])
          if (seen.insert(s).second) out.push_back({s, order[j]});
  return out;
}

std::optional<MicroKernelSchedule> SearchSpace::mutate(std::mt19937_64& rng,
                                                       const MicroKernelSchedule& from,
                                                       size_t shape_index) const {
  const Extents& fit = extents_[std::min(shape_index, extents_.size() - 1)];
  for (int attempt = 0; attempt < 20; ++attempt) {
    MicroKernelSchedule s = from;
    int axis = std::uniform_int_distribution<int>(0, 3)(rng);
    if (axis == 0) {
      // M: a tile height that covers this shape's M with little padding; the block
      // keeps its number of tiles, so the factor moves between the two levels.
      const bool dot = s.vector_axis == Axis::K;
      int64_t v = dot ? s.nr : s.nr / vec_.width;  // accumulator vectors per row
      std::vector<int64_t> mrs = mr_choices(v, &fit);
      if (mrs.empty()) continue;
      int64_t tiles = std::max<int64_t>(1, s.mc / s.mr);
      s.mr = pick(rng, mrs);
      s.mc = std::min(round_up(max_.m, s.mr), s.mr * tiles);
      if (chance(rng, 0.5)) s.mc = pick(rng, mc_choices(s.mr, s.kc, &fit));
    } else if (axis == 1) {
      // N: vectors per tile (columns of dot products), then the N block for this shape's
      // N and the core count.
      const bool dot = s.vector_axis == Axis::K;
      int64_t v = pick(rng, dot ? dot_columns(&fit) : vector_choices(&fit));
      s.nr = dot ? v : v * vec_.width;
      int64_t cap = schedule::max_tile_rows(v, vec_.registers);
      if (s.mr > cap) {
        if (cap < 1) continue;
        int64_t tiles = std::max<int64_t>(1, s.mc / s.mr);
        s.mr = cap;
        s.mc = std::min(round_up(max_.m, s.mr), s.mr * tiles);
      }
      s.nc = pick(rng, nc_choices(s.nr, s.kc, &fit));
    } else if (axis == 2) {
      // K: a k-block that splits this shape's K evenly, or a factor of 2 moved between
      // the k-block and the k-loop over blocks.
      if (chance(rng, 0.5)) {
        s.kc = pick(rng, kc_choices(&fit));
      } else {
        s.kc = chance(rng, 0.5) ? std::min(max_.k, s.kc * 2) : std::max<int64_t>(8, s.kc / 2);
        if (kind_ == SpaceKind::Divisors && max_.k % s.kc != 0) continue;
      }
    } else {
      MicroKernelSchedule knobs = s;
      sample_knobs(rng, knobs);
      switch (std::uniform_int_distribution<int>(0, c_.batch_axes.empty() ? 5 : 6)(rng)) {
        case 0:
          s.loop_order = knobs.loop_order;
          break;
        case 1:
          s.parallel = knobs.parallel;
          break;
        case 2:
          s.inner_tile_loop = knobs.inner_tile_loop;
          s.prefetch_next = knobs.prefetch_next;
          break;
        case 3:
          s.unroll_k = knobs.unroll_k;
          s.k_streams = knobs.k_streams;
          break;
        case 4:
          s.k_streams = sample_k_streams(rng, s.unroll_k);
          if (s.vector_axis == Axis::N) {
            s.prefetch_b = knobs.prefetch_b;
            s.prefetch_next = knobs.prefetch_next && s.inner_tile_loop == Axis::M;
          }
          break;
        case 6:
          s.batch_inner = !s.batch_inner;
          break;
        default:
          s.pack_a = knobs.pack_a;
          break;
      }
    }
    if (!(s == from) && valid(s)) return s;
  }
  return std::nullopt;
}

}  // namespace dietcode::tune
