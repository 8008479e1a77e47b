//===- NormRuntimeTest.cpp - norm launch validation, no GPU needed --------===//

#include "GpuTestSupport.h"
#include "codegen/Pipeline.h"
#include "runtime/CudaDriver.h"
#include "runtime/Errors.h"
#include "runtime/Norm.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace kfuse;

namespace {

std::string normPath(const std::string &name) {
  return std::string(KFUSE_SOURCE_DIR) + "/library/norm/" + name + ".mlir";
}

const char *kLibraryNorms[] = {"layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd",
                               "rmsnorm_bwd", "add_layernorm_fwd"};

std::unique_ptr<Norm> loadNorm(const std::string &name) {
  llvm::Expected<std::unique_ptr<Norm>> norm =
      Norm::createFromFile(normPath(name));
  if (!norm) {
    ADD_FAILURE() << name << ": " << llvm::toString(norm.takeError());
    return nullptr;
  }
  return std::move(*norm);
}

/// Arguments for `norm` over rows x cols as a caller would pass them: each
/// tensor at its own fake, 256-byte aligned device address (never
/// dereferenced) with the element count its shape calls for, f32; each
/// hyper its default.
std::vector<LaunchArg> argsFor(const Norm &norm, int64_t rows, int64_t cols) {
  std::vector<LaunchArg> args;
  uintptr_t address = 0x100000;
  for (const ArgInfo &info : norm.args()) {
    LaunchArg arg;
    if (info.role == ArgRole::hyper) {
      arg.value = info.defaultValue.value_or(0.0);
      args.push_back(arg);
      continue;
    }
    switch (info.level) {
    case ArgLevel::element:
      arg.numel = rows * cols;
      break;
    case ArgLevel::row:
      arg.numel = rows;
      break;
    case ArgLevel::column:
      arg.numel = cols;
      break;
    case ArgLevel::tensor:
      arg.numel = 1;
      break;
    }
    arg.data = reinterpret_cast<const void *>(address);
    address += 0x100000;
    args.push_back(arg);
  }
  return args;
}

size_t indexOf(const Norm &norm, llvm::StringRef name) {
  for (auto [index, info] : llvm::enumerate(norm.args()))
    if (info.name == name)
      return index;
  ADD_FAILURE() << "no argument '" << name.str() << "'";
  return 0;
}

using kfuse::testing::failureOf;
using kfuse::testing::haveGpu;

TEST(NormRuntimeTest, DescribesLayerNormArguments) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  struct Expected {
    const char *name;
    ArgRole role;
    ArgLevel level;
  } expected[] = {
      {"x", ArgRole::input, ArgLevel::element},
      {"weight", ArgRole::input, ArgLevel::column},
      {"bias", ArgRole::input, ArgLevel::column},
      {"y", ArgRole::output, ArgLevel::element},
      {"mean", ArgRole::output, ArgLevel::row},
      {"rstd", ArgRole::output, ArgLevel::row},
      {"eps", ArgRole::hyper, ArgLevel::element},
  };
  ASSERT_EQ(norm->args().size(), std::size(expected));
  for (auto [info, want] : llvm::zip_equal(norm->args(), expected)) {
    EXPECT_EQ(info.name, want.name);
    EXPECT_EQ(info.role, want.role) << info.name;
    EXPECT_EQ(info.level, want.level) << info.name;
  }
  ASSERT_TRUE(norm->args()[6].defaultValue.has_value());
  EXPECT_NEAR(*norm->args()[6].defaultValue, 1e-5, 1e-9);
  EXPECT_FALSE(norm->hasColumnOutputs());
  EXPECT_EQ(norm->launchesPerCall(), 1u);
}

TEST(NormRuntimeTest, EveryLibraryNormLoads) {
  for (const char *name : kLibraryNorms) {
    std::unique_ptr<Norm> norm = loadNorm(name);
    ASSERT_TRUE(norm) << name;
    bool backward = llvm::StringRef(name).ends_with("_bwd");
    EXPECT_EQ(norm->hasColumnOutputs(), backward) << name;
    llvm::Expected<Specialization> spec =
        norm->specialize(argsFor(*norm, 7, 1000), 7, 1000);
    EXPECT_TRUE(bool(spec)) << name << ": " << llvm::toString(spec.takeError());
  }
}

