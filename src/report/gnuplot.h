// A plot drawn by gnuplot (Debian's gnuplot-nox), for the report pages.
//
//   Plot p;  p.title = "...";  p.settings = {"set logscale y"};
//   p.series.push_back(data_series("dietcode", "1:2", "linespoints pt 7", rows_text));
//   draw_plot(p, dir, "qkv-gflops");   // dir/qkv-gflops.svg, data and script in dir/data/
//
// The numbers and the script stay beside the image (dir/data/<stem>.dat, .gp), so a plot
// can be checked or redrawn by hand: `cd dir && gnuplot data/<stem>.gp`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace dietcode::report {

struct PlotSeries {
  std::string title;                  // legend entry (any text; quoted for gnuplot here)
  std::string using_columns = "1:2";  // gnuplot `using` spec, e.g. "1:3:xtic(2)"
  std::string style = "lines";        // gnuplot `with` spec, e.g. "points pt 7 ps 0.5"
  std::string rows;      // whitespace-separated columns, one row per line; empty with `function`
  std::string function;  // instead of data: a gnuplot expression of x, e.g. "x"
  std::string axes;      // "" or "x1y2"
};

// A series of data rows, or of a function of x (then `rows` is empty).
PlotSeries data_series(std::string title, std::string using_columns, std::string style,
                       std::string rows, std::string axes = "");
PlotSeries function_series(std::string title, std::string function, std::string style);

struct Plot {
  std::string title, xlabel, ylabel, y2label;
  int width = 860, height = 420;      // pixels (the SVG's intrinsic size)
  std::vector<std::string> settings;  // raw gnuplot commands, after the defaults
  std::vector<PlotSeries> series;     // at least one
};

// Text as a single-quoted gnuplot string ('' inside stands for ').
std::string gnuplot_quote(const std::string& text);

// Draws `plot` to dir/<stem>.svg and returns that file name (relative to dir). `stem` is
// a plain file name ([A-Za-z0-9_.-]). Throws dietcode::Error naming gnuplot and its
// message if gnuplot is missing or fails, or if no image comes out.
std::string draw_plot(const Plot& plot, const std::filesystem::path& dir, const std::string& stem);

}  // namespace dietcode::report
