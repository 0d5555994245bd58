#include "benchmark/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/error.h"

namespace dietcode::bench {

namespace {

// "composition": fused attention's peer, peers composed (harness.cpp).
const std::vector<std::string> kPeerOrder{"openblas", "onednn", "blis", "libxsmm", "composition"};

// A geomean with its minimum and where that was (M).
struct Geomean {
  double log_sum = 0, min = 1e30;
  int count = 0;
  int64_t min_m = 0;
  void add(double x, int64_t m = 0) {
    log_sum += std::log(x);
    if (x < min) min = x, min_m = m;
    ++count;
  }
  void merge(const Geomean& o) {
    log_sum += o.log_sum;
    if (o.min < min) min = o.min, min_m = o.min_m;
    count += o.count;
  }
  double value() const { return std::exp(log_sum / count); }
};

// Ours against the best peer: the ratio and the roofline fraction over every shape, and the
// ratio over the shapes whose timings were not disturbed (Measurement::disturbed).
struct Summary {
  Geomean ratio, roof, quiet;
  void add(double r, double f, bool disturbed) {
    ratio.add(r);
    roof.add(f);
    if (!disturbed) quiet.add(r);
  }
  void merge(const Summary& o) {
    ratio.merge(o.ratio);
    roof.merge(o.roof);
    quiet.merge(o.quiet);
  }
  std::string text(const std::string& what) const {
    if (ratio.count == 0) return what + ": no shape with both dietcode and a peer\n";
    std::string out = fmt::format(
        "{}: geomean ratio to best peer {:.2f} (min {:.2f}), geomean roofline fraction {:.0f}% "
        "(min {:.0f}%), {} shapes",
        what, ratio.value(), ratio.min, 100 * roof.value(), 100 * roof.min, ratio.count);
    if (quiet.count == 0)
      out += "; every shape disturbed";
    else if (quiet.count < ratio.count)
      out += fmt::format("; without the {} disturbed: {:.2f} (min {:.2f}) over {}",
                         ratio.count - quiet.count, quiet.value(), quiet.min, quiet.count);
    return out + "\n";
  }
};

}  // namespace

std::string format_table(const BenchResult& r) {
  std::string out = r.roofline.describe() + "\n";
  // layer -> t -> impl -> row
  std::map<std::string, std::map<int64_t, std::map<std::string, const Measurement*>>> by_layer;
  std::vector<std::string> layer_order;
  std::set<std::string> impls;
  for (const Measurement& m : r.rows) {
    if (!by_layer.count(m.workload)) layer_order.push_back(m.workload);
    by_layer[m.workload][m.t][m.impl] = &m;
    impls.insert(m.impl);
  }
  // Ours: "dietcode" (the sweep or one module) or several "dietcode-<label>" columns.
  std::vector<std::string> peers, ours;
  for (const std::string& p : kPeerOrder)
    if (impls.count(p)) peers.push_back(p);
  auto add_ours = [&](const std::string& i) {
    if (std::find(ours.begin(), ours.end(), i) == ours.end()) ours.push_back(i);
  };
  for (const std::string& i : r.ours)
    if (impls.count(i)) add_ours(i);
  for (const std::string& i : impls)  // any other of ours (a result built by hand), by name
    if (i.rfind("dietcode", 0) == 0) add_ours(i);
  if (ours.empty()) ours.push_back("dietcode");
  auto label = [](const std::string& impl) {
    return impl == "dietcode" ? impl : impl.substr(std::string("dietcode-").size());
  };
  std::map<std::string, Summary> all;
  std::map<std::string, std::set<std::string>> layers_of;  // impl -> layers it was measured on
  std::string comparisons;                                 // "X vs Y" lines, per layer
  for (const std::string& layer : layer_order) {
    // Our columns on this layer only (with one module per operator, each layer has its own).
    std::vector<std::string> here;
    for (const std::string& o : ours) {
      bool present = false;
      for (auto& [t, row] : by_layer[layer]) present = present || row.count(o);
      if (present) here.push_back(o);
    }
    if (here.empty()) here.push_back(ours[0]);
    for (const std::string& o : here) layers_of[o].insert(layer);
    // Products in GFLOP/s; row operators in GB/s (bytes moved once), rows x N.
    const std::string& unit = by_layer[layer].begin()->second.begin()->second->unit;
    const bool rows_layer = unit != "GFLOP/s";
    out += fmt::format(
        "\n{} ({} thread{}{}), {}\n", layer, r.roofline.threads, r.roofline.threads > 1 ? "s" : "",
        by_layer[layer].begin()->second.begin()->second->cold_weights ? ", weights cold" : "",
        unit);
    out += rows_layer ? fmt::format("{:>5} {:>5} {:>5}", "T", "rows", "N")
                      : fmt::format("{:>5} {:>5} {:>5}", "M", "N", "K");
    for (const std::string& o : here) out += fmt::format(" {:>10}", label(o));
    for (const std::string& p : peers) out += fmt::format(" {:>9}", p);
    out += fmt::format(" {:>9}", "best peer");
    for (const std::string& o : here)
      out += fmt::format(" {:>7}", here.size() > 1 ? "r." + label(o).substr(0, 5) : "ratio");
    out += fmt::format(" {:>9} {:>5} {:>6}\n", "roofline", "level", "%roof");
    std::map<std::string, Summary> s;
    // Each of ours against a reference of ours on the same shapes: the sweep (the oracle)
    // when it ran, else the first column. Value: (sum of log(reference time / time), count,
    // min ratio, M of the min).
    std::string reference = std::count(here.begin(), here.end(), "dietcode-sweep")
                                ? std::string("dietcode-sweep")
                                : here[0];
    struct Versus {
      Geomean all, quiet;  // quiet: the shapes not disturbed (Measurement::disturbed)
    };
    std::map<std::string, Versus> versus;
    for (auto& [t, row] : by_layer[layer]) {
      const Measurement* any = row.begin()->second;
      out += rows_layer ? fmt::format("{:>5} {:>5} {:>5}", any->t, any->m, any->n)
                        : fmt::format("{:>5} {:>5} {:>5}", any->m, any->n, any->k);
      for (const std::string& o : here) {
        auto it = row.find(o);
        out += it == row.end() ? fmt::format(" {:>10}", "-")
                               : fmt::format(" {:>10.1f}", it->second->gflops);
      }
      const Measurement* best = nullptr;
      for (const std::string& p : peers) {
        auto it = row.find(p);
        out += it == row.end() ? fmt::format(" {:>9}", "-")
                               : fmt::format(" {:>9.1f}", it->second->gflops);
        if (it != row.end() && (!best || it->second->gflops > best->gflops)) best = it->second;
      }
      out += fmt::format(" {:>9}", best ? best->impl : "-");
      auto ref = row.find(reference);
      for (const std::string& o : here) {
        auto it = row.find(o);
        if (best && it != row.end()) {
          double ratio = best->seconds / it->second->seconds;
          double roof = it->second->gflops / it->second->roofline_gflops;
          s[o].add(ratio, roof, it->second->disturbed);
          all[o].add(ratio, roof, it->second->disturbed);
          out += fmt::format(" {:>7.2f}", ratio);
        } else {
          out += fmt::format(" {:>7}", "-");
        }
        if (o != reference && it != row.end() && ref != row.end()) {
          double ratio = ref->second->seconds / it->second->seconds;
          Versus& v = versus[o];
          v.all.add(ratio, any->m);
          if (!it->second->disturbed && !ref->second->disturbed) v.quiet.add(ratio, any->m);
        }
      }
      auto first = row.find(here[0]);
      if (first != row.end())
        out += fmt::format(" {:>9.1f} {:>5} {:>5.0f}%", any->roofline_gflops, any->level,
                           100 * first->second->gflops / first->second->roofline_gflops);
      else
        out += fmt::format(" {:>9.1f} {:>5}", any->roofline_gflops, any->level);
      out += any->disturbed ? "  disturbed\n" : "\n";
    }
    for (const std::string& o : here)
      out += s[o].text(here.size() > 1 ? layer + " " + label(o) : layer);
    for (const std::string& o : here) {
      auto found = versus.find(o);
      if (found == versus.end() || found->second.all.count == 0) continue;
      const Versus& v = found->second;
      comparisons += fmt::format(
          "{}: {} vs {}: geomean speed ratio {:.3f} (min {:.3f} at M={}) over {} shapes", layer,
          label(o), label(reference), v.all.value(), v.all.min, v.all.min_m, v.all.count);
      if (v.quiet.count > 0 && v.quiet.count < v.all.count)
        comparisons +=
            fmt::format("; without the {} disturbed: {:.3f} (min {:.3f} at M={})",
                        v.all.count - v.quiet.count, v.quiet.value(), v.quiet.min, v.quiet.min_m);
      comparisons += "\n";
    }
  }
  // Across layers: each of ours measured on more than one layer; and with one module per
  // layer (modules of different operators), the modules together.
  if (layer_order.size() > 1) {
    Summary modules;
    int single_layer_modules = 0;
    for (const std::string& o : ours) {
      if (layers_of[o].size() > 1) {
        out += '\n';
        out += all[o].text(ours.size() > 1 ? "all layers " + label(o) : "all layers");
      } else if (o != "dietcode-sweep" && o != "dietcode" && all[o].ratio.count > 0) {
        ++single_layer_modules;
        modules.merge(all[o]);
      }
    }
    if (single_layer_modules > 1) out += "\n" + modules.text("all layers, the modules");
  }
  out += comparisons;
  if (!r.compile_seconds.empty()) {
    std::vector<double> c = r.compile_seconds;
    std::sort(c.begin(), c.end());
    out += fmt::format(
        "JIT compile time per kernel: median {:.1f} ms, max {:.1f} ms over {} kernels\n",
        1e3 * c[c.size() / 2], 1e3 * c.back(), c.size());
  }
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

void write_csv(const BenchResult& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) user_error("--csv {}: cannot open the file for writing", path);
  f << "workload,impl,threads,M,N,K,seconds,gflops,roofline_gflops,max_rel_err,unit\n";
  for (const Measurement& m : r.rows)
    f << fmt::format("{},{},{},{},{},{},{:.9g},{:.4g},{:.4g},{:.3g},{}\n", m.workload, m.impl,
                     m.threads, m.m, m.n, m.k, m.seconds, m.gflops, m.roofline_gflops,
                     m.max_rel_err, m.unit);
  if (!f) user_error("--csv {}: write failed", path);
}

void write_plot(const BenchResult& r, const std::string& path) {
  std::vector<std::string> layers;
  std::map<std::string, std::map<std::string, std::vector<const Measurement*>>> series;
  for (const Measurement& m : r.rows) {
    if (!series.count(m.workload)) layers.push_back(m.workload);
    series[m.workload][m.impl].push_back(&m);
  }
  draw_plot(path, layers.size(), [&](const std::filesystem::path& dir) {
    std::string script = "set xlabel 'M (T)'\n";
    int file_index = 0;
    for (const std::string& layer : layers) {
      script += fmt::format("set ylabel '{}'\nset title '{} ({} threads)'\nplot ",
                            series[layer].begin()->second[0]->unit, layer, r.roofline.threads);
      std::vector<std::string> lines;
      for (auto& [impl, rows] : series[layer]) {
        std::vector<std::array<double, 3>> points;
        for (const Measurement* m : rows)
          points.push_back({double(m->t), m->gflops, m->roofline_gflops});
        lines.push_back(
            plot_line(dir, file_index, impl, points,
                      impl.rfind("dietcode", 0) == 0 && impl == series[layer].begin()->first));
      }
      script += fmt::format("{}\n", fmt::join(lines, ", "));
    }
    return script;
  });
}

std::string plot_line(const std::filesystem::path& data_dir, int& index, const std::string& title,
                      const std::vector<std::array<double, 3>>& points, bool with_roofline) {
  const std::filesystem::path data = data_dir / fmt::format("{}.dat", index++);
  std::ofstream f(data);
  for (const auto& [x, y, roofline] : points) f << x << " " << y << " " << roofline << "\n";
  std::string clause =
      fmt::format("'{}' using 1:2 with linespoints title '{}'", data.string(), title);
  if (with_roofline)
    clause += fmt::format(", '{}' using 1:3 with lines dashtype 2 lc rgb 'black' title 'roofline'",
                          data.string());
  return clause;
}

void check_plot_path(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".png")
    user_error("--plot {}: expected a .svg or .png file name", path);
}

