//===- PlanCacheTest.cpp - kernel plans on disk ---------------------------===//

#include "runtime/PlanCache.h"
#include "DiskCacheTestSupport.h"
#include "codegen/Pipeline.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace kfuse;

namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Every field of two plans, so that a field the encoding drops fails here.
void expectSamePlan(const KernelPlan &a, const KernelPlan &b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.args.size(), b.args.size());
  for (auto [x, y] : llvm::zip_equal(a.args, b.args)) {
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.dtype, y.dtype);
    ASSERT_EQ(x.defaultValue.has_value(), y.defaultValue.has_value());
    if (x.defaultValue)
      EXPECT_TRUE(sameBits(*x.defaultValue, *y.defaultValue)) << x.name;
    EXPECT_EQ(x.level, y.level) << x.name;
  }
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (auto [x, y] : llvm::zip_equal(a.kernels, b.kernels)) {
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.location, y.location);
    ASSERT_EQ(x.params.size(), y.params.size());
    for (auto [p, q] : llvm::zip_equal(x.params, y.params)) {
      EXPECT_EQ(p.kind, q.kind);
      EXPECT_EQ(p.index, q.index);
      EXPECT_EQ(p.dtype, q.dtype);
      EXPECT_EQ(p.read, q.read);
      EXPECT_EQ(p.written, q.written);
    }
    ASSERT_EQ(x.hostUniforms.has_value(), y.hostUniforms.has_value());
    if (x.hostUniforms) {
      EXPECT_EQ(x.hostUniforms->fields, y.hostUniforms->fields);
      ASSERT_EQ(x.hostUniforms->program.size(), y.hostUniforms->program.size());
      for (auto [i, j] :
           llvm::zip_equal(x.hostUniforms->program, y.hostUniforms->program)) {
        EXPECT_EQ(i.op, j.op);
        for (int k = 0; k < 3; ++k)
          EXPECT_EQ(i.operands[k], j.operands[k]);
        EXPECT_EQ(i.arg, j.arg);
        EXPECT_TRUE(sameBits(i.constant, j.constant));
      }
    }
    EXPECT_EQ(x.vectorWidth, y.vectorWidth);
    EXPECT_EQ(x.indexBits, y.indexBits);
    EXPECT_EQ(x.blockSize, y.blockSize);
    EXPECT_EQ(x.numBodyOps, y.numBodyOps);
    EXPECT_EQ(x.phases, y.phases);
    EXPECT_EQ(x.setsFoundInf, y.setsFoundInf);
    EXPECT_EQ(x.sharedBytes, y.sharedBytes);
    EXPECT_EQ(x.rowsPerBlock, y.rowsPerBlock);
    EXPECT_EQ(x.maxGridBlocks, y.maxGridBlocks);
    EXPECT_EQ(x.threadsPerRow, y.threadsPerRow);
    EXPECT_EQ(x.itemsPerThread, y.itemsPerThread);
    EXPECT_EQ(x.launchBlocks, y.launchBlocks);
    EXPECT_EQ(x.rowInRegisters, y.rowInRegisters);
    EXPECT_EQ(x.columnInputsInRegisters, y.columnInputsInRegisters);
    EXPECT_EQ(x.stages, y.stages);
    EXPECT_EQ(x.columnsPerBlock, y.columnsPerBlock);
  }
  EXPECT_EQ(a.temporaries, b.temporaries);
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.numelMultiple, b.numelMultiple);
  EXPECT_EQ(a.alignment, b.alignment);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.ptxUnsupported, b.ptxUnsupported);
  EXPECT_EQ(a.multiTensor, b.multiTensor);
  EXPECT_EQ(a.tensorArgs, b.tensorArgs);
  EXPECT_EQ(a.stepArg, b.stepArg);
  EXPECT_EQ(a.checksFoundInf, b.checksFoundInf);
  EXPECT_EQ(a.numReductions, b.numReductions);
  EXPECT_EQ(a.matrix, b.matrix);
  EXPECT_EQ(a.numRowReductions, b.numRowReductions);
  EXPECT_EQ(a.numColReductions, b.numColReductions);
  EXPECT_EQ(a.listTotals, b.listTotals);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.columnOutputs, b.columnOutputs);
}

