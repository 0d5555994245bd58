#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/module.h"
#include "support/error.h"
#include "support/int_math.h"
#include "support/json.h"

// The module file: JSON in and out, validation, atomic save, retargeting. No code
// generation here, so loaders can be fuzzed without LLVM.
namespace dietcode::runtime {

namespace {

constexpr const char* kFormatName = "dietcode-module";

const nlohmann::json& field(const nlohmann::json& j, const char* name, const std::string& what) {
  auto it = j.find(name);
  if (it == j.end()) user_error("{}: missing field '{}'", what, name);
  return *it;
}

}  // namespace

std::string info_text(const nlohmann::json& object, const char* key, const std::string& fallback) {
  if (!object.is_object() || !object.contains(key)) return fallback;
  const nlohmann::json& v = object[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

nlohmann::json to_json(const ModuleSpec& m) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const schedule::AnySchedule& s : m.kernels) kernels.push_back(schedule::to_json(s));
  return {{"format", kFormatName},
          {"version", kModuleFormatVersion},
          {"operator", ops::to_json(m.op)},
          {"isa", to_string(m.isa)},
          {"threads", m.threads},
          {"machine", m.machine.is_null() ? nlohmann::json::object() : m.machine},
          {"kernels", kernels},
          {"dispatch", dispatch::to_json(m.dispatch)},
          {"provenance", m.provenance.is_null() ? nlohmann::json::object() : m.provenance}};
}

ModuleSpec module_spec_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) user_error("{}: expected a JSON object", what);
  const nlohmann::json& format = field(j, "format", what);
  if (format != kFormatName)
    user_error("{}: not a dietcode module (format {}, expected \"{}\")", what, format.dump(),
               kFormatName);
  const nlohmann::json& version = field(j, "version", what);
  if (!version.is_number_integer() || version.get<int64_t>() != kModuleFormatVersion)
    user_error("{}: module format version {} is not supported (this tool reads version {})", what,
               version.dump(), kModuleFormatVersion);
  ModuleSpec m;
  try {
    m.op = ops::operator_spec_from_json(field(j, "operator", what));
  } catch (const Error& e) {
    user_error("{}: field 'operator': {}", what, e.what());
  }
  const nlohmann::json& isa = field(j, "isa", what);
  if (!isa.is_string()) user_error("{}: field 'isa' must be a string", what);
  try {
    m.isa = schedule::parse_isa(isa.get<std::string>());
  } catch (const Error& e) {
    user_error("{}: field 'isa': {}", what, e.what());
  }
  const nlohmann::json& threads = field(j, "threads", what);
  if (!threads.is_number_integer() || threads.get<int64_t>() < 1 || threads.get<int64_t>() > 4096)
    user_error("{}: field 'threads' must be an integer in [1, 4096]", what);
  m.threads = threads.get<int>();
  const nlohmann::json& kernels = field(j, "kernels", what);
  if (!kernels.is_array() || kernels.empty())
    user_error("{}: field 'kernels' must be a non-empty array", what);
  te::Operator op = m.op.build();
  schedule::Kind kind = schedule::kind_of_operator(m.op);
  for (size_t i = 0; i < kernels.size(); ++i) {
    try {
      m.kernels.push_back(schedule::any_schedule_from_json(kernels[i]));
    } catch (const Error& e) {
      user_error("{}: kernels[{}]: {}", what, i, e.what());
    }
    if (schedule::kind_of(m.kernels.back()) != kind)
      user_error("{}: kernels[{}] is a {} schedule but a {} operator takes {} schedules", what, i,
                 to_string(schedule::kind_of(m.kernels.back())), m.op.op, to_string(kind));
    try {
      schedule::check_binds(m.kernels.back(), op);
    } catch (const Error& e) {
      user_error("{}: kernels[{}]: {}", what, i, e.what());
    }
    if (schedule::isa_of(m.kernels.back()) != m.isa)
      user_error("{}: kernels[{}] targets {} but the module is for {}", what, i,
                 to_string(schedule::isa_of(m.kernels.back())), to_string(m.isa));
  }
  try {
    m.dispatch =
        dispatch::decision_tree_from_json(field(j, "dispatch", what), int(m.kernels.size()));
  } catch (const Error& e) {
    user_error("{}: field 'dispatch': {}", what, e.what());
  }
  if (m.dispatch.num_vars != int(op.shape_vars.size()))
    user_error("{}: the dispatch tree takes {} shape variables, the operator has {}", what,
               m.dispatch.num_vars, op.shape_vars.size());
  // Informative objects: flat key -> scalar maps (nothing deeper is written; a deep
  // structure from a hostile file is refused before it is copied).
  for (auto [name, target] : {std::pair<const char*, nlohmann::json*>{"machine", &m.machine},
                              {"provenance", &m.provenance}}) {
    *target = nlohmann::json::object();
    if (!j.contains(name) || j[name].is_null()) continue;
    const nlohmann::json& v = j[name];
    if (!v.is_object()) user_error("{}: field '{}' must be an object", what, name);
    for (auto& [k, x] : v.items())
      if (x.is_structured())
        user_error("{}: field '{}.{}' must be a string, number or boolean", what, name, k);
    *target = v;
  }
  return m;
}

