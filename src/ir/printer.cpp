#include "ir/printer.h"

#include <fmt/format.h>

#include "ir/visit.h"

namespace dietcode::ir {

namespace {

// Binding strength, for minimal parentheses.
int precedence(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::And:
      return 1;
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::EQ:
      return 2;
    case ExprKind::Add:
    case ExprKind::Sub:
      return 3;
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
      return 4;
    default:
      return 5;
  }
}

const char* infix(ExprKind k) {
  switch (k) {
    case ExprKind::Add:
      return " + ";
    case ExprKind::Sub:
      return " - ";
    case ExprKind::Mul:
      return "*";
    case ExprKind::Div:
      return "/";
    case ExprKind::Mod:
      return " % ";
    case ExprKind::LT:
      return " < ";
    case ExprKind::LE:
      return " <= ";
    case ExprKind::EQ:
      return " == ";
    case ExprKind::And:
      return " && ";
    default:
      return nullptr;
  }
}

std::string operand(const Expr& e, int parent, bool right) {
  std::string s = to_string(e);
  int p = precedence(e);
  return (p < parent || (right && p == parent)) ? "(" + s + ")" : s;
}

std::string join(const std::vector<Expr>& es) {
  std::string s;
  for (size_t i = 0; i < es.size(); ++i) s += (i ? ", " : "") + to_string(es[i]);
  return s;
}

std::string operand_text(const TileOperand& op) {
  return fmt::format("{}[{} + r*{} + k*{}]", op.buffer.name(), to_string(op.offset),
                     to_string(op.row_stride), to_string(op.k_stride));
}

void print(const Stmt& s, int indent, std::string& out) {
  std::string pad(indent * 2, ' ');
  switch (s.kind()) {
    case StmtKind::For: {
      const auto* n = s.as<ForNode>();
      out += fmt::format("{}{} {} in [{}, {} + {}):\n", pad,
                         n->for_kind == ForKind::Parallel ? "parallel for" : "for", n->var.name(),
                         to_string(n->min), to_string(n->min), to_string(n->extent));
      print(n->body, indent + 1, out);
      break;
    }
    case StmtKind::Block:
      for (const Stmt& c : s.as<BlockNode>()->stmts) print(c, indent, out);
      break;
    case StmtKind::LetStmt: {
      const auto* n = s.as<LetStmtNode>();
      out += fmt::format("{}let {} = {}\n", pad, n->var.name(), to_string(n->value));
      print(n->body, indent, out);
      break;
    }
    case StmtKind::IfThenElse: {
      const auto* n = s.as<IfThenElseNode>();
      out += fmt::format("{}if ({}):\n", pad, to_string(n->condition));
      print(n->then_case, indent + 1, out);
      if (n->else_case.defined()) {
        out += pad + "else:\n";
        print(n->else_case, indent + 1, out);
      }
      break;
    }
    case StmtKind::Store: {
      const auto* n = s.as<StoreNode>();
      out += fmt::format("{}{}[{}] = {}\n", pad, n->buffer.name(), join(n->indices),
                         to_string(n->value));
      break;
    }
    case StmtKind::Allocate: {
      const auto* n = s.as<AllocateNode>();
      out += fmt::format("{}allocate {}[{}] (float32, 64-byte aligned)\n", pad, n->buffer.name(),
                         to_string(n->buffer.shape()[0]));
      print(n->body, indent, out);
      break;
    }
    case StmtKind::PackStage: {
      const auto* n = s.as<PackStageNode>();
      out += fmt::format(
          "{}pack {}[{}] rows [{}, {} + {}) (zero past {}), k [{}, {} + {}) -> {} + {}, panels of "
          "{}\n",
          pad, n->source.name(), join(n->source_index), to_string(n->row_begin),
          to_string(n->row_begin), to_string(n->row_extent), to_string(n->row_limit),
          to_string(n->k_begin), to_string(n->k_begin), to_string(n->k_extent), n->panel.name(),
          to_string(n->panel_offset), n->width);
      break;
    }
    case StmtKind::RowKernel: {
      const auto* n = s.as<RowKernelNode>();
      out += fmt::format("{}row_kernel<{} lanes, unroll {}>({} in [{}, {} + {}), {} < {})\n", pad,
                         n->vector_width, n->unroll, n->row.name(), to_string(n->first_row),
                         to_string(n->first_row), n->rows, n->col.name(), to_string(n->length));
      for (size_t d = 0; d < n->row_axes.size(); ++d)
        out += fmt::format("{}  {} = {}\n", pad, n->row_axes[d].name(),
                           to_string(n->row_axis_values[d]));
      std::vector<Expr> row(n->output_index.begin(), n->output_index.end() - 1);
      for (const RowReductionStage& r : n->reductions)
        out += fmt::format("{}  pass {}: {}[{}] = {}\n", pad, r.pass, r.result.name(), join(row),
                           to_string(r.value));
      out += fmt::format("{}  {}[{}] = {}\n", pad, n->output.name(), join(n->output_index),
                         to_string(n->value));
      if (n->reuse >= 0)
        out += fmt::format(
            "{}  (pass {} also stores the summed elements of {} in {}; the output pass scales them "
            "by "
            "{})\n",
            pad, n->reductions[n->reuse].pass, n->reductions[n->reuse].result.name(),
            n->output.name(), to_string(n->scale));
      break;
    }
    case StmtKind::AttentionKernel: {
      const auto* n = s.as<AttentionKernelNode>();
      out += fmt::format(
          "{}attention_kernel<{} lanes{}, query tile {}, key block {}, unroll {}>(rows [{}, {} + "
          "{}) of {}, head size {}, scale {})\n",
          pad, n->vector_width, n->head_dim_lanes ? " along the head" : "", n->query_tile,
          n->key_block, n->unroll, to_string(n->row_begin), to_string(n->row_begin),
          to_string(n->rows), to_string(n->length), n->head_dim, n->scale);
      if (n->head_dim_lanes)
        out += fmt::format("{}  {} at {} (in place)\n", pad, n->q.name(), to_string(n->q_offset));
      out += fmt::format(
          "{}  {} at {}, {} at {} (rows {} apart), {} at {} (rows {} apart){}\n", pad, n->k.name(),
          to_string(n->k_offset), n->v.name(), to_string(n->v_offset), n->input_row_stride,
          n->output.name(), to_string(n->output_offset), n->output_row_stride,
          n->mask.defined() ? fmt::format("; {} at {}", n->mask.name(), to_string(n->mask_offset))
                            : "");
      if (n->pack_q.defined()) print(n->pack_q, indent + 1, out);
      break;
    }
    case StmtKind::MicroKernel: {
      const auto* n = s.as<MicroKernelNode>();
      out += fmt::format(
          "{}micro_kernel<{}x{}{}, unroll {}{}{}>(k < {}, valid {} x {})\n", pad, n->mr, n->nr,
          n->dot ? " dot products" : "", n->unroll_k,
          n->k_streams > 1 ? fmt::format(", {} k-streams", n->k_streams) : "",
          n->prefetch_b > 0 ? fmt::format(", B prefetched {} ahead", n->prefetch_b) : "",
          to_string(n->k_extent), to_string(n->m_valid), to_string(n->n_valid));
      std::string b_note = n->dot          ? " (in place, columns along k)"
                           : n->b_in_place ? " (in place, masked n tail)"
                                           : "";
      if (n->b_vector_stride.defined())
        b_note = fmt::format(" (vector v at +v*{}, masked n tail)", to_string(n->b_vector_stride));
      out += fmt::format("{}  A: {}\n{}  B: {}{}\n", pad, operand_text(n->a), pad,
                         operand_text(n->b), b_note);
      if (n->prefetch_next_rate.defined())
        out += fmt::format(
            "{}  prefetch into L2 each k-loop iteration at g: {} vector(s) of row ((({}) + g) * "
            "({})) >> {} of B + {}\n",
            pad, n->prefetch_next_lines, to_string(n->prefetch_next_first),
            to_string(n->prefetch_next_rate), ir::MicroKernelNode::kPrefetchRateShift,
            to_string(n->prefetch_next_offset));
      else if (n->prefetch_next_offset.defined())
        out += fmt::format("{}  prefetch into L2 each k-step: {} vector(s) of B's row + {}\n", pad,
                           n->prefetch_next_lines, to_string(n->prefetch_next_offset));
      out += fmt::format("{}  C: {}[{} + r*{} + c], first k-block: {}, last k-block: {}\n", pad,
                         n->c.name(), to_string(n->c_offset), to_string(n->c_row_stride),
                         to_string(n->first_k_block), to_string(n->last_k_block));
      if (n->epilogue.defined()) {
        out += fmt::format("{}  epilogue: {} = {}\n", pad, n->c.name(), to_string(n->epilogue));
        for (const EpilogueOperand& o : n->epilogue_inputs)
          out += fmt::format("{}    {} = {}[{} + r*{}{}]\n", pad, o.value.name(), o.buffer.name(),
                             to_string(o.offset), to_string(o.row_stride), o.along_n ? " + c" : "");
      }
      break;
    }
  }
}

}  // namespace

