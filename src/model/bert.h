// The BERT encoder as a graph of DietCode operators, and the distinct operators a model
// directory must hold tuned modules for.
//
// One layer (post-LayerNorm, as BERT-base), X [T, hidden]:
//   qkv   = X Wqkv^T + bqkv                        dense, epilogue bias       [T, 3 hidden]
//   ctx   = attention(qkv)                          attention, packed_qkv      [T, hidden]
//   a     = ctx Wo^T + bo + X                       dense, bias+residual       [T, hidden]
//   x1    = LayerNorm(a; gamma1, beta1, eps)        layer_norm                 [T, hidden]
//   h     = gelu(x1 W1^T + b1)                      dense, bias+gelu           [T, ffn]
//   f     = h W2^T + b2 + x1                        dense, bias+residual       [T, hidden]
//   out   = LayerNorm(f; gamma2, beta2, eps)        layer_norm                 [T, hidden]
//
// Wqkv is the checkpoint's query, key and value weights stacked (rows of Q's heads, then
// K's, then V's), which is the layout attention_packed_qkv reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/graph.h"

namespace dietcode::model {

struct BertConfig {
  int64_t layers = 12, hidden = 768, heads = 12, ffn = 3072;
  double eps = 1e-12;
  int64_t t_min = 1, t_max = 128;  // the sequence lengths the operators are tuned for
  // Throws dietcode::Error for non-positive sizes, hidden not a multiple of heads, eps <= 0.
  void check() const;
};

// The distinct operators of a layer, in graph order, each with the name its module file
// takes in a model directory (<name>.module.json): qkv, attention, out, ln, ffn1, ffn2
// (the second LayerNorm is the same operator as the first). What `dietcode tune
// bert-base` tunes.
struct NamedOperator {
  std::string name;
  ops::OperatorSpec op;
};
std::vector<NamedOperator> bert_operators(const BertConfig& c);

// The encoder of c.layers layers. Weight tensors carry the checkpoint's names, but for
// the stacked "encoder.layer.N.attention.self.qkv.weight" [3 hidden, hidden] and ".bias".
Graph bert_encoder(const BertConfig& c);

}  // namespace dietcode::model
