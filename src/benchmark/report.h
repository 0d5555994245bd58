// Output of `dietcode bench`: the terminal table (GFLOP/s, or GB/s for row operators, per
// implementation, our ratio to the best peer, our fraction of the roofline, geomeans),
// the CSV file and the plot.
#pragma once

#include <string>

#include "benchmark/result.h"

namespace dietcode::bench {

std::string format_table(const BenchResult& r);
// Columns: workload,impl,threads,M,N,K,seconds,gflops,roofline_gflops,max_rel_err,unit
// (unit: GFLOP/s, or GB/s for a row operator, whose M, N are rows and row length).
void write_csv(const BenchResult& r, const std::string& path);
// The rate vs T per implementation, one panel per layer, through gnuplot; .svg or .png.
void write_plot(const BenchResult& r, const std::string& path);

}  // namespace dietcode::bench
