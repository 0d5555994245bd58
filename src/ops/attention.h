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
// attention_packed_qkv declares the same computation in the layout a transformer layer
// produces and consumes: the QKV projection's output QKV[batch, T, 3 * heads * D] (each
// token's row holds Q's heads, then K's, then V's, D values per head) and the output
// O[batch, T, heads * D], the heads of a token side by side, which the next projection
// reads as its [batch * T, hidden] input. Nothing is transposed: the kernel reads each
// head's rows with a stride.
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

// The packed layout above: inputs QKV [batch, T, 3 * heads * head_dim] and, with `mask`,
// mask [batch, T]; output [batch, T, heads * head_dim]. Same errors as attention().
te::Operator attention_packed_qkv(int64_t t_min, int64_t t_max, int64_t batch, int64_t heads,
                                  int64_t head_dim, bool mask,
                                  std::optional<double> scale = std::nullopt);

// What lowering needs to know about an attention operator.
struct AttentionOp {
  int64_t slices = 1;    // batch * heads
  int64_t heads = 1;     // per sequence (1 in the separate layout without a mask)
  int64_t head_dim = 1;  // D
  double scale = 1;
  bool packed_qkv = false;           // the layout of attention_packed_qkv
  ir::Var t;                         // the sequence length
  ir::Buffer q, k, v, mask, output;  // mask undefined; q, k, v one buffer when packed

  // Row `row` of slice `slice` of Q (which = 0), K (1) or V (2) starts at element
  // input_offset(which, slice) + row * input_row_stride() of its buffer; of the output
  // at output_offset(slice) + row * output_row_stride(). The D values of a row are
  // contiguous.
  ir::Expr input_offset(int which, const ir::Expr& slice) const;
  int64_t input_row_stride() const;
  ir::Expr output_offset(const ir::Expr& slice) const;
  int64_t output_row_stride() const;
  // The index of element (row, d) of slice `slice` of Q in Q's buffer.
  std::vector<ir::Expr> q_index(const ir::Expr& slice, const ir::Expr& row,
                                const ir::Expr& d) const;
};

// Recognizes an operator built by attention() or attention_packed_qkv() (checked by declaring it
// again from its shapes and scale and comparing the definitions). Throws dietcode::Error otherwise.
AttentionOp match_attention(const te::Operator& op);
// True when match_attention would succeed.
bool is_attention(const te::Operator& op);

}  // namespace dietcode::ops
