//===- HeapRetentionTest.cpp - NVRTC's heap kept between compiles --------===//

#include "runtime/HeapRetention.h"
#include "runtime/NvJitLink.h"
#include "runtime/Nvrtc.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <sys/resource.h>

using namespace kfuse;

namespace {

TEST(HeapRetentionTest, PadFromTheEnvironment) {
  EXPECT_EQ(chooseHeapPad(nullptr, nullptr), size_t(64) << 20);
  EXPECT_EQ(chooseHeapPad("16", nullptr), size_t(16) << 20);
  EXPECT_EQ(chooseHeapPad(" 1024 ", nullptr), size_t(1024) << 20);
  EXPECT_EQ(chooseHeapPad("0", nullptr), std::nullopt);
  // The process's own choice wins.
  EXPECT_EQ(chooseHeapPad("16", "4096"), std::nullopt);
  EXPECT_EQ(chooseHeapPad(nullptr, "4096"), std::nullopt);
  // Not a number of MiB in range: malloc is left alone (with a warning).
  EXPECT_EQ(chooseHeapPad("lots", nullptr), std::nullopt);
  EXPECT_EQ(chooseHeapPad("-1", nullptr), std::nullopt);
  EXPECT_EQ(chooseHeapPad("2048", nullptr), std::nullopt);
}

long minorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

/// The minor page faults of the second of two runs of `compile`.
template <typename Compile> long faultsOfSecondRun(Compile compile) {
  compile();
  long before = minorFaults();
  compile();
  return minorFaults() - before;
}

// A kernel with a loop, a division and a root: NVRTC's heap for it is
// several megabytes, faulted in again by every compile when trimmed.
const char *kKernel = R"(
extern "C" __global__ void step(float *p, const float *g, float *m, float *v,
                                float lr, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float mi = 0.9f * m[i] + 0.1f * g[i];
    float vi = 0.999f * v[i] + 0.001f * g[i] * g[i];
    p[i] -= lr * mi / (sqrtf(vi) + 1e-8f);
    m[i] = mi;
    v[i] = vi;
  }
}
)";

TEST(HeapRetentionTest, ASecondCompileFaultsLittle) {
  if (retainHeapBetweenCompiles() == 0)
    GTEST_SKIP() << "no heap pad in this process (KFUSE_HEAP_PAD_MB=0, "
                    "MALLOC_TOP_PAD_ set, or not glibc)";
  NvrtcOptions options;
  auto compile = [&] {
    llvm::Expected<NvrtcResult> result =
        compileWithNvrtc(kKernel, "step.cu", options);
    ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  };
  // Trimmed, the heap of this compile faults in ~2800 pages again.
  EXPECT_LT(faultsOfSecondRun(compile), 400)
      << "minor page faults of the second compile";
}

TEST(HeapRetentionTest, ASecondLinkFaultsLittle) {
  if (llvm::errorToBool(loadNvJitLink()))
    GTEST_SKIP() << "nvJitLink is not loadable here";
  if (retainHeapBetweenCompiles() == 0)
    GTEST_SKIP() << "no heap pad in this process";
  NvrtcOptions options;
  options.arch = "sm_90";
  llvm::Expected<NvrtcResult> compiled =
      compileWithNvrtc(kKernel, "step.cu", options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  auto link = [&] {
    llvm::Expected<NvrtcResult> result =
        compileWithNvJitLink(compiled->ptx, 90);
    ASSERT_TRUE(bool(result)) << llvm::toString(result.takeError());
  };
  // Trimmed, ptxas' heap for this link faults in ~2600 pages again.
  EXPECT_LT(faultsOfSecondRun(link), 400)
      << "minor page faults of the second link";
}

} // namespace
