// Expression IR: small immutable nodes behind shared pointers (after Halide's Expr.h/IR.h).
//
// One list of node kinds (DC_EXPR_NODES) generates the ExprKind enum and the
// ExprVisitor interface. Variables and buffers are identified by object identity,
// never by their name string; names are for printing only.
//
//   Expr    a handle to an immutable ExprNode; arithmetic operators build nodes and
//           fold constants on the way.
//   Var     a scalar int64 variable: a shape variable, a loop index, or a let binding.
//   Buffer  a named multi-dimensional float32 array with a symbolic shape; Load reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dietcode::ir {

enum class Type : uint8_t { Int, Float, Bool };  // Int = int64, Float = fp32

#define DC_EXPR_NODES(X) \
  X(IntImm)              \
  X(FloatImm)            \
  X(Var)                 \
  X(Add)                 \
  X(Sub)                 \
  X(Mul)                 \
  X(Div)                 \
  X(Mod)                 \
  X(Min)                 \
  X(Max)                 \
  X(LT)                  \
  X(LE)                  \
  X(EQ)                  \
  X(And)                 \
  X(Select)              \
  X(Load)                \
  X(Call)                \
  X(Reduce)

enum class ExprKind : uint8_t {
#define DC_ENUM(name) name,
  DC_EXPR_NODES(DC_ENUM)
#undef DC_ENUM
};

const char* to_string(ExprKind kind);

struct ExprNode {
  ExprKind kind;
  Type type;
  ExprNode(ExprKind k, Type t) : kind(k), type(t) {}
  virtual ~ExprNode() = default;
};

class Expr {
 public:
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  Expr(int64_t value);  // NOLINT: implicit, so that `i * 4 + 1` reads naturally
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}

  bool defined() const { return node_ != nullptr; }
  ExprKind kind() const { return node_->kind; }
  Type type() const { return node_->type; }
  const ExprNode* get() const { return node_.get(); }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  bool same_as(const Expr& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// ---- leaves -----------------------------------------------------------------

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  explicit IntImmNode(int64_t v) : ExprNode(kKind, Type::Int), value(v) {}
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  explicit FloatImmNode(double v) : ExprNode(kKind, Type::Float), value(v) {}
};

struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  explicit VarNode(std::string n, Type t = Type::Int) : ExprNode(kKind, t), name(std::move(n)) {}
};

// A scalar variable, int64 unless another type is given (float: a value an emitter
// binds, such as a micro-kernel epilogue's product). Two Vars are the same variable only
// if they share a node.
class Var {
 public:
  Var() = default;
  explicit Var(std::string name, Type type = Type::Int)
      : node_(std::make_shared<const VarNode>(std::move(name), type)) {}
  const std::string& name() const { return node_->name; }
  const VarNode* get() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  operator Expr() const { return Expr(node_); }  // NOLINT
  bool operator==(const Var& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const VarNode> node_;
};

struct BufferNode {
  std::string name;
  std::vector<Expr> shape;  // row-major; a flat buffer has one dimension
};

// A float32 array with a symbolic shape. Identity is the node.
class Buffer {
 public:
  Buffer() = default;
  Buffer(std::string name, std::vector<Expr> shape)
      : node_(std::make_shared<const BufferNode>(BufferNode{std::move(name), std::move(shape)})) {}
  const std::string& name() const { return node_->name; }
  const std::vector<Expr>& shape() const { return node_->shape; }
  size_t rank() const { return node_->shape.size(); }
  const BufferNode* get() const { return node_.get(); }
  bool defined() const { return node_ != nullptr; }
  bool operator==(const Buffer& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const BufferNode> node_;
};

// ---- compound nodes -------------------------------------------------------------

// Add, Sub, Mul, Div (floor), Mod (floor), Min, Max, LT, LE, EQ, And.
struct BinaryNode : ExprNode {
  Expr a, b;
  BinaryNode(ExprKind k, Type t, Expr a_, Expr b_)
      : ExprNode(k, t), a(std::move(a_)), b(std::move(b_)) {}
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr condition, true_value, false_value;
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(kKind, t.type()),
        condition(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
};

struct LoadNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Load;
  Buffer buffer;
  std::vector<Expr> indices;  // one per buffer dimension
  LoadNode(Buffer buf, std::vector<Expr> idx)
      : ExprNode(kKind, Type::Float), buffer(std::move(buf)), indices(std::move(idx)) {}
};

// Elementwise functions. All take and give one float, except ToFloat, which converts an
// integer (a row length, say) to float so it can divide a sum.
//   Relu, Gelu (exact erf form), GeluTanh (tanh approximation), Exp, Sqrt, ToFloat.
enum class CallOp : uint8_t { Relu, Gelu, GeluTanh, Tanh, Exp, Sqrt, ToFloat };
const char* to_string(CallOp op);

struct CallNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  CallOp op;
  std::vector<Expr> args;
  CallNode(CallOp o, std::vector<Expr> a)
      : ExprNode(kKind, Type::Float), op(o), args(std::move(a)) {}
};

// The combining operator of a reduction: Sum (identity 0) or Max (identity -inf).
enum class ReduceOp : uint8_t { Sum, Max };
const char* to_string(ReduceOp op);

// op over axis in [0, extent) of body. Only tensor expressions contain it;
// lowering replaces it by loops, a micro-kernel (sums) or a row kernel.
struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Reduce;
  Var axis;
  Expr extent;
  Expr body;
  ReduceOp op;
  ReduceNode(Var ax, Expr ext, Expr b, ReduceOp o = ReduceOp::Sum)
      : ExprNode(kKind, Type::Float),
        axis(std::move(ax)),
        extent(std::move(ext)),
        body(std::move(b)),
        op(o) {}
};

