// A CPU schedule of fused attention (ops/attention.h), the third schedule kind beside
// MicroKernelSchedule and RowSchedule, with the same pieces: typed fields with
// `operator==`, digest(), JSON, validate(), and bind() against its operator.
//
// Loop structure it describes (an online, max-subtracted softmax: the T x T scores are
// never stored; lower/attention_loops.h, codegen/llvm/attention_emitter.cpp):
//
//   for slice < batch * heads                       parallel when `parallel` is Heads
//     for tile < ceil(T / query_tile)               (slice, tile) pairs are the tasks
//                                                   when `parallel` is HeadsAndQueryTiles
//       Qt = scale * Q[tile rows]^T                 D x query_tile, zero past T, on the stack
//       m = -inf, l = 0, O_tile = 0                 per query row, query rows in vector lanes
//       for block < ceil(T / key_block)
//         S[j] = Qt^T K[j] (+ mask[j])              `unroll` keys at a time in registers
//         m' = max(m, max_j S[j]); alpha = exp(m - m'); P[j] = exp(S[j] - m')
//         l = alpha l + sum_j P[j]
//         O_tile[r] = alpha[r] O_tile[r] + sum_j P[j][r] V[j]     D in vectors, in registers
//       O[tile rows] = O_tile / l
//
// Query rows sit in the vector lanes (ceil(query_tile / W) vectors for W lanes), so the
// softmax statistics need no horizontal reductions; D is swept in W-wide vectors,
// masked when W does not divide it.
//
// With `lanes` HeadDim the vector lanes hold D instead, for short sequences (a tile of
// query rows in lanes wastes W - T of W lanes at T < W): each query row of the tile on its
// own, Q's row read in place into registers (no pack), a score a dot product over D
// (`unroll` keys at once, each summed across its lanes), the softmax statistics scalars,
// and O's row D/W vectors in registers over the keys.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ops/attention.h"
#include "schedule/micro_kernel.h"

namespace dietcode::schedule {

// Which loops run as parallel tasks on the thread pool.
enum class AttentionParallel : uint8_t { None, Heads, HeadsAndQueryTiles };
std::string_view to_string(AttentionParallel p);

// What the vector lanes hold: query rows (a tile's rows side by side) or the head dimension.
enum class AttentionLanes : uint8_t { Queries, HeadDim };
std::string_view to_string(AttentionLanes l);

// Keys whose dot products accumulate at once with lanes HeadDim.
constexpr int64_t kMaxHeadDimUnroll = 4;

struct AttentionSchedule {
  Target target = Target::Cpu;
  Isa isa = Isa::Avx2;
  int64_t query_tile = 16;  // rows of Q per tile, [1, 64]
  int64_t key_block = 32;   // keys per online-softmax step, [1, 256]
  int64_t unroll = 4;       // keys whose scores accumulate at once in registers, [1, 8]
  AttentionParallel parallel = AttentionParallel::Heads;
  AttentionLanes lanes = AttentionLanes::Queries;  // JSON "lanes" (optional: queries)

  bool operator==(const AttentionSchedule&) const = default;
  // Stable FNV-1a over the fields, tagged "attention" so that it never equals another
  // kind's digest of the same numbers.
  uint64_t digest() const;
  // Vectors of query rows: ceil(query_tile / W); 1 with lanes HeadDim (a row at a time).
  int64_t row_vectors() const;
};

nlohmann::json to_json(const AttentionSchedule& s);  // {"kind": "attention", ...}
// Throws dietcode::Error naming the field that is missing, mistyped, unknown or out of range.
AttentionSchedule attention_schedule_from_json(const nlohmann::json& j);
AttentionSchedule attention_schedule_from_json_text(const std::string& text);
std::string to_json_text(const AttentionSchedule& s);  // one line

// Ranges of the fields, and the score accumulators (row_vectors() x unroll) plus a row of
// Q^T fitting the ISA's vector registers (lanes HeadDim: unroll <= 4, one accumulator per
// key beside Q's row). Throws dietcode::Error saying why.
void validate(const AttentionSchedule& s);

// An attention schedule validated against its operator, with the matched attention.
class BoundAttentionSchedule {
 public:
  const AttentionSchedule& schedule() const { return schedule_; }
  const te::Operator& op() const { return op_; }
  const ops::AttentionOp& attention() const { return attention_; }

 private:
  friend BoundAttentionSchedule bind(const AttentionSchedule&, const te::Operator&);
  BoundAttentionSchedule(AttentionSchedule s, te::Operator op, ops::AttentionOp a)
      : schedule_(s), op_(std::move(op)), attention_(std::move(a)) {}
  AttentionSchedule schedule_;
  te::Operator op_;
  ops::AttentionOp attention_;
};

// validate(s), then match the operator as attention. Throws dietcode::Error.
BoundAttentionSchedule bind(const AttentionSchedule& s, const te::Operator& op);

// Every valid schedule of a grid (parallel axes, then query tiles, key blocks, unrolls;
// those whose accumulators do not fit the registers of `isa` left out): the bench's
// attention grid and the tuner's attention space.
std::vector<AttentionSchedule> attention_schedule_grid(
    Isa isa, const std::vector<AttentionParallel>& parallel,
    const std::vector<int64_t>& query_tiles, const std::vector<int64_t>& key_blocks,
    const std::vector<int64_t>& unrolls, AttentionLanes lanes = AttentionLanes::Queries);

// A uniformly random valid attention schedule for `isa` (for `dietcode verify` and tests).
template <typename Rng>
AttentionSchedule random_attention_schedule(Rng& rng, Isa isa) {
  auto pick = [&](int64_t lo, int64_t hi) { return lo + int64_t(rng() % uint64_t(hi - lo + 1)); };
  static constexpr int64_t kTiles[] = {1, 2, 3, 4, 5, 8, 12, 16, 24, 32};
  static constexpr int64_t kBlocks[] = {1, 2, 3, 7, 8, 16, 17, 32, 64, 128};
  AttentionSchedule s;
  s.isa = isa;
  s.query_tile = kTiles[pick(0, 9)];
  s.key_block = kBlocks[pick(0, 9)];
  int64_t registers = vector_isa(isa).registers;
  s.unroll = pick(1, std::min<int64_t>(8, registers / s.row_vectors() - 1));
  s.parallel = static_cast<AttentionParallel>(pick(0, 2));
  if (pick(0, 2) == 0) {
    s.lanes = AttentionLanes::HeadDim;
    s.unroll = pick(1, kMaxHeadDimUnroll);
  }
  return s;
}

}  // namespace dietcode::schedule
