// The page of `dietcode tune --report DIR`: DIR/index.html with inline CSS and no
// external resources, the plots as SVG files beside it (report/gnuplot.h), and the data
// and gnuplot script of each plot in DIR/data/. One section per operator (tuning curve,
// GFLOP/s vs M against the peers, the selected micro-kernels and their share of the
// shapes, the cost model on held-out records, provenance), then the benchmark's context.
#include "report/tuning_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "ops/work.h"
#include "report/gnuplot.h"
#include "report/held_out_model.h"
#include "report/html.h"
#include "report/tuning_series.h"
#include "support/error.h"

namespace dietcode::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStyle = R"(
body { font: 15px/1.45 "DejaVu Sans", sans-serif; margin: 1.5em auto; max-width: 1000px;
       padding: 0 1em; color: #1a1a1a; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ccc; margin-top: 2.2em; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .2em .55em; vertical-align: top; }
th { background: #f0f0f0; text-align: left; } td.n, th.n { text-align: right; }
table.kv th { font-weight: normal; color: #444; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .9em; color: #333; max-width: 52em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
code { font-size: .92em; } .note { color: #7a4b00; } #broken { color: #b00; font-weight: bold; }
)";

// Marks the page when every image has loaded (a test reads the mark with headless
// Chromium) and tells the reader which images did not.
constexpr const char* kImageCheck = R"(<script>
window.addEventListener('load', function () {
  var bad = [];
  for (var i = 0; i < document.images.length; ++i) {
    var img = document.images[i];
    if (!(img.complete && img.naturalWidth > 0)) bad.push(img.getAttribute('src'));
  }
  document.documentElement.setAttribute('data-images',
      bad.length ? 'broken ' + bad.join(' ') : 'ok ' + document.images.length);
  if (bad.length) {
    var p = document.getElementById('broken');
    p.textContent = 'Images that did not load: ' + bad.join(', ');
    p.hidden = false;
  }
});
</script>)";

std::string num(double v, int digits = 1) {
  return v > 0 ? fmt::format("{:.{}f}", v, digits) : std::string("-");
}
std::string percent(double fraction) {
  return fmt::format("{:.0f}%", 100 * fraction);
}

// A plain file-name stem for an operator's plots: op<i>-<name with other bytes as '_'>.
std::string operator_slug(const std::string& name, size_t index) {
  std::string s = fmt::format("op{}-", index + 1);
  for (char c : name.substr(0, 40))
    s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return s;
}

bool is_ours(const std::string& impl) {
  return impl.rfind("dietcode", 0) == 0;
}

// The benchmark's rows of one operator: its layer in the "modules" workload.
struct OperatorBench {
  std::vector<std::string> impls;  // ours first, then the peers, each in order of appearance
  std::map<std::string, std::map<int64_t, const bench::Measurement*>> rows;  // impl -> M -> row
  std::map<int64_t, double> roofline;                                        // M -> GFLOP/s
  bool empty() const { return impls.empty(); }
  // The fastest peer at M, or null.
  const bench::Measurement* best_peer(int64_t m) const {
    const bench::Measurement* best = nullptr;
    for (const auto& [impl, by_m] : rows) {
      auto it = by_m.find(m);
      if (!is_ours(impl) && it != by_m.end() && (!best || it->second->gflops > best->gflops))
        best = it->second;
    }
    return best;
  }
};

OperatorBench operator_bench(const bench::BenchResult* b, const std::string& layer) {
  OperatorBench out;
  if (!b) return out;
  std::vector<std::string> ours, peers;
  for (const bench::Measurement& m : b->rows) {
    if (m.workload != layer) continue;
    if (!out.rows.count(m.impl)) (is_ours(m.impl) ? ours : peers).push_back(m.impl);
    out.rows[m.impl][m.t] = &m;
    out.roofline[m.t] = m.roofline_gflops;
  }
  out.impls = ours;
  out.impls.insert(out.impls.end(), peers.begin(), peers.end());
  return out;
}

// Geomeans of one implementation over its shapes; ratio and roofline for ours.
struct ImplSummary {
  double gflops = 0, ratio_to_best_peer = 0, roofline_fraction = 0;
  size_t shapes = 0, shapes_with_peer = 0;
};

ImplSummary summarize(const OperatorBench& b, const std::string& impl) {
  std::vector<double> gflops, ratio, roof;
  for (auto [m, row] : b.rows.at(impl)) {
    gflops.push_back(row->gflops);
    if (row->roofline_gflops > 0) roof.push_back(row->gflops / row->roofline_gflops);
    const bench::Measurement* peer = b.best_peer(m);
    if (is_ours(impl) && peer && peer->gflops > 0) ratio.push_back(row->gflops / peer->gflops);
  }
  return {geomean(gflops), geomean(ratio), geomean(roof), gflops.size(), ratio.size()};
}

// Fixed colours per library, so that pages of different runs read alike.
std::string impl_color(const std::string& impl, size_t index) {
  static const std::map<std::string, std::string> known = {{"dietcode", "#7b2cbf"},
                                                           {"openblas", "#1f77b4"},
                                                           {"onednn", "#2ca02c"},
                                                           {"blis", "#d62728"},
                                                           {"libxsmm", "#8c564b"}};
  static const char* others[] = {"#e377c2", "#17becf", "#bcbd22", "#ff7f0e"};
  auto it = known.find(impl);
  return it != known.end() ? it->second : others[index % 4];
}

std::string impl_label(const std::string& impl) {
  return impl == "dietcode" ? "dietcode (this module)" : impl;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return shape.size() == 1 ? fmt::format("{}", shape[0]) : fmt::format("{}", fmt::join(shape, ","));
}

// --- sections ------------------------------------------------------------------------

// The unit of the operator's rates: GFLOP/s, or GB/s for a row operator (ops/work.h).
std::string rate_unit(const OperatorResult& op) {
  return std::string(ops::work_of(op.module.op.build(), {op.module.op.m_max}).unit);
}

std::string tuning_curve_section(const OperatorResult& op, const fs::path& dir,
                                 const std::string& slug) {
  std::vector<std::vector<int64_t>> shapes = op.module.op.declared_shapes();
  std::vector<CurvePoint> curve = tuning_curve(op.records, shapes);
  const std::string unit = rate_unit(op);
  std::string out = "<h3>Tuning curve</h3>\n";
  if (curve.empty())
    return out +
           "<p class=note>No correct measurement on a declared shape in the records: "
           "nothing to draw.</p>\n";
  Plot p;
  p.title = op.name + ": best measured geomean vs trials";
  p.xlabel = "trials (tuning records, in the order they were measured)";
  p.ylabel = "geomean of best " + unit + " over measured shapes";
  p.y2label = "declared shapes measured";
  p.settings = {"set key below nobox height 1.5", "set yrange [0:*]",
                fmt::format("set y2range [0:{}]", shapes.size() * 11 / 10 + 1)};
  std::string rows;
  // A step plot needs only the points where a value changes, and the last one.
  for (size_t i = 0; i < curve.size(); ++i) {
    const CurvePoint& c = curve[i];
    if (i > 0 && i + 1 < curve.size() && c.geomean_gflops == curve[i - 1].geomean_gflops &&
        c.shapes_measured == curve[i - 1].shapes_measured)
      continue;
    rows += fmt::format("{} {:.6g} {}\n", c.trials, c.geomean_gflops, c.shapes_measured);
  }
  p.series.push_back(
      data_series("best geomean " + unit, "1:2", "steps lw 2 lc rgb '#1f5fbf'", rows));
  p.series.push_back(data_series("declared shapes measured (right axis)", "1:3",
                                 "steps dt 3 lc rgb '#888888'", rows, "x1y2"));
  std::string image = draw_plot(p, dir, slug + "-tuning");
  const CurvePoint& last = curve.back();
  size_t failed = std::count_if(op.records.begin(), op.records.end(),
                                [](const tune::TuningRecord& r) { return !r.ok(); });
  std::string missing =
      size_t(last.shapes_measured) < shapes.size()
          ? fmt::format(
                " The other {} declared shapes have no correct measurement in the "
                "records and are in no point of the curve.",
                shapes.size() - size_t(last.shapes_measured))
          : std::string();
  std::string caption = fmt::format(
      "After trial <i>n</i> (one tuning record, in file order; the {} failed measurements "
      "count as trials too): the geometric mean, over the declared shapes, of the best "
      "correct {} measured <em>at that shape</em> among the first <i>n</i> records, any "
      "micro-kernel. A shape enters the mean at its first correct measurement, so early "
      "points average fewer shapes (dotted, right axis). At the end: {} {} over {} of "
      "{} declared shapes after {} trials.{} These are the tuner's own measurements (its "
      "worker processes), not the module's speed through its dispatcher: see the next plot.",
      failed, unit, num(last.geomean_gflops), unit, last.shapes_measured, shapes.size(),
      last.trials, missing);
  return out + html_figure(image, "tuning curve of " + op.name, caption);
}

std::string gflops_section(const OperatorResult& op, const std::vector<ShapeRow>& shape_rows,
                           const OperatorBench& b, const fs::path& dir, const std::string& slug) {
  const std::string unit = rate_unit(op);
  std::string out = "<h3>" + unit + " vs M</h3>\n";
  Plot p;
  p.title = op.name + ": " + unit + " vs M, " + std::to_string(op.threads) + " thread" +
            (op.threads > 1 ? "s" : "");
  p.xlabel = "M (sequence length)";
  p.ylabel = unit;
  p.width = 980;
  p.height = 460;
  p.settings = {"set key below nobox height 1.5", "set yrange [0:*]", "set autoscale xfixmax"};
  for (const std::string& impl : b.impls) {
    std::string rows;
    for (auto [m, row] : b.rows.at(impl)) rows += fmt::format("{} {:.6g}\n", m, row->gflops);
    p.series.push_back(data_series(
        impl_label(impl), "1:2",
        fmt::format("linespoints lw {} pt 7 ps {} lc rgb '{}'", is_ours(impl) ? "2.5" : "1",
                    is_ours(impl) ? 0.45 : 0.3, impl_color(impl, p.series.size())),
        rows));
  }
  if (!b.empty()) {
    std::string rows;
    for (auto [m, g] : b.roofline) rows += fmt::format("{} {:.6g}\n", m, g);
    p.series.push_back(data_series("roofline", "1:2", "lines dt 2 lw 1.5 lc rgb 'black'", rows));
  }
  std::string best_rows, selected_rows;
  for (const ShapeRow& r : shape_rows) {
    if (r.best_gflops > 0) best_rows += fmt::format("{} {:.6g}\n", r.shape[0], r.best_gflops);
    if (r.selected_gflops > 0)
      selected_rows += fmt::format("{} {:.6g}\n", r.shape[0], r.selected_gflops);
  }
  if (!best_rows.empty())
    p.series.push_back(data_series("tuning: best record at M (any kernel)", "1:2",
                                   "points pt 6 ps 0.7 lc rgb '#999999'", best_rows));
  if (!selected_rows.empty())
    p.series.push_back(data_series("tuning: dispatched kernel's record at M", "1:2",
                                   "points pt 2 ps 0.6 lc rgb '#d95f02'", selected_rows));
  if (p.series.empty())
    return out +
           "<p class=note>No benchmark and no correct tuning record on a declared shape: "
           "nothing to draw.</p>\n";
  std::string caption;
  if (b.empty()) {
    caption =
        "The benchmark did not run for this operator (<code>--no-bench</code>, or an "
        "epilogue the vendor libraries do not compute), so only the tuner's own "
        "measurements are shown. ";
  } else {
    caption = fmt::format(
        "Lines: the final benchmark, one run at {0} thread{1}: this module through its "
        "compiled dispatcher with pre-packed weights, and each vendor library in its best "
        "variant, every result checked against float64 before timing (interleaved rounds, "
        "median). Roofline: min(FMA peak, FLOPs / (bytes / bandwidth of the memory level "
        "that holds the data)), measured at the start of the run. ",
        op.threads, op.threads > 1 ? "s" : "");
  }
  caption +=
      "Points: tuning records at declared shapes (the tuner's timing, not the benchmark's): "
      "grey, the best of any kernel; orange, the kernel the module dispatches M to, where the "
      "tuner measured it at M (the gap between the two is what dispatching to few kernels "
      "costs there). ";
  caption += unit == "GB/s" ? "GB/s counts the bytes moved once per call (every input read, the "
                              "output written)."
                            : "GFLOP/s counts 2&middot;M&middot;N&middot;K (&times; batch) "
                              "operations per call (4&middot;T&sup2;&middot;D per head for "
                              "attention).";
  out += html_figure(draw_plot(p, dir, slug + "-gflops"), unit + " vs M for " + op.name, caption);
  if (!b.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& impl : b.impls) {
      ImplSummary s = summarize(b, impl);
      rows.push_back({impl_label(impl), num(s.gflops), std::to_string(s.shapes),
                      is_ours(impl) && s.shapes_with_peer ? num(s.ratio_to_best_peer, 2) : "",
                      s.roofline_fraction > 0 ? percent(s.roofline_fraction) : "-"});
    }
    out += html_table({"implementation", "geomean GFLOP/s", "shapes",
                       "geomean ratio to best peer at each M", "geomean of roofline"},
                      rows);
  }
  return out;
}

std::string kernels_section(const OperatorResult& op, const std::vector<ShapeRow>& shape_rows,
                            const fs::path& dir, const std::string& slug) {
  const auto& kernels = op.module.kernels;
  std::vector<KernelShare> shares = kernel_shares(op.module, shape_rows);
  bool weighted = std::any_of(shape_rows.begin(), shape_rows.end(),
                              [&](const ShapeRow& r) { return r.weight != shape_rows[0].weight; });
  std::string out = "<h3>Selected micro-kernels</h3>\n";
  Plot p;
  p.title = op.name + ": declared shapes per selected micro-kernel";
  p.xlabel = "micro-kernel (index: MR x NR register tile)";
  p.ylabel = weighted ? "% of declared shapes, of declared weight" : "% of declared shapes";
  p.width = std::max(520, 90 * int(kernels.size()) + 200);
  p.settings = {"set key below nobox height 1.5",
                "set style fill solid 0.7 border -1",
                "set yrange [0:*]",
                "set xtics scale 0",
                fmt::format("set xrange [-0.6:{}]", double(kernels.size()) - 0.4),
                fmt::format("set boxwidth {}", weighted ? 0.36 : 0.6)};
  std::string rows;
  for (size_t k = 0; k < kernels.size(); ++k)
    rows += fmt::format("{} k{}:{} {:.4g} {:.4g}\n", k, k, schedule::short_label(kernels[k]),
                        shape_rows.empty() ? 0.0 : 100.0 * shares[k].shapes / shape_rows.size(),
                        100.0 * shares[k].weight);
  if (!kernels.empty()) {
    p.series.push_back(data_series("shapes", weighted ? "($1-0.19):3:xtic(2)" : "1:3:xtic(2)",
                                   "boxes lc rgb '#1f5fbf'", rows));
    if (weighted) {
      p.series.push_back(
          data_series("declared weight", "($1+0.19):4", "boxes lc rgb '#d95f02'", rows));
    } else {
      p.settings.push_back("unset key");
    }
    out += html_figure(
        draw_plot(p, dir, slug + "-kernels"), "micro-kernel shares for " + op.name,
        fmt::format("The share of the {} declared shapes{} that the module's decision tree "
                    "sends to each of its {} micro-kernels (dispatch evaluated on every "
                    "declared shape).",
                    shape_rows.size(), weighted ? " (and of their declared weights)" : "",
                    kernels.size()));
  }
  std::vector<std::vector<std::string>> table;
  bool micro_kernels = std::all_of(kernels.begin(), kernels.end(), [](const auto& s) {
    return schedule::kind_of(s) == schedule::Kind::Contraction;
  });
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<std::string> row{fmt::format("k{}", k)};
    if (micro_kernels) {
      const auto& s = std::get<schedule::MicroKernelSchedule>(kernels[k]);
      row.insert(
          row.end(),
          {fmt::format("{} x {}{}", s.mr, s.nr, s.vector_axis == schedule::Axis::K ? " dot" : ""),
           fmt::format("{} / {} / {}", s.kc, s.mc, s.nc), schedule::to_string(s.loop_order),
           std::string(to_string(s.parallel)), std::string(to_string(s.inner_tile_loop)),
           s.k_streams > 1 ? fmt::format("{} x {} streams", s.unroll_k, s.k_streams)
                           : std::to_string(s.unroll_k),
           s.pack_a == schedule::PackA::Packed ? "packed" : "direct",
           std::string(s.pack_b == schedule::PackB::Prepacked ? "prepacked"
                       : s.pack_b == schedule::PackB::Direct  ? "direct"
                                                              : "per block") +
               (s.b_panel == schedule::BPanel::Tile ? ", tile panels" : "") +
               (s.prefetch_b > 0 ? fmt::format(", prefetched {} ahead", s.prefetch_b) : "") +
               (s.prefetch_next ? ", next B prefetched" : "")});
    } else {
      row.push_back(schedule::describe(kernels[k]));
    }
    row.insert(row.end(),
               {std::to_string(shares[k].shapes), percent(shares[k].weight), shares[k].m_values});
    table.push_back(std::move(row));
  }
  if (micro_kernels) {
    out += html_table(
        {"kernel", "tile MR x NR", "KC / MC / NC", "loop order", "parallel", "inner tile loop",
         "unroll k", "pack A", "pack B", "declared shapes", "weight", "M served"},
        table, 9);
  } else {
    out += html_table({"kernel", "schedule", "declared shapes", "weight", "M served"}, table, 2);
  }
  out += fmt::format(
      "<details><summary>Decision tree (depth {}, {} leaves; shapes outside the declared range "
      "included)</summary><pre>{}</pre></details>\n",
      op.module.dispatch.depth(), op.module.dispatch.num_leaves(),
      escape_html(op.module.dispatch.describe({"M"})));
  return out;
}

