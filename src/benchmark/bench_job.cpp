#include "benchmark/bench_job.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "benchmark/report.h"
#include "support/error.h"

namespace dietcode::bench {

namespace {

// "run/qkv.module.json" -> "qkv".
std::string module_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  for (const char* suffix : {".json", ".module"})
    if (stem.size() > std::strlen(suffix) &&
        stem.compare(stem.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      stem.resize(stem.size() - std::strlen(suffix));
  return stem;
}

}  // namespace

std::vector<std::pair<std::string, runtime::ModuleSpec>> load_labelled_modules(
    const std::vector<std::string>& paths) {
  std::map<std::string, int> modes;
  std::vector<runtime::ModuleSpec> specs;
  for (const std::string& path : paths) {
    specs.push_back(runtime::load_module_spec(path));
    ++modes[runtime::info_text(specs.back().provenance, "mode", "module")];
  }
  std::map<std::string, int> names;
  for (const runtime::ModuleSpec& m : specs) ++names[runtime::info_text(m.provenance, "name", "")];
  // A module tuned with --op is named "operator", which tells nothing: its file names it.
  auto name_of = [&](size_t i) {
    std::string name = runtime::info_text(specs[i].provenance, "name", "");
    return name.empty() || name == "operator" ? module_stem(paths[i]) : name;
  };
  std::vector<std::pair<std::string, runtime::ModuleSpec>> labelled;
  for (size_t i = 0; i < specs.size(); ++i) {
    std::string mode = runtime::info_text(specs[i].provenance, "mode", "module");
    std::string name = runtime::info_text(specs[i].provenance, "name", "");
    // The mode tells modules apart only beside a module of another mode (joint against
    // per-shape); one module alone is labelled by what it computes.
    std::string label = specs.size() > 1 && modes[mode] == 1 ? mode
                        : names[name] == 1                   ? name_of(i)
                                                             : module_stem(paths[i]);
    labelled.push_back({label, specs[i]});
  }
  // Modules of one name from different runs (run-a/qkv.module.json, run-b/qkv.module.json)
  // are told apart by their folder, then by their whole path: one label per module, or one
  // would be measured in the other's place.
  auto relabel_clashes = [&](const std::function<std::string(size_t)>& label_of) {
    std::map<std::string, int> count;
    for (const auto& l : labelled) ++count[l.first];
    for (size_t i = 0; i < labelled.size(); ++i)
      if (count[labelled[i].first] > 1) labelled[i].first = label_of(i);
  };
  relabel_clashes([&](size_t i) {
    return (std::filesystem::path(paths[i]).parent_path().filename() / name_of(i)).string();
  });
  relabel_clashes([&](size_t i) { return paths[i]; });
  return labelled;
}

std::vector<schedule::MicroKernelSchedule> read_kernel_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) user_error("--kernels {}: cannot open the file", path);
  std::vector<schedule::MicroKernelSchedule> out;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    if (line.find_first_not_of(" \t") == std::string::npos ||
        line[line.find_first_not_of(" \t")] == '#')
      continue;
    try {
      out.push_back(schedule::schedule_from_json_text(line));
    } catch (const Error& e) {
      user_error("--kernels {}: line {}: {}", path, number, e.what());
    }
  }
  if (out.empty()) user_error("--kernels {}: no schedule in the file", path);
  return out;
}

BenchResult run_bench_job(BenchJob job) {
  for (auto& module : load_labelled_modules(job.module_paths))
    job.options.modules.push_back(std::move(module));
  // Output paths are checked before minutes of measurement, not after.
  if (!job.plot_path.empty()) check_plot_path(job.plot_path);
  if (!job.csv_path.empty() && !std::ofstream(job.csv_path, std::ios::app))
    user_error("--csv {}: cannot open the file for writing", job.csv_path);
  if (job.options.peers_dir.empty()) job.options.peers_dir = default_peers_dir();
  if (!job.kernels_path.empty()) job.options.kernels = read_kernel_file(job.kernels_path);
  BenchResult r = run_bench(job.options);
  fmt::print("{}", format_table(r));
  if (job.winners)
    for (const Measurement& m : r.rows)
      fmt::print("winner {} M={} {}: {} ({:.1f} {})\n", m.workload, m.m, m.impl, m.variant,
                 m.gflops, m.unit);
  if (!job.csv_path.empty()) write_csv(r, job.csv_path);
  if (!job.plot_path.empty()) write_plot(r, job.plot_path);
  return r;
}

}  // namespace dietcode::bench
