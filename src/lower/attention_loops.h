// build_attention_loops: fused attention under an attention schedule -> loops over
// (batch x head) slices and query tiles around one AttentionKernel per tile.
#pragma once

#include "ir/stmt.h"
#include "ops/attention.h"
#include "schedule/attention_schedule.h"

namespace dietcode::lower {

// parallel none / heads:
//   for slice < batch * heads [parallel for heads]:
//     for tile < ceil(T / query_tile): attention_kernel(slice, tile)
// parallel heads_query_tiles:
//   for task < batch * heads * ceil(T / query_tile) [parallel]:
//     let slice = task / tiles, tile = task % tiles: attention_kernel(slice, tile)
ir::Stmt build_attention_loops(const ops::AttentionOp& a, const schedule::AttentionSchedule& s);

}  // namespace dietcode::lower
