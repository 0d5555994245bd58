// The vector code for each ISA, read from the assembly: the AVX-512 path is
// generated and checked even on machines that cannot run it.
#include <gtest/gtest.h>

#include "codegen/llvm/jit.h"
#include "lower/pipeline.h"
#include "ops/batch_matmul.h"
#include "ops/dense.h"

using namespace dietcode;

namespace {

std::string assembly_for(schedule::Isa isa, int64_t nr, int64_t mr = 6, int64_t k_streams = 1,
                         schedule::PackA pack_a = schedule::PackA::Packed, int64_t prefetch_b = 0,
                         int64_t k = 768) {
  schedule::MicroKernelSchedule s;
  s.k_streams = k_streams;
  s.prefetch_b = prefetch_b;
  s.pack_a = pack_a;
  s.isa = isa;
  s.mr = mr;
  s.nr = nr;
  s.kc = 256;
  s.mc = mr * 8;
  s.nc = nr * 8;
  s.unroll_k = 4;
  s.pack_b = schedule::PackB::Prepacked;
  lower::LoweredKernel kernel = lower::lower(schedule::bind(s, ops::dense(1, 128, 768, k)));
  return codegen::assembly_text(kernel, codegen::target_for_isa(isa));
}

int occurrences(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
  return n;
}

// Lines with an FMA instruction on registers of the given kind ("ymm", "zmm").
int fma_lines(const std::string& text, const std::string& reg) {
  int n = 0;
  for (size_t p = text.find("vfmadd"); p != std::string::npos; p = text.find("vfmadd", p + 1)) {
    size_t end = text.find('\n', p);
    n += text.substr(p, end - p).find(reg) != std::string::npos;
  }
  return n;
}

// Lines that move a vector register of the given kind to or from the stack inside a basic
// block that runs FMAs without masked loads: spills in the full tile's k-loop (the
// accumulators must live in registers through it). Outside it, a loop-invariant value (an
// edge tile's lane mask, hoisted out of the loop over tiles) may be kept on the stack, and
// an edge column block's k-loop (masked loads of B read in place, rare) may spill.
int stack_vector_lines(const std::string& text, const std::string& reg) {
  int n = 0;
  int in_block = 0;
  bool block_has_fma = false, block_is_masked = false;
  auto close_block = [&] {
    if (block_has_fma && !block_is_masked) n += in_block;
    in_block = 0;
    block_has_fma = block_is_masked = false;
  };
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == ':') close_block();  // a label starts a block
    block_has_fma |= line.find("vfmadd") != std::string::npos;
    block_is_masked |= line.find("vmaskmov") != std::string::npos;
    in_block += line.find(reg) != std::string::npos && line.find("(%rsp)") != std::string::npos;
    start = end + 1;
  }
  close_block();
  return n;
}

}  // namespace

TEST(Assembly, Avx512TileUsesZmmFmas) {
  std::string a = assembly_for(schedule::Isa::Avx512, 64);  // 6 x 4 zmm accumulators
  // 6 rows x 4 vectors x 4 unrolled k-steps in the main loop, plus the edge passes'.
  EXPECT_GE(fma_lines(a, "zmm"), 6 * 4 * 4 + 6 * 4);
  EXPECT_EQ(fma_lines(a, "ymm"), 0);
  EXPECT_EQ(stack_vector_lines(a, "zmm"), 0) << "vector registers spilled";
}

TEST(Assembly, Avx2TileUsesYmmAndNoZmm) {
  std::string a = assembly_for(schedule::Isa::Avx2, 16);  // 6 x 2 ymm accumulators
  EXPECT_EQ(occurrences(a, "zmm"), 0);
  EXPECT_GE(fma_lines(a, "ymm"), 6 * 2 * 4 + 6 * 2);
  EXPECT_EQ(stack_vector_lines(a, "ymm"), 0) << "vector registers spilled";
}