std::string shape_details(const std::vector<ShapeRow>& shape_rows, const OperatorBench& b) {
  std::vector<std::vector<std::string>> table;
  for (const ShapeRow& r : shape_rows) {
    std::vector<std::string> row = {shape_text(r.shape), fmt::format("{:g}", r.weight),
                                    fmt::format("k{}", r.kernel), num(r.selected_gflops),
                                    num(r.best_gflops)};
    if (!b.empty()) {
      int64_t m = r.shape[0];
      const bench::Measurement* ours = nullptr;
      for (const std::string& impl : b.impls) {
        auto it = b.rows.at(impl).find(m);
        if (is_ours(impl) && it != b.rows.at(impl).end()) {
          ours = it->second;
          break;
        }
      }
      const bench::Measurement* peer = b.best_peer(m);
      auto roof = b.roofline.find(m);
      row.push_back(ours ? num(ours->gflops) : "-");
      row.push_back(peer ? fmt::format("{} {}", num(peer->gflops), peer->impl) : "-");
      row.push_back(roof != b.roofline.end() ? num(roof->second) : "-");
    }
    table.push_back(row);
  }
  std::vector<std::string> header = {"M", "weight", "kernel", "tuning: its record, GFLOP/s",
                                     "tuning: best record, GFLOP/s"};
  if (!b.empty())
    header.insert(header.end(),
                  {"benchmark: module, GFLOP/s", "benchmark: best peer, GFLOP/s", "roofline"});
  return "<details><summary>Every declared shape</summary>\n" + html_table(header, table, 1) +
         "</details>\n";
}

