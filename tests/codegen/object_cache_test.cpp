// Compiled kernels cached on disk (codegen/llvm/object_cache.h): a kernel compiled under
// an ObjectCacheScope is stored, a second compile reads it back (no code generation) and
// computes the same results; a damaged entry is detected, recompiled and rewritten; no
// scope, no files.
#include "codegen/llvm/object_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "codegen/llvm/target.h"
#include "ops/dense.h"
#include "reference/reference.h"
#include "runtime/kernel.h"
#include "schedule/random_schedule.h"

using namespace dietcode;

namespace {

namespace fs = std::filesystem;

double run_error(const runtime::Kernel& k, const te::Operator& op, int64_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<int64_t> sizes = op.buffer_sizes(op.bind({m}));
  std::vector<std::vector<float>> in;
  std::vector<const float*> ptrs;
  std::vector<runtime::ConstTensor> args;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    in.emplace_back(sizes[i]);
    for (float& e : in.back()) e = n(rng);
    ptrs.push_back(in.back().data());
    args.push_back({in.back().data(), sizes[i]});
  }
  std::vector<float> out(sizes.back(), NAN);
  k.run({m}, args, {out.data(), int64_t(out.size())});
  return reference::relative_error(out.data(), reference::evaluate(op, {m}, ptrs));
}

std::vector<fs::path> objects(const fs::path& dir) {
  std::vector<fs::path> out;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

}  // namespace

TEST(ObjectCache, SecondCompileReadsTheObjectAndDamageIsRebuilt) {
  if (codegen::program_build_id().empty()) GTEST_SKIP() << "this test binary has no build ID";
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_objcache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  te::Operator op = ops::dense(1, 64, 40, 24, ops::parse_epilogue("bias+gelu"));
  std::mt19937_64 rng(1);
  schedule::MicroKernelSchedule s = schedule::random_schedule(rng, codegen::host_target().isa, op);
  while (s.vector_axis != schedule::Axis::N)  // an outer-product tile, which may pack B
    s = schedule::random_schedule(rng, codegen::host_target().isa, op);
  s.pack_b = schedule::PackB::PerBlock;  // run_error passes W as is, not pre-packed
  s.b_panel = schedule::BPanel::Vector;

  {  // No scope: nothing written.
    runtime::Kernel k = runtime::Kernel::compile(op, s);
    EXPECT_TRUE(objects(dir).empty());
  }
  codegen::ObjectCacheStats before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(dir.string());
    runtime::Kernel first = runtime::Kernel::compile(op, s);  // compiled and stored
    ASSERT_EQ(objects(dir).size(), 1u);
    EXPECT_EQ(codegen::object_cache_stats().misses, before.misses + 1);
    runtime::Kernel second = runtime::Kernel::compile(op, s);  // read back, beside the first
    EXPECT_EQ(objects(dir).size(), 1u);
    EXPECT_EQ(codegen::object_cache_stats().hits, before.hits + 1);
    for (int64_t m : {1, 7, 64, 100}) {
      EXPECT_LE(run_error(first, op, m, 10 + m), 1e-5);
      EXPECT_LE(run_error(second, op, m, 20 + m), 1e-5);
    }
  }
  before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(dir.string());
    runtime::Kernel again = runtime::Kernel::compile(op, s);  // read back
    EXPECT_EQ(codegen::object_cache_stats().hits, before.hits + 1);
    EXPECT_EQ(codegen::object_cache_stats().misses, before.misses);
    EXPECT_LE(run_error(again, op, 33, 3), 1e-5);
  }
  // Damage the entry: a byte of the payload flipped, then the file cut short.
  const fs::path file = objects(dir).at(0);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char c = char(f.get() ^ 0xff);
    f.seekp(100);
    f.put(c);
  }
  before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(dir.string());
    runtime::Kernel a = runtime::Kernel::compile(op, s);  // detected, compiled, rewritten
    EXPECT_EQ(codegen::object_cache_stats().damaged, before.damaged + 1);
    EXPECT_LE(run_error(a, op, 5, 4), 1e-5);
  }
  fs::resize_file(file, fs::file_size(file) / 2);
  before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(dir.string());
    runtime::Kernel b = runtime::Kernel::compile(op, s);
    EXPECT_EQ(codegen::object_cache_stats().damaged, before.damaged + 1);
    EXPECT_LE(run_error(b, op, 50, 5), 1e-5);
  }
  before = codegen::object_cache_stats();
  {
    codegen::ObjectCacheScope scope(dir.string());
    runtime::Kernel rebuilt = runtime::Kernel::compile(op, s);
    EXPECT_EQ(codegen::object_cache_stats().hits, before.hits + 1);  // rewritten whole
  }
  fs::remove_all(dir);
}
