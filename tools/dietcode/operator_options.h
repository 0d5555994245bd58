// The operator options shared by subcommands (--op, --N, --K, --M, --batch, --layout,
// --epilogue, --mask) and the operator they describe.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ops/spec.h"
#include "te/tensor.h"

namespace dietcode::tool {

struct OperatorOptions {
  std::string op = "dense";
  std::string layout = "NT";
  std::string epilogue = "none";
  std::string n = "64", k = "64";  // an integer, or "M" (batch_matmul: the shape variable)
  int64_t batch = 2;
  std::string m = "1,2,3,5,7,8,15,16,17,31,63,64,65,127,128,129";
  std::string range;        // declared range of M, "LO..HI"; default: min..max of the M list
  bool mask = false;        // attention: a [batch, T] additive mask input
  bool packed_qkv = false;  // attention: one QKV input, the packed layout
  double eps = 1e-5;        // layer_norm, add_layer_norm

  void add_to(CLI::App& app);
  // The M values to run.
  std::vector<int64_t> m_values() const;
  // The operator as data (M declared over --range, or min..max of --M).
  ops::OperatorSpec spec() const;
  // The operator, with M symbolic over the declared range. Throws dietcode::Error.
  te::Operator build() const;
  // The options as command-line text for one M, for reproduction lines.
  std::string command_line(int64_t m_value) const;
  // The full shape (values of every shape variable) for one M.
  std::vector<int64_t> shape_for(int64_t m_value) const { return {m_value}; }
};

}  // namespace dietcode::tool
