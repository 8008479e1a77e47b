//===- NormCodegenTest.cpp - norm plans for the library, no GPU needed ----===//
//
// Every library norm plans for every storage dtype and a range of row
// lengths (odd ones included), and a sample of those plans compiles with
// NVRTC for sm_90 without register spills. NVRTC takes about half a second
// a norm, so the full matrix is planned but only sampled through NVRTC.
//
//===----------------------------------------------------------------------===//

#include "codegen/Pipeline.h"
#include "runtime/Nvrtc.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace kfuse;

namespace {

constexpr const char *kLibraryNorms[] = {"layernorm_fwd", "add_layernorm_fwd",
                                         "rmsnorm_fwd", "layernorm_bwd",
                                         "rmsnorm_bwd"};
constexpr int64_t kCols[] = {1, 1000, 1024, 4096, 5128, 12288, 12289};
/// The row lengths of the benchmarks, which must not spill.
constexpr int64_t kBenchCols[] = {1024, 4096, 12288};
constexpr DType kInputDTypes[] = {DType::f32, DType::bf16, DType::f16};

bool contains(const std::string &text, llvm::StringRef part) {
  return text.find(part.str()) != std::string::npos;
}

std::string readLibraryNorm(const std::string &name) {
  std::string path =
      std::string(KFUSE_SOURCE_DIR) + "/library/norm/" + name + ".mlir";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path;
    return "";
  }
  return (*buffer)->getBuffer().str();
}

/// Full tensors in `input`, per-column ones in `weight`, per-row ones f32,
/// as `kfuse compile --input-dtype --weight-dtype` binds them.
Specialization specialize(const std::vector<ArgInfo> &args, int64_t cols,
                          DType input, DType weight) {
  Specialization spec;
  spec.cols = cols;
  for (const ArgInfo &arg : args)
    spec.argDTypes.push_back(arg.level == ArgLevel::element  ? input
                             : arg.level == ArgLevel::column ? weight
                                                             : DType::f32);
  return spec;
}

class LibraryNormTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    text = readLibraryNorm(GetParam());
    auto described = describeKernel(text, GetParam(), KernelKind::norm);
    ASSERT_TRUE(bool(described)) << llvm::toString(described.takeError());
    args = std::move(*described);
  }

  /// The plan, or a test failure and none.
  std::optional<KernelPlan> plan(const Specialization &spec) {
    llvm::Expected<KernelPlan> plan =
        compileToPlan(text, std::string(GetParam()) + ".mlir", spec);
    if (!plan) {
      ADD_FAILURE() << spec.key() << ": " << llvm::toString(plan.takeError());
      return std::nullopt;
    }
    return std::move(*plan);
  }

  std::string text;
  std::vector<ArgInfo> args;
};

TEST_P(LibraryNormTest, PlansEveryDTypeAndRowLength) {
  for (DType input : kInputDTypes)
    for (DType weight : {input, DType::f32})
      for (int64_t cols : kCols) {
        Specialization spec = specialize(args, cols, input, weight);
        std::optional<KernelPlan> plan = this->plan(spec);
        if (!plan)
          continue;
        SCOPED_TRACE(spec.key());
        EXPECT_EQ(plan->name, GetParam());
        EXPECT_EQ(plan->cols, cols);
        ASSERT_EQ(plan->args.size(), args.size());
        for (auto [index, arg] : llvm::enumerate(plan->args)) {
          EXPECT_EQ(arg.name, args[index].name);
          EXPECT_EQ(arg.level, args[index].level);
          EXPECT_EQ(arg.dtype, arg.role == ArgRole::hyper
                                   ? DType::f32
                                   : spec.argDTypes[index]);
        }
        EXPECT_EQ(plan->rowKernel().blockSize,
                  plan->rowKernel().threadsPerRow *
                      plan->rowKernel().rowsPerBlock);
        EXPECT_LE(plan->rowKernel().blockSize, 1024u);
        EXPECT_EQ(plan->rowKernel().blockSize % 32, 0u);
        EXPECT_LE(plan->rowKernel().sharedBytes, 227u * 1024);
        EXPECT_TRUE(contains(plan->source, plan->rowKernel().name));
        EXPECT_FALSE(contains(plan->source, "#include"));
        // Whole 16-byte vectors exactly when rows start on 16 bytes.
        unsigned widest = dtypeSize(input);
        bool aligned = (cols * widest) % 16 == 0;
        EXPECT_EQ(plan->rowKernel().vectorWidth, aligned ? 16 / widest : 1u);
        bool backward = llvm::StringRef(GetParam()).ends_with("_bwd");
        EXPECT_EQ(plan->columnOutputs.empty(), !backward);
        EXPECT_EQ(!plan->finishKernel(), !backward);
        if (backward) {
          EXPECT_TRUE(contains(plan->source, plan->finishKernel()->name));
          EXPECT_GT(plan->rowKernel().maxGridBlocks, 0u);
          for (unsigned output : plan->columnOutputs)
            EXPECT_EQ(plan->args[output].level, ArgLevel::column);
        }
      }
}

