// An elementwise float expression as one vector of lanes: the arithmetic shared by the
// vector code generators (row kernels, the micro-kernel's epilogue). Each generator
// says what its leaves are (tensor reads, reductions, bound variables); this file maps
// the rest (constants, arithmetic, comparisons, selects, the float functions) to IR.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <functional>

#include "ir/expr.h"

namespace dietcode::codegen {

// The vector of `e` with `width` lanes. Constants become splats; Add, Sub, Mul, Div,
// Min, Max, the comparisons LT, LE, EQ, And, Select and every float CallOp are emitted
// here; any other node (Load, Var, Reduce, the integer-to-float call) is a leaf, and
// `leaf(node)` returns its vector.
using VectorLeaf = std::function<llvm::Value*(const ir::Expr&)>;
llvm::Value* emit_vector_expr(llvm::IRBuilder<>& b, const ir::Expr& e, unsigned width,
                              const VectorLeaf& leaf);

}  // namespace dietcode::codegen
