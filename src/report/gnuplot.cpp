#include "report/gnuplot.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <fstream>

#include "support/error.h"

namespace dietcode::report {

namespace fs = std::filesystem;

namespace {

// Text as one single-quoted word for /bin/sh.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool plain_file_name(const std::string& s) {
  if (s.empty() || s[0] == '.') return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// Runs `command` through the shell; returns its exit status and its output.
std::pair<int, std::string> run_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "cannot start /bin/sh"};
  std::string output;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) output += buf;
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) user_error("report: cannot write {}", path.string());
}

}  // namespace

PlotSeries data_series(std::string title, std::string using_columns, std::string style,
                       std::string rows, std::string axes) {
  PlotSeries s;
  s.title = std::move(title);
  s.using_columns = std::move(using_columns);
  s.style = std::move(style);
  s.rows = std::move(rows);
  s.axes = std::move(axes);
  return s;
}

PlotSeries function_series(std::string title, std::string function, std::string style) {
  PlotSeries s;
  s.title = std::move(title);
  s.function = std::move(function);
  s.style = std::move(style);
  return s;
}

std::string gnuplot_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\n') c = ' ';
    out += c == '\'' ? std::string("''") : std::string(1, c);
  }
  return out + "'";
}

std::string draw_plot(const Plot& plot, const fs::path& dir, const std::string& stem) {
  DC_INTERNAL_CHECK(plain_file_name(stem), "plot file stem '{}'", stem);
  DC_INTERNAL_CHECK(!plot.series.empty(), "plot {} has no series", stem);
  const std::string image = stem + ".svg";
  const std::string data = "data/" + stem + ".dat", script_name = "data/" + stem + ".gp";
  fs::create_directories(dir / "data");
  // Every data series is one block of the .dat file (blocks are separated by two blank
  // lines, gnuplot's `index`).
  std::string rows;
  std::string clauses;
  int block = 0;
  for (const PlotSeries& s : plot.series) {
    if (!clauses.empty()) clauses += ", \\\n     ";
    if (s.function.empty()) {
      rows += fmt::format("# block {}: {}\n{}\n\n", block, s.title, s.rows);
      clauses += fmt::format("{} index {} using {}", gnuplot_quote(data), block++, s.using_columns);
    } else {
      clauses += s.function;
    }
    if (!s.axes.empty()) clauses += " axes " + s.axes;
    clauses += fmt::format(" with {} title {}", s.style, gnuplot_quote(s.title));
  }
  std::string script = fmt::format(
      "# Drawn by `dietcode tune --report`; redraw from the report folder with\n"
      "#   gnuplot {}\n"
      "set terminal svg size {},{} fixed noenhanced font 'DejaVu Sans,12' background '#ffffff'\n"
      "set output {}\n"
      "set grid\nset key top left box opaque\nset border 3\nset tics nomirror\n",
      script_name, plot.width, plot.height, gnuplot_quote(image));
  if (!plot.title.empty()) script += "set title " + gnuplot_quote(plot.title) + "\n";
  if (!plot.xlabel.empty()) script += "set xlabel " + gnuplot_quote(plot.xlabel) + "\n";
  if (!plot.ylabel.empty()) script += "set ylabel " + gnuplot_quote(plot.ylabel) + "\n";
  if (!plot.y2label.empty())
    script += "set y2label " + gnuplot_quote(plot.y2label) + "\nset y2tics\nset border 11\n";
  for (const std::string& s : plot.settings) script += s + "\n";
  script += "plot " + clauses + "\nunset output\n";
  write_file(dir / data, rows);
  write_file(dir / script_name, script);
  fs::remove(dir / image);
  auto [status, output] =
      run_command(fmt::format("cd {} && gnuplot {} 2>&1", shell_quote(dir.string()), script_name));
  if (status != 0)
    user_error(
        "report: gnuplot failed to draw {} (exit status {}): {}; is gnuplot installed "
        "(apt-get install gnuplot-nox)?",
        (dir / image).string(), status, output);
  std::error_code ec;
  if (fs::file_size(dir / image, ec) == 0 || ec)
    user_error("report: gnuplot wrote no image to {} ({})", (dir / image).string(), output);
  return image;
}

}  // namespace dietcode::report