/// NVRTC for the benchmark shapes in f32 and bf16, and for the other row
/// lengths with the dtype pairs taken in turn (shifted per norm, so the
/// library covers them all).
TEST_P(LibraryNormTest, SampleCompilesWithNvrtcWithoutSpills) {
  std::vector<std::pair<DType, DType>> pairs;
  for (DType input : kInputDTypes)
    for (DType weight : {input, DType::f32})
      pairs.push_back({input, weight});
  unsigned turn = llvm::find(llvm::ArrayRef(kLibraryNorms), GetParam()) -
                  std::begin(kLibraryNorms);
  std::vector<Specialization> sample;
  for (int64_t cols : kCols) {
    if (llvm::is_contained(kBenchCols, cols)) {
      sample.push_back(specialize(args, cols, DType::f32, DType::f32));
      sample.push_back(specialize(args, cols, DType::bf16, DType::bf16));
      continue;
    }
    auto [input, weight] = pairs[turn++ % pairs.size()];
    sample.push_back(specialize(args, cols, input, weight));
  }
  for (const Specialization &spec : sample) {
    SCOPED_TRACE(spec.key());
    std::optional<KernelPlan> plan = this->plan(spec);
    if (!plan)
      continue;
    NvrtcOptions options;
    options.arch = "sm_90";
    llvm::Expected<NvrtcResult> compiled =
        compileWithNvrtc(plan->source, plan->name + ".cu", options);
    if (!compiled) {
      ADD_FAILURE() << llvm::toString(compiled.takeError()) << "\n"
                    << plan->source;
      continue;
    }
    EXPECT_FALSE(compiled->cubin.empty());
    std::vector<std::string> kernels{plan->rowKernel().name};
    if (!!plan->finishKernel())
      kernels.push_back(plan->finishKernel()->name);
    for (const std::string &kernel : kernels) {
      auto resources = llvm::find_if(compiled->resources,
                                     [&](const KernelResources &resources) {
                                       return resources.name == kernel;
                                     });
      ASSERT_NE(resources, compiled->resources.end()) << kernel << " in\n"
                                                      << compiled->log;
      if (llvm::is_contained(kBenchCols, spec.cols)) {
        EXPECT_EQ(resources->spillStoreBytes, 0u) << kernel;
        EXPECT_EQ(resources->spillLoadBytes, 0u) << kernel;
      }
    }
  }
}

TEST_P(LibraryNormTest, SourceIsDeterministic) {
  Specialization spec = specialize(args, 4096, DType::bf16, DType::f32);
  std::optional<KernelPlan> first = plan(spec), second = plan(spec);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->source, second->source);
}

INSTANTIATE_TEST_SUITE_P(Library, LibraryNormTest,
                         ::testing::ValuesIn(kLibraryNorms));

TEST(NormCodegenTest, DescribesArgumentsAsWritten) {
  std::string text = readLibraryNorm("layernorm_bwd");
  auto args = describeKernel(text, "layernorm_bwd.mlir", KernelKind::norm);
  ASSERT_TRUE(bool(args)) << llvm::toString(args.takeError());
  std::vector<std::pair<std::string, ArgLevel>> expected = {
      {"dy", ArgLevel::element},     {"x", ArgLevel::element},
      {"mean", ArgLevel::row},       {"rstd", ArgLevel::row},
      {"weight", ArgLevel::column},  {"dx", ArgLevel::element},
      {"dweight", ArgLevel::column}, {"dbias", ArgLevel::column}};
  ASSERT_EQ(args->size(), expected.size());
  for (auto [arg, want] : llvm::zip_equal(*args, expected)) {
    EXPECT_EQ(arg.name, want.first);
    EXPECT_EQ(arg.level, want.second);
    EXPECT_EQ(arg.dtype, DType::f32);
  }
  EXPECT_EQ((*args)[5].role, ArgRole::output);
  auto forward = describeKernel(readLibraryNorm("rmsnorm_fwd"), "rmsnorm_fwd",
                                KernelKind::norm);
  ASSERT_TRUE(bool(forward)) << llvm::toString(forward.takeError());
  EXPECT_EQ(forward->back().role, ArgRole::hyper);
  EXPECT_EQ(forward->back().level, ArgLevel::element);
  EXPECT_NEAR(*forward->back().defaultValue, 1e-6, 1e-12);
}

