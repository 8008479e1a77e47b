//===- CompileHitTest.cpp - the in-memory module cache on the GPU ---------===//
//
// With a GPU: the first compile of a specialization misses (or hits the
// disk), every later one is an in-memory hit that returns the same module,
// in well under a microsecond. Skipped without a GPU.

#include "GpuTestSupport.h"
#include "runtime/CudaDriver.h"
#include "runtime/Jit.h"
#include "runtime/Norm.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <chrono>
#include <cstdio>

using namespace kfuse;

namespace {

using kfuse::testing::haveGpu;

/// Compiles once with `compile` (a miss or a disk hit), then 100000 times
/// more: each must be an in-memory hit returning the same module, in under
/// a microsecond on average.
template <typename Compile>
void expectFastHits(const char *what, Compile compile) {
  auto first = compile();
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  auto module = *first;
  constexpr int kHits = 100000;
  bool same = true;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kHits; ++i) {
    auto hit = compile();
    same &= hit && *hit == module;
    if (!hit)
      llvm::consumeError(hit.takeError());
  }
  double ns = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              kHits;
  EXPECT_TRUE(same) << what;
  std::printf("%s in-memory hit: %.0f ns\n", what, ns);
  EXPECT_LT(ns, 1000.0) << what;
}

TEST(CompileHitTest, UpdateHitIsTheSameModuleUnderAMicrosecond) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  auto update = Update::createFromFile(std::string(KFUSE_SOURCE_DIR) +
                                       "/library/optim/adamw.mlir");
  ASSERT_TRUE(bool(update)) << llvm::toString(update.takeError());
  expectFastHits("update", [&] {
    return (*update)->compile(Specialization(), PipelineOptions());
  });
}

TEST(CompileHitTest, NormHitIsTheSameModuleUnderAMicrosecond) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  auto norm = Norm::createFromFile(std::string(KFUSE_SOURCE_DIR) +
                                   "/library/norm/layernorm_fwd.mlir");
  ASSERT_TRUE(bool(norm)) << llvm::toString(norm.takeError());
  Specialization spec;
  spec.cols = 1024;
  spec.argDTypes.assign((*norm)->args().size(), DType::f32);
  expectFastHits("norm", [&] { return (*norm)->compile(spec); });
}

TEST(CompileHitTest, CompileAsyncGivesWhatCompileGives) {
  auto update = Update::createFromFile(std::string(KFUSE_SOURCE_DIR) +
                                       "/library/optim/adamw.mlir");
  ASSERT_TRUE(bool(update)) << llvm::toString(update.takeError());
  Specialization spec;
  auto future = (*update)->compileAsync(spec, PipelineOptions());
  auto async = future.get();
  auto sync = (*update)->compile(spec, PipelineOptions());
  ASSERT_EQ(bool(async), bool(sync));
  if (!async) {
    // No GPU: both fail alike.
    EXPECT_EQ(llvm::toString(async.takeError()),
              llvm::toString(sync.takeError()));
    return;
  }
  EXPECT_EQ(*async, *sync);

  auto norm = Norm::createFromFile(std::string(KFUSE_SOURCE_DIR) +
                                   "/library/norm/rmsnorm_fwd.mlir");
  ASSERT_TRUE(bool(norm)) << llvm::toString(norm.takeError());
  Specialization normSpec;
  normSpec.cols = 4096;
  for (const ArgInfo &arg : (*norm)->args())
    normSpec.argDTypes.push_back(arg.level == ArgLevel::row ? DType::f32
                                                            : DType::bf16);
  auto normAsync = (*norm)->compileAsync(normSpec).get();
  ASSERT_TRUE(bool(normAsync)) << llvm::toString(normAsync.takeError());
  auto normSync = (*norm)->compile(normSpec);
  ASSERT_TRUE(bool(normSync)) << llvm::toString(normSync.takeError());
  EXPECT_EQ(*normAsync, *normSync);
}

} // namespace