std::string to_string(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  if (const char* op = infix(e.kind())) {
    const BinaryNode* b = as_binary(e);
    int p = precedence(e);
    return operand(b->a, p, false) + op + operand(b->b, p, true);
  }
  switch (e.kind()) {
    case ExprKind::IntImm:
      return std::to_string(e.as<IntImmNode>()->value);
    case ExprKind::FloatImm:
      return fmt::format("{}f", e.as<FloatImmNode>()->value);
    case ExprKind::Var:
      return e.as<VarNode>()->name;
    case ExprKind::Min:
    case ExprKind::Max: {
      const BinaryNode* b = as_binary(e);
      return fmt::format("{}({}, {})", e.kind() == ExprKind::Min ? "min" : "max", to_string(b->a),
                         to_string(b->b));
    }
    case ExprKind::Select: {
      const auto* s = e.as<SelectNode>();
      return fmt::format("select({}, {}, {})", to_string(s->condition), to_string(s->true_value),
                         to_string(s->false_value));
    }
    case ExprKind::Load: {
      const auto* l = e.as<LoadNode>();
      return fmt::format("{}[{}]", l->buffer.name(), join(l->indices));
    }
    case ExprKind::Call: {
      const auto* c = e.as<CallNode>();
      return fmt::format("{}({})", to_string(c->op), join(c->args));
    }
    case ExprKind::Reduce: {
      const auto* r = e.as<ReduceNode>();
      return fmt::format("{}({} < {}: {})", to_string(r->op), r->axis.name(), to_string(r->extent),
                         to_string(r->body));
    }
    default:
      return "?";
  }
}

std::string to_string(const Stmt& s) {
  std::string out;
  if (s.defined()) print(s, 0, out);
  return out;
}

}  // namespace dietcode::ir
