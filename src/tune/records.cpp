#include "tune/records.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ops/spec.h"
#include "support/error.h"
#include "support/hash.h"
#include "support/json.h"

namespace dietcode::tune {

namespace {

constexpr const char* kFormatName = "dietcode-records";

void write_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      user_error("{}: cannot append a record: {}", path, std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) user_error("{}: cannot sync the records: {}", path, std::strerror(errno));
}

struct ParsedFile {
  nlohmann::json header;
  std::vector<TuningRecord> records;
  int64_t good_bytes = 0;  // bytes up to the end of the last complete line
  std::vector<std::string> warnings;
};

// The schedule kind of the header's operator; nullopt when the header names none.
std::optional<schedule::Kind> kind_of_workload(const nlohmann::json& header) {
  if (!header.contains("workload") || !header["workload"].is_object() ||
      !header["workload"].contains("operator"))
    return std::nullopt;
  try {
    return schedule::kind_of_operator(ops::operator_spec_from_json(header["workload"]["operator"]));
  } catch (const Error&) {
    return std::nullopt;  // another tool's workload; the workload check refuses it later
  }
}

ParsedFile parse_file(const std::string& path, const std::string& text) {
  ParsedFile out;
  std::optional<schedule::Kind> kind;
  size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    ++line_number;
    if (end == std::string::npos) {
      // A torn last line: the writer died mid-record. Nothing finished is in it.
      if (line_number == 1)
        user_error("{}: byte offset 0: the header line is incomplete (truncated file)", path);
      out.warnings.push_back(fmt::format(
          "{}: byte offset {}: dropping an incomplete last record ({} bytes; a run was killed "
          "while writing it)",
          path, pos, text.size() - pos));
      break;
    }
    std::string line = text.substr(pos, end - pos);
    ParsedJson parsed = parse_json(line);
    if (parsed.value.is_discarded())
      user_error("{}: byte offset {} (line {}): {} (corrupt records file)", path, pos, line_number,
                 parsed.too_deep ? fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth)
                                 : "not valid JSON");
    nlohmann::json& j = parsed.value;
    if (line_number == 1) {
      if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
          j["format"].get<std::string>() != kFormatName)
        user_error("{}: byte offset 0: not a dietcode records file (no '{}' header)", path,
                   kFormatName);
      if (!j.contains("version") || !j["version"].is_number_integer() ||
          j["version"].get<int64_t>() != kRecordsFormatVersion)
        user_error("{}: records format version {} is not supported (this tool reads version {})",
                   path, j.contains("version") ? j["version"].dump() : "?", kRecordsFormatVersion);
      out.header = j;
      kind = kind_of_workload(j);
    } else {
      try {
        out.records.push_back(record_from_json(j));
      } catch (const Error& e) {
        user_error("{}: byte offset {} (line {}): {}", path, pos, line_number, e.what());
      }
      schedule::Kind theirs = schedule::kind_of(out.records.back().schedule);
      if (kind && theirs != *kind)
        user_error(
            "{}: byte offset {} (line {}): a {} schedule in records of an operator that "
            "takes {} schedules",
            path, pos, line_number, to_string(theirs), to_string(*kind));
    }
    pos = end + 1;
    out.good_bytes = static_cast<int64_t>(pos);
  }
  if (line_number == 0) user_error("{}: byte offset 0: empty records file (no header)", path);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) user_error("{}: cannot read the records file", path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string_view to_string(Origin o) {
  switch (o) {
    case Origin::Joint:
      return "joint";
    case Origin::Probe:
      return "probe";
    case Origin::Calibration:
      return "calibration";
    case Origin::PerShape:
      return "per-shape";
    case Origin::Final:
      return "final";
    case Origin::Crosscheck:
      return "crosscheck";
    case Origin::DispatchCheck:
      return "dispatch-check";
  }
  return "?";
}

Origin parse_origin(std::string_view text) {
  for (Origin o : {Origin::Joint, Origin::Probe, Origin::Calibration, Origin::PerShape,
                   Origin::Final, Origin::Crosscheck, Origin::DispatchCheck})
    if (text == to_string(o)) return o;
  user_error(
      "record: unknown origin '{}'; expected joint, probe, calibration, per-shape, final, "
      "crosscheck or dispatch-check",
      text);
}

nlohmann::json to_json(const TuningRecord& r) {
  nlohmann::json j = {{"schedule", schedule::to_json(r.schedule)},
                      {"shape", r.shape},
                      {"origin", to_string(r.origin)},
                      {"seconds", r.seconds},
                      {"gflops", r.gflops},
                      {"max_rel_err", r.max_rel_err},
                      {"compile_seconds", r.compile_seconds},
                      {"error", r.error},
                      {"unix_time", r.unix_time}};
  if (r.timing) {
    j["min_seconds"] = r.timing->min_seconds;
    j["median_seconds"] = r.timing->median_seconds;
    j["spread"] = r.timing->spread;
    j["attempts"] = r.timing->attempts;
    j["disturbed"] = r.timing->disturbed;
    if (r.timing->bursts > 0) j["bursts"] = r.timing->bursts;
  }
  return j;
}

TuningRecord record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) user_error("record: expected a JSON object");
  TuningRecord r;
  r.schedule =
      schedule::any_schedule_from_json(j.contains("schedule") ? j["schedule"] : nlohmann::json());
  // Integers are checked as integers: a float read as one would be truncated, or
  // overflow (undefined behaviour) when huge.
  auto integer = [&](const char* name) {
    if (!j.contains(name) || !j[name].is_number_integer())
      user_error("record: field '{}' must be an integer", name);
    return j[name].get<int64_t>();
  };
  if (!j.contains("shape") || !j["shape"].is_array())
    user_error("record: field 'shape' must be an array of integers");
  for (const nlohmann::json& v : j["shape"]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      user_error("record: shape values must be positive integers");
    r.shape.push_back(v.get<int64_t>());
  }
  r.unix_time = integer("unix_time");
  if (!j.contains("origin") || !j["origin"].is_string())
    user_error("record: field 'origin' must be a string");
  r.origin = parse_origin(j["origin"].get<std::string>());
  try {
    r.seconds = j.at("seconds").get<double>();
    r.gflops = j.at("gflops").get<double>();
    r.max_rel_err = j.at("max_rel_err").get<double>();
    r.compile_seconds = j.at("compile_seconds").get<double>();
    r.error = j.at("error").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    user_error("record: {}", e.what());
  }
  // The spread fields come together or not at all (an older record: unknown).
  if (j.contains("spread")) {
    TimingSpread t;
    try {
      t.min_seconds = j.at("min_seconds").get<double>();
      t.median_seconds = j.at("median_seconds").get<double>();
      t.spread = j.at("spread").get<double>();
      t.disturbed = j.at("disturbed").get<bool>();
    } catch (const nlohmann::json::exception& e) {
      user_error("record: timing spread: {}", e.what());
    }
    t.attempts = int(integer("attempts"));
    if (j.contains("bursts")) t.bursts = int(integer("bursts"));
    r.timing = t;
  }
  if (r.shape.empty()) user_error("record: empty shape");
  if (r.ok() && !(r.seconds > 0)) user_error("record: a successful measurement needs seconds > 0");
  return r;
}

