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

}  // namespace dietcode::lower