// ---- constructors (fold constants; validate operand types) ---------------------

Expr make_float(double value);
Expr make_binary(ExprKind kind, Expr a, Expr b);
Expr select(Expr condition, Expr true_value, Expr false_value);
Expr load(const Buffer& buffer, std::vector<Expr> indices);
Expr call(CallOp op, std::vector<Expr> args);
Expr reduce_sum(Var axis, Expr extent, Expr body);
Expr reduce_max(Var axis, Expr extent, Expr body);
Expr reduce(ReduceOp op, Var axis, Expr extent, Expr body);

inline Expr operator+(Expr a, Expr b) {
  return make_binary(ExprKind::Add, std::move(a), std::move(b));
}
inline Expr operator-(Expr a, Expr b) {
  return make_binary(ExprKind::Sub, std::move(a), std::move(b));
}
inline Expr operator*(Expr a, Expr b) {
  return make_binary(ExprKind::Mul, std::move(a), std::move(b));
}
inline Expr operator/(Expr a, Expr b) {
  return make_binary(ExprKind::Div, std::move(a), std::move(b));
}
inline Expr operator%(Expr a, Expr b) {
  return make_binary(ExprKind::Mod, std::move(a), std::move(b));
}
inline Expr operator<(Expr a, Expr b) {
  return make_binary(ExprKind::LT, std::move(a), std::move(b));
}
inline Expr operator<=(Expr a, Expr b) {
  return make_binary(ExprKind::LE, std::move(a), std::move(b));
}
inline Expr operator&&(Expr a, Expr b) {
  return make_binary(ExprKind::And, std::move(a), std::move(b));
}
inline Expr min(Expr a, Expr b) {
  return make_binary(ExprKind::Min, std::move(a), std::move(b));
}
inline Expr max(Expr a, Expr b) {
  return make_binary(ExprKind::Max, std::move(a), std::move(b));
}
inline Expr eq(Expr a, Expr b) {
  return make_binary(ExprKind::EQ, std::move(a), std::move(b));
}
// ceil(a / b) for non-negative a and positive b.
inline Expr ceil_div(Expr a, Expr b) {
  return (a + (b - 1)) / b;
}

// Integer division and remainder rounding toward negative infinity (the semantics of
// Div and Mod everywhere: folding, evaluation, code generation, the reference).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);
// The value of a binary integer operator (Add..And; comparisons give 0 or 1).
int64_t apply_binary(ExprKind kind, int64_t x, int64_t y);

// The node of Add..And expressions, or null for other kinds.
const BinaryNode* as_binary(const Expr& e);

// Returns the constant value of an integer expression, if it is one.
const int64_t* as_const_int(const Expr& e);
bool is_const(const Expr& e, int64_t value);

// True if `e` mentions `var` anywhere.
bool uses_var(const Expr& e, const VarNode* var);

// Row-major flattening: the offset of element `indices` in `buffer`.
Expr flatten_index(const Buffer& buffer, const std::vector<Expr>& indices);

// Product of a buffer's shape.
Expr element_count(const Buffer& buffer);

}  // namespace dietcode::ir