RecordFile::RecordFile(RecordFile&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(o.fd_),
      records_(std::move(o.records_)),
      warnings_(std::move(o.warnings_)) {
  o.fd_ = -1;
}
RecordFile& RecordFile::operator=(RecordFile&& o) noexcept {
  std::swap(path_, o.path_);
  std::swap(fd_, o.fd_);
  std::swap(records_, o.records_);
  std::swap(warnings_, o.warnings_);
  return *this;
}
RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

RecordFile RecordFile::open(const Options& o) {
  RecordFile f;
  f.path_ = o.path;
  struct stat st;
  nlohmann::json header = {{"format", kFormatName},
                           {"version", kRecordsFormatVersion},
                           {"workload", o.workload},
                           {"machine", to_json(o.machine)}};
  if (::stat(o.path.c_str(), &st) != 0) {
    f.fd_ = ::open(o.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
    if (f.fd_ < 0)
      user_error("{}: cannot create the records file: {}", o.path, std::strerror(errno));
    write_all(f.fd_, header.dump() + "\n", o.path);
    return f;
  }
  ParsedFile parsed = parse_file(o.path, read_file(o.path));
  if (parsed.header.value("workload", nlohmann::json()) != o.workload)
    user_error(
        "{}: these records are for another workload ({}); this run tunes {}. Use another "
        "--records file",
        o.path, parsed.header.value("workload", nlohmann::json()).dump(), o.workload.dump());
  MachineInfo theirs = machine_from_json(parsed.header.value("machine", nlohmann::json()));
  if (!theirs.same_as(o.machine))
    user_error(
        "{}: these records were measured on another machine ({}); this one is {}. Their "
        "times do not apply here (use them with --warm-start to seed the cost model only)",
        o.path, theirs.describe(), o.machine.describe());
  f.records_ = std::move(parsed.records);
  f.warnings_ = std::move(parsed.warnings);
  f.fd_ = ::open(o.path.c_str(), O_WRONLY | O_APPEND);
  if (f.fd_ < 0)
    user_error("{}: cannot append to the records file: {}", o.path, std::strerror(errno));
  if (parsed.good_bytes < st.st_size) {
    // Cut the torn record off so the next append starts on a fresh line.
    if (::ftruncate(f.fd_, parsed.good_bytes) != 0 || ::fsync(f.fd_) != 0)
      user_error("{}: cannot drop the incomplete last record: {}", o.path, std::strerror(errno));
  }
  return f;
}

void RecordFile::append(const TuningRecord& r) {
  TuningRecord stamped = r;
  // JSON has no NaN or infinity: a non-finite number (a wrong kernel's error) is kept as
  // -1 beside the error text that explains it.
  for (double* v :
       {&stamped.seconds, &stamped.gflops, &stamped.max_rel_err, &stamped.compile_seconds})
    if (!std::isfinite(*v)) *v = -1;
  if (stamped.timing)
    for (double* v :
         {&stamped.timing->min_seconds, &stamped.timing->median_seconds, &stamped.timing->spread})
      if (!std::isfinite(*v)) *v = -1;
  if (stamped.unix_time == 0)
    stamped.unix_time = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  write_all(fd_, to_json(stamped).dump() + "\n", path_);
  records_.push_back(std::move(stamped));
}

std::string RecordFile::digest() const {
  std::string text = read_file(path_);
  return fmt::format("fnv1a64:{:016x}", fnv1a64(text));
}

std::vector<TuningRecord> read_records_any_machine(const std::string& path) {
  return parse_file(path, read_file(path)).records;
}

}  // namespace dietcode::tune
