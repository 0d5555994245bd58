#include "ir/stmt.h"

#include "support/error.h"

namespace dietcode::ir {

Stmt make_for(Var var, Expr min, Expr extent, ForKind kind, Stmt body) {
  DC_INTERNAL_CHECK(min.type() == Type::Int && extent.type() == Type::Int, "loop bounds of {}",
                    var.name());
  return Stmt(std::make_shared<const ForNode>(std::move(var), std::move(min), std::move(extent),
                                              kind, std::move(body)));
}

Stmt make_block(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const auto* b = s.as<BlockNode>())
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<const BlockNode>(std::move(flat)));
}

Stmt make_let(Var var, Expr value, Stmt body) {
  DC_INTERNAL_CHECK(value.type() == Type::Int, "let {} of a non-integer", var.name());
  return Stmt(
      std::make_shared<const LetStmtNode>(std::move(var), std::move(value), std::move(body)));
}

Stmt make_if(Expr condition, Stmt then_case, Stmt else_case) {
  DC_INTERNAL_CHECK(condition.type() == Type::Bool, "if of a non-boolean");
  return Stmt(std::make_shared<const IfThenElseNode>(std::move(condition), std::move(then_case),
                                                     std::move(else_case)));
}

Stmt make_store(Buffer buffer, std::vector<Expr> indices, Expr value) {
  DC_INTERNAL_CHECK(indices.size() == buffer.rank(), "store to {} with {} indices", buffer.name(),
                    indices.size());
  DC_INTERNAL_CHECK(value.type() == Type::Float, "store of a non-float to {}", buffer.name());
  return Stmt(
      std::make_shared<const StoreNode>(std::move(buffer), std::move(indices), std::move(value)));
}

Stmt make_allocate(Buffer buffer, Stmt body) {
  DC_INTERNAL_CHECK(buffer.rank() == 1, "allocation of {} must be flat", buffer.name());
  return Stmt(std::make_shared<const AllocateNode>(std::move(buffer), std::move(body)));
}

Stmt make_pack_stage(PackStageNode node) {
  DC_INTERNAL_CHECK(node.width > 0 && node.panel.rank() == 1, "pack stage into {}",
                    node.panel.name());
  return Stmt(std::make_shared<const PackStageNode>(std::move(node)));
}

Stmt make_micro_kernel(MicroKernelNode node) {
  DC_INTERNAL_CHECK(node.mr > 0 && node.nr > 0 && node.unroll_k > 0 && node.k_streams > 0 &&
                        node.vector_width > 0 && (node.dot || node.nr % node.vector_width == 0),
                    "micro-kernel tile");
  DC_INTERNAL_CHECK(
      node.first_k_block.type() == Type::Bool && node.last_k_block.type() == Type::Bool,
      "micro-kernel k-block flags must be boolean");
  return Stmt(std::make_shared<const MicroKernelNode>(std::move(node)));
}

Stmt make_row_kernel(RowKernelNode node) {
  DC_INTERNAL_CHECK(node.vector_width > 0 && node.unroll > 0 && node.rows > 0,
                    "row kernel vector shape");
  DC_INTERNAL_CHECK(node.first_row.defined() && node.first_row.type() == Type::Int &&
                        node.row_axes.size() == node.row_axis_values.size(),
                    "row kernel rows");
  DC_INTERNAL_CHECK(!node.output_index.empty() && node.output_index.back().get() ==
                                                      static_cast<const ExprNode*>(node.col.get()),
                    "row kernel output {} must be indexed by the column last", node.output.name());
  DC_INTERNAL_CHECK(node.value.type() == Type::Float && node.length.type() == Type::Int,
                    "row kernel value and length types");
  return Stmt(std::make_shared<const RowKernelNode>(std::move(node)));
}

Stmt make_attention_kernel(AttentionKernelNode node) {
  DC_INTERNAL_CHECK(node.vector_width > 0 && node.query_tile > 0 && node.key_block > 0 &&
                        node.unroll > 0 && node.head_dim > 0,
                    "attention kernel shape");
  DC_INTERNAL_CHECK(node.q.defined() && node.k.defined() && node.v.defined() &&
                        node.output.defined() && (node.head_dim_lanes || node.q_panel.defined()),
                    "attention kernel buffers");
  DC_INTERNAL_CHECK(node.head_dim_lanes ? node.q_offset.defined() && !node.pack_q.defined()
                                        : node.pack_q.defined() && node.pack_q.as<PackStageNode>(),
                    "attention kernel packs Q with a pack stage, or reads it in place");
  return Stmt(std::make_shared<const AttentionKernelNode>(std::move(node)));
}