TEST(NormRuntimeTest, MissingFileAndNonNorm) {
  auto [code, message] =
      failureOf(Norm::createFromFile("/nonexistent/norm.mlir"));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("cannot read '/nonexistent/norm.mlir'"),
            std::string::npos)
      << message;
  auto [parseCode, parseMessage] =
      failureOf(Norm::create("func.func @broken(", "broken.mlir"));
  EXPECT_EQ(parseCode, ErrorCode::Parse);
  EXPECT_NE(parseMessage.find("broken.mlir"), std::string::npos)
      << parseMessage;
}

TEST(NormRuntimeTest, WrongArgumentCount) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 4096);
  args.pop_back();
  auto [code, message] = failureOf(norm->specialize(args, 8, 4096));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "expected 7 arguments (x, weight, bias, y, mean, rstd, "
                     "eps), got 6");
}

TEST(NormRuntimeTest, WrongElementCountsNameTheArgument) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  struct Case {
    const char *arg;
    int64_t numel;
    const char *message;
  } cases[] = {
      {"weight", 1000,
       "tensor 'weight' has 1000 elements; a column tensor of a 4096-column "
       "norm needs 4096"},
      {"x", 8 * 4096 - 1,
       "tensor 'x' has 32767 elements; a full tensor of a 8 x 4096 norm "
       "needs 32768"},
      {"rstd", 9,
       "tensor 'rstd' has 9 elements; a row tensor of a 8-row norm needs 8"},
  };
  for (const Case &testCase : cases) {
    std::vector<LaunchArg> args = argsFor(*norm, 8, 4096);
    args[indexOf(*norm, testCase.arg)].numel = testCase.numel;
    auto [code, message] = failureOf(norm->specialize(args, 8, 4096));
    EXPECT_EQ(code, ErrorCode::InvalidArgument) << testCase.arg;
    EXPECT_EQ(message, testCase.message);
  }
}

TEST(NormRuntimeTest, BadRowsAndCols) {
  std::unique_ptr<Norm> norm = loadNorm("rmsnorm_fwd");
  ASSERT_TRUE(norm);
  auto [code, message] =
      failureOf(norm->specialize(argsFor(*norm, 4, 16), -1, 16));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "rows is -1; it must be at least 0");
  std::tie(code, message) =
      failureOf(norm->specialize(argsFor(*norm, 4, 16), 4, 0));
  EXPECT_EQ(message, "cols is 0; it must be at least 1");
  std::tie(code, message) =
      failureOf(norm->specialize(argsFor(*norm, 4, 16), INT64_MAX / 2, 16));
  EXPECT_NE(message.find("overflow"), std::string::npos) << message;
}

TEST(NormRuntimeTest, NullPointersAndHyperPointers) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_bwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 64);
  args[indexOf(*norm, "dweight")].data = nullptr;
  auto [code, message] = failureOf(norm->specialize(args, 8, 64));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "tensor 'dweight' is a null pointer");

  // With no rows, full and row tensors may be null; column tensors not.
  args = argsFor(*norm, 0, 64);
  for (auto [info, arg] : llvm::zip_equal(norm->args(), args))
    if (info.level != ArgLevel::column)
      arg.data = nullptr;
  EXPECT_TRUE(bool(norm->specialize(args, 0, 64)));

  std::unique_ptr<Norm> fwd = loadNorm("rmsnorm_fwd");
  ASSERT_TRUE(fwd);
  args = argsFor(*fwd, 8, 64);
  args[indexOf(*fwd, "eps")].data = reinterpret_cast<const void *>(0x1000);
  std::tie(code, message) = failureOf(fwd->specialize(args, 8, 64));
  EXPECT_EQ(message, "hyperparameter 'eps' must be a scalar value, got a "
                     "pointer");
}

TEST(NormRuntimeTest, UnsupportedDType) {
  std::unique_ptr<Norm> norm = loadNorm("rmsnorm_fwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 64);
  args[indexOf(*norm, "y")].dtype = DType::pred;
  auto [code, message] = failureOf(norm->specialize(args, 8, 64));
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "tensor 'y' has unsupported dtype pred (f32, bf16 or "
                     "f16)");
}

