// Tuning records: every measurement, durable the moment it is made.
//
// File format (text, one JSON document per line, version 1):
//   line 1   header  {"format": "dietcode-records", "version": 1, "workload": {...},
//                     "machine": {...}}
//   line 2.. record  {"schedule": {...}, "shape": [..], "origin": "joint", "seconds": s,
//                     "gflops": g, "max_rel_err": e, "compile_seconds": c, "error": "",
//                     "unix_time": t, "min_seconds": m, "median_seconds": d, "spread": q,
//                     "attempts": a, "disturbed": false}
// The five timing-spread fields were added within version 1: a record written before
// them loads with its spread unknown (TuningRecord::timing empty), and is learned from
// as before.
// Each record is appended with one write() and fsync'ed before the tuner goes on, so a
// run killed at any point loses at most the record being written; a torn last line (no
// newline: the process died mid-write) is dropped with a warning when the file is
// reopened. A malformed line anywhere else is an error naming the file and byte offset.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "schedule/any_schedule.h"
#include "tune/machine.h"

namespace dietcode::tune {

constexpr int kRecordsFormatVersion = 1;

// Why a measurement was made (its JSON name in quotes).
enum class Origin : uint8_t {
  Joint,          // "joint": a candidate of the joint search, measured at its S*
  Probe,          // "probe": a measured kernel measured again on a declared shape
  Calibration,    // "calibration": a kernel at 1, 2, 3 tasks, to fit occ's exponent
  PerShape,       // "per-shape": a candidate of the per-shape (Ansor-style) baseline
  Final,          // "final": a finalist re-measured side by side with its rivals on one
                  // declared shape before selection (tune/finalists.h)
  Crosscheck,     // "crosscheck": a kernel of the first selection measured side by side
                  // with the others selected, on each shape of the finals, before the
                  // dispatch is decided again (tune/finalists.h)
  DispatchCheck,  // "dispatch-check": the selected kernels that score best on a declared
                  // shape the finals did not sample, side by side there, before the
                  // dispatch is decided the last time (tune/finalists.h)
};
std::string_view to_string(Origin o);
Origin parse_origin(std::string_view text);  // throws dietcode::Error
// Re-measurements side by side before selection (the finals, the crosscheck, the dispatch
// check): not trials, not the search's own records.
inline bool is_side_by_side(Origin o) {
  return o == Origin::Final || o == Origin::Crosscheck || o == Origin::DispatchCheck;
}
// Joint-run trials: what counts against `--trials` of a joint run.
// (Side-by-side re-measurements are not trials: they cost tuning time, not budget.)
inline bool is_joint_trial(Origin o) {
  return o != Origin::PerShape && !is_side_by_side(o);
}

// How a measurement's timing bursts spread (tune/measure.h): what says whether the
// machine disturbed it. Absent in records written before the fields existed.
struct TimingSpread {
  double min_seconds = 0;     // fastest burst (per call)
  double median_seconds = 0;  // median burst (per call)
  double spread = 0;          // inter-quartile range of the bursts / median
  int attempts = 1;           // measurement attempts made (re-measured while disturbed)
  bool disturbed = false;     // every attempt's spread was beyond the threshold
  // Timed bursts behind the figures (of the kept attempt); fewer than the plan's repeats
  // where a side-by-side window dropped the kernel from its race (MeasureOptions::
  // race_margin). 0: unknown (a record written before the field).
  int bursts = 0;
};

struct TuningRecord {
  schedule::AnySchedule schedule;  // of the kind the workload's operator takes
  std::vector<int64_t> shape;
  Origin origin = Origin::Joint;
  double seconds = 0;  // median time of one call; 0 when error is set
  double gflops = 0;   // work / seconds in the operator's unit (ops/work.h): GB/s for row operators
  double max_rel_err = 0;
  double compile_seconds = 0;
  std::string error;  // empty: measured and correct
  int64_t unix_time = 0;
  std::optional<TimingSpread> timing;  // empty: unknown (an older record)

  bool ok() const { return error.empty(); }
  // Correct and not marked disturbed: what the cost model learns from.
  bool clean() const { return ok() && !(timing && timing->disturbed); }
};

// The schedule of a contraction's record (the contraction tuner's view).
inline const schedule::MicroKernelSchedule& micro_kernel(const TuningRecord& r) {
  return std::get<schedule::MicroKernelSchedule>(r.schedule);
}

nlohmann::json to_json(const TuningRecord& r);
TuningRecord record_from_json(const nlohmann::json& j);  // throws dietcode::Error

// An open records file. `workload` identifies what is tuned (operator spec, threads);
// records from a different workload, machine or format version are refused, and so is
// a record whose schedule is not of the kind the workload's operator takes.
class RecordFile {
 public:
  struct Options {
    std::string path;
    nlohmann::json workload;
    MachineInfo machine;
  };
  // Opens (creating it with a header if it does not exist) and loads every record.
  // Throws dietcode::Error for a foreign, corrupt or unwritable file.
  static RecordFile open(const Options& o);
  RecordFile(RecordFile&&) noexcept;
  RecordFile& operator=(RecordFile&&) noexcept;
  ~RecordFile();

  const std::vector<TuningRecord>& records() const { return records_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& path() const { return path_; }
  // Appends and fsyncs; the record is in records() afterwards.
  void append(const TuningRecord& r);
  // FNV-1a digest of the file's bytes (for a module's provenance).
  std::string digest() const;

 private:
  RecordFile() = default;
  std::string path_;
  int fd_ = -1;
  std::vector<TuningRecord> records_;
  std::vector<std::string> warnings_;
};

// Records of any machine (same format version), e.g. to warm-start the cost model
// from another run. Throws dietcode::Error for a corrupt file.
std::vector<TuningRecord> read_records_any_machine(const std::string& path);

}  // namespace dietcode::tune
