#include "schedule/micro_kernel.h"

#include <algorithm>
#include <bit>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/affine.h"
#include "support/error.h"
#include "support/hash.h"
#include "support/int_math.h"

namespace dietcode::schedule {

using nlohmann::json;

std::string_view to_string(Target) {
  return "cpu";
}

std::string_view to_string(Axis a) {
  switch (a) {
    case Axis::M:
      return "m";
    case Axis::N:
      return "n";
    case Axis::K:
      return "k";
  }
  return "?";
}

std::string_view to_string(ParallelAxis p) {
  switch (p) {
    case ParallelAxis::None:
      return "none";
    case ParallelAxis::Batch:
      return "batch";
    case ParallelAxis::M:
      return "m";
    case ParallelAxis::N:
      return "n";
  }
  return "?";
}

std::string_view to_string(PackA p) {
  return p == PackA::Packed ? "packed" : "direct";
}

std::string_view to_string(PackB p) {
  switch (p) {
    case PackB::PerBlock:
      return "per_block";
    case PackB::Prepacked:
      return "prepacked";
    case PackB::Direct:
      return "direct";
  }
  return "?";
}

std::string_view to_string(BPanel p) {
  return p == BPanel::Vector ? "vector" : "tile";
}

std::string to_string(const LoopOrder& order) {
  std::string out;
  for (Axis a : order) out += std::string(out.empty() ? "" : ",") + std::string(to_string(a));
  return out;
}

uint64_t MicroKernelSchedule::digest() const {
  Fnv1a h;
  for (int64_t v : {int64_t(target), int64_t(isa), mr, nr, kc, mc, nc, int64_t(loop_order[0]),
                    int64_t(loop_order[1]), int64_t(loop_order[2]), int64_t(parallel),
                    int64_t(inner_tile_loop), unroll_k, int64_t(pack_a), int64_t(pack_b)})
    h.add(v);
  if (k_streams != 1) h.add(k_streams);  // absent from the digests of one-stream schedules
  if (vector_axis != Axis::N) h.add(100 + int64_t(vector_axis));  // likewise
  if (batch_inner) h.add(200);                                    // likewise
  if (prefetch_b != 0) h.add(300 + prefetch_b);                   // likewise
  if (b_panel != BPanel::Vector) h.add(400 + int64_t(b_panel));   // likewise
  if (prefetch_next) h.add(500);                                  // likewise
  return h.value();
}

json to_json(const MicroKernelSchedule& s) {
  json order = json::array();
  for (Axis a : s.loop_order) order.push_back(to_string(a));
  json j{{"target", to_string(s.target)},
         {"isa", to_string(s.isa)},
         {"mr", s.mr},
         {"nr", s.nr},
         {"kc", s.kc},
         {"mc", s.mc},
         {"nc", s.nc},
         {"loop_order", order},
         {"parallel", to_string(s.parallel)},
         {"inner_tile_loop", to_string(s.inner_tile_loop)},
         {"unroll_k", s.unroll_k},
         {"pack_a", to_string(s.pack_a)},
         {"pack_b", to_string(s.pack_b)}};
  if (s.k_streams != 1) j["k_streams"] = s.k_streams;  // optional: 1 when absent
  if (s.vector_axis != Axis::N) j["vector_axis"] = to_string(s.vector_axis);  // optional: n
  if (s.batch_inner) j["batch_loop"] = "inner";                               // optional: outer
  if (s.prefetch_b != 0) j["prefetch_b"] = s.prefetch_b;                      // optional: 0
  if (s.b_panel != BPanel::Vector) j["b_panel"] = to_string(s.b_panel);       // optional: vector
  if (s.prefetch_next) j["prefetch_next"] = true;                             // optional: false
  return j;
}

std::string to_json_text(const MicroKernelSchedule& s) {
  return to_json(s).dump();
}

namespace {

const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) user_error("schedule JSON: missing field '{}'", name);
  return *it;
}

int64_t int_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_number_integer())
    user_error("schedule JSON: field '{}' is {}, expected an integer", name, v.dump());
  return v.get<int64_t>();
}

std::string string_field(const json& j, const char* name) {
  const json& v = field(j, name);
  if (!v.is_string())
    user_error("schedule JSON: field '{}' is {}, expected a string", name, v.dump());
  return v.get<std::string>();
}

Axis parse_axis(const std::string& text) {
  if (text == "m") return Axis::M;
  if (text == "n") return Axis::N;
  if (text == "k") return Axis::K;
  user_error("schedule: unknown axis '{}' in loop_order; expected a permutation of m, n, k", text);
}