std::string cost_model_section(const OperatorResult& op, const fs::path& dir,
                               const std::string& slug) {
  std::string out = "<h3>Cost model on held-out records</h3>\n";
  HeldOutModel h = held_out_model(op.module.op, op.threads, op.records);
  if (h.test.empty())
    return out + fmt::format(
                     "<p class=note>No held-out records ({} correct records in all): "
                     "nothing to draw.</p>\n",
                     h.train);
  double lo = 1e300, hi = 0;
  std::map<std::string, std::string> by_origin;
  for (const HeldOutPoint& t : h.test) {
    if (!(t.predicted_gflops > 0)) continue;
    lo = std::min({lo, t.predicted_gflops, t.measured_gflops});
    hi = std::max({hi, t.predicted_gflops, t.measured_gflops});
    by_origin[t.origin] += fmt::format("{:.6g} {:.6g}\n", t.predicted_gflops, t.measured_gflops);
  }
  if (by_origin.empty()) return out + "<p class=note>The model predicted no positive value.</p>\n";
  Plot p;
  p.title = op.name + ": predicted vs measured, held-out records";
  p.xlabel = "predicted GFLOP/s";
  p.ylabel = "measured GFLOP/s";
  p.width = 620;
  p.height = 560;
  lo /= 1.25;
  hi *= 1.25;
  // Log axes labelled at 1, 2, 3, 5 x 10^k (gnuplot labels only powers of ten).
  std::string tics;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi; decade *= 10)
    for (double f : {1.0, 2.0, 3.0, 5.0})
      if (f * decade >= lo && f * decade <= hi)
        tics += fmt::format("{}{:g}", tics.empty() ? "" : ", ", f * decade);
  p.settings = {"set logscale xy", "set size square",
                fmt::format("set xrange [{:.6g}:{:.6g}]", lo, hi),
                fmt::format("set yrange [{:.6g}:{:.6g}]", lo, hi)};
  if (!tics.empty())
    p.settings.insert(p.settings.end(),
                      {fmt::format("set xtics ({})", tics), fmt::format("set ytics ({})", tics)});
  const char* colors[] = {"#1f5fbf", "#d95f02", "#1b9e77", "#7570b3"};
  size_t i = 0;
  for (const auto& [origin, rows] : by_origin)
    p.series.push_back(data_series(origin + " records", "1:2",
                                   fmt::format("points pt 7 ps 0.5 lc rgb '{}'", colors[i++ % 4]),
                                   rows));
  p.series.push_back(function_series("predicted = measured", "x", "lines dt 2 lc rgb 'black'"));
  std::string caption = fmt::format(
      "The tuner's cost model (f<sub>MK</sub> by XGBoost &times; occupancy &times; padding), "
      "refitted here on {} of this run's correct records (those whose schedule's FNV-1a hash "
      "is not 0 mod 5) and asked for the other {}, the split of <code>dietcode tune "
      "--evaluate-model</code>: one point per held-out record, its prediction at the record's "
      "shape vs its measurement. Pairwise ranking accuracy {:.3f} (of the pairs with different "
      "measurements, the fraction the model orders alike); median relative error {}.{}",
      h.train, h.test.size(), h.ranking_accuracy, percent(h.median_relative_error),
      h.learned ? ""
                : " <span class=note>Fewer than 100 training records: f<sub>MK</sub> is a "
                  "constant, so predictions differ only by occupancy and padding.</span>");
  return out + html_figure(draw_plot(p, dir, slug + "-cost-model"),
                           "cost model scatter for " + op.name, caption);
}