// Tiles wider than tall load A first (all broadcasts live, one B vector at a time): on
// AVX2's 16 registers 1 x 64, 2 x 48 and 3 x 32 keep every accumulator in a register,
// which loading all of a k-step's B vectors first would not (17, 19 and 17 registers).
TEST(Assembly, WideAvx2TilesLoadAFirstWithoutSpills) {
  for (auto [mr, nr] : {std::pair<int64_t, int64_t>{1, 64}, {2, 48}, {3, 32}}) {
    const int64_t vectors = nr / 8;
    ASSERT_GT(mr * vectors + vectors + 1, 16);
    ASSERT_LE(schedule::tile_registers(mr, vectors), 16);
    std::string a = assembly_for(schedule::Isa::Avx2, nr, mr);
    // The unrolled k-loop (K = 768 in blocks of 256: no remainder loop).
    EXPECT_GE(fma_lines(a, "ymm"), mr * vectors * 4) << mr << "x" << nr;
    EXPECT_EQ(stack_vector_lines(a, "ymm"), 0) << mr << "x" << nr << ": vector registers spilled";
  }
}

// A k-block of constant length (kc divides K, or one block holds K) that unroll_k divides
// needs no remainder loop, and none is emitted; a K that leaves a shorter last block gets
// one. A 1 x 64 AVX2 tile (8 accumulators, no edge passes): 8 FMAs a k-step, 4 steps
// unrolled.
TEST(Assembly, AConstantBlockThatTheUnrollDividesHasNoRemainderLoop) {
  EXPECT_EQ(fma_lines(assembly_for(schedule::Isa::Avx2, 64, 1), "ymm"), 8 * 4);
  EXPECT_EQ(fma_lines(assembly_for(schedule::Isa::Avx2, 64, 1, 1, schedule::PackA::Packed, 0,
                                   256 * 3 + 2),
                      "ymm"),
            8 * 4 + 8);
}

// Walking several ranges of k (k_streams) keeps the tile in registers (the ranges of a
// whole k block lie a constant distance apart, folded into the load addresses). Not yet
// for the tallest tiles with A read in place: 6 x 16 with two streams spills one
// accumulator there (six row pointers; LLVM hoists a broadcast across the loop).
TEST(Assembly, KStreamTilesKeepTheirAccumulatorsInRegisters) {
  struct Case {
    int64_t mr, nr, streams;
    schedule::PackA pack_a;
  };
  for (Case c : {Case{6, 16, 2, schedule::PackA::Packed}, Case{6, 16, 4, schedule::PackA::Packed},
                 Case{4, 24, 4, schedule::PackA::Packed}, Case{4, 24, 4, schedule::PackA::Direct},
                 Case{1, 16, 4, schedule::PackA::Direct}}) {
    std::string a = assembly_for(schedule::Isa::Avx2, c.nr, c.mr, c.streams, c.pack_a);
    const int64_t accumulators = c.mr * c.nr / 8;
    EXPECT_GE(fma_lines(a, "ymm"), accumulators * 4) << c.mr << "x" << c.nr;
    EXPECT_EQ(stack_vector_lines(a, "ymm"), 0)
        << c.mr << "x" << c.nr << ", " << c.streams << " streams, A "
        << (c.pack_a == schedule::PackA::Packed ? "packed" : "direct") << ": registers spilled";
  }
}

// prefetch_b: one prefetch per vector of B's row (a 64-byte line on AVX-512) in every
// k-step of the main loop (8 x 48: three per step, 4 steps per iteration), none without
// it, and the tile still in registers.
TEST(Assembly, PrefetchedBHasOnePrefetchPerLineOfItsRow) {
  std::string plain = assembly_for(schedule::Isa::Avx512, 48, 8, 1, schedule::PackA::Direct);
  std::string ahead = assembly_for(schedule::Isa::Avx512, 48, 8, 1, schedule::PackA::Direct, 32);
  EXPECT_EQ(occurrences(plain, "prefetch"), 0);
  EXPECT_GE(occurrences(ahead, "prefetcht0"), 3 * 4);
  EXPECT_EQ(stack_vector_lines(ahead, "zmm"), 0) << "registers spilled";
  // Pre-packed B lies in panels one vector wide over all of K = 768: 32 k-steps ahead is
  // 32 x 16 floats, 2048 bytes past the row's address in each panel, and the tile's
  // second and third vectors are 768 x 16 floats (49152 bytes) panel after panel.
  EXPECT_NE(ahead.find("2048("), std::string::npos);
  EXPECT_NE(ahead.find(std::to_string(2048 + 49152) + "("), std::string::npos);
  EXPECT_NE(ahead.find(std::to_string(2048 + 2 * 49152) + "("), std::string::npos);
}

