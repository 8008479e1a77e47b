//===- PtxEmitterTest.cpp - direct PTX through nvJitLink ------------------===//
//
// The elementwise library optimizers, for each storage dtype, vector width
// and index width the runtime specializes on, single-tensor (SGD aside) and
// as multi-tensor plans, get direct PTX that nvJitLink (ptxas) accepts
// without spills; plans the emitter does not cover say why. The
// results on a GPU are checked against the interpreter by `kfuse check`
// (scripts/gpu_run.sh runs it with --codegen=ptx).
//
//===----------------------------------------------------------------------===//

#include "codegen/Pipeline.h"
#include "runtime/NvJitLink.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace kfuse;

namespace {

std::string readLibrary(const char *name) {
  std::string path =
      std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + name + ".mlir";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << path;
  return buffer ? (*buffer)->getBuffer().str() : "";
}

llvm::Expected<KernelPlan> planFor(const char *name, DType dtype, int64_t numel,
                                   unsigned multiple, int sm = 90,
                                   bool fuse = true, bool multiTensor = false) {
  Specialization spec;
  spec.paramDType = dtype;
  spec.gradDType = dtype;
  spec.stateDType = dtype == DType::f16 ? DType::f32 : dtype;
  spec.numel = numel;
  spec.numelMultiple = multiple;
  PipelineOptions options;
  options.fuse = fuse;
  options.multiTensor = multiTensor;
  return compileToPlan(readLibrary(name), std::string(name) + ".mlir", spec,
                       options, sm);
}

TEST(PtxEmitterTest, LibraryOptimizersLinkWithoutSpills) {
  bool haveLinker = !llvm::errorToBool(loadNvJitLink());
  struct Shape {
    int64_t numel;
    unsigned multiple;
    bool multiTensor;
  };
  const Shape shapes[] = {{-1, 1, false},
                          {-1, 8, false},
                          {1003, 1, false},
                          {3, 1, false},
                          {-1, 1, true}};
  // SGD's flags (first step, nesterov) are uniform comparisons: a plan
  // computes them on the device as predicates; a single-tensor kernel's
  // host-computed struct has no form for them.
  for (const char *name :
       {"adam", "adamw", "lion", "adagrad", "rmsprop", "sgd"})
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (const Shape &shape : shapes) {
        if (!shape.multiTensor && llvm::StringRef(name) == "sgd")
          continue;
        SCOPED_TRACE(testing::Message()
                     << name << " " << dtypeName(dtype) << " numel "
                     << shape.numel << " multiple " << shape.multiple
                     << (shape.multiTensor ? " multi-tensor" : ""));
        llvm::Expected<KernelPlan> plan =
            planFor(name, dtype, shape.numel, shape.multiple, 90,
                    /*fuse=*/true, shape.multiTensor);
        ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
        ASSERT_FALSE(plan->ptx.empty()) << plan->ptxUnsupported;
        EXPECT_NE(plan->ptx.find(".target sm_90"), std::string::npos);
        for (const KernelInfo &kernel : plan->kernels)
          EXPECT_NE(plan->ptx.find(".visible .entry " + kernel.name + "("),
                    std::string::npos);
        if (!haveLinker)
          continue;
        llvm::Expected<NvrtcResult> linked =
            compileWithNvJitLink(plan->ptx, 90);
        ASSERT_TRUE(bool(linked)) << llvm::toString(linked.takeError()) << "\n"
                                  << plan->ptx;
        EXPECT_FALSE(linked->cubin.empty());
        EXPECT_EQ(linked->compiler, "nvjitlink");
        ASSERT_EQ(linked->resources.size(), plan->kernels.size())
            << linked->log;
        for (const KernelResources &resources : linked->resources) {
          EXPECT_EQ(resources.spillStoreBytes + resources.spillLoadBytes, 0u)
              << resources.name;
          // 256-thread blocks at the CUDA image's occupancy or better; a
          // plan at two blocks an SM or more (its CUDA image takes 60 to 71
          // registers), 16-bit vectors of eight lanes taking the most.
          EXPECT_LE(resources.registers, shape.multiTensor ? 88u : 64u)
              << resources.name;
        }
      }
  if (!haveLinker)
    GTEST_SKIP() << "nvJitLink is not loadable here; PTX emitted, not linked";
}

TEST(PtxEmitterTest, OlderGpusUseF32DivisionAndLink) {
  llvm::Expected<KernelPlan> plan = planFor("adamw", DType::f32, -1, 8, 89);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_FALSE(plan->ptx.empty()) << plan->ptxUnsupported;
  EXPECT_NE(plan->ptx.find("sqrt.rn.f32"), std::string::npos);
  EXPECT_EQ(plan->ptx.find(".f64"), std::string::npos);
  if (llvm::errorToBool(loadNvJitLink()))
    GTEST_SKIP() << "nvJitLink is not loadable here";
  llvm::Expected<NvrtcResult> linked = compileWithNvJitLink(plan->ptx, 89);
  EXPECT_TRUE(bool(linked)) << llvm::toString(linked.takeError());
}

TEST(PtxEmitterTest, UncoveredPlansSayWhy) {
  llvm::Expected<KernelPlan> unfused =
      planFor("adamw", DType::f32, -1, 1, 90, /*fuse=*/false);
  ASSERT_TRUE(bool(unfused)) << llvm::toString(unfused.takeError());
  EXPECT_TRUE(unfused->ptx.empty());
  EXPECT_NE(unfused->ptxUnsupported.find("temporary"), std::string::npos)
      << unfused->ptxUnsupported;

  // LAMB's two phases run as one cooperative kernel.
  llvm::Expected<KernelPlan> phases = planFor(
      "lamb", DType::f32, -1, 1, 90, /*fuse=*/true, /*multiTensor=*/true);
  ASSERT_TRUE(bool(phases)) << llvm::toString(phases.takeError());
  EXPECT_TRUE(phases->ptx.empty());
  EXPECT_NE(phases->ptxUnsupported.find("cooperative kernel"),
            std::string::npos)
      << phases->ptxUnsupported;

  llvm::Expected<KernelPlan> old = planFor("adamw", DType::f32, -1, 1, 75);
  ASSERT_TRUE(bool(old)) << llvm::toString(old.takeError());
  EXPECT_TRUE(old->ptx.empty());
  EXPECT_NE(old->ptxUnsupported.find("sm_75 is older than sm_80"),
            std::string::npos)
      << old->ptxUnsupported;

  // SGD's momentum and nesterov flags are comparisons of hypers, computed
  // by each thread in the CUDA image.
  llvm::Expected<KernelPlan> sgd = planFor("sgd", DType::f32, -1, 1);
  ASSERT_TRUE(bool(sgd)) << llvm::toString(sgd.takeError());
  EXPECT_TRUE(sgd->ptx.empty());
  EXPECT_NE(sgd->ptxUnsupported.find("the host does not compute"),
            std::string::npos)
      << sgd->ptxUnsupported;

  // Without a target, no PTX and no reason.
  llvm::Expected<KernelPlan> none = planFor("adamw", DType::f32, -1, 1, 0);
  ASSERT_TRUE(bool(none)) << llvm::toString(none.takeError());
  EXPECT_TRUE(none->ptx.empty());
  EXPECT_TRUE(none->ptxUnsupported.empty());
}

} // namespace
