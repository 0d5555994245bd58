// Loop IR: statements with symbolic extents, produced by lowering and consumed by
// code generation. Like expressions, statements are immutable nodes behind handles,
// and one list of kinds (DC_STMT_NODES) drives the enum.
//
// Two nodes carry the project's structure rather than plain loops:
//   PackStage    copy a block of an input into zero-padded panels (local padding);
//                expanded into loops by the insert_packing pass.
//   MicroKernel  the register-tiled MR x NR update of an output tile over a k-block;
//                code generation emits explicit vector code for it.
//   RowKernel    one row of a row operator (reductions along the row, then the
//                elementwise output); code generation emits vector code with masked tails.
//   AttentionKernel  one query tile of one attention head (online softmax over key
//                blocks); code generation emits it as vector code with stack buffers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace dietcode::ir {

#define DC_STMT_NODES(X) \
  X(For)                 \
  X(Block)               \
  X(LetStmt)             \
  X(IfThenElse)          \
  X(Store)               \
  X(Allocate)            \
  X(PackStage)           \
  X(MicroKernel)         \
  X(RowKernel)           \
  X(AttentionKernel)

enum class StmtKind : uint8_t {
#define DC_ENUM(name) name,
  DC_STMT_NODES(DC_ENUM)
#undef DC_ENUM
};

struct StmtNode {
  StmtKind kind;
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  StmtKind kind() const { return node_->kind; }
  const StmtNode* get() const { return node_.get(); }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

enum class ForKind : uint8_t { Serial, Parallel };

// for (var = min; var < min + extent; ++var) body
struct ForNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::For;
  Var var;
  Expr min, extent;
  ForKind for_kind;
  Stmt body;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, Stmt b)
      : StmtNode(kKind),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        body(std::move(b)) {}
};

struct BlockNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Block;
  std::vector<Stmt> stmts;
  explicit BlockNode(std::vector<Stmt> s) : StmtNode(kKind), stmts(std::move(s)) {}
};

struct LetStmtNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::LetStmt;
  Var var;
  Expr value;
  Stmt body;
  LetStmtNode(Var v, Expr val, Stmt b)
      : StmtNode(kKind), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
};

struct IfThenElseNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::IfThenElse;
  Expr condition;
  Stmt then_case, else_case;  // else_case may be undefined
  IfThenElseNode(Expr c, Stmt t, Stmt e)
      : StmtNode(kKind),
        condition(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
};

struct StoreNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Store;
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  StoreNode(Buffer b, std::vector<Expr> i, Expr v)
      : StmtNode(kKind), buffer(std::move(b)), indices(std::move(i)), value(std::move(v)) {}
};

// A scratch buffer (64-byte aligned, uninitialized) live for the body's duration.
struct AllocateNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::Allocate;
  Buffer buffer;  // flat; its shape[0] is the element count
  Stmt body;
  AllocateNode(Buffer b, Stmt body_)
      : StmtNode(kKind), buffer(std::move(b)), body(std::move(body_)) {}
};

// Packs rows [row_begin, row_begin + row_extent) and reduction indices
// [k_begin, k_begin + k_extent) of a contraction operand into panels of `width`
// rows: panel p holds k_extent groups of `width` consecutive values, at
// panel[panel_offset + p*k_extent*width + k*width + r]. Rows at or past row_limit
// are zero (local padding), so the micro-kernel never checks bounds.
struct PackStageNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::PackStage;
  Buffer panel;
  Expr panel_offset;
  int64_t width;
  Buffer source;
  // The source element for (row, k), in terms of the two variables below.
  std::vector<Expr> source_index;
  Var row, k;
  Expr row_begin, row_extent, row_limit, k_begin, k_extent;
  bool k_contiguous;  // the source is contiguous along k (pick the copy loop order)
  PackStageNode() : StmtNode(kKind) {}
};

// An operand of a micro-kernel: element (r, k) is buffer[offset + r*row_stride + k*k_stride].
struct TileOperand {
  Buffer buffer;
  Expr offset, row_stride, k_stride;
};

