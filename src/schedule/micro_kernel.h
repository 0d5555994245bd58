// A CPU micro-kernel schedule, as data: the register tile, the cache blocks, the
// loop order, the parallel axis, the k-unroll and the packing of each operand.
// Schedules serialize to and from JSON (they are tuning records later) and are
// validated against the vector ISA and the operator before anything is lowered.
//
// Loop structure it describes (BLIS-style, with "n", "k", "m" in loop_order):
//
//   for each of the three block loops, in loop_order:   n by nc, k by kc, m by mc
//     [pack B block into NR-wide panels]   once n and k are bound (unless prepacked)
//     [pack A block into MR-wide panels]   once m and k are bound (unless direct)
//     for jt: NR-tiles of the n block
//       for it: MR-tiles of the m block      (inner_tile_loop: which of jt, it is inner)
//         micro-kernel MR x NR over the k block
//
// A GPU target will add thread/block bindings of the same tiles; the `target`
// field is there so that records stay readable when it does.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace dietcode::te {
struct Operator;
}
namespace dietcode::ops {
struct Contraction;
}

namespace dietcode::schedule {

// The vector instruction set a schedule is shaped for.
struct VectorIsa {
  std::string name;   // "avx2" (AVX2 + FMA) or "avx512" (AVX-512F)
  int64_t width;      // fp32 lanes per vector register
  int64_t registers;  // architectural vector registers
};
// Throws dietcode::Error for an unknown name.
const VectorIsa& vector_isa(const std::string& name);

enum class PackA { Packed, Direct };       // Direct: read A in place (affine access only)
enum class PackB { PerBlock, Prepacked };  // Prepacked: constant B packed once, ahead of calls

struct MicroKernelSchedule {
  std::string target = "cpu";
  std::string isa = "avx2";
  int64_t mr = 4, nr = 16;                             // register tile
  int64_t kc = 256, mc = 64, nc = 256;                 // cache blocks
  std::vector<std::string> loop_order{"n", "k", "m"};  // outermost first
  std::string parallel = "m";                          // "none", "batch", "m" or "n": a block loop
  std::string inner_tile_loop = "m";  // the innermost tile loop, "m" or "n" (see above)
  int64_t unroll_k = 4;
  PackA pack_a = PackA::Packed;
  PackB pack_b = PackB::PerBlock;

  bool operator==(const MicroKernelSchedule&) const = default;
};

nlohmann::json to_json(const MicroKernelSchedule& s);
// Throws dietcode::Error naming the field that is missing, mistyped or unknown.
MicroKernelSchedule schedule_from_json(const nlohmann::json& j);
MicroKernelSchedule schedule_from_json_text(const std::string& text);
std::string to_json_text(const MicroKernelSchedule& s);  // one line

// Checks everything that does not depend on the operator: tile and register
// budget, block sizes, loop order, parallel axis. Throws dietcode::Error saying why.
void validate(const MicroKernelSchedule& s);
// Also checks the schedule against the operator: tiles no larger than any allowed
// extent, packing choices the operands permit.
void validate(const MicroKernelSchedule& s, const te::Operator& op);

// The largest value each extent can take within the shape variables' declared ranges.
struct MaxExtents {
  int64_t m, n, k;
};
MaxExtents max_extents(const ops::Contraction& c, const te::Operator& op);

}  // namespace dietcode::schedule