ParallelAxis parse_parallel(const std::string& text) {
  if (text == "none") return ParallelAxis::None;
  if (text == "batch") return ParallelAxis::Batch;
  if (text == "m") return ParallelAxis::M;
  if (text == "n") return ParallelAxis::N;
  if (text == "k")
    user_error("schedule: parallel axis 'k' is the reduction; expected none, batch, m or n");
  user_error("schedule: unknown parallel axis '{}'; expected none, batch, m or n", text);
}

}  // namespace

MicroKernelSchedule schedule_from_json(const json& j) {
  if (!j.is_object()) user_error("schedule JSON: expected an object, got {}", j.dump());
  static const std::set<std::string> known{
      "target",     "isa",        "mr",         "nr",           "kc",
      "mc",         "nc",         "loop_order", "parallel",     "inner_tile_loop",
      "unroll_k",   "k_streams",  "pack_a",     "pack_b",       "vector_axis",
      "batch_loop", "prefetch_b", "b_panel",    "prefetch_next"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) user_error("schedule JSON: unknown field '{}'", it.key());
  MicroKernelSchedule s;
  std::string target = string_field(j, "target");
  if (target != "cpu")
    user_error("schedule JSON: target '{}' is not supported; expected cpu", target);
  s.target = Target::Cpu;
  s.isa = parse_isa(string_field(j, "isa"));
  s.mr = int_field(j, "mr");
  s.nr = int_field(j, "nr");
  s.kc = int_field(j, "kc");
  s.mc = int_field(j, "mc");
  s.nc = int_field(j, "nc");
  const json& order = field(j, "loop_order");
  if (!order.is_array())
    user_error("schedule JSON: field 'loop_order' is {}, expected a list like [\"n\",\"k\",\"m\"]",
               order.dump());
  std::vector<Axis> axes;
  for (const json& a : order) {
    if (!a.is_string()) user_error("schedule JSON: loop_order entry {} is not a string", a.dump());
    axes.push_back(parse_axis(a.get<std::string>()));
  }
  if (axes.size() != 3) user_error("schedule: loop_order must name each of m, n, k exactly once");
  std::copy(axes.begin(), axes.end(), s.loop_order.begin());
  s.parallel = parse_parallel(string_field(j, "parallel"));
  std::string inner = string_field(j, "inner_tile_loop");
  if (inner != "m" && inner != "n")
    user_error("schedule: unknown inner_tile_loop '{}'; expected m or n", inner);
  s.inner_tile_loop = inner == "m" ? Axis::M : Axis::N;
  s.unroll_k = int_field(j, "unroll_k");
  if (j.contains("k_streams")) s.k_streams = int_field(j, "k_streams");
  if (j.contains("prefetch_b")) s.prefetch_b = int_field(j, "prefetch_b");
  if (j.contains("prefetch_next")) {
    const json& v = field(j, "prefetch_next");
    if (!v.is_boolean())
      user_error("schedule JSON: field 'prefetch_next' is {}, expected true or false", v.dump());
    s.prefetch_next = v.get<bool>();
  }
  if (j.contains("vector_axis")) {
    std::string axis = string_field(j, "vector_axis");
    if (axis != "n" && axis != "k")
      user_error("schedule: unknown vector_axis '{}'; expected n or k", axis);
    s.vector_axis = axis == "n" ? Axis::N : Axis::K;
  }
  if (j.contains("b_panel")) {
    std::string panel = string_field(j, "b_panel");
    if (panel != "vector" && panel != "tile")
      user_error("schedule: unknown b_panel '{}'; expected vector or tile", panel);
    s.b_panel = panel == "vector" ? BPanel::Vector : BPanel::Tile;
  }
  if (j.contains("batch_loop")) {
    std::string where = string_field(j, "batch_loop");
    if (where != "outer" && where != "inner")
      user_error("schedule: unknown batch_loop '{}'; expected outer or inner", where);
    s.batch_inner = where == "inner";
  }
  std::string pa = string_field(j, "pack_a"), pb = string_field(j, "pack_b");
  if (pa != "packed" && pa != "direct")
    user_error("schedule JSON: pack_a '{}'; expected packed or direct", pa);
  if (pb != "per_block" && pb != "prepacked" && pb != "direct")
    user_error("schedule JSON: pack_b '{}'; expected per_block, prepacked or direct", pb);
  s.pack_a = pa == "packed" ? PackA::Packed : PackA::Direct;
  s.pack_b = pb == "per_block"   ? PackB::PerBlock
             : pb == "prepacked" ? PackB::Prepacked
                                 : PackB::Direct;
  return s;
}