std::string operator_section(const OperatorResult& op, const OperatorBench& b, const fs::path& dir,
                             const std::string& slug) {
  const runtime::ModuleSpec& m = op.module;
  std::vector<ShapeRow> shape_rows = shape_table(m, op.records);
  size_t failed = std::count_if(op.records.begin(), op.records.end(),
                                [](const tune::TuningRecord& r) { return !r.ok(); });
  std::set<std::string> origins;
  for (const tune::TuningRecord& r : op.records) origins.insert(std::string(to_string(r.origin)));
  std::string out =
      fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", escape_html(slug), escape_html(op.name));
  out += fmt::format(
      "<p><code>{}</code>; {} thread{}, ISA {}; {} tuning records ({} failed; origins: {}); "
      "{} micro-kernels selected.</p>\n",
      escape_html(m.op.describe()), op.threads, op.threads > 1 ? "s" : "",
      escape_html(std::string(to_string(m.isa))), op.records.size(), failed,
      escape_html(fmt::format("{}", fmt::join(origins, ", "))), m.kernels.size());
  out += tuning_curve_section(op, dir, slug);
  out += gflops_section(op, shape_rows, b, dir, slug);
  out += kernels_section(op, shape_rows, dir, slug);
  out += shape_details(shape_rows, b);
  if (schedule::kind_of_operator(op.module.op) == schedule::Kind::Contraction)
    out += cost_model_section(op, dir, slug);
  else
    out +=
        "<p>The held-out evaluation of the cost model covers contractions (their learned "
        "f_MK over thousands of candidates); this operator's schedules are listed and "
        "measured (src/tune/small_space.h).</p>\n";
  out += "<h3>Provenance</h3>\n" + json_table(m.provenance);
  out += "<details><summary>Machine the module was tuned on</summary>\n" + json_table(m.machine) +
         "</details>\n</section>\n";
  return out;
}

