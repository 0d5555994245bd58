// A CPU micro-kernel schedule of a contraction, as typed data: the register tile, the
// cache blocks, the loop order, the parallel axis, the k-unroll and k-streams, the packing of each
// operand. JSON is its form only at the boundaries (records, modules, the worker pipe,
// the command line); inside, schedules are compared and hashed by their fields.
//
// Loop structure it describes (BLIS-style, with N, K, M in loop_order):
//
//   for each of the three block loops, in loop_order:   n by nc, k by kc, m by mc
//     [pack B block into NR-wide panels]   once n and k are bound (unless prepacked or direct)
//     [pack A block into MR-wide panels]   once m and k are bound (unless direct)
//     for jt: NR-tiles of the n block
//       for it: MR-tiles of the m block      (inner_tile_loop: which of jt, it is inner)
//         micro-kernel MR x NR over the k block
//
// The micro-kernel's vectors run along n (vector_axis n, the default: each k-step
// broadcasts MR values of A and multiplies them into NR/W vectors of B, outer products) or
// along k (vector_axis k: MR x NR dot products, each accumulator a vector of W products
// along k, summed across its lanes once at the end). The second needs A's and B's rows
// both contiguous along k and reads both in place (Q K^T of attention: one query row
// against one key row); it has no pack and no NR-wide zero padding, so a product of a few
// rows and columns (a short sequence's scores) costs a few FMAs per output.
//
// Checking a schedule against its operator (bind) yields a BoundSchedule: the schedule
// with the operator's matched contraction and largest extents, which is what lowering
// consumes, so nothing is matched or validated twice.
//
// Schedule kinds. This is the kind for contractions on a CPU (`"kind"` is implied as
// "contraction" in its JSON; `target` is "cpu"). Another kind (a fused attention
// kernel, an elementwise/row-reduction kernel, a GPU binding of the same tiles) is a
// struct of its own beside this one with the same four pieces: typed fields with
// `operator==`, `digest()`, to/from JSON, and a bind() against its operator that yields
// what its lowering needs; the tuner, records and modules then carry the kind's tag.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "ops/contraction.h"
#include "schedule/isa.h"
#include "te/tensor.h"

