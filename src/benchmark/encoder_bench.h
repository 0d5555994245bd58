// `dietcode bench --workload bert-base-encoder`: the tuned BERT encoder (model/model.h)
// against the engines users would otherwise pick, on the same weights and inputs, in one
// run: libtorch (eager and TorchScript, a model-peer plugin, model_peer_api.h) and ONNX Runtime (a
// Node.js child process, bench/peers/ort/: a graph of standard ONNX ops and one of ORT's fused
// transformer ops, the faster kept per T). For every layer count, thread count and
// sequence length: the median latency of each engine (best and worst beside it), the
// peers' outputs compared with ours (max relative difference), the ratio of the best
// peer's latency to ours, and the roofline: max(FLOPs at the FMA peak, weight bytes at
// the bandwidth of the memory level that holds them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dietcode::bench {

struct EncoderBenchOptions {
  std::string model_dir = "dietcode-out/bert-base";
  // Empty: <model_dir>/random-<max layers>-layers.safetensors, written (seed 1) if absent.
  std::string weights;
  std::vector<int64_t> layers = {1, 12};
  std::vector<int> threads = {1};
  std::vector<int64_t> lengths;
  int repeat = 9;  // timed runs per engine and length in all, split over the rounds
  // Rounds, one after another, the engines' order reversed every other round; an engine's
  // latency is the median of its rounds' medians.
  int rounds = 3;
  std::string peers_dir;  // model-peer plugins; empty: beside the tool
  // The ORT script; empty: bench/peers/ort/bert_encoder.mjs of the source tree.
  std::string ort_script;
  std::vector<std::string> engines;  // subset of libtorch, onnxruntime; empty: all
  std::string csv_path, plot_path;
  bool quiet = false;
};

struct EncoderMeasurement {
  int64_t layers = 0;
  int threads = 1;
  int64_t t = 0;
  std::string
      engine;  // dietcode, libtorch, libtorch-script, onnxruntime-standard, onnxruntime-fused
  double median_ms = 0;              // the median of the rounds' medians
  double best_ms = 0, worst_ms = 0;  // the fastest and slowest single calls
  std::vector<double> round_ms;      // each round's median, in the order of the rounds
  double diff = 0;                   // max relative difference of the output from ours (0 for ours)
  double roofline_ms = 0;
};

struct EncoderBenchResult {
  std::vector<EncoderMeasurement> rows;
  std::vector<std::string> notes;  // engines skipped and why, load times
};

// Throws dietcode::Error for a bad option, a missing model directory or weights.
EncoderBenchResult run_encoder_bench(const EncoderBenchOptions& o);

// <model_dir>/random-<layers>-layers.safetensors: random BERT weights of the model
// directory's sizes (seed 1), written the first time. Throws dietcode::Error when the
// directory lacks a module the sizes come from.
std::string random_model_weights(const std::string& model_dir, int64_t layers, bool quiet);
// The table: per layer count and thread count, one line per T, geomean ratios.
std::string format_encoder_table(const EncoderBenchResult& r);
void write_encoder_csv(const EncoderBenchResult& r, const std::string& path);
void write_encoder_plot(const EncoderBenchResult& r, const std::string& path);

}  // namespace dietcode::bench
