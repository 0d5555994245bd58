#include "codegen/llvm/vector_expr.h"

#include "codegen/llvm/activation.h"
#include "ir/printer.h"
#include "support/error.h"

namespace dietcode::codegen {

using namespace ir;

llvm::Value* emit_vector_expr(llvm::IRBuilder<>& b, const Expr& e, unsigned width,
                              const VectorLeaf& leaf) {
  auto vec = [&](const Expr& x) { return emit_vector_expr(b, x, width, leaf); };
  switch (e.kind()) {
    case ExprKind::FloatImm:
      return llvm::ConstantFP::get(llvm::FixedVectorType::get(b.getFloatTy(), width),
                                   e.as<FloatImmNode>()->value);
    case ExprKind::Call: {
      const auto* c = e.as<CallNode>();
      if (c->op == CallOp::ToFloat) return leaf(e);
      return emit_float_call(b, c->op, vec(c->args[0]));
    }
    case ExprKind::Select: {
      const auto* s = e.as<SelectNode>();
      return b.CreateSelect(vec(s->condition), vec(s->true_value), vec(s->false_value));
    }
    default:
      break;
  }
  const BinaryNode* bin = as_binary(e);
  if (!bin) return leaf(e);
  DC_INTERNAL_CHECK(bin->a.type() != Type::Int, "vector code: cannot vectorize {}", to_string(e));
  llvm::Value* x = vec(bin->a);
  llvm::Value* y = vec(bin->b);
  switch (e.kind()) {
    case ExprKind::Add:
      return b.CreateFAdd(x, y);
    case ExprKind::Sub:
      return b.CreateFSub(x, y);
    case ExprKind::Mul:
      return b.CreateFMul(x, y);
    case ExprKind::Div:
      return b.CreateFDiv(x, y);
    case ExprKind::Min:
      return b.CreateMinNum(x, y);
    case ExprKind::Max:
      return b.CreateMaxNum(x, y);
    case ExprKind::LT:
      return b.CreateFCmpOLT(x, y);
    case ExprKind::LE:
      return b.CreateFCmpOLE(x, y);
    case ExprKind::EQ:
      return b.CreateFCmpOEQ(x, y);
    case ExprKind::And:
      return b.CreateAnd(x, y);
    default:
      break;
  }
  internal_error(__FILE__, __LINE__, "vector code: cannot vectorize " + to_string(e));
}

}  // namespace dietcode::codegen