namespace dietcode::schedule {

enum class Target : uint8_t { Cpu };
// The three loop axes of a contraction's nest (batch axes are always outermost).
enum class Axis : uint8_t { M, N, K };
// The block loop whose iterations run as parallel tasks, or None.
enum class ParallelAxis : uint8_t { None, Batch, M, N };
enum class PackA : uint8_t { Packed, Direct };  // Direct: read A in place (affine access only)
// Prepacked: constant B packed once, ahead of calls. Direct: B read in place, its rows
// (one per k) contiguous along n; vector loads straight from B, masked on the n tail (or,
// with vector_axis k, its columns contiguous along k).
enum class PackB : uint8_t { PerBlock, Prepacked, Direct };
// The layout of prepacked B: panels one vector wide over all of k, [N / W][K][W] (Vector:
// one packed copy serves every kernel of a module, a tile row reads NR / W panels, K x W
// apart), or as wide as the tile, [N / NR][K][NR] (Tile: a tile reads one contiguous
// stream, what a DRAM-bound short sequence wants; each NR is a layout of its own).
enum class BPanel : uint8_t { Vector, Tile };

using LoopOrder = std::array<Axis, 3>;  // outermost first, a permutation of M, N, K

std::string_view to_string(Target t);
std::string_view to_string(Axis a);
std::string_view to_string(ParallelAxis p);
std::string_view to_string(PackA p);
std::string_view to_string(PackB p);
std::string_view to_string(BPanel p);
std::string to_string(const LoopOrder& order);  // e.g. "n,k,m"

struct MicroKernelSchedule {
  Target target = Target::Cpu;
  Isa isa = Isa::Avx2;
  int64_t mr = 4, nr = 16;              // register tile
  int64_t kc = 256, mc = 64, nc = 256;  // cache blocks
  LoopOrder loop_order{Axis::N, Axis::K, Axis::M};
  ParallelAxis parallel = ParallelAxis::M;
  Axis inner_tile_loop = Axis::M;  // the innermost tile loop: M or N (see above)
  int64_t unroll_k = 4;
  // Contiguous ranges of the k block the micro-kernel walks at once (1, 2 or 4, at most
  // unroll_k): each k-loop iteration takes a step in every range, so B streams from as
  // many places. One core's memory system serves a few streams about twice as fast as one
  // when B comes from DRAM (the weights of a short sequence's dense layer).
  int64_t k_streams = 1;
  // Software prefetch of B: each k-step also prefetches B's row this many k-steps ahead
  // (0: none; 16, 32 or 64). Where B streams from DRAM (the weights of a short sequence's
  // dense layer, not reused from cache) the hardware prefetcher alone does not run far
  // enough ahead for the loads to overlap the multiply-adds: an 8 x 48 tile at M = 16
  // (K = 768, N = 2304, weights cold) took 0.43-0.45 ms without and 0.38-0.40 with 32-64.
  int64_t prefetch_b = 0;
  // Software prefetch of the B that the tile loops read next (prepacked): the next column
  // tile when m is the inner tile loop, the next block of nc columns when n is. A tile's
  // (a block's) B is reused from cache by every row tile after the first, so without it
  // the first call on the next tile (block) waits on memory for all of its B while the
  // core has nothing else to do. With it, each k-step of every call also prefetches lines
  // of that B into L2, the calls sharing it out (m inner: the row tiles of a column tile
  // split the next tile's vectors, however few they are; n inner: one line per k-step):
  // the weights' DRAM traffic overlaps the multiply-adds of the calls before (ffn2 of a
  // 12-layer BERT at T = 64: 19.9-20.8 ms without, 18.3-18.6 with).
  bool prefetch_next = false;
  PackA pack_a = PackA::Packed;
  PackB pack_b = PackB::PerBlock;
  // With pack_b prepacked: vector-wide or tile-wide panels (BPanel). A 3 x 128 tile at
  // M = 3 (K = 768, N = 3072, weights cold) streamed B at 41 GB/s from 8 vector panels and
  // at 48 GB/s from one tile panel, the machine's read bandwidth; inside a twelve-layer
  // model, no faster (src/schedule/README.md), so the search does not draw it. With the
  // weights in cache a few rows of a product read B once per call, from the cache, and
  // there it is seeded (tune::SearchSpace::seeds_for).
  BPanel b_panel = BPanel::Vector;
  // N: outer products, nr a multiple of the vector width. K: dot products, nr any count of
  // columns, A and B read in place (pack_a and pack_b direct, k_streams 1).
  Axis vector_axis = Axis::N;
  // The batch loops (heads of attention's products) directly around the micro-kernel,
  // inside the tile loops, instead of outermost: the block and tile loops, row pointers
  // and edge clamps are then set up once per tile for every head, not once per head, which
  // is most of a call where a head's product is a few tiles (S V of a short sequence). Needs
  // no pack inside the loops (pack_a direct, pack_b direct or prepacked) and a parallel axis
  // other than batch.
  bool batch_inner = false;