// An input of a micro-kernel's epilogue: element (i, j) of the tile reads
// buffer[offset + i*row_stride + (along_n ? j : 0)] (a bias along n, a residual [m, n],
// a per-row scale); `value` names that element in the epilogue expression.
struct EpilogueOperand {
  Buffer buffer;
  Expr offset, row_stride;
  bool along_n = false;
  Var value;
};

// C[i, j] (+)= sum_k A[i, k] * B[j, k] over an MR x NR tile, i < m_valid, j < n_valid.
// On the first k-block the tile starts from zero, otherwise from C; on the last
// k-block the epilogue, an elementwise float expression of `product` (the sum) and of
// the epilogue operands' values, replaces each element before the store. B's rows
// are contiguous along j (row_stride 1) so that NR/width vector loads feed each k-step.
// b_in_place: B is the operator's own tensor, not a zero-padded panel, so columns at or
// past n_valid may lie outside it: the loads of an edge tile are masked.
// b_vector_stride (defined for pre-packed B): B is stored in panels one vector wide, so
// the row's vector v starts at b.offset + v*b_vector_stride + k*b.k_stride instead of
// v*vector_width; panels hold only the operator's columns (rounded up to the vector
// width), so the loads of an edge tile are masked too.
struct MicroKernelNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::MicroKernel;
  int64_t mr, nr, unroll_k;
  int64_t k_streams = 1;   // contiguous k ranges walked at once (at least the tile's copies)
  int64_t prefetch_b = 0;  // k-steps ahead that each k-step prefetches B's row (0: none)
  int64_t k_block = 0;     // the length of most k blocks (the schedule's kc), or 0 if unknown
  int64_t vector_width;    // fp32 lanes of the schedule's ISA; nr is a multiple
  TileOperand a, b;
  Expr k_extent;
  Buffer c;
  Expr c_offset, c_row_stride;
  Expr m_valid, n_valid;
  Expr first_k_block, last_k_block;  // booleans
  Var product;
  Expr epilogue;  // undefined: C = the sum
  std::vector<EpilogueOperand> epilogue_inputs;
  bool b_in_place = false;
  Expr b_vector_stride;  // undefined: B's rows are contiguous
  // Floats from B's row at a k-step to the first line each k-step prefetches into L2 (of the
  // B the tile loops read next; see schedule::MicroKernelSchedule::prefetch_next);
  // undefined: none.
  Expr prefetch_next_offset;
  // The vectors of a row of B (n inner: one, the line at that offset).
  int64_t prefetch_next_lines = 1;
  Expr prefetch_next_spread;
  // Defined (m the inner tile loop): the next tile's rows of the k-block (each row the
  // prefetch_next_lines vectors of B's row, b_vector_stride apart) are spread evenly over
  // the calls that share them instead. prefetch_next_offset is then the floats from a row of
  // the tile's B to the same row of the next tile's, and r(g) = ((prefetch_next_first + g) *
  // prefetch_next_rate) >> kPrefetchRateShift the block's row where the call's k-step g (its
  // row in the block; with k streams the iteration's first row times their number) stands
  // in its share. A
  // k-loop iteration starting at g prefetches row r(g), and the rows after it up to one per
  // k-step where prefetch_next_spread holds: r advances at most one row per `unroll` k-steps
  // where it does not, so consecutive iterations leave no row out.
  Expr prefetch_next_first, prefetch_next_rate;
  static constexpr int64_t kPrefetchRateShift = 20;
  // Vectors along k instead of n: MR x NR dot products of A's rows and B's columns, both
  // read in place with unit stride along k (b.row_stride: between B's columns); nr is any
  // count of columns. See schedule::MicroKernelSchedule::vector_axis.
  bool dot = false;
  MicroKernelNode() : StmtNode(kKind) {}
};

// A reduction along the row inside a RowKernel: result = value, where `value` holds the
// Reduce node `reduce` = op over axis < length of `element`. Reductions with the same
// `pass` are accumulated in one sweep over the row.
struct RowReductionStage {
  ReduceOp op;
  Var axis;
  Expr element, reduce, value;
  Buffer result;  // read as result[rows...] by later stages and the output
  int pass = 0;
};