TEST(NormRuntimeTest, DTypesPerArgumentAndAlignment) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 4096);
  args[indexOf(*norm, "x")].dtype = DType::bf16;
  args[indexOf(*norm, "y")].dtype = DType::bf16;
  llvm::Expected<Specialization> spec = norm->specialize(args, 8, 4096);
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  EXPECT_EQ(spec->cols, 4096);
  EXPECT_EQ(spec->alignment, 16u);
  ASSERT_EQ(spec->argDTypes.size(), norm->args().size());
  EXPECT_EQ(spec->argDTypes[indexOf(*norm, "x")], DType::bf16);
  EXPECT_EQ(spec->argDTypes[indexOf(*norm, "weight")], DType::f32);
  EXPECT_EQ(spec->argDTypes[indexOf(*norm, "y")], DType::bf16);

  // A row pitch of 1001 bf16 (2002 bytes) allows 2-byte accesses only.
  args = argsFor(*norm, 8, 1001);
  args[indexOf(*norm, "x")].dtype = DType::bf16;
  spec = norm->specialize(args, 8, 1001);
  ASSERT_TRUE(bool(spec));
  EXPECT_EQ(spec->alignment, 2u);
  // f32 rows of 1001 elements: 4 bytes.
  args = argsFor(*norm, 8, 1001);
  spec = norm->specialize(args, 8, 1001);
  ASSERT_TRUE(bool(spec));
  EXPECT_EQ(spec->alignment, 4u);
  // A pointer 8 bytes into a buffer: 8.
  args = argsFor(*norm, 8, 4096);
  args[indexOf(*norm, "mean")].data = reinterpret_cast<const void *>(0x100008);
  spec = norm->specialize(args, 8, 4096);
  ASSERT_TRUE(bool(spec));
  EXPECT_EQ(spec->alignment, 8u);
  // The key tells specializations apart.
  Specialization other = *spec;
  other.alignment = 16;
  EXPECT_NE(spec->key(), other.key());
}

TEST(NormRuntimeTest, CacheKeyChangesWithSpecAndArch) {
  Specialization spec;
  spec.cols = 4096;
  spec.argDTypes = {DType::f32, DType::f32};
  std::string base = normCompileCacheKey("ir", spec, "sm_90");
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(base, normCompileCacheKey("ir", spec, "sm_90"));
  EXPECT_NE(base, normCompileCacheKey("ir2", spec, "sm_90"));
  EXPECT_NE(base, normCompileCacheKey("ir", spec, "sm_80"));
  Specialization other = spec;
  other.cols = 4097;
  EXPECT_NE(base, normCompileCacheKey("ir", other, "sm_90"));
  other = spec;
  other.argDTypes[1] = DType::bf16;
  EXPECT_NE(base, normCompileCacheKey("ir", other, "sm_90"));
}

TEST(NormRuntimeTest, GridSize) {
  KernelPlan plan;
  plan.kind = KernelKind::norm;
  KernelInfo &rows = plan.kernels.emplace_back();
  rows.role = KernelInfo::Role::NormRows;
  rows.rowsPerBlock = 4;
  EXPECT_EQ(normGridSize(plan, 1000, 132, 2), 250u);
  EXPECT_EQ(normGridSize(plan, 1001, 132, 2), 251u);
  EXPECT_EQ(normGridSize(plan, 0, 132, 2), 1u);
  rows.maxGridBlocks = 100;
  EXPECT_EQ(normGridSize(plan, 1000, 132, 2), 100u);
  // With column reductions the grid stops at blocksPerSm per SM, and only
  // rows and the device decide it.
  rows.maxGridBlocks = 0;
  plan.columnOutputs = {6, 7};
  EXPECT_EQ(normGridSize(plan, 65536, 132, 2), 264u);
  EXPECT_EQ(normGridSize(plan, 65536, 132, 4), 528u);
  EXPECT_EQ(normGridSize(plan, 40, 132, 2), 10u);
  plan.cols = 1024;
  EXPECT_EQ(plan.partialFloats(264), 2u * 264u * 1024u);
  // A row kernel that prefetches the next row group runs in one wave too.
  plan.columnOutputs.clear();
  rows.stages = 2;
  EXPECT_EQ(normGridSize(plan, 65536, 132, 2), 264u);
  EXPECT_EQ(normGridSize(plan, 40, 132, 2), 10u);
  rows.stages = 1;
  EXPECT_EQ(normGridSize(plan, 65536, 132, 2), 16384u);
}

TEST(NormRuntimeTest, MinimumBytes) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  // x, y: 7 x 4096 f32; weight, bias: 4096 f32; mean, rstd: 7 f32.
  EXPECT_EQ(normMinimumBytes(norm->args(), {}, 7, 4096),
            2u * 7 * 4096 * 4 + 2u * 4096 * 4 + 2u * 7 * 4);
  std::vector<DType> dtypes(norm->args().size(), DType::f32);
  dtypes[indexOf(*norm, "x")] = DType::bf16;
  dtypes[indexOf(*norm, "y")] = DType::bf16;
  EXPECT_EQ(normMinimumBytes(norm->args(), dtypes, 7, 4096),
            2u * 7 * 4096 * 2 + 2u * 4096 * 4 + 2u * 7 * 4);
  // Counts past 2^64 and negative extents have no answer, not a wrapped one.
  EXPECT_EQ(
      normMinimumBytes(norm->args(), {}, int64_t(1) << 62, int64_t(1) << 62),
      std::nullopt);
  EXPECT_EQ(normMinimumBytes(norm->args(), {}, int64_t(1) << 60, 1),
            std::nullopt);
  EXPECT_EQ(normMinimumBytes(norm->args(), {}, -1, 4096), std::nullopt);
}