MicroKernelSchedule schedule_from_json_text(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    user_error("schedule JSON: syntax error at byte {}: {}", e.byte, e.what());
  }
  return schedule_from_json(j);
}

int64_t tile_registers(int64_t mr, int64_t vectors) {
  return mr * vectors + std::min(mr, vectors) + 1;
}

int64_t max_tile_rows(int64_t vectors, int64_t registers) {
  int64_t mr = 0;
  while (tile_registers(mr + 1, vectors) <= registers) ++mr;
  return mr;
}

int64_t max_tile_vectors(int64_t mr, int64_t registers) {
  int64_t v = 0;
  while (tile_registers(mr, v + 1) <= registers) ++v;
  return v;
}

MicroKernelSchedule in_tile_panels(MicroKernelSchedule s, int64_t max_nr) {
  s.b_panel = BPanel::Tile;
  s.nr = std::min(s.nr, max_nr);
  s.nc = std::max(s.nr, s.nc / s.nr * s.nr);
  return s;
}

std::vector<EdgePass> edge_passes(int64_t mr, int64_t vectors, int64_t vector_bytes, int64_t kc,
                                  int64_t rows) {
  DC_INTERNAL_CHECK(rows >= 1 && rows < mr, "edge_passes: {} rows of a {}-row tile", rows, mr);
  std::vector<int64_t> heights{mr};  // tallest first
  for (int64_t h = int64_t(std::bit_floor(uint64_t(mr - 1))); h >= 1; h /= 2) heights.push_back(h);
  const int64_t b_bytes = vectors * vector_bytes;
  const double bytes_per_cycle = kc * b_bytes <= 32 * 1024 ? 128.0 : 32.0;
  auto pass_cycles = [&](int64_t h) {
    return std::max(double(h * vectors) / 2.0, double(b_bytes) / bytes_per_cycle);
  };
  // Every set of heights, tallest first, whose passes but the last are whole and cover
  // fewer than `rows`, and whose last covers the rest: the cheapest, then the fewest
  // passes, then the fewest rows computed. (The cost model asks for a plan per candidate
  // and shape: the sets are scored without allocating, the best one built once.)
  uint32_t best = 0;
  double best_cycles = 0;
  int best_passes = 0;
  int64_t best_computed = 0;
  for (uint32_t set = 1; set < (uint32_t{1} << heights.size()); ++set) {
    int64_t covered = 0;
    double cycles = 0;
    int passes = 0;
    for (size_t i = 0; i < heights.size() && covered < rows; ++i)
      if (set & (uint32_t{1} << i)) {
        covered += heights[i];
        cycles += pass_cycles(heights[i]);
        ++passes;
      }
    // Sets with a height left over once the rows are covered repeat a cheaper one.
    if (covered < rows || std::popcount(set) != passes) continue;
    const bool better =
        best == 0 || cycles < best_cycles - 1e-9 ||
        (cycles < best_cycles + 1e-9 &&
         (passes < best_passes || (passes == best_passes && covered < best_computed)));
    if (better) {
      best = set;
      best_cycles = cycles;
      best_passes = passes;
      best_computed = covered;
    }
  }
  std::vector<EdgePass> plan;
  int64_t covered = 0;
  for (size_t i = 0; i < heights.size(); ++i)
    if (best & (uint32_t{1} << i)) {
      plan.push_back({heights[i], std::min(heights[i], rows - covered)});
      covered += heights[i];
    }
  return plan;
}