/// The layouts the benchmarks depend on: a warp per row of 1024 f32 (several
/// rows a block), 16-byte vectors, the column sums of the backward in a
/// block-sized grid.
TEST(NormCodegenTest, BenchmarkLayouts) {
  std::string text = readLibraryNorm("layernorm_fwd");
  auto args = describeKernel(text, "layernorm_fwd", KernelKind::norm);
  ASSERT_TRUE(bool(args));
  auto plan = compileToPlan(text, "layernorm_fwd.mlir",
                            specialize(*args, 1024, DType::f32, DType::f32));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().threadsPerRow, 32u);
  EXPECT_EQ(plan->rowKernel().rowsPerBlock, 8u);
  EXPECT_EQ(plan->rowKernel().vectorWidth, 4u);
  EXPECT_TRUE(plan->rowKernel().rowInRegisters);
  EXPECT_EQ(plan->minimumBytes(2) - plan->minimumBytes(1),
            1024u * 4 * 2 + 4 * 2);
  // Several rows a block: staged in one buffer of 8 rows x 4 KiB.
  EXPECT_EQ(plan->rowKernel().stages, 1u);
  EXPECT_EQ(plan->rowKernel().sharedBytes, 8u * 1024 * 4);

  plan = compileToPlan(text, "layernorm_fwd.mlir",
                       specialize(*args, 12288, DType::bf16, DType::bf16));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().vectorWidth, 8u);
  EXPECT_EQ(plan->rowKernel().threadsPerRow * plan->rowKernel().itemsPerThread *
                plan->rowKernel().vectorWidth,
            12288u);
  // One row a block, held in registers: 64 elements a thread, packed.
  EXPECT_EQ(plan->rowKernel().rowsPerBlock, 1u);
  EXPECT_EQ(plan->rowKernel().threadsPerRow, 192u);
  EXPECT_TRUE(plan->rowKernel().rowInRegisters);
  EXPECT_EQ(plan->rowKernel().stages, 0u);
  EXPECT_EQ(plan->rowKernel().sharedBytes, 0u);

  // In f32 the row does not fit so: staged, the next row prefetched into a
  // second buffer.
  plan = compileToPlan(text, "layernorm_fwd.mlir",
                       specialize(*args, 12288, DType::f32, DType::f32));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().rowsPerBlock, 1u);
  EXPECT_EQ(plan->rowKernel().stages, 2u);
  EXPECT_EQ(plan->rowKernel().sharedBytes, 2u * 12288 * 4);

  // Accesses narrower than 16 bytes (12289 columns) stay in registers.
  plan = compileToPlan(text, "layernorm_fwd.mlir",
                       specialize(*args, 12289, DType::bf16, DType::bf16));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().vectorWidth, 1u);
  EXPECT_EQ(plan->rowKernel().stages, 0u);
  EXPECT_EQ(plan->rowKernel().sharedBytes, 0u);

  // Rows too long for registers take the looped variant.
  plan = compileToPlan(text, "layernorm_fwd.mlir",
                       specialize(*args, 65536, DType::f32, DType::f32));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_FALSE(plan->rowKernel().rowInRegisters);
}

TEST(NormCodegenTest, LongRowsTakeWideRegisterLayoutsWhereTheyFit) {
  // The RMSNorm forward at 12288 columns fits 64 elements a thread with
  // room to spare: 192 threads, unstaged.
  std::string text = readLibraryNorm("rmsnorm_fwd");
  auto args = describeKernel(text, "rmsnorm_fwd", KernelKind::norm);
  ASSERT_TRUE(bool(args));
  for (DType dtype : {DType::f32, DType::bf16}) {
    auto plan = compileToPlan(text, "rmsnorm_fwd.mlir",
                              specialize(*args, 12288, dtype, dtype));
    ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    EXPECT_EQ(plan->rowKernel().rowsPerBlock, 1u);
    EXPECT_EQ(plan->rowKernel().threadsPerRow, 192u);
    EXPECT_EQ(plan->rowKernel().itemsPerThread * plan->rowKernel().vectorWidth,
              64u);
    EXPECT_EQ(plan->rowKernel().stages, 0u);
  }
  // The LayerNorm forward needs more registers an element (weight and
  // bias): its estimate leaves no headroom, and it stays staged.
  text = readLibraryNorm("layernorm_fwd");
  args = describeKernel(text, "layernorm_fwd", KernelKind::norm);
  ASSERT_TRUE(bool(args));
  auto plan = compileToPlan(text, "layernorm_fwd.mlir",
                            specialize(*args, 12288, DType::f32, DType::f32));
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().stages, 2u);
  // A forced stage count (here 1) leaves the rule out.
  text = readLibraryNorm("rmsnorm_fwd");
  args = describeKernel(text, "rmsnorm_fwd", KernelKind::norm);
  ASSERT_TRUE(bool(args));
  ::setenv("KFUSE_NORM_STAGES", "1", 1);
  plan = compileToPlan(text, "rmsnorm_fwd.mlir",
                       specialize(*args, 12288, DType::f32, DType::f32));
  ::unsetenv("KFUSE_NORM_STAGES");
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_EQ(plan->rowKernel().stages, 1u);
}