TEST(NormRuntimeTest, BadLaunchFailsBeforeNeedingADevice) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_bwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 4096);
  args[indexOf(*norm, "dbias")].numel = 4095;
  auto [code, message] = failureOf(norm->launch(args, 8, 4096, nullptr));
  EXPECT_EQ(code, ErrorCode::InvalidArgument) << message;
  EXPECT_EQ(message, "tensor 'dbias' has 4095 elements; a column tensor of a "
                     "4096-column norm needs 4096");
}

TEST(NormRuntimeTest, NoRowsWithoutColumnOutputsLaunchesNothing) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 0, 4096);
  EXPECT_FALSE(bool(norm->launch(args, 0, 4096, nullptr)));
}

TEST(NormRuntimeTest, LaunchWithoutGpuFailsCleanly) {
  if (haveGpu())
    GTEST_SKIP() << "a CUDA device is present";
  std::unique_ptr<Norm> norm = loadNorm("rmsnorm_bwd");
  ASSERT_TRUE(norm);
  auto [code, message] =
      failureOf(norm->launch(argsFor(*norm, 8, 512), 8, 512, nullptr));
  EXPECT_TRUE(code == ErrorCode::NoDriver || code == ErrorCode::NoDevice)
      << message;
  EXPECT_TRUE(message.rfind("no CUDA driver", 0) == 0 ||
              message.rfind("no CUDA device", 0) == 0)
      << message;
}

TEST(NormRuntimeTest, LaunchIfReadyChecksArgumentsFirst) {
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::vector<LaunchArg> args = argsFor(*norm, 8, 512);
  args[indexOf(*norm, "mean")].numel = 7;
  bool ready = true;
  auto [code, message] = failureOf(norm->launch(args, 8, 512, nullptr, &ready));
  EXPECT_EQ(code, ErrorCode::InvalidArgument) << message;
  EXPECT_EQ(message, "tensor 'mean' has 7 elements; a row tensor of a 8-row "
                     "norm needs 8");
}

