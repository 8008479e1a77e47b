//===- JitTest.cpp - launch validation and caching, no GPU needed ---------===//

#include "runtime/Jit.h"
#include "GpuTestSupport.h"
#include "runtime/CudaDriver.h"
#include "runtime/Errors.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

using namespace kfuse;

namespace {

std::string adamwPath() {
  return std::string(KFUSE_SOURCE_DIR) + "/library/optim/adamw.mlir";
}

/// AdamW's arguments as a caller would pass them: four tensors at distinct
/// fake device addresses (never dereferenced), then six hyperparameters.
std::vector<LaunchArg> adamwArgs(int64_t numel = 1024) {
  std::vector<LaunchArg> args;
  for (uintptr_t address : {0x10000, 0x20000, 0x30000, 0x40000})
    args.push_back(
        {reinterpret_cast<const void *>(address), numel, DType::f32, 0});
  for (double value : {1e-3, 0.9, 0.999, 1e-8, 1e-2, 1.0})
    args.push_back({nullptr, 0, DType::f32, value});
  return args;
}

std::unique_ptr<Update> loadAdamw() {
  llvm::Expected<std::unique_ptr<Update>> update =
      Update::createFromFile(adamwPath());
  if (!update) {
    ADD_FAILURE() << llvm::toString(update.takeError());
    return nullptr;
  }
  return std::move(*update);
}

using kfuse::testing::failureOf;
using kfuse::testing::haveGpu;

constexpr const char *kSource =
    "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n";

/// A plan of kSource's kernel whose image is `ptx` for the driver.
LoadedPlan trivialPlanForTheDriver(const std::string &ptx, NvrtcResult &image) {
  LoadedPlan loaded;
  loaded.plan.name = "k";
  loaded.plan.source = kSource;
  KernelInfo kernel;
  kernel.name = "k";
  kernel.location = "k.mlir:1:1";
  kernel.blockSize = 32;
  loaded.plan.kernels.push_back(kernel);
  image.ptx = ptx;
  image.compiler = kDriverCompiler.str();
  return loaded;
}

TEST(DriverJitTest, LoadsDirectPtxAndFallsBackToNvrtcInAutoOnly) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  llvm::Expected<CudaDriver::Current> current = CudaDriver::getCurrent();
  ASSERT_TRUE(bool(current)) << llvm::toString(current.takeError());
  const std::string &arch = current->device.arch;
  CodegenMode before = processCodegenMode();
  // Good PTX: the driver compiles it, with ptxas' report read back.
  NvrtcOptions ptxOptions;
  ptxOptions.arch = arch;
  ptxOptions.ptxOnly = true;
  llvm::Expected<NvrtcResult> ptx =
      compileWithNvrtc(kSource, "k.cu", ptxOptions);
  ASSERT_TRUE(bool(ptx)) << llvm::toString(ptx.takeError());
  NvrtcResult image;
  LoadedPlan loaded = trivialPlanForTheDriver(ptx->ptx, image);
  setProcessCodegenMode(CodegenMode::ptx);
  llvm::Error error = loadPlan(current->driver, image, "k", arch, loaded);
  ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
  EXPECT_EQ(image.compiler, "driver");
  EXPECT_EQ(loaded.functions.size(), 1u);
  // Bad PTX: the error carries the JIT's log under ptx; auto compiles the
  // CUDA source instead.
  std::string bad = ".version 8.0\n.target sm_90\n.address_size 64\nbogus;\n";
  NvrtcResult strictImage;
  LoadedPlan strict = trivialPlanForTheDriver(bad, strictImage);
  auto [code, message] =
      failureOf(loadPlan(current->driver, strictImage, "k", arch, strict));
  EXPECT_NE(message.find("the driver's JIT of the PTX of 'k'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("bogus"), std::string::npos) << message;
  setProcessCodegenMode(CodegenMode::automatic);
  NvrtcResult autoImage;
  LoadedPlan automatic = trivialPlanForTheDriver(bad, autoImage);
  error = loadPlan(current->driver, autoImage, "k", arch, automatic);
  ASSERT_FALSE(bool(error)) << llvm::toString(std::move(error));
  EXPECT_EQ(autoImage.compiler, "nvrtc");
  EXPECT_FALSE(autoImage.cubin.empty());
  EXPECT_EQ(automatic.functions.size(), 1u);
  setProcessCodegenMode(before);
}

// The driver version probed on a second thread is the one read in line (0
// where no driver is installed), and two probes at once agree.
TEST(JitTest, DriverVersionProbedInBackground) {
  std::future<int> first = installedDriverVersionAsync();
  std::future<int> second = installedDriverVersionAsync();
  int inLine = installedDriverVersion();
  EXPECT_EQ(first.get(), inLine);
  EXPECT_EQ(second.get(), inLine);
  EXPECT_GE(inLine, 0);
}

TEST(JitTest, DescribesArguments) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  ASSERT_EQ(update->args().size(), 10u);
  EXPECT_EQ(update->args()[0].name, "param");
  EXPECT_EQ(update->args()[0].role, ArgRole::param);
  EXPECT_EQ(update->args()[4].name, "lr");
  EXPECT_EQ(update->args()[4].role, ArgRole::hyper);
  ASSERT_TRUE(update->args()[4].defaultValue.has_value());
  EXPECT_NEAR(*update->args()[4].defaultValue, 1e-3, 1e-9);
}

// A 2-D update whose argument types fix a row length says so (its plans
// view every tensor as rows of it); AdamW and Adafactor fix none.
TEST(JitTest, RowLengthFromArgumentTypes) {
  llvm::Expected<std::unique_ptr<Update>> rows =
      Update::createFromFile(std::string(KFUSE_SOURCE_DIR) +
                             "/test/Codegen/cuda-matrix-register-rows.mlir");
  ASSERT_TRUE(static_cast<bool>(rows)) << llvm::toString(rows.takeError());
  EXPECT_TRUE((*rows)->isMatrix());
  EXPECT_EQ((*rows)->rowLength(), 256);
  llvm::Expected<std::unique_ptr<Update>> adafactor = Update::createFromFile(
      std::string(KFUSE_SOURCE_DIR) + "/library/optim/adafactor.mlir");
  ASSERT_TRUE(static_cast<bool>(adafactor))
      << llvm::toString(adafactor.takeError());
  EXPECT_TRUE((*adafactor)->isMatrix());
  EXPECT_EQ((*adafactor)->rowLength(), 0);
  std::unique_ptr<Update> adamw = loadAdamw();
  ASSERT_TRUE(adamw);
  EXPECT_EQ(adamw->rowLength(), 0);
}

TEST(JitTest, ParseErrorIsCategorized) {
  llvm::Expected<std::unique_ptr<Update>> update =
      Update::create("func.func @broken(", "broken.mlir");
  auto [code, message] = failureOf(std::move(update));
  EXPECT_EQ(code, ErrorCode::Parse);
  EXPECT_NE(message.find("broken.mlir"), std::string::npos) << message;
}

TEST(JitTest, MissingFile) {
  auto [code, message] =
      failureOf(Update::createFromFile("/nonexistent/update.mlir"));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("/nonexistent/update.mlir"), std::string::npos);
}