// `rows` consecutive rows of a row operator, first_row .. first_row + rows - 1 (flat row
// numbers). For each, the kernel binds `row` to its number and each of `row_axes` to the
// matching expression of `row_axis_values` (in terms of `row`); the element expressions read
// those. Runs the reduction passes in order, then stores
// output[output_index] = value for col in [0, length), vector_width lanes at a time
// (unroll vectors per main-loop step), the tail masked. The rows advance together: every
// pass sweeps the columns once for all of them, with their own accumulators, so that their
// chains (the horizontal reductions above all) overlap instead of following one another.
struct RowKernelNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::RowKernel;
  int64_t vector_width = 8, unroll = 1, rows = 1;
  Expr first_row;
  Var row;
  std::vector<Var> row_axes;
  std::vector<Expr> row_axis_values;
  Expr length;
  std::vector<RowReductionStage> reductions;
  Var col;
  Buffer output;
  std::vector<Expr> output_index;  // its last index is `col`
  Expr value;
  // When value = element(reductions[reuse]) * scale (softmax's exp(x - max) * inv_sum),
  // the pass of that reduction stores its elements in the output and the output pass
  // only multiplies them by `scale`: the element is computed once. -1: no reuse.
  int reuse = -1;
  Expr scale;
  RowKernelNode() : StmtNode(kKind) {}
};

// One query tile of one (batch x head) slice of fused attention (ops/attention.h), the
// variables naming slice and tile bound by enclosing loops: query rows
// [row_begin, row_begin + rows) of O = softmax(scale Q K^T [+ mask]) V over all `length`
// keys. K's and V's rows start at `k_offset` and `v_offset` (the slice's first element),
// `input_row_stride` elements apart; O's at `output_offset`, `output_row_stride` apart
// (head_dim in the separate layout; a token's row in the packed one); the mask at `mask_offset`
// (its row for the slice's sequence). Schedule parameters as in schedule/attention_schedule.h;
// query rows fill ceil(query_tile / vector_width) vectors. `pack_q` packs the tile's rows of Q into
// `q_panel` (head_dim groups of the lanes, rows past T zero): the kernel's Q^T, held on the
// kernel's stack. With `head_dim_lanes` the lanes hold D instead: Q's rows are read in place
// from `q_offset` (rows `input_row_stride` apart), nothing is packed (`pack_q` and `q_panel`
// undefined).
struct AttentionKernelNode : StmtNode {
  static constexpr StmtKind kKind = StmtKind::AttentionKernel;
  int64_t vector_width = 8, query_tile = 1, key_block = 1, unroll = 1, head_dim = 1;
  double scale = 1;
  bool head_dim_lanes = false;
  Buffer q, k, v, mask, output;  // mask undefined when there is none
  Buffer q_panel;
  Stmt pack_q;  // a PackStage into q_panel
  int64_t input_row_stride = 1, output_row_stride = 1;
  Expr length, q_offset, k_offset, v_offset, output_offset, mask_offset, row_begin, rows;
  AttentionKernelNode() : StmtNode(kKind) {}
};

// ---- constructors -----------------------------------------------------------

Stmt make_for(Var var, Expr min, Expr extent, ForKind kind, Stmt body);
Stmt make_block(std::vector<Stmt> stmts);  // flattens nested blocks, drops undefined
Stmt make_let(Var var, Expr value, Stmt body);
Stmt make_if(Expr condition, Stmt then_case, Stmt else_case = Stmt());
Stmt make_store(Buffer buffer, std::vector<Expr> indices, Expr value);
Stmt make_allocate(Buffer buffer, Stmt body);
Stmt make_pack_stage(PackStageNode node);
Stmt make_micro_kernel(MicroKernelNode node);
Stmt make_row_kernel(RowKernelNode node);
Stmt make_attention_kernel(AttentionKernelNode node);

// ---- generic traversal (see visit.h for expressions) --------------------------

std::vector<Stmt> stmt_children(const Stmt& s);
// Rebuilds `s` with its statement children replaced by `f(child)` and every
// expression field replaced by `g(expr)`.
Stmt map_stmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& f,
              const std::function<Expr(const Expr&)>& g);
// Calls fn on every statement, parents first.
void visit_stmts(const Stmt& s, const std::function<void(const Stmt&)>& fn);

}  // namespace dietcode::ir
