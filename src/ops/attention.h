// Scaled dot-product attention as one operator, per (batch x head) slice b:
//
//   O[b, i, d] = sum_j softmax_j(S[b, i, j]) V[b, j, d],
//   S[b, i, j] = scale * sum_k Q[b, i, k] K[b, j, k]  (+ mask[b / heads, j])
//
// Q, K, V and O are [batch * heads, T, D]; T, the sequence length, is the operator's one
// shape variable, the same on the query and the key side; D (the head size) and
// batch * heads are constants. The optional mask is additive, one value per key position
// and sequence of the batch: [batch, T], broadcast over the heads of that sequence and
// over query rows (0 keeps a key, -inf or a large negative number hides it, as for the
// padding of a padded batch). scale defaults to 1 / sqrt(D).
//
// The tensor expression is the float64 reference (reference/): the scores as a stage
// over [batch * heads, T, T], the row maximum and the reciprocal row sum as row stages,
// the output as a sum over keys. Compiled code never stores the scores: an
// AttentionSchedule (schedule/attention_schedule.h) lowers it into one fused kernel with
// an online softmax. match_attention recognizes this exact form.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "te/tensor.h"

namespace dietcode::ops {

// The symbolic dimension T in a shape list.
constexpr int64_t kT = -1;

struct AttentionShapes {
  std::vector<int64_t> q, k, v;  // [batch * heads, kT, D] each
  std::vector<int64_t> mask;     // [batch, kT], or empty for no mask
};

// The shapes of `batch` sequences of `heads` heads of size `head_dim`.
AttentionShapes attention_shapes(int64_t batch, int64_t heads, int64_t head_dim, bool mask);

// Throws dietcode::Error naming the input and what was expected: an empty or non-positive
// range of T (T = 0), shapes that are not [batch * heads, T, D], head counts (first
// dimension), head sizes or T that differ among Q, K and V, a mask that is not
// [batch, T], heads that do not divide Q's first dimension, a head size over 1024, a
// scale that is not finite and positive.
te::Operator attention(int64_t t_min, int64_t t_max, int64_t heads, const AttentionShapes& shapes,
                       std::optional<double> scale = std::nullopt);

// What lowering needs to know about an attention operator.
struct AttentionOp {
  int64_t slices = 1;    // batch * heads
  int64_t heads = 1;     // per sequence (1 when there is no mask: nothing depends on it)
  int64_t head_dim = 1;  // D
  double scale = 1;
  ir::Var t;                         // the sequence length
  ir::Buffer q, k, v, mask, output;  // mask undefined when there is none
};

// Recognizes an operator built by attention() (checked by declaring it again from its
// shapes and scale and comparing the definitions). Throws dietcode::Error otherwise.
AttentionOp match_attention(const te::Operator& op);
// True when match_attention would succeed.
bool is_attention(const te::Operator& op);

}  // namespace dietcode::ops