TEST(JitTest, WrongArgumentCount) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args.pop_back();
  auto [code, message] = failureOf(update->launch(args, nullptr));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "expected 10 arguments, got 9");
}

TEST(JitTest, MismatchedNumel) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args[2].numel = 1000;
  auto [code, message] = failureOf(update->launch(args, nullptr));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "tensor 'exp_avg' has 1000 elements but 'param' has 1024");
}

TEST(JitTest, EachTensorKeepsItsOwnDType) {
  // A bf16 exp_avg_sq beside an f32 exp_avg: one specialization with a
  // dtype per argument, the role's the first of its tensors', and a key of
  // its own.
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  llvm::Expected<Specialization> plain = update->specialize(args);
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  args[3].dtype = DType::bf16;
  llvm::Expected<Specialization> spec = update->specialize(args);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->stateDType, DType::f32);
  ASSERT_EQ(spec->argDTypes.size(), args.size());
  EXPECT_EQ(spec->argDTypes[2], DType::f32);
  EXPECT_EQ(spec->argDTypes[3], DType::bf16);
  EXPECT_EQ(spec->dtypeOf(3, ArgRole::state), DType::bf16);
  EXPECT_NE(spec->key(), plain->key());

  llvm::Expected<KernelPlan> plan =
      compileToPlan(update->text(), "adamw.mlir", *spec, {});
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->args[2].dtype, DType::f32);
  EXPECT_EQ(plan->args[3].dtype, DType::bf16);
  // p and exp_avg in f32 read and written, g read, exp_avg_sq in bf16 read
  // and written.
  EXPECT_EQ(plan->bytesPerElement(), 8u + 4u + 8u + 4u);
}