std::string summary_table(const TuningReportInput& input, const std::vector<OperatorBench>& benches,
                          const std::vector<std::string>& slugs) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < input.operators.size(); ++i) {
    const OperatorResult& op = input.operators[i];
    std::vector<CurvePoint> curve = tuning_curve(op.records, op.module.op.declared_shapes());
    std::vector<std::string> row = {
        op.module.op.describe(), std::to_string(op.records.size()),
        std::to_string(op.module.kernels.size()),
        curve.empty()
            ? "-"
            : fmt::format("{} ({} of {} shapes)", num(curve.back().geomean_gflops),
                          curve.back().shapes_measured, op.module.op.declared_shapes().size())};
    const OperatorBench& b = benches[i];
    auto ours = std::find_if(b.impls.begin(), b.impls.end(), is_ours);
    if (ours != b.impls.end()) {
      ImplSummary s = summarize(b, *ours);
      row.insert(row.end(), {num(s.gflops), s.shapes_with_peer ? num(s.ratio_to_best_peer, 2) : "-",
                             percent(s.roofline_fraction)});
    } else {
      row.insert(row.end(), {"not benchmarked", "", ""});
    }
    for (std::string& cell : row) cell = escape_html(cell);
    // The operator's name links to its section.
    row.insert(row.begin(),
               fmt::format("<a href=\"#{}\">{}</a>", escape_html(slugs[i]), escape_html(op.name)));
    rows.push_back(row);
  }
  return html_table_markup(
      {"operator", "definition", "trials", "kernels", "tuning: geomean of best, GFLOP/s",
       "module: geomean GFLOP/s", "ratio to best peer", "of roofline"},
      rows, 2);
}