/// Every library optimizer's plans, single- and multi-tensor, fused and not,
/// with and without direct PTX, come back from their entry as they were.
TEST(PlanCacheTest, LibraryPlansRoundTrip) {
  int plans = 0;
  for (const char *name :
       {"sgd", "adam", "adamw", "lion", "lamb", "novograd", "adafactor"}) {
    // Updates with reductions are multi-tensor plans of fused phases; the
    // 2-D one (adafactor: levels per row and per column) takes neither
    // grad scaling nor master weights.
    bool reduces =
        llvm::StringRef(name) != "sgd" && llvm::StringRef(name) != "adam" &&
        llvm::StringRef(name) != "adamw" && llvm::StringRef(name) != "lion";
    bool matrix = llvm::StringRef(name) == "adafactor";
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + name + ".mlir";
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << path;
    struct Variant {
      bool fuse, multiTensor, gradScaling, masterWeights;
      int ptxSm;
    };
    for (Variant variant : {Variant{true, false, false, false, 90},
                            Variant{false, false, false, false, 0},
                            Variant{true, true, true, false, 0},
                            Variant{true, false, false, true, 0}}) {
      if ((reduces && !variant.fuse) ||
          (matrix && (variant.gradScaling || variant.masterWeights)))
        continue;
      Specialization spec;
      spec.gradDType = DType::bf16;
      PipelineOptions options;
      options.fuse = variant.fuse;
      options.multiTensor = variant.multiTensor;
      options.gradScaling = variant.gradScaling;
      options.masterWeights = variant.masterWeights;
      llvm::Expected<KernelPlan> plan = compileToPlan(
          (*buffer)->getBuffer(), path, spec, options, variant.ptxSm);
      ASSERT_TRUE(bool(plan))
          << name << ": " << llvm::toString(plan.takeError());
      std::string bytes = encodePlanEntry(*plan, "an-image-key", 580);
      llvm::Expected<PlanEntry> entry = decodePlanEntry(bytes);
      ASSERT_TRUE(bool(entry))
          << name << ": " << llvm::toString(entry.takeError());
      EXPECT_EQ(entry->imageKey, "an-image-key");
      expectSamePlan(*plan, entry->plan);
      EXPECT_EQ(encodePlanEntry(entry->plan, "an-image-key", 580), bytes);
      ++plans;
    }
  }
  EXPECT_EQ(plans, 23);
}

/// Every library norm's plan (the row kernel, and the finish kernel of
/// column sums where it has one) comes back from its entry as it was.
TEST(PlanCacheTest, LibraryNormPlansRoundTrip) {
  int finishKernels = 0;
  for (const char *name :
       {"layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd"}) {
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/norm/" + name + ".mlir";
    auto buffer = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buffer)) << path;
    for (int64_t cols : {1024, 5000}) {
      Specialization spec;
      spec.cols = cols;
      llvm::Expected<KernelPlan> plan =
          compileToPlan((*buffer)->getBuffer(), path, spec);
      ASSERT_TRUE(bool(plan))
          << name << ": " << llvm::toString(plan.takeError());
      EXPECT_EQ(plan->kind, KernelKind::norm);
      finishKernels += plan->finishKernel() != nullptr;
      std::string bytes = encodePlanEntry(*plan, "an-image-key", 580);
      llvm::Expected<PlanEntry> entry = decodePlanEntry(bytes);
      ASSERT_TRUE(bool(entry))
          << name << ": " << llvm::toString(entry.takeError());
      expectSamePlan(*plan, entry->plan);
      EXPECT_EQ(encodePlanEntry(entry->plan, "an-image-key", 580), bytes);
    }
  }
  // The two backward norms sum their weight (and bias) grads over rows.
  EXPECT_EQ(finishKernels, 4);
}