  bool operator==(const MicroKernelSchedule&) const = default;
  // A stable 64-bit digest of the fields (FNV-1a over them in declaration order): the
  // same on every run and machine, so it may key held-out splits and packed layouts.
  uint64_t digest() const;
};

// For unordered containers keyed by schedule.
struct ScheduleHash {
  size_t operator()(const MicroKernelSchedule& s) const { return size_t(s.digest()); }
};

nlohmann::json to_json(const MicroKernelSchedule& s);
// Throws dietcode::Error naming the field that is missing, mistyped, unknown or out of
// its set of names.
MicroKernelSchedule schedule_from_json(const nlohmann::json& j);
MicroKernelSchedule schedule_from_json_text(const std::string& text);
std::string to_json_text(const MicroKernelSchedule& s);  // one line

// Vector registers an mr x (vectors x width) register tile needs in its k-loop: the
// accumulators, and either all the k-step's B vectors with one A broadcast (B loaded
// first) or all its A broadcasts with one B vector (A first). The micro-kernel takes the
// order that needs fewer: A first when mr < vectors, which lets one or two rows span 48
// or 64 columns on AVX2.
int64_t tile_registers(int64_t mr, int64_t vectors);
// The tallest tile of `vectors` vectors, and the widest (in vectors) tile of `mr` rows,
// that fit `registers`; 0 when none does.
int64_t max_tile_rows(int64_t vectors, int64_t registers);
int64_t max_tile_vectors(int64_t mr, int64_t registers);

// `s` reading B from tile-wide panels (BPanel::Tile), its tile at most `max_nr` wide and
// its N block a whole number of such tiles (at least one).
MicroKernelSchedule in_tile_panels(MicroKernelSchedule s, int64_t max_nr);

// How a register tile of mr rows (of outer products, `vectors` vectors of `vector_bytes`
// across, k-blocks of kc) computes an edge of `rows` < mr rows at M's end: as passes over
// its k-loop, each a sub-tile whose height is a power of two below mr or mr itself,
// tallest first, all of them whole but the last, which may be taller than what is left;
// the code runs that pass as exactly the rows left (`rows`). Each pass streams the tile's
// B again, so the plan trades passes against rows, by a per-k-step cost of each pass (the
// last one costed at its height, which bounds how many distinct passes a kernel holds): the
// larger of its multiply-adds (two vector FMAs a cycle) and its B vectors, read from L1
// when the block's B of the tile fits there, else from L2 (128 or 32 bytes a cycle). A
// 6 x 64 tile at M = 3 (K = 768, N = 3072, weights cold) ran as passes of 2 and 1 rows in
// 0.53 ms, a 3 x 64 tile in 0.36: 3 rows run as one pass (of 4 in the plan), 5 as one
// (of 6).
struct EdgePass {
  int64_t height;  // the sub-tile's rows in the plan
  int64_t rows;    // of them, rows of C, which the pass computes (the last: possibly fewer)
};
std::vector<EdgePass> edge_passes(int64_t mr, int64_t vectors, int64_t vector_bytes, int64_t kc,
                                  int64_t rows);

// Checks everything that does not depend on the operator: tile and register budget,
// block sizes, loop order, the inner tile loop. Throws dietcode::Error saying why.
void validate(const MicroKernelSchedule& s);

// The largest value each extent can take within the shape variables' declared ranges.
struct MaxExtents {
  int64_t m, n, k;
};
MaxExtents max_extents(const ops::Contraction& c, const te::Operator& op);

// Whether B is read affinely with unit stride along n (NN batch_matmul), the condition
// for PackB::Direct.
bool b_contiguous_along_n(const ops::Contraction& c);
// Whether A and B are both read affinely with unit stride along k (NT batch_matmul), the
// condition for vector_axis k.
bool operands_contiguous_along_k(const ops::Contraction& c);

// The vector registers of an MR x NR tile of dot products: one accumulator per output,
// and either all MR vectors of A with one of B or all NR of B with one of A.
inline int64_t dot_tile_registers(int64_t mr, int64_t nr) {
  return tile_registers(mr, nr);
}

// A schedule validated against its operator, carrying what lowering needs.
class BoundSchedule {
 public:
  const MicroKernelSchedule& schedule() const { return schedule_; }
  const te::Operator& op() const { return op_; }
  const ops::Contraction& contraction() const { return contraction_; }
  const MaxExtents& max() const { return max_; }

 private:
  friend BoundSchedule bind(const MicroKernelSchedule&, const te::Operator&,
                            const ops::Contraction&);
  BoundSchedule(MicroKernelSchedule s, te::Operator op, ops::Contraction c, MaxExtents m)
      : schedule_(s), op_(std::move(op)), contraction_(std::move(c)), max_(m) {}
  MicroKernelSchedule schedule_;
  te::Operator op_;
  ops::Contraction contraction_;
  MaxExtents max_;
};

// validate(s), then the schedule against the operator: tiles no larger than any allowed
// extent, a parallel axis the operator has, packing choices the operands permit.
// Throws dietcode::Error saying why. The second form reuses an already matched
// contraction (the search space checks thousands of candidates of one operator).
BoundSchedule bind(const MicroKernelSchedule& s, const te::Operator& op);
BoundSchedule bind(const MicroKernelSchedule& s, const te::Operator& op, const ops::Contraction& c);

}  // namespace dietcode::schedule
