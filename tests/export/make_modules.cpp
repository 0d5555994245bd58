// Writes the hand-made modules the export tests export (tests/export/export_test.sh):
//
//   dense_gelu.json   dense N=72 K=40 M=1..64 bias+GELU, 3 kernels: pre-packed weights
//                     read with A in place, pre-packed and parallel over n, B packed per
//                     block (so one library mixes packed and raw weights); 2 threads
//   dense_plain.json  dense N=33 K=17 M=1..16, no epilogue, 2 kernels that read raw weights
//   bmm_nt.json       batch_matmul NT, batch 3, N=24 K=16 M=1..32, 2 kernels, no weights
//
// all for this machine's vector ISA, and dense_gelu_avx2.json: dense_gelu for AVX2 (the
// same as dense_gelu.json on an AVX2 machine; any x86-64-v3 machine runs it).
// Usage: export_make_modules DIR
#include <cstdio>
#include <string>

#include "codegen/llvm/target.h"
#include "runtime/module.h"
#include "schedule_support.h"
#include "support/error.h"

namespace {

using namespace dietcode;

using testing::make_schedule;

// A tree sending M <= first to kernel 0, M <= second to kernel 1, the rest to kernel 2.
dispatch::DecisionTree split(int64_t m_max, std::vector<int64_t> bounds) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> labels;
  for (int64_t M = 1; M <= m_max; ++M) {
    int label = 0;
    while (label < int(bounds.size()) && M > bounds[label]) ++label;
    shapes.push_back({M});
    labels.push_back(label);
  }
  return dispatch::DecisionTree::fit(shapes, labels);
}

runtime::ModuleSpec dense_gelu(schedule::Isa isa) {
  const int64_t w = schedule::vector_isa(isa).width;
  runtime::ModuleSpec m;
  m.op.op = "dense";
  m.op.n = 72;
  m.op.k = 40;
  m.op.m_min = 1;
  m.op.m_max = 64;
  m.op.epilogue = "bias_gelu";
  m.isa = isa;
  m.threads = 2;
  auto k0 = make_schedule(isa, 1, 2 * w, 40, 1, 4 * w);
  k0.pack_a = schedule::PackA::Direct;
  k0.pack_b = schedule::PackB::Prepacked;
  auto k1 = make_schedule(isa, 5, 2 * w, 16, 20, 2 * w);
  k1.pack_b = schedule::PackB::Prepacked;
  k1.parallel = schedule::ParallelAxis::N;
  auto k2 = make_schedule(isa, 3, w, 32, 12, 4 * w);
  m.kernels = {k0, k1, k2};
  m.dispatch = split(64, {4, 40});
  m.provenance = {{"mode", "hand"}};
  return m;
}

runtime::ModuleSpec dense_plain(schedule::Isa isa) {
  const int64_t w = schedule::vector_isa(isa).width;
  runtime::ModuleSpec m;
  m.op.op = "dense";
  m.op.n = 33;
  m.op.k = 17;
  m.op.m_min = 1;
  m.op.m_max = 16;
  m.isa = isa;
  auto k0 = make_schedule(isa, 2, w, 17, 4, w);
  auto k1 = make_schedule(isa, 4, 2 * w, 8, 8, 2 * w);
  k1.loop_order = {schedule::Axis::K, schedule::Axis::N, schedule::Axis::M};
  k1.inner_tile_loop = schedule::Axis::N;
  m.kernels = {k0, k1};
  m.dispatch = split(16, {6});
  m.provenance = {{"mode", "hand"}};
  return m;
}

runtime::ModuleSpec bmm_nt(schedule::Isa isa) {
  const int64_t w = schedule::vector_isa(isa).width;
  runtime::ModuleSpec m;
  m.op.op = "batch_matmul";
  m.op.n = 24;
  m.op.k = 16;
  m.op.batch = 3;
  m.op.layout = "NT";
  m.op.m_min = 1;
  m.op.m_max = 32;
  m.isa = isa;
  auto k0 = make_schedule(isa, 3, w, 16, 6, w);
  k0.parallel = schedule::ParallelAxis::Batch;
  auto k1 = make_schedule(isa, 6, 2 * w, 8, 12, 2 * w);
  m.kernels = {k0, k1};
  m.dispatch = split(32, {10});
  m.provenance = {{"mode", "hand"}};
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    const schedule::Isa isa = codegen::host_target().isa;
    runtime::save_module_spec(dense_gelu(isa), dir + "/dense_gelu.json");
    runtime::save_module_spec(dense_plain(isa), dir + "/dense_plain.json");
    runtime::save_module_spec(bmm_nt(isa), dir + "/bmm_nt.json");
    runtime::save_module_spec(dense_gelu(schedule::Isa::Avx2), dir + "/dense_gelu_avx2.json");
    // Read back: the files must be valid modules (validated schedules, tree).
    for (const char* f : {"dense_gelu", "dense_plain", "bmm_nt", "dense_gelu_avx2"})
      runtime::load_module_spec(dir + "/" + f + ".json");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "export_make_modules: %s\n", e.what());
    return 1;
  }
  return 0;
}