TEST(NormRuntimeTest, LaunchIfReadyLaunchesOnlyWhatIsLoaded) {
  if (!haveGpu())
    GTEST_SKIP() << "no CUDA device";
  CudaDriver &driver = *CudaDriver::get();
  std::unique_ptr<Norm> norm = loadNorm("layernorm_fwd");
  ASSERT_TRUE(norm);
  const int64_t rows = 8, cols = 512;
  std::vector<LaunchArg> args = argsFor(*norm, rows, cols);
  std::vector<DeviceBuffer> buffers;
  for (LaunchArg &arg : args) {
    if (!arg.data)
      continue;
    llvm::Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(driver, size_t(arg.numel) * sizeof(float));
    ASSERT_TRUE(bool(buffer)) << llvm::toString(buffer.takeError());
    arg.data = reinterpret_cast<const void *>(buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  // A new Norm has loaded nothing: the first try launches nothing.
  bool ready = true;
  ASSERT_FALSE(bool(norm->launch(args, rows, cols, nullptr, &ready)));
  EXPECT_FALSE(ready);
  ASSERT_FALSE(bool(norm->launch(args, rows, cols, nullptr)));
  ASSERT_FALSE(bool(norm->launch(args, rows, cols, nullptr, &ready)));
  EXPECT_TRUE(ready);
  // Another specialization (cols) is not loaded: nothing runs, so these
  // pointers are never read.
  ASSERT_FALSE(
      bool(norm->launch(argsFor(*norm, 4, 1024), 4, 1024, nullptr, &ready)));
  EXPECT_FALSE(ready);
  EXPECT_EQ(driver.cuCtxSynchronize(), CUDA_SUCCESS);
}

/// The parameter types of `.entry name(...)` in `ptx`, in order ("u64",
/// "f64", ...); empty when there is no such entry.
std::vector<std::string> entryParams(llvm::StringRef ptx,
                                     llvm::StringRef name) {
  std::vector<std::string> types;
  size_t start = ptx.find((".entry " + name + "(").str());
  if (start == llvm::StringRef::npos)
    return types;
  llvm::StringRef rest = ptx.drop_front(start);
  rest = rest.take_until([](char c) { return c == ')'; });
  while (true) {
    size_t param = rest.find(".param .");
    if (param == llvm::StringRef::npos)
      break;
    rest = rest.drop_front(param + strlen(".param ."));
    llvm::StringRef type = rest.take_until([](char c) { return c == ' '; });
    // `.param .align 8 .b8 name[8]` and the like are structs: kept whole.
    types.push_back(type.str());
  }
  return types;
}

struct AbiCase {
  DType data;
  DType weight;
  int64_t cols;
  unsigned alignment;
};

/// Compiles every library norm for `testCase` with NVRTC and checks that its
/// kernels' parameters follow the launch ABI the runtime uses.
void checkLaunchAbi(const AbiCase &testCase) {
  for (const char *name : kLibraryNorms) {
    std::unique_ptr<Norm> norm = loadNorm(name);
    ASSERT_TRUE(norm) << name;
    Specialization spec;
    spec.cols = testCase.cols;
    spec.alignment = testCase.alignment;
    for (const ArgInfo &info : norm->args())
      spec.argDTypes.push_back(info.level == ArgLevel::element ? testCase.data
                               : info.level == ArgLevel::column
                                   ? testCase.weight
                                   : DType::f32);
    std::string what = std::string(name) + " " + spec.key();
    llvm::Expected<KernelPlan> plan =
        compileToPlan(norm->text(), norm->sourceName(), spec);
    ASSERT_TRUE(bool(plan)) << what << ": " << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->cols, testCase.cols) << what;
    EXPECT_EQ(plan->args.size(), norm->args().size()) << what;
    EXPECT_EQ(plan->columnOutputs.empty(), !norm->hasColumnOutputs()) << what;
    EXPECT_GE(plan->rowKernel().blockSize, 1u) << what;
    EXPECT_LE(plan->rowKernel().blockSize, 1024u) << what;
    EXPECT_GE(plan->rowKernel().rowsPerBlock, 1u) << what;

    NvrtcOptions options;
    options.arch = "sm_90";
    llvm::Expected<NvrtcResult> compiled =
        compileWithNvrtc(plan->source, plan->name + ".cu", options);
    ASSERT_TRUE(bool(compiled))
        << what << ": " << llvm::toString(compiled.takeError()) << "\n"
        << plan->source;

    // Row kernel: a pointer per tensor, a double per hyper, long long rows,
    // float *partials.
    std::vector<std::string> want;
    for (const ArgInfo &info : norm->args())
      if (info.role != ArgRole::hyper)
        want.push_back("u64");
    for (const ArgInfo &info : norm->args())
      if (info.role == ArgRole::hyper)
        want.push_back("f64");
    want.push_back("u64");
    want.push_back("u64");
    EXPECT_EQ(entryParams(compiled->ptx, plan->rowKernel().name), want)
        << what << ": row kernel '" << plan->rowKernel().name << "'";
    if (plan->columnOutputs.empty())
      continue;
    // Finish kernel: const float *partials, int grid, a pointer per column
    // output.
    want = {"u64", "u32"};
    want.resize(2 + plan->columnOutputs.size(), "u64");
    EXPECT_EQ(entryParams(compiled->ptx, plan->finishKernel()->name), want)
        << what << ": finish kernel '" << plan->finishKernel()->name << "'";
  }
}

/// Every library norm, in the dtypes the GPU runs use, compiles with NVRTC
/// into kernels whose parameters follow the launch ABI.
TEST(NormRuntimeTest, LibraryNormsFollowTheLaunchAbi) {
  for (const AbiCase &testCase : {AbiCase{DType::f32, DType::f32, 1024, 16},
                                  AbiCase{DType::bf16, DType::bf16, 4096, 16},
                                  AbiCase{DType::f16, DType::f32, 1000, 16},
                                  AbiCase{DType::bf16, DType::f32, 12289, 2}})
    checkLaunchAbi(testCase);
}

/// Rows of one column (the GPU tests run them): full and row tensors then
/// have one type, and only the shapes as written tell them apart.
TEST(NormRuntimeTest, LibraryNormsCompileForOneColumn) {
  checkLaunchAbi({DType::f32, DType::f32, 1, 4});
  checkLaunchAbi({DType::bf16, DType::bf16, 1, 2});
}

} // namespace