void draw_plot(const std::string& path, size_t panels,
               const std::function<std::string(const std::filesystem::path& data_dir)>& panels_fn) {
  namespace fs = std::filesystem;
  check_plot_path(path);
  fs::path dir = fs::temp_directory_path() / fmt::format("dietcode-plot-{}", ::getpid());
  fs::create_directories(dir);
  const bool svg = fs::path(path).extension() == ".svg";
  std::string script = fmt::format(
      "set terminal {} size 900,{}\nset output '{}'\nset multiplot layout {},1\n"
      "set key outside right\nset grid\n",
      svg ? "svg dynamic" : "pngcairo", 320 * panels, path, panels);
  script += panels_fn(dir);
  script += "unset multiplot\n";
  fs::path script_path = dir / "plot.gp";
  std::ofstream(script_path) << script;
  std::string command = fmt::format("gnuplot '{}' 2>&1", script_path.string());
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    fs::remove_all(dir);
    user_error("--plot: cannot run gnuplot (apt-get install gnuplot-nox)");
  }
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof buf, pipe)) output += buf;
  int status = pclose(pipe);
  fs::remove_all(dir);
  if (status != 0)
    user_error("--plot {}: gnuplot failed ({}); is gnuplot-nox installed?", path, output);
}

}  // namespace dietcode::bench