// prefetch_next with m inner: prefetches into L2 (prefetcht1) in the main loop, a row of
// the next tile (3 vectors) per iteration (a row per k-step in the k-loops of a call with
// few row tiles), none without it, and the tile still in registers (7 x 48; 8 x 48, 28 of
// the 32 registers, spilled when each line had an address register of its own, and when
// each step issued its own at the step).
TEST(Assembly, PrefetchedNextTileHasAnL2PrefetchPerVectorOfEachKStep) {
  te::Operator op = ops::dense(1, 128, 2304, 768);
  schedule::MicroKernelSchedule s{.isa = schedule::Isa::Avx512,
                                  .mr = 7,
                                  .nr = 48,
                                  .kc = 768,
                                  .mc = 133,
                                  .nc = 144,
                                  .parallel = schedule::ParallelAxis::None,
                                  .inner_tile_loop = schedule::Axis::M,
                                  .unroll_k = 4,
                                  .pack_a = schedule::PackA::Direct,
                                  .pack_b = schedule::PackB::Prepacked};
  auto assembly = [&](const schedule::MicroKernelSchedule& x) {
    return codegen::assembly_text(lower::lower(schedule::bind(x, op)),
                                  codegen::target_for_isa(x.isa));
  };
  std::string plain = assembly(s);
  s.prefetch_next = true;
  std::string next = assembly(s);
  EXPECT_EQ(occurrences(plain, "prefetcht1"), 0);
  EXPECT_GE(occurrences(next, "prefetcht1"), 3 * 4);  // 3 vectors, 4 k-steps unrolled
  EXPECT_EQ(occurrences(next, "prefetcht0"), 0);
  EXPECT_EQ(stack_vector_lines(next, "zmm"), 0) << "registers spilled";
  s.mr = 8;
  s.mc = 128;
  std::string tall = assembly(s);
  EXPECT_GE(occurrences(tall, "prefetcht1"), 3 * 4);
  EXPECT_EQ(stack_vector_lines(tall, "zmm"), 0) << "8 x 48: registers spilled";
}

// B read in place (attention's S V: B changes every call) has a second k-loop for edge
// column blocks whose lane masks take registers; the full tile's loop must not pay for
// them. 3 x 32 takes all 16 registers (12 accumulators, 3 broadcasts, 1 B vector).
TEST(Assembly, TilesReadingBInPlaceKeepTheirAccumulatorsInRegisters) {
  te::ShapeVar t = te::shape_var("T", 1, 128);
  for (auto [mr, nr] : {std::pair<int64_t, int64_t>{3, 32}, {6, 16}, {1, 64}}) {
    schedule::MicroKernelSchedule s;
    s.isa = schedule::Isa::Avx2;
    s.mr = mr;
    s.nr = nr;
    s.kc = 128;
    s.mc = (128 + mr - 1) / mr * mr;  // one M block for every T
    s.nc = 64;
    s.unroll_k = 4;
    s.pack_a = schedule::PackA::Direct;
    s.pack_b = schedule::PackB::Direct;
    s.parallel = schedule::ParallelAxis::Batch;
    te::Operator op = ops::batch_matmul({t}, 12, t.var, 64, t.var, ops::Layout::NN);
    lower::LoweredKernel k = lower::lower(schedule::bind(s, op));
    std::string a = codegen::assembly_text(k, codegen::target_for_isa(schedule::Isa::Avx2));
    EXPECT_GE(fma_lines(a, "ymm"), mr * nr / 8 * 4) << mr << "x" << nr;
    EXPECT_EQ(stack_vector_lines(a, "ymm"), 0) << mr << "x" << nr << ": registers spilled";
  }
}
