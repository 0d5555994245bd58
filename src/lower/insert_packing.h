// Pass 3: local padding made explicit. Each PackStage becomes a copy loop nest that
// writes zero-padded panels, and each panel gets an Allocate: per task at the top
// of the parallel loop's body when it is packed inside one, otherwise once for the
// whole call. Reads past the operand's extent are clamped to a valid row and the
// value replaced by zero, so the copy is branch-free too.
#pragma once

#include "ir/stmt.h"

namespace dietcode::lower {

ir::Stmt insert_packing(const ir::Stmt& s);

// Just the expansion of PackStage nodes (used for the pre-packing program too).
ir::Stmt expand_pack_stages(const ir::Stmt& s);

// Whether a pack stage stays in the IR for code generation, which emits it as in-register
// 8x8 transposes (codegen/llvm/pack_emitter.cpp): a source contiguous along k (B of an NT
// product, A of any row-major A) into panels a whole number of 8-lane groups wide.
bool packs_by_transposing(const ir::PackStageNode& p);

}  // namespace dietcode::lower