std::vector<Stmt> stmt_children(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::For:
      return {s.as<ForNode>()->body};
    case StmtKind::Block:
      return s.as<BlockNode>()->stmts;
    case StmtKind::LetStmt:
      return {s.as<LetStmtNode>()->body};
    case StmtKind::IfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      if (n->else_case.defined()) return {n->then_case, n->else_case};
      return {n->then_case};
    }
    case StmtKind::Allocate:
      return {s.as<AllocateNode>()->body};
    case StmtKind::AttentionKernel: {
      const auto* n = s.as<AttentionKernelNode>();
      if (n->pack_q.defined()) return {n->pack_q};
      return {};
    }
    default:
      return {};
  }
}

namespace {

TileOperand map_operand(const TileOperand& op, const std::function<Expr(const Expr&)>& g) {
  return TileOperand{op.buffer, g(op.offset), g(op.row_stride), g(op.k_stride)};
}

}  // namespace

Stmt map_stmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& f,
              const std::function<Expr(const Expr&)>& g) {
  switch (s.kind()) {
    case StmtKind::For: {
      const auto* n = s.as<ForNode>();
      return make_for(n->var, g(n->min), g(n->extent), n->for_kind, f(n->body));
    }
    case StmtKind::Block: {
      std::vector<Stmt> stmts;
      for (const Stmt& c : s.as<BlockNode>()->stmts) stmts.push_back(f(c));
      return make_block(std::move(stmts));
    }
    case StmtKind::LetStmt: {
      const auto* n = s.as<LetStmtNode>();
      return make_let(n->var, g(n->value), f(n->body));
    }
    case StmtKind::IfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      return make_if(g(n->condition), f(n->then_case),
                     n->else_case.defined() ? f(n->else_case) : Stmt());
    }
    case StmtKind::Store: {
      const auto* n = s.as<StoreNode>();
      std::vector<Expr> idx;
      for (const Expr& i : n->indices) idx.push_back(g(i));
      return make_store(n->buffer, std::move(idx), g(n->value));
    }
    case StmtKind::Allocate: {
      const auto* n = s.as<AllocateNode>();
      return make_allocate(n->buffer, f(n->body));
    }
    case StmtKind::PackStage: {
      PackStageNode n = *s.as<PackStageNode>();
      n.panel_offset = g(n.panel_offset);
      for (Expr& i : n.source_index) i = g(i);
      n.row_begin = g(n.row_begin);
      n.row_extent = g(n.row_extent);
      n.row_limit = g(n.row_limit);
      n.k_begin = g(n.k_begin);
      n.k_extent = g(n.k_extent);
      return make_pack_stage(std::move(n));
    }
    case StmtKind::MicroKernel: {
      MicroKernelNode n = *s.as<MicroKernelNode>();
      n.a = map_operand(n.a, g);
      n.b = map_operand(n.b, g);
      if (n.b_vector_stride.defined()) n.b_vector_stride = g(n.b_vector_stride);
      if (n.prefetch_next_offset.defined()) n.prefetch_next_offset = g(n.prefetch_next_offset);
      if (n.prefetch_next_spread.defined()) n.prefetch_next_spread = g(n.prefetch_next_spread);
      if (n.prefetch_next_first.defined()) n.prefetch_next_first = g(n.prefetch_next_first);
      if (n.prefetch_next_rate.defined()) n.prefetch_next_rate = g(n.prefetch_next_rate);
      n.k_extent = g(n.k_extent);
      n.c_offset = g(n.c_offset);
      n.c_row_stride = g(n.c_row_stride);
      n.m_valid = g(n.m_valid);
      n.n_valid = g(n.n_valid);
      n.first_k_block = g(n.first_k_block);
      n.last_k_block = g(n.last_k_block);
      for (EpilogueOperand& o : n.epilogue_inputs) {
        o.offset = g(o.offset);
        o.row_stride = g(o.row_stride);
      }
      return make_micro_kernel(std::move(n));
    }
    case StmtKind::RowKernel: {
      // Only the row length is index arithmetic; the element expressions are float
      // expressions the index passes have no business rewriting.
      RowKernelNode n = *s.as<RowKernelNode>();
      n.length = g(n.length);
      n.first_row = g(n.first_row);
      for (Expr& v : n.row_axis_values) v = g(v);
      return make_row_kernel(std::move(n));
    }
    case StmtKind::AttentionKernel: {
      AttentionKernelNode n = *s.as<AttentionKernelNode>();
      for (Expr* e : {&n.length, &n.q_offset, &n.k_offset, &n.v_offset, &n.output_offset,
                      &n.mask_offset, &n.row_begin, &n.rows})
        if (e->defined()) *e = g(*e);
      if (n.pack_q.defined()) n.pack_q = f(n.pack_q);
      return make_attention_kernel(std::move(n));
    }
  }
  internal_error(__FILE__, __LINE__, "unknown statement kind");
}

void visit_stmts(const Stmt& s, const std::function<void(const Stmt&)>& fn) {
  fn(s);
  for (const Stmt& c : stmt_children(s)) visit_stmts(c, fn);
}

}  // namespace dietcode::ir