KernelPlan smallPlan() {
  KernelPlan plan;
  plan.name = "tiny";
  plan.args = {{"p", ArgRole::param, DType::f32, std::nullopt},
               {"lr", ArgRole::hyper, DType::f32,
                std::numeric_limits<double>::infinity()},
               {"eps", ArgRole::hyper, DType::f32, -0.0}};
  KernelInfo kernel;
  kernel.name = "tiny_0";
  kernel.params = {{KernelParam::Kind::Tensor, 0, DType::f32, true, true}};
  HostUniforms uniforms;
  UniformInstr arg;
  arg.op = UniformInstr::Op::arg;
  arg.arg = 1;
  UniformInstr nan;
  nan.constant = std::numeric_limits<double>::quiet_NaN();
  UniformInstr mul;
  mul.op = UniformInstr::Op::mul;
  mul.operands[0] = 0;
  mul.operands[1] = 1;
  uniforms.program = {arg, nan, mul};
  uniforms.fields = {2};
  kernel.hostUniforms = uniforms;
  plan.kernels = {kernel};
  plan.source = "extern \"C\" __global__ void tiny_0() {}\n\t\"quoted\"\n";
  return plan;
}

/// Infinities, NaN and -0.0 are kept bit for bit.
TEST(PlanCacheTest, DoublesKeepTheirBits) {
  KernelPlan plan = smallPlan();
  llvm::Expected<PlanEntry> entry =
      decodePlanEntry(encodePlanEntry(plan, "k", 0));
  ASSERT_TRUE(bool(entry)) << llvm::toString(entry.takeError());
  expectSamePlan(plan, entry->plan);
  EXPECT_TRUE(
      std::isnan(entry->plan.kernels[0].hostUniforms->program[1].constant));
  EXPECT_TRUE(std::signbit(*entry->plan.args[2].defaultValue));
}

/// What is not an entry, or names what the runtime would index out of
/// range, fails to decode with a message.
TEST(PlanCacheTest, MalformedEntriesAreRejected) {
  auto rejects = [](const std::string &bytes, llvm::StringRef why) {
    llvm::Expected<PlanEntry> entry = decodePlanEntry(bytes);
    ASSERT_FALSE(bool(entry)) << why.str();
    std::string message = llvm::toString(entry.takeError());
    EXPECT_NE(message.find("not a kfuse-plan-6 entry"), std::string::npos)
        << message;
    EXPECT_NE(message.find(why.str()), std::string::npos) << message;
  };
  rejects("garbage", "Invalid JSON");
  rejects("[1, 2]", "not an object");
  std::string good = encodePlanEntry(smallPlan(), "k", 0);
  std::string other = good;
  other.replace(other.find("kfuse-plan-6"), 12, "kfuse-plan-1");
  rejects(other, "format 'kfuse-plan-1'");

  KernelPlan badParam = smallPlan();
  badParam.kernels[0].params[0].index = 7;
  rejects(encodePlanEntry(badParam, "k", 0), "names argument 7 of 3");
  KernelPlan badOperand = smallPlan();
  badOperand.kernels[0].hostUniforms->program[0].operands[1] = 5;
  rejects(encodePlanEntry(badOperand, "k", 0), "bad operands");
  KernelPlan badField = smallPlan();
  badField.kernels[0].hostUniforms->fields = {3};
  rejects(encodePlanEntry(badField, "k", 0), "a field names no instruction");
  KernelPlan badArg = smallPlan();
  badArg.kernels[0].hostUniforms->program[0].arg = 9;
  rejects(encodePlanEntry(badArg, "k", 0), "reads a uniform from a missing");
  KernelPlan badStep = smallPlan();
  badStep.stepArg = 3;
  rejects(encodePlanEntry(badStep, "k", 0), "'step_arg' is out of range");
  KernelPlan badColumn = smallPlan();
  badColumn.columnOutputs = {5};
  rejects(encodePlanEntry(badColumn, "k", 0),
          "a column output index is out of range");
}

