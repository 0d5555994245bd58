// Output of `dietcode bench`: the terminal table (GFLOP/s, or GB/s for row operators, per
// implementation, our ratio to the best peer, our fraction of the roofline, geomeans),
// the CSV file and the plot.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "benchmark/result.h"

namespace dietcode::bench {

std::string format_table(const BenchResult& r);
// Columns: workload,impl,threads,M,N,K,seconds,gflops,roofline_gflops,max_rel_err,unit
// (unit: GFLOP/s, or GB/s for a row operator, whose M, N are rows and row length).
void write_csv(const BenchResult& r, const std::string& path);
// The rate vs T per implementation, one panel per layer, through gnuplot; .svg or .png.
void write_plot(const BenchResult& r, const std::string& path);

// Throws dietcode::Error unless `path` names a .svg or .png file (checked before minutes of
// measurement, not after).
void check_plot_path(const std::string& path);
// A plot of `panels` panels stacked vertically, drawn by gnuplot into `path`: `panels_fn`
// writes its data files into a temporary folder and returns the commands of every panel
// (after the terminal, output, layout, key and grid settings this sets). Throws
// dietcode::Error for a bad path or a gnuplot failure.
void draw_plot(const std::string& path, size_t panels,
               const std::function<std::string(const std::filesystem::path& data_dir)>& panels_fn);
// One line of a panel: writes `points` (x, y, roofline) as <data_dir>/<index>.dat (index
// then advanced) and returns the plot clause titled `title`, with the roofline as a dashed
// black line after it when `with_roofline`. Clauses are joined by ", " after "plot ".
std::string plot_line(const std::filesystem::path& data_dir, int& index, const std::string& title,
                      const std::vector<std::array<double, 3>>& points, bool with_roofline);

}  // namespace dietcode::bench
