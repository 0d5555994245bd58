// Evaluation of integer and boolean expressions at run time (buffer sizes,
// extents, schedule checks) from the values of the variables they mention.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"

namespace dietcode::ir {

using Bindings = std::unordered_map<const VarNode*, int64_t>;

// Throws InternalError if `e` mentions an unbound variable or a tensor.
int64_t evaluate_int(const Expr& e, const Bindings& bindings);

// An integer expression of `vars` compiled once into a postfix program that evaluates
// without allocating or looking anything up: the runtime's per-call buffer sizes, where
// evaluate_int's tree walk and hash lookups cost as much as a small kernel.
class IntProgram {
 public:
  IntProgram() = default;
  // Throws InternalError if `e` mentions a variable not in `vars`, or a tensor.
  IntProgram(const Expr& e, const std::vector<Var>& vars);
  // `values[i]` is the value of vars[i].
  int64_t operator()(const int64_t* values) const;

 private:
  static constexpr int kMaxDepth = 32;
  // A product of constants and variables (a buffer's element count, the common case)
  // evaluates as coefficient x the variables, without the stack machine.
  static constexpr int kMaxFactors = 8;
  bool monomial_ = false;
  int64_t coefficient_ = 1;
  int factor_count_ = 0;
  int factors_[kMaxFactors] = {};
  struct Op {
    ExprKind kind;  // IntImm: push value; Var: push values[value]; Select: pop 3, push 1;
    int64_t value;  // any other (binary): pop 2, push 1
  };
  std::vector<Op> ops_;
};

}  // namespace dietcode::ir
