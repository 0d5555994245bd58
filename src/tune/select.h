// Selection (../../shared/DIETCODE.md, "Selection" and "Dispatch"): from a matrix of
// throughputs score[shape][kernel], pick a few micro-kernels that serve every shape
// well (greedy cover over each shape's top-k), then a decision tree over the shape
// variables that sends any shape to one of them.
#pragma once

#include <cstdint>
#include <vector>

#include "dispatch/decision_tree.h"

namespace dietcode::tune {

struct Selection {
  std::vector<int> kernels;     // indices into the score matrix's columns
  std::vector<int> assignment;  // per shape: position in `kernels` of its best choice
  int top_k = 1;                // the k the cover ended with
};

// Each shape keeps its top-k kernels; the cover repeatedly picks the kernel with the
// largest summed weight * score / best(shape) over the shapes it covers that are not
// yet covered. k starts at 1 and grows while more than `max_kernels` would be picked.
// Slots the cover leaves spare then go to the kernels that most raise the weighted
// score / best, each making some shape at least 3% faster than the kernels already chosen.
// Then single swaps of a chosen kernel for one left out, while a swap raises the weighted
// sum of log(score / best) (a shape left on its second kernel far below its first, with
// every slot taken). Each shape is then assigned the selected kernel with its highest score.
//
// Packed weights: layouts[j] identifies the layout kernel j packs the operator's constant
// weights in (lower::packed_layout_id; 0: it reads them as given). A module keeps one
// packed copy of the weights per distinct layout, so with max_layouts > 0 the kernels
// selected span at most that many nonzero ids: the layouts kept are the choice, among the
// 12 layouts best on their own, whose best kernels give the highest weighted sum of
// log(score / best) over the shapes (at most 12 kept, whatever max_layouts), and the cover
// above runs on their kernels alone. Empty `layouts`, or max_layouts <= 0: no limit.
Selection select_micro_kernels(const std::vector<std::vector<double>>& score,
                               const std::vector<double>& weights, int max_kernels,
                               const std::vector<uint64_t>& layouts = {}, int max_layouts = 0);

// The decision tree over `shapes` (declared and extra sample shapes) whose labels
// are positions in the selection.
dispatch::DecisionTree build_dispatch_tree(const std::vector<std::vector<int64_t>>& shapes,
                                           const std::vector<int>& labels);

}  // namespace dietcode::tune