void validate(const MicroKernelSchedule& s) {
  const VectorIsa& isa = vector_isa(s.isa);
  // Bounds first, so that no arithmetic below can overflow.
  constexpr int64_t kMaxTile = int64_t{1} << 24;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"mr", s.mr},
                         {"nr", s.nr},
                         {"kc", s.kc},
                         {"mc", s.mc},
                         {"nc", s.nc}})
    if (v > kMaxTile) user_error("schedule: {} = {} is larger than {}", name, v, kMaxTile);
  if (s.mr < 1) user_error("schedule: mr = {} must be >= 1", s.mr);
  if (s.vector_axis == Axis::M)
    user_error("schedule: vector_axis 'm'; expected n (outer products) or k (dot products)");
  const bool dot = s.vector_axis == Axis::K;
  if (dot && s.nr < 1) user_error("schedule: nr = {} must be >= 1", s.nr);
  if (!dot && (s.nr < isa.width || s.nr % isa.width != 0))
    user_error("schedule: nr = {} must be a positive multiple of the {} vector width {}", s.nr,
               isa.name, isa.width);
  // Accumulator vectors: NR/W per row of outer products, one per output of dot products.
  const int64_t vectors = dot ? s.nr : s.nr / isa.width;
  const int64_t needed = tile_registers(s.mr, vectors);
  if (needed > isa.registers)
    user_error(
        "schedule: a {}x{} register tile{} needs {} vector registers ({} accumulators + {} "
        "for the operands of a k-step); {} has {}",
        s.mr, s.nr, dot ? " of dot products" : "", needed, s.mr * vectors, needed - s.mr * vectors,
        isa.name, isa.registers);
  if (dot && (s.pack_a != PackA::Direct || s.pack_b != PackB::Direct || s.k_streams != 1))
    user_error(
        "schedule: vector_axis 'k' reads A and B in place along k: it needs pack_a 'direct', "
        "pack_b 'direct' and k_streams 1");
  if (s.kc < 1) user_error("schedule: kc = {} must be >= 1", s.kc);
  if (s.mc < s.mr || s.mc % s.mr != 0)
    user_error("schedule: mc = {} must be a positive multiple of mr = {}", s.mc, s.mr);
  if (s.nc < s.nr || s.nc % s.nr != 0)
    user_error("schedule: nc = {} must be a positive multiple of nr = {}", s.nc, s.nr);
  // Panels are allocated per block; keep them within a sane working set (256 MiB).
  if ((s.mc + s.nc) * s.kc > (int64_t{64} << 20))
    user_error("schedule: blocks mc={} nc={} kc={} need panels over 256 MiB", s.mc, s.nc, s.kc);
  if (s.unroll_k < 1 || s.unroll_k > 16)
    user_error("schedule: unroll_k = {} must be in [1, 16]", s.unroll_k);
  if ((s.k_streams != 1 && s.k_streams != 2 && s.k_streams != 4) || s.k_streams > s.unroll_k)
    user_error("schedule: k_streams = {} must be 1, 2 or 4 and at most unroll_k = {}", s.k_streams,
               s.unroll_k);
  if (s.prefetch_b != 0 && s.prefetch_b != 16 && s.prefetch_b != 32 && s.prefetch_b != 64)
    user_error("schedule: prefetch_b = {} must be 0, 16, 32 or 64 (k-steps ahead)", s.prefetch_b);
  if (dot && s.prefetch_b != 0)
    user_error("schedule: prefetch_b needs vector_axis 'n' (a dot-product tile reads B along k)");
  if (s.prefetch_next && (s.pack_b != PackB::Prepacked || dot))
    user_error(
        "schedule: prefetch_next prefetches the prepacked B that the tile loops read next: it "
        "needs pack_b 'prepacked' and vector_axis 'n'");
  if (s.b_panel == BPanel::Tile && s.pack_b != PackB::Prepacked)
    user_error("schedule: b_panel 'tile' is a layout of prepacked B; it needs pack_b 'prepacked'");
  LoopOrder sorted = s.loop_order;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != LoopOrder{Axis::M, Axis::N, Axis::K})
    user_error("schedule: loop_order must name each of m, n, k exactly once");
  if (s.inner_tile_loop == Axis::K)
    user_error("schedule: inner_tile_loop 'k' is the reduction; expected m or n");
  if (s.batch_inner && (s.pack_a != PackA::Direct || s.pack_b == PackB::PerBlock))
    user_error(
        "schedule: batch_loop 'inner' puts the batch loops inside the block loops, where no "
        "operand can be packed per block: it needs pack_a 'direct' and pack_b 'direct' or "
        "'prepacked'");
  if (s.batch_inner && s.parallel == ParallelAxis::Batch)
    user_error(
        "schedule: batch_loop 'inner' with parallel 'batch' would run a parallel loop "
        "per tile; parallelize m, n or none");
}

MaxExtents max_extents(const ops::Contraction& c, const te::Operator& op) {
  ir::Bindings at_max;
  for (const te::ShapeVar& v : op.shape_vars) at_max[v.var.get()] = v.max;
  return MaxExtents{ir::evaluate_int(c.m_extent, at_max), ir::evaluate_int(c.n_extent, at_max),
                    ir::evaluate_int(c.k_extent, at_max)};
}