/// Compiles `norm` (inline IR) with every tensor f32 and `cols` columns and
/// returns the error message, or "" on success.
std::string compileError(llvm::StringRef norm, int64_t cols = 8) {
  Specialization spec;
  spec.cols = cols;
  llvm::Expected<KernelPlan> plan = compileToPlan(norm, "inline.mlir", spec);
  if (plan)
    return "";
  return llvm::toString(plan.takeError());
}

TEST(NormCodegenTest, ErrorsCarryLocations) {
  const char *rowSum = R"mlir(
func.func @row_sum(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %s: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %r = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %r to %s : tensor<?x1xf32>
  return
}
)mlir";
  EXPECT_EQ(compileError(rowSum), "");
  EXPECT_EQ(compileError(rowSum, 0),
            "inline.mlir:2:1: error: cols must be set to the row length (> 0), "
            "got 0");

  Specialization wrongCount;
  wrongCount.cols = 8;
  wrongCount.argDTypes = {DType::bf16};
  llvm::Expected<KernelPlan> plan =
      compileToPlan(rowSum, "inline.mlir", wrongCount);
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(llvm::toString(plan.takeError()),
            "inline.mlir:2:1: error: expected 2 dtypes, one per argument, got "
            "1");

  for (const char *kind : {"max", "variance"}) {
    std::string columnReduce = llvm::formatv(R"mlir(
func.func @column_reduce(
    %x: tensor<?x?xf32> {{kfuse.role = #kfuse.role<input>},
    %m: tensor<1x?xf32> {{kfuse.role = #kfuse.role<output>})
    attributes {{kfuse.norm} {{
  %r = kfuse.reduce <{0}> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  kfuse.write %r to %m : tensor<1x?xf32>
  return
}
)mlir",
                                             kind);
    EXPECT_EQ(compileError(columnReduce),
              std::string("inline.mlir:6:8: error: 'kfuse.reduce' op column "
                          "reductions (dim 0) support only <sum>, got <") +
                  kind + ">");
  }

  const char *columnSumUsed = R"mlir(
func.func @column_sum_used(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %m: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %r = kfuse.reduce <sum> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %d = arith.addf %r, %r : tensor<1x?xf32>
  kfuse.write %d to %m : tensor<1x?xf32>
  return
}
)mlir";
  EXPECT_EQ(compileError(columnSumUsed),
            "inline.mlir:7:8: error: 'arith.addf' op uses the result of a "
            "column reduction, which is complete only after every row; it can "
            "only be converted and written");

  const char *columnCopy = R"mlir(
func.func @column_copy(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %w: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>},
    %v: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  kfuse.write %w to %v : tensor<1x?xf32>
  return
}
)mlir";
  EXPECT_EQ(compileError(columnCopy),
            "inline.mlir:9:3: error: 'kfuse.write' op writes a per-column "
            "value to column output 'arg3'; column outputs take a column "
            "reduction (kfuse.reduce dim 0), converted at most");

  const char *unsupportedMath = R"mlir(
func.func @cosine(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %c = math.cos %x : tensor<?x?xf32>
  kfuse.write %c to %y : tensor<?x?xf32>
  return
}
)mlir";
  EXPECT_EQ(compileError(unsupportedMath),
            "inline.mlir:6:8: error: 'math.cos' op is not supported in a fused "
            "body by the CUDA code generator");
}

/// A softmax over rows: a max reduction, then a sum of exponentials, two
/// phases; and a norm whose row values reach a column sum.
TEST(NormCodegenTest, RowMaxAndTwoPhases) {
  const char *softmax = R"mlir(
func.func @softmax(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"})
    attributes {kfuse.norm} {
  %m = kfuse.reduce <max> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %mb = kfuse.broadcast %m like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %d = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %d : tensor<?x?xf32>
  %s = kfuse.reduce <sum> %e dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %sb = kfuse.broadcast %s like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %p = arith.divf %e, %sb : tensor<?x?xf32>
  kfuse.write %p to %y : tensor<?x?xf32>
  return
}
)mlir";
  Specialization spec;
  spec.cols = 2048;
  spec.argDTypes = {DType::bf16, DType::bf16};
  llvm::Expected<KernelPlan> plan = compileToPlan(softmax, "softmax", spec);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  EXPECT_TRUE(contains(plan->source, "// Phase 2: 1 row reduction(s)."));
  EXPECT_TRUE(contains(plan->source, "kfuse_maximumf("));
  EXPECT_TRUE(contains(plan->source, "expf("));
  NvrtcOptions options;
  llvm::Expected<NvrtcResult> compiled =
      compileWithNvrtc(plan->source, "softmax.cu", options);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
}

} // namespace
