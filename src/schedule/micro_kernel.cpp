#include "schedule/micro_kernel.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/affine.h"
#include "ops/contraction.h"
#include "support/error.h"
#include "te/tensor.h"

namespace dietcode::schedule {

using nlohmann::json;

const VectorIsa& vector_isa(const std::string& name) {
  static const VectorIsa avx2{"avx2", 8, 16};
  static const VectorIsa avx512{"avx512", 16, 32};
  if (name == "avx2") return avx2;
  if (name == "avx512") return avx512;
  user_error("unknown vector ISA '{}'; expected avx2 or avx512", name);
}

json to_json(const MicroKernelSchedule& s) {
  return json{{"target", s.target},
              {"isa", s.isa},
              {"mr", s.mr},
              {"nr", s.nr},
              {"kc", s.kc},
              {"mc", s.mc},
              {"nc", s.nc},
              {"loop_order", s.loop_order},
              {"parallel", s.parallel},
              {"inner_tile_loop", s.inner_tile_loop},
              {"unroll_k", s.unroll_k},
              {"pack_a", s.pack_a == PackA::Packed ? "packed" : "direct"},
              {"pack_b", s.pack_b == PackB::PerBlock ? "per_block" : "prepacked"}};
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

}  // namespace

MicroKernelSchedule schedule_from_json(const json& j) {
  if (!j.is_object()) user_error("schedule JSON: expected an object, got {}", j.dump());
  static const std::set<std::string> known{
      "target",          "isa",      "mr",     "nr",    "kc", "mc", "nc", "loop_order", "parallel",
      "inner_tile_loop", "unroll_k", "pack_a", "pack_b"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) user_error("schedule JSON: unknown field '{}'", it.key());
  MicroKernelSchedule s;
  s.target = string_field(j, "target");
  if (s.target != "cpu")
    user_error("schedule JSON: target '{}' is not supported; expected cpu", s.target);
  s.isa = string_field(j, "isa");
  s.mr = int_field(j, "mr");
  s.nr = int_field(j, "nr");
  s.kc = int_field(j, "kc");
  s.mc = int_field(j, "mc");
  s.nc = int_field(j, "nc");
  const json& order = field(j, "loop_order");
  if (!order.is_array())
    user_error("schedule JSON: field 'loop_order' is {}, expected a list like [\"n\",\"k\",\"m\"]",
               order.dump());
  s.loop_order.clear();
  for (const json& a : order) {
    if (!a.is_string()) user_error("schedule JSON: loop_order entry {} is not a string", a.dump());
    s.loop_order.push_back(a.get<std::string>());
  }
  s.parallel = string_field(j, "parallel");
  s.inner_tile_loop = string_field(j, "inner_tile_loop");
  s.unroll_k = int_field(j, "unroll_k");
  std::string pa = string_field(j, "pack_a"), pb = string_field(j, "pack_b");
  if (pa != "packed" && pa != "direct")
    user_error("schedule JSON: pack_a '{}'; expected packed or direct", pa);
  if (pb != "per_block" && pb != "prepacked")
    user_error("schedule JSON: pack_b '{}'; expected per_block or prepacked", pb);
  s.pack_a = pa == "packed" ? PackA::Packed : PackA::Direct;
  s.pack_b = pb == "per_block" ? PackB::PerBlock : PackB::Prepacked;
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

void validate(const MicroKernelSchedule& s) {
  const VectorIsa& isa = vector_isa(s.isa);
  // Bounds first, so that no arithmetic below can overflow.
  constexpr int64_t kMaxTile = int64_t{1} << 24;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"mr", s.mr}, {"nr", s.nr}, {"kc", s.kc},
                         {"mc", s.mc}, {"nc", s.nc}})
    if (v > kMaxTile) user_error("schedule: {} = {} is larger than {}", name, v, kMaxTile);
  if (s.mr < 1) user_error("schedule: mr = {} must be >= 1", s.mr);
  if (s.nr < isa.width || s.nr % isa.width != 0)
    user_error("schedule: nr = {} must be a positive multiple of the {} vector width {}", s.nr,
               isa.name, isa.width);
  // Accumulators (mr * nr/width) + one B vector per column group + one broadcast.
  int64_t vectors = s.nr / isa.width;
  int64_t needed = s.mr * vectors + vectors + 1;
  if (needed > isa.registers)
    user_error(
        "schedule: a {}x{} register tile needs {} vector registers ({} accumulators + {} "
        "for B + 1 broadcast); {} has {}",
        s.mr, s.nr, needed, s.mr * vectors, vectors, isa.name, isa.registers);
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
  std::vector<std::string> order = s.loop_order;
  for (const std::string& a : order)
    if (a != "m" && a != "n" && a != "k")
      user_error("schedule: unknown axis '{}' in loop_order; expected a permutation of m, n, k", a);
  std::sort(order.begin(), order.end());
  if (order != std::vector<std::string>{"k", "m", "n"})
    user_error("schedule: loop_order must name each of m, n, k exactly once");
  if (s.parallel == "k")
    user_error("schedule: parallel axis 'k' is the reduction; expected none, batch, m or n");
  if (s.inner_tile_loop != "m" && s.inner_tile_loop != "n")
    user_error("schedule: unknown inner_tile_loop '{}'; expected m or n", s.inner_tile_loop);
  if (s.parallel != "none" && s.parallel != "batch" && s.parallel != "m" && s.parallel != "n")
    user_error("schedule: unknown parallel axis '{}'; expected none, batch, m or n", s.parallel);
}

MaxExtents max_extents(const ops::Contraction& c, const te::Operator& op) {
  ir::Bindings at_max;
  for (const te::ShapeVar& v : op.shape_vars) at_max[v.var.get()] = v.max;
  return MaxExtents{ir::evaluate_int(c.m_extent, at_max), ir::evaluate_int(c.n_extent, at_max),
                    ir::evaluate_int(c.k_extent, at_max)};
}

void validate(const MicroKernelSchedule& s, const te::Operator& op) {
  validate(s);
  ops::Contraction c = ops::match_contraction(op);
  MaxExtents ext = max_extents(c, op);
  auto round_up = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  const VectorIsa& isa = vector_isa(s.isa);
  if (s.mr > ext.m)
    user_error("schedule: mr = {} is larger than any allowed M (at most {})", s.mr, ext.m);
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
  if (s.parallel == "batch" && c.batch_axes.empty())
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
}

}  // namespace dietcode::schedule