namespace {

// Whether `op` is read affinely (in the batch axes, `row` and k) with unit stride along k.
bool contiguous_along_k(const ops::Contraction& c, const ops::ContractionOperand& op,
                        const ir::Var& row) {
  std::vector<ir::Var> vars = c.batch_axes;
  vars.push_back(row);
  vars.push_back(c.k);
  auto form = ir::affine_form(ir::flatten_index(op.tensor, op.index), vars);
  return form && ir::is_const(form->coefficients.back(), 1);
}

}  // namespace

bool operands_contiguous_along_k(const ops::Contraction& c) {
  return contiguous_along_k(c, c.a, c.m) && contiguous_along_k(c, c.b, c.n);
}

bool b_contiguous_along_n(const ops::Contraction& c) {
  std::vector<ir::Var> vars = c.batch_axes;
  vars.push_back(c.n);
  vars.push_back(c.k);
  auto form = ir::affine_form(ir::flatten_index(c.b.tensor, c.b.index), vars);
  return form && ir::is_const(form->coefficients[c.batch_axes.size()], 1);
}

BoundSchedule bind(const MicroKernelSchedule& s, const te::Operator& op) {
  return bind(s, op, ops::match_contraction(op));
}

BoundSchedule bind(const MicroKernelSchedule& s, const te::Operator& op,
                   const ops::Contraction& c) {
  validate(s);
  MaxExtents ext = max_extents(c, op);
  const VectorIsa& isa = vector_isa(s.isa);
  if (s.mr > ext.m)
    user_error("schedule: mr = {} is larger than any allowed M (at most {})", s.mr, ext.m);
  if (s.vector_axis == Axis::K && s.nr > ext.n)
    user_error("schedule: nr = {} is larger than any allowed N (at most {})", s.nr, ext.n);
  if (s.nr > round_up(ext.n, isa.width))
    user_error(
        "schedule: nr = {} is larger than any allowed N (at most {}, {} rounded to the "
        "vector width)",
        s.nr, round_up(ext.n, isa.width), ext.n);
  if (s.mc > round_up(ext.m, s.mr))
    user_error("schedule: mc = {} is larger than any allowed M block (at most {})", s.mc,
               round_up(ext.m, s.mr));
  if (s.nc > round_up(ext.n, s.nr))
    user_error("schedule: nc = {} is larger than any allowed N block (at most {})", s.nc,
               round_up(ext.n, s.nr));
  if (s.kc > ext.k)
    user_error("schedule: kc = {} is larger than any allowed K (at most {})", s.kc, ext.k);
  if (s.batch_inner && c.batch_axes.empty())
    user_error("schedule: batch_loop 'inner' but operator {} has no batch axis", op.name);
  if (s.parallel == ParallelAxis::Batch && c.batch_axes.empty())
    user_error("schedule: parallel axis 'batch' but operator {} has no batch axis", op.name);
  if (s.pack_a == PackA::Direct) {
    std::vector<ir::Var> vars = c.batch_axes;
    vars.push_back(c.m);
    vars.push_back(c.k);
    if (!ir::affine_form(ir::flatten_index(c.a.tensor, c.a.index), vars))
      user_error(
          "schedule: pack_a 'direct' needs {} to be read affinely; this operator's access "
          "is not affine, use 'packed'",
          c.a.tensor.name());
  }
  if (s.pack_b == PackB::Prepacked) {
    if (!c.b.constant)
      user_error(
          "schedule: pack_b 'prepacked' needs a constant {}; in {} it changes per call, use "
          "'per_block'",
          c.b.tensor.name(), op.name);
    for (const ir::Expr& i : c.b.index)
      for (const ir::Var& ax : c.batch_axes)
        if (ir::uses_var(i, ax.get()))
          user_error("schedule: pack_b 'prepacked' needs {} to be shared across the batch",
                     c.b.tensor.name());
  }
  if (s.vector_axis == Axis::K && !operands_contiguous_along_k(c))
    user_error(
        "schedule: vector_axis 'k' needs {} and {} read affinely with their rows contiguous "
        "along k; in {} they are not (use vector_axis 'n')",
        c.a.tensor.name(), c.b.tensor.name(), op.name);
  if (s.vector_axis == Axis::N && s.pack_b == PackB::Direct && !b_contiguous_along_n(c))
    user_error(
        "schedule: pack_b 'direct' needs {} read affinely with its rows contiguous along n; "
        "in {} it is not (a transposed B: use 'per_block')",
        c.b.tensor.name(), op.name);
  return BoundSchedule(s, op, c, ext);
}

}  // namespace dietcode::schedule