void save_module_spec(const ModuleSpec& m, const std::string& path) {
  std::string text = to_json(m).dump(1) + "\n";
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) user_error("{}: cannot write the module: {}", path, std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      user_error("{}: cannot write the module: {}", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    user_error("{}: cannot write the module: {}", path, std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    user_error("{}: cannot write the module: {}", path, std::strerror(errno));
}

ModuleSpec load_module_spec(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("{}: cannot open the module file", path);
  std::stringstream buffer;
  buffer << f.rdbuf();
  ParsedJson parsed = parse_json(buffer.str());
  if (parsed.too_deep)
    user_error("{}: not a valid module file (JSON nested deeper than {} levels)", path,
               kMaxJsonDepth);
  if (parsed.value.is_discarded())
    user_error("{}: not a valid module file (malformed or truncated JSON)", path);
  return module_spec_from_json(parsed.value, path);
}

namespace {

schedule::MicroKernelSchedule refit(const schedule::MicroKernelSchedule& s, schedule::Isa isa,
                                    const te::Operator& op) {
  const schedule::VectorIsa& vec = schedule::vector_isa(isa);
  schedule::MicroKernelSchedule t = s;
  t.isa = isa;
  int64_t vectors = std::max<int64_t>(1, s.nr / vec.width);
  vectors = std::min(vectors, schedule::max_tile_vectors(1, vec.registers));  // one row fits
  t.nr = vectors * vec.width;
  t.mr = std::max<int64_t>(1, std::min(s.mr, schedule::max_tile_rows(vectors, vec.registers)));
  t.mc = round_up(std::max(s.mc, t.mr), t.mr);
  t.nc = round_up(std::max(s.nc, t.nr), t.nr);
  try {
    schedule::bind(t, op);
  } catch (const Error&) {
    // Tiles or blocks the new ISA or the operator does not allow after rounding: the
    // smallest tile, with a k-block that keeps the panels small.
    t.mr = 1;
    t.nr = vec.width;
    t.mc = 1;
    t.nc = vec.width;
    t.kc = std::min<int64_t>(t.kc, 256);
    t.pack_a = schedule::PackA::Packed;
    schedule::bind(t, op);
  }
  return t;
}

// Row schedules have nothing that depends on the vector width but the width itself.
schedule::RowSchedule refit(schedule::RowSchedule s, schedule::Isa isa, const te::Operator& op) {
  s.isa = isa;
  schedule::bind(s, op);
  return s;
}

// The score accumulators (query-tile vectors x unroll) must fit the registers: narrower
// vectors need more of them per tile, so the unroll shrinks, then the tile.
schedule::AttentionSchedule refit(schedule::AttentionSchedule s, schedule::Isa isa,
                                  const te::Operator& op) {
  s.isa = isa;
  int64_t registers = schedule::vector_isa(isa).registers;
  while (s.row_vectors() * (s.unroll + 1) > registers && s.unroll > 1) --s.unroll;
  while (s.row_vectors() * (s.unroll + 1) > registers && s.query_tile > 1)
    s.query_tile = std::max<int64_t>(1, s.query_tile / 2);
  schedule::bind(s, op);
  return s;
}

}  // namespace

ModuleSpec retarget(const ModuleSpec& m, schedule::Isa isa) {
  te::Operator op = m.op.build();
  ModuleSpec out = m;
  out.isa = isa;
  for (schedule::AnySchedule& s : out.kernels)
    s = std::visit([&](const auto& x) { return schedule::AnySchedule(refit(x, isa, op)); }, s);
  return out;
}

}  // namespace dietcode::runtime