class PlanCacheDiskTest : public TempDiskCacheTest {
protected:
  PlanCacheDiskTest() : TempDiskCacheTest("kfuse-plan-cache") {}
};

/// A plan is a hit only with its image beside it; a plan entry that does
/// not decode is a miss with a warning.
TEST_F(PlanCacheDiskTest, HitNeedsTheImage) {
  std::string planKey = planEntryKey("compile-key");
  std::string imageKey = std::string(64, 'a');
  storePlan(*cache, planKey, smallPlan(), imageKey, 580);
  auto driver580 = [] { return 580; };
  std::string warning;
  EXPECT_FALSE(
      lookupPlan(*cache, planKey, driver580, warning, /*wantCubin=*/true));
  EXPECT_EQ(warning, "");

  NvrtcResult nvrtc;
  nvrtc.cubin = "cubin bytes";
  nvrtc.ptx = "ptx text";
  nvrtc.compiler = "nvjitlink";
  ASSERT_TRUE(bool(cache->store(imageKey, encodeImage(nvrtc))));
  std::optional<CachedPlan> hit =
      lookupPlan(*cache, planKey, driver580, warning, /*wantCubin=*/true);
  ASSERT_TRUE(hit) << warning;
  expectSamePlan(smallPlan(), hit->plan);
  EXPECT_EQ(hit->image.nvrtc.cubin, "cubin bytes");
  EXPECT_EQ(hit->image.source, CacheSource::hitDisk);
  EXPECT_TRUE(hit->image.onDisk);
  // Another driver: a plain miss, no warning.
  EXPECT_FALSE(lookupPlan(
      *cache, planKey, [] { return 590; }, warning, /*wantCubin=*/true));
  EXPECT_EQ(warning, "");
  // An image of direct PTX for the driver (no cubin) serves the runtime,
  // not a caller that writes a cubin.
  NvrtcResult ptxImage;
  ptxImage.ptx = "ptx text";
  ptxImage.compiler = "driver";
  ASSERT_TRUE(bool(cache->store(imageKey, encodeImage(ptxImage))));
  EXPECT_FALSE(lookupPlan(*cache, planKey, driver580, warning,
                          /*wantCubin=*/true));
  std::optional<CachedPlan> ptxHit =
      lookupPlan(*cache, planKey, driver580, warning, /*wantCubin=*/false);
  ASSERT_TRUE(ptxHit) << warning;
  EXPECT_EQ(ptxHit->image.nvrtc.ptx, "ptx text");
  EXPECT_TRUE(ptxHit->image.nvrtc.cubin.empty());
  // An absent entry never asks for the driver.
  bool asked = false;
  EXPECT_FALSE(lookupPlan(
      *cache, planEntryKey("other"),
      [&] {
        asked = true;
        return 580;
      },
      warning, /*wantCubin=*/true));
  EXPECT_FALSE(asked);

  // A well-formed cache entry whose payload is no plan.
  ASSERT_TRUE(bool(cache->store(planKey, "{\"format\": 1}")));
  EXPECT_FALSE(
      lookupPlan(*cache, planKey, driver580, warning, /*wantCubin=*/true));
  EXPECT_NE(warning.find("plan cache entry"), std::string::npos) << warning;
  EXPECT_NE(warning.find("recompiling"), std::string::npos) << warning;
}

/// The key covers the compile key and the compiler's build.
TEST(PlanCacheTest, KeyCoversCompileKeyAndBuild) {
  EXPECT_EQ(planEntryKey("a"), planEntryKey("a"));
  EXPECT_NE(planEntryKey("a"), planEntryKey("b"));
  EXPECT_EQ(llvm::StringRef(compilerBuildId()).size(), 64u);
  EXPECT_TRUE(DiskCache::isValidKey(planEntryKey("a")));
}

} // namespace