TEST(JitTest, DifferentDTypesAcrossRolesAreFine) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args[0].dtype = DType::bf16;
  args[1].dtype = DType::bf16;
  llvm::Expected<Specialization> spec = update->specialize(args);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->paramDType, DType::bf16);
  EXPECT_EQ(spec->gradDType, DType::bf16);
  EXPECT_EQ(spec->stateDType, DType::f32);
  EXPECT_EQ(spec->numel, -1);
  EXPECT_EQ(spec->alignment, 16u);
}

TEST(JitTest, NullTensor) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args[1].data = nullptr;
  auto [code, message] = failureOf(update->launch(args, nullptr));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "tensor 'grad' is a null pointer");
}

TEST(JitTest, PointerForHyperparameter) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args[4].data = reinterpret_cast<const void *>(0x50000);
  auto [code, message] = failureOf(update->launch(args, nullptr));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "hyperparameter 'lr' must be a scalar value, got a "
                     "pointer");
}

TEST(JitTest, EmptyTensorsLaunchNothing) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs(0);
  for (LaunchArg &arg : args)
    if (arg.numel == 0)
      arg.data = nullptr;
  EXPECT_FALSE(bool(update->launch(args, nullptr)));
}

TEST(JitTest, Alignment) {
  auto pointer = [](uintptr_t address) {
    return reinterpret_cast<const void *>(address);
  };
  EXPECT_EQ(commonAlignment({pointer(0x1000), pointer(0x1004)}), 4u);
  EXPECT_EQ(commonAlignment({pointer(0x1000), pointer(0x2000)}), 16u);
  EXPECT_EQ(commonAlignment({pointer(0x1000), pointer(0x1008)}), 8u);
  EXPECT_EQ(commonAlignment({pointer(0x1002)}), 2u);
  EXPECT_EQ(commonAlignment({pointer(0x1001), pointer(0x1000)}), 1u);
  EXPECT_EQ(commonAlignment({}), 16u);

  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> args = adamwArgs();
  args[1].data = pointer(0x20004); // a view one f32 into its storage
  llvm::Expected<Specialization> spec = update->specialize(args);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->alignment, 4u);
}

TEST(JitTest, SpecializeNumel) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  update->setSpecializeNumel(true);
  llvm::Expected<Specialization> spec = update->specialize(adamwArgs(4096));
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->numel, 4096);
  EXPECT_EQ(spec->numelMultiple, 1u); // a known count says all
}

TEST(JitTest, DynamicNumelKeepsItsPowerOfTwoUpToEight) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  for (auto [numel, multiple] : {std::pair<int64_t, unsigned>{4096, 8},
                                 {1000, 8},
                                 {1004, 4},
                                 {1026, 2},
                                 {1025, 1}}) {
    llvm::Expected<Specialization> spec = update->specialize(adamwArgs(numel));
    ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
    EXPECT_EQ(spec->numel, -1);
    EXPECT_EQ(spec->numelMultiple, multiple) << numel;
  }
}

TEST(JitTest, CacheKeyChangesWithArchSpecAndOptions) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  Specialization spec;
  PipelineOptions options;
  std::string base = compileCacheKey(update->text(), spec, "sm_90", options);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, compileCacheKey(update->text(), spec, "sm_90", options));
  EXPECT_NE(base, compileCacheKey(update->text(), spec, "sm_80", options));
  Specialization bf16 = spec;
  bf16.paramDType = DType::bf16;
  EXPECT_NE(base, compileCacheKey(update->text(), bf16, "sm_90", options));
  Specialization aligned4 = spec;
  aligned4.alignment = 4;
  EXPECT_NE(base, compileCacheKey(update->text(), aligned4, "sm_90", options));
  Specialization multipleOf8 = spec;
  multipleOf8.numelMultiple = 8;
  EXPECT_NE(base,
            compileCacheKey(update->text(), multipleOf8, "sm_90", options));
  PipelineOptions unfused;
  unfused.fuse = false;
  EXPECT_NE(base, compileCacheKey(update->text(), spec, "sm_90", unfused));
  EXPECT_NE(base, compileCacheKey(update->text().str() + "\n", spec, "sm_90",
                                  options));
}

TEST(JitTest, GridSize) {
  EXPECT_EQ(gridSize(1, 4, 256, 132), 1u);
  EXPECT_EQ(gridSize(1024, 4, 256, 132), 1u);
  EXPECT_EQ(gridSize(1025, 4, 256, 132), 2u);
  EXPECT_EQ(gridSize(int64_t(1) << 30, 4, 256, 132, 4), 528u);
  EXPECT_EQ(gridSize(int64_t(1) << 30, 4, 256, 132), 132u * 512u);
  EXPECT_EQ(gridSize(int64_t(1) << 20, 4, 256, 132), 1024u);
  EXPECT_EQ(gridSize(0, 4, 256, 132), 1u);
}

