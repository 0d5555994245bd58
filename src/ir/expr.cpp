#include "ir/expr.h"

#include <cmath>

#include "ir/visit.h"
#include "support/error.h"

namespace dietcode::ir {

const char* to_string(ExprKind kind) {
  switch (kind) {
#define DC_NAME(name)  \
  case ExprKind::name: \
    return #name;
    DC_EXPR_NODES(DC_NAME)
#undef DC_NAME
  }
  return "?";
}

const char* to_string(CallOp op) {
  switch (op) {
    case CallOp::Relu:
      return "relu";
    case CallOp::Gelu:
      return "gelu";
    case CallOp::GeluTanh:
      return "gelu_tanh";
    case CallOp::Tanh:
      return "tanh";
    case CallOp::Exp:
      return "exp";
    case CallOp::Sqrt:
      return "sqrt";
    case CallOp::ToFloat:
      return "float";
  }
  return "?";
}

const char* to_string(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : "max";
}

Expr::Expr(int64_t value) : node_(std::make_shared<const IntImmNode>(value)) {}

Expr make_float(double value) {
  return Expr(std::make_shared<const FloatImmNode>(value));
}

const int64_t* as_const_int(const Expr& e) {
  const auto* imm = e.defined() ? e.as<IntImmNode>() : nullptr;
  return imm ? &imm->value : nullptr;
}

bool is_const(const Expr& e, int64_t value) {
  const int64_t* c = as_const_int(e);
  return c && *c == value;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  return a - floor_div(a, b) * b;
}

int64_t apply_binary(ExprKind kind, int64_t x, int64_t y) {
  switch (kind) {
    case ExprKind::Add:
      return x + y;
    case ExprKind::Sub:
      return x - y;
    case ExprKind::Mul:
      return x * y;
    case ExprKind::Div:
    case ExprKind::Mod:
      DC_INTERNAL_CHECK(y != 0, "{} by zero", to_string(kind));
      return kind == ExprKind::Div ? floor_div(x, y) : floor_mod(x, y);
    case ExprKind::Min:
      return std::min(x, y);
    case ExprKind::Max:
      return std::max(x, y);
    case ExprKind::LT:
      return x < y;
    case ExprKind::LE:
      return x <= y;
    case ExprKind::EQ:
      return x == y;
    case ExprKind::And:
      return x && y;
    default:
      break;
  }
  internal_error(__FILE__, __LINE__, std::string("not a binary operator: ") + to_string(kind));
}

namespace {

// Add, Sub, Mul, Div, Mod, Min, Max: integer in, integer out.
bool is_arithmetic(ExprKind k) {
  return k == ExprKind::Add || k == ExprKind::Sub || k == ExprKind::Mul || k == ExprKind::Div ||
         k == ExprKind::Mod || k == ExprKind::Min || k == ExprKind::Max;
}

bool is_comparison(ExprKind k) {
  return k == ExprKind::LT || k == ExprKind::LE || k == ExprKind::EQ;
}

}  // namespace

const BinaryNode* as_binary(const Expr& e) {
  ExprKind k = e.kind();
  bool binary = is_arithmetic(k) || is_comparison(k) || k == ExprKind::And;
  return binary ? static_cast<const BinaryNode*>(e.get()) : nullptr;
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  DC_INTERNAL_CHECK(a.defined() && b.defined(), "{} of an undefined operand", to_string(kind));
  if (kind == ExprKind::And) {
    DC_INTERNAL_CHECK(a.type() == Type::Bool && b.type() == Type::Bool, "And needs booleans");
    return Expr(std::make_shared<const BinaryNode>(kind, Type::Bool, a, b));
  }
  DC_INTERNAL_CHECK(a.type() == b.type() && a.type() != Type::Bool, "{} of mismatched types",
                    to_string(kind));
  const int64_t* ca = as_const_int(a);
  const int64_t* cb = as_const_int(b);
  if (ca && cb && is_arithmetic(kind)) return apply_binary(kind, *ca, *cb);
  if (a.type() == Type::Int) {
    // Identities that keep index arithmetic small and readable.
    if (kind == ExprKind::Add && ca && *ca == 0) return b;
    if ((kind == ExprKind::Add || kind == ExprKind::Sub) && cb && *cb == 0) return a;
    if (kind == ExprKind::Mul && ((ca && *ca == 0) || (cb && *cb == 0))) return 0;
    if (kind == ExprKind::Mul && ca && *ca == 1) return b;
    if ((kind == ExprKind::Mul || kind == ExprKind::Div) && cb && *cb == 1) return a;
    if (kind == ExprKind::Mod && cb && *cb == 1) return 0;
    if (kind == ExprKind::Sub && a.same_as(b)) return 0;
    if ((kind == ExprKind::Min || kind == ExprKind::Max) && a.same_as(b)) return a;
    // Keep constants on the right of commutative operators.
    if (ca && !cb &&
        (kind == ExprKind::Add || kind == ExprKind::Mul || kind == ExprKind::Min ||
         kind == ExprKind::Max))
      std::swap(a, b);
  }
  Type type = is_comparison(kind) ? Type::Bool : a.type();
  return Expr(std::make_shared<const BinaryNode>(kind, type, std::move(a), std::move(b)));
}

Expr select(Expr condition, Expr true_value, Expr false_value) {
  DC_INTERNAL_CHECK(condition.type() == Type::Bool, "select condition must be boolean");
  DC_INTERNAL_CHECK(true_value.type() == false_value.type(), "select arms differ in type");
  return Expr(std::make_shared<const SelectNode>(std::move(condition), std::move(true_value),
                                                 std::move(false_value)));
}

Expr load(const Buffer& buffer, std::vector<Expr> indices) {
  DC_INTERNAL_CHECK(indices.size() == buffer.rank(), "load of {} with {} indices, rank {}",
                    buffer.name(), indices.size(), buffer.rank());
  for (const Expr& i : indices) DC_INTERNAL_CHECK(i.type() == Type::Int, "non-integer index");
  return Expr(std::make_shared<const LoadNode>(buffer, std::move(indices)));
}

Expr call(CallOp op, std::vector<Expr> args) {
  Type arg_type = op == CallOp::ToFloat ? Type::Int : Type::Float;
  DC_INTERNAL_CHECK(args.size() == 1 && args[0].type() == arg_type, "{} takes one {}",
                    to_string(op), arg_type == Type::Int ? "integer" : "float");
  return Expr(std::make_shared<const CallNode>(op, std::move(args)));
}

Expr reduce(ReduceOp op, Var axis, Expr extent, Expr body) {
  DC_INTERNAL_CHECK(body.type() == Type::Float, "reduce_{} of a non-float body", to_string(op));
  return Expr(
      std::make_shared<const ReduceNode>(std::move(axis), std::move(extent), std::move(body), op));
}

Expr reduce_sum(Var axis, Expr extent, Expr body) {
  return reduce(ReduceOp::Sum, std::move(axis), std::move(extent), std::move(body));
}

Expr reduce_max(Var axis, Expr extent, Expr body) {
  return reduce(ReduceOp::Max, std::move(axis), std::move(extent), std::move(body));
}

bool uses_var(const Expr& e, const VarNode* var) {
  bool found = false;
  visit_exprs(e, [&](const Expr& sub) {
    if (sub.get() == var) found = true;
  });
  return found;
}

Expr flatten_index(const Buffer& buffer, const std::vector<Expr>& indices) {
  DC_INTERNAL_CHECK(indices.size() == buffer.rank(), "flattening {} indices of {}", indices.size(),
                    buffer.name());
  Expr offset = 0;
  for (size_t d = 0; d < indices.size(); ++d) offset = offset * buffer.shape()[d] + indices[d];
  return offset;
}

Expr element_count(const Buffer& buffer) {
  Expr n = 1;
  for (const Expr& e : buffer.shape()) n = n * e;
  return n;
}

}  // namespace dietcode::ir