std::string bench_section(const bench::BenchResult& r) {
  std::string out = "<h2>The benchmark</h2>\n<p>" + escape_html(r.roofline.describe()) + ".</p>\n";
  if (!r.compile_seconds.empty()) {
    std::vector<double> c = r.compile_seconds;
    std::sort(c.begin(), c.end());
    out += fmt::format(
        "<p>JIT compile time per kernel: median {:.1f} ms, max {:.1f} ms over {} "
        "kernels.</p>\n",
        1e3 * c[c.size() / 2], 1e3 * c.back(), c.size());
  }
  if (!r.notes.empty()) {
    out += "<ul>\n";
    for (const std::string& n : r.notes) out += "<li class=note>" + escape_html(n) + "</li>\n";
    out += "</ul>\n";
  }
  return out;
}

void write_text_file(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    f.close();
    if (!f) user_error("--report: cannot write {}", tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) user_error("--report: cannot write {} ({})", path.string(), ec.message());
}

}  // namespace

void write_tuning_report(const TuningReportInput& input, const std::string& dir) {
  if (dir.empty()) user_error("--report: expected a folder name");
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root))
    user_error("--report {}: cannot create the folder ({})", dir,
               ec ? ec.message() : "a file of that name exists");
  std::vector<OperatorBench> benches;
  std::vector<std::string> slugs;
  for (size_t i = 0; i < input.operators.size(); ++i) {
    benches.push_back(operator_bench(input.bench, input.operators[i].name));
    slugs.push_back(operator_slug(input.operators[i].name, i));
  }
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::string body = fmt::format(
      "<h1>Tuning report: {}</h1>\n<p>Written by <code>dietcode tune --report</code> on {}. "
      "{} operator{}; {}.</p>\n<p id=broken hidden></p>\n",
      escape_html(input.workload), date, input.operators.size(),
      input.operators.size() == 1 ? "" : "s",
      input.bench ? "the modules were benchmarked against the vendor libraries in the same run"
                  : "no benchmark ran (<code>--no-bench</code>)");
  body += summary_table(input, benches, slugs);
  body +=
      "<p>Ratio to best peer: the module's GFLOP/s over the fastest vendor library's at "
      "each M, geometric mean over M; above 1 is faster. Roofline: the module's GFLOP/s as a "
      "fraction of the shape's roofline, geometric mean.</p>\n";
  for (size_t i = 0; i < input.operators.size(); ++i)
    body += operator_section(input.operators[i], benches[i], root, slugs[i]);
  if (input.bench) body += bench_section(*input.bench);
  std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=en>\n<head>\n<meta charset=utf-8>\n"
      "<title>Tuning report: {}</title>\n<style>{}</style>\n{}\n</head>\n<body>\n{}</body>\n"
      "</html>\n",
      escape_html(input.workload), kStyle, kImageCheck, body);
  write_text_file(root / "index.html", page);
}

}  // namespace dietcode::report