TEST(JitTest, NvrtcOptionsForNewerDeviceFallBackToPtx) {
  llvm::Expected<NvrtcOptions> known = nvrtcOptionsForDevice("sm_90");
  ASSERT_TRUE(bool(known)) << llvm::toString(known.takeError());
  EXPECT_FALSE(known->ptxOnly);
  llvm::Expected<NvrtcOptions> future = nvrtcOptionsForDevice("sm_999");
  ASSERT_TRUE(bool(future)) << llvm::toString(future.takeError());
  EXPECT_TRUE(future->ptxOnly);
  auto [code, message] = failureOf(nvrtcOptionsForDevice("sm_10"));
  EXPECT_EQ(code, ErrorCode::Compile);
  EXPECT_NE(message.find("unsupported arch 'sm_10'"), std::string::npos);
}

TEST(JitTest, MissingDriverLibrary) {
  auto [code, message] =
      failureOf(CudaDriver::load("/nonexistent/libcuda.so.1"));
  EXPECT_EQ(code, ErrorCode::NoDriver);
  EXPECT_EQ(message.rfind("no CUDA driver: /nonexistent/libcuda.so.1 could "
                          "not be loaded (",
                          0),
            0u)
      << message;
}

TEST(JitTest, LaunchWithoutGpuFailsCleanly) {
  if (haveGpu())
    GTEST_SKIP() << "a CUDA device is present";
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  auto [code, message] = failureOf(update->launch(adamwArgs(), nullptr));
  EXPECT_TRUE(code == ErrorCode::NoDriver || code == ErrorCode::NoDevice)
      << message;
  EXPECT_TRUE(message.rfind("no CUDA driver", 0) == 0 ||
              message.rfind("no CUDA device", 0) == 0)
      << message;
}

} // namespace

namespace {

/// Every library update, in the specializations the GPU runs use, turns into
/// source NVRTC accepts, with a plan the launcher can follow.
TEST(JitTest, LibraryUpdatesCompileWithNvrtc) {
  for (const char *optimizer : {"adamw", "adam", "sgd", "lion"}) {
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/optim/" + optimizer + ".mlir";
    llvm::Expected<std::unique_ptr<Update>> update =
        Update::createFromFile(path);
    ASSERT_TRUE(bool(update)) << llvm::toString(update.takeError());
    std::pair<DType, unsigned> cases[] = {{DType::f32, 16},
                                          {DType::f32, 4},
                                          {DType::bf16, 16},
                                          {DType::bf16, 2},
                                          {DType::f16, 16}};
    for (bool fuse : {true, false})
      for (auto [lowP, alignment] : cases) {
        Specialization spec;
        spec.paramDType = spec.gradDType = lowP;
        spec.alignment = alignment;
        PipelineOptions options;
        options.fuse = fuse;
        std::string what = std::string(optimizer) + " " + dtypeName(lowP) +
                           " align " + std::to_string(alignment) +
                           (fuse ? " fused" : " unfused");
        llvm::Expected<KernelPlan> plan = compileToPlan(
            (*update)->text(), (*update)->sourceName(), spec, options);
        ASSERT_TRUE(bool(plan))
            << what << ": " << llvm::toString(plan.takeError());
        ASSERT_FALSE(plan->kernels.empty()) << what;
        if (fuse)
          EXPECT_EQ(plan->kernels.size(), 1u) << what;
        for (const KernelInfo &kernel : plan->kernels) {
          EXPECT_FALSE(kernel.location.empty()) << what;
          EXPECT_GE(kernel.vectorWidth, 1u) << what;
        }
        NvrtcOptions nvrtcOptions;
        nvrtcOptions.arch = "sm_90";
        llvm::Expected<NvrtcResult> compiled =
            compileWithNvrtc(plan->source, plan->name + ".cu", nvrtcOptions);
        ASSERT_TRUE(bool(compiled))
            << what << ": " << llvm::toString(compiled.takeError()) << "\n"
            << plan->source;
        ASSERT_EQ(compiled->resources.size(), plan->kernels.size()) << what;
        for (const KernelResources &resources : compiled->resources)
          EXPECT_EQ(resources.spillStoreBytes, 0u) << what;
      }
  }
}

} // namespace
