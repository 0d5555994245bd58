// The numbers behind the tuning report, computed from one operator's tuning records and
// its module; pure functions (report/tuning_report.cpp draws and explains them).
//
//   tuning_curve    best geomean GFLOP/s over the declared shapes after each trial
//   shape_table     per declared shape: the kernel it dispatches to, the best measured
//                   GFLOP/s of any kernel there and of the dispatched kernel
//   kernel_shares   how many declared shapes (and how much declared weight) each
//                   selected kernel serves, and which M
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "support/stats.h"
#include "tune/records.h"

namespace dietcode::report {

struct CurvePoint {
  int64_t trials = 0;           // records read so far, in file order, failed ones included
  double geomean_gflops = 0;    // over the declared shapes measured so far (each its best)
  int64_t shapes_measured = 0;  // declared shapes with at least one correct record so far
};

// One point per record after the first correct measurement on a declared shape.
// Records on shapes outside `shapes` and failed records count as trials but add no
// measurement.
std::vector<CurvePoint> tuning_curve(const std::vector<tune::TuningRecord>& records,
                                     const std::vector<std::vector<int64_t>>& shapes);

struct ShapeRow {
  std::vector<int64_t> shape;
  double weight = 1;           // the shape's declared weight
  int kernel = -1;             // the module's dispatch.select(shape)
  double best_gflops = 0;      // best correct record of any kernel at this shape; 0: none
  double selected_gflops = 0;  // median of the dispatched kernel's records here; 0: none
};

// Every declared shape of the module's operator, in declared order.
std::vector<ShapeRow> shape_table(const runtime::ModuleSpec& module,
                                  const std::vector<tune::TuningRecord>& records);

struct KernelShare {
  int64_t shapes = 0;    // declared shapes dispatched to the kernel
  double weight = 0;     // their share of the total declared weight, 0..1
  std::string m_values;  // the first shape variable's values, as runs: "1..16, 33..40, 57"
};

// One entry per kernel of the module (a kernel serving no declared shape has shapes 0).
std::vector<KernelShare> kernel_shares(const runtime::ModuleSpec& module,
                                       const std::vector<ShapeRow>& rows);

}  // namespace dietcode::report
