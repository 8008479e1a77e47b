//===- MultiTensorInterpreterTest.cpp - updates over tensor groups -------===//

#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/MultiTensor.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace mlir;
using namespace kfuse;

namespace {

std::string readLibrary(llvm::StringRef file = "adamw.mlir") {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(KFUSE_SOURCE_DIR) +
                                            "/library/optim/" + file.str());
  EXPECT_TRUE(bool(buffer));
  return buffer ? (*buffer)->getBuffer().str() : "";
}

/// AdamW's groups: params, grads, first and second moments of `size`.
UpdateValues makeGroup(func::FuncOp update, int64_t size, std::mt19937 &rng) {
  std::normal_distribution<double> normal;
  UpdateValues group;
  group.tensors.resize(update.getNumArguments());
  group.scalars.resize(update.getNumArguments());
  for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i) {
    if (getArgRole(update, i) == Role::hyper)
      continue;
    if (isPerTensorArg(update, i)) {
      group.scalars[i] = std::fabs(normal(rng)) + 0.5; // a running norm
      continue;
    }
    for (int64_t j = 0; j < size; ++j) {
      double x = static_cast<float>(normal(rng));
      group.tensors[i].push_back(
          getArgName(update, i) == "exp_avg_sq" ? std::fabs(x) * 0.01 : x);
    }
  }
  return group;
}

std::vector<double> defaultHypers(func::FuncOp update, double step) {
  std::vector<double> hypers(update.getNumArguments(), 0.0);
  for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i)
    if (getArgRole(update, i) == Role::hyper)
      hypers[i] = getArgName(update, i) == "step"
                      ? step
                      : static_cast<float>(getArgDefault(update, i).value());
  return hypers;
}

class MultiTensorInterpreterTest : public ::testing::Test {
protected:
  /// AdamW through the pipeline with the given multi-tensor options.
  func::FuncOp compile(bool gradScaling, llvm::StringRef file = "adamw.mlir") {
    context = createContext();
    PipelineOptions options;
    options.multiTensor = true;
    options.gradScaling = gradScaling;
    auto parsed = parseKernelModule(*context, readLibrary(file), file,
                                    KernelKind::update);
    EXPECT_TRUE(bool(parsed));
    if (!parsed)
      return nullptr;
    module = std::move(*parsed);
    llvm::Error error = runPipeline(*module, Specialization(), options);
    EXPECT_FALSE(bool(error)) << llvm::toString(std::move(error));
    func::FuncOp update = findUpdate(*module);
    EXPECT_TRUE(update->hasAttr(KFuseDialect::kMultiTensorAttrName));
    EXPECT_EQ(update->hasAttr(KFuseDialect::kFoundInfAttrName), gradScaling);
    return update;
  }

  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(MultiTensorInterpreterTest, GroupsOfAnySizeMatchOneUpdateEach) {
  func::FuncOp multi = compile(/*gradScaling=*/false);
  ASSERT_TRUE(multi);
  std::mt19937 rng(3);
  std::vector<UpdateValues> groups;
  for (int64_t size : {5, 0, 1000, 1})
    groups.push_back(makeGroup(multi, size, rng));
  std::vector<double> hypers = defaultHypers(multi, 2);

  std::vector<UpdateValues> expected = groups;
  for (UpdateValues &group : expected) {
    group.scalars = hypers;
    ASSERT_TRUE(succeeded(interpretUpdate(multi, group, Precision::F64)));
  }
  FailureOr<bool> skipped =
      interpretMultiTensor(multi, groups, hypers, Precision::F64);
  ASSERT_TRUE(succeeded(skipped));
  EXPECT_FALSE(*skipped);
  for (size_t g = 0; g < groups.size(); ++g)
    EXPECT_EQ(groups[g].tensors, expected[g].tensors) << "group " << g;
}

TEST_F(MultiTensorInterpreterTest, EachGroupKeepsItsTensorLevelState) {
  // NovoGrad: the running norm of each group is its own, read and written
  // as the group's scalar, while the hypers are the plan's.
  func::FuncOp multi = compile(/*gradScaling=*/false, "novograd.mlir");
  ASSERT_TRUE(multi);
  unsigned norm = 3;
  ASSERT_EQ(getArgName(multi, norm), "exp_avg_sq");
  ASSERT_TRUE(isPerTensorArg(multi, norm));
  std::mt19937 rng(6);
  std::vector<UpdateValues> groups;
  for (int64_t size : {3, 500, 1})
    groups.push_back(makeGroup(multi, size, rng));
  std::vector<double> hypers = defaultHypers(multi, 2);

  std::vector<UpdateValues> expected = groups;
  for (UpdateValues &group : expected) {
    double own = group.scalars[norm];
    group.scalars = hypers;
    group.scalars[norm] = own;
    ASSERT_TRUE(succeeded(interpretUpdate(multi, group, Precision::F64)));
  }
  FailureOr<bool> skipped =
      interpretMultiTensor(multi, groups, hypers, Precision::F64);
  ASSERT_TRUE(succeeded(skipped));
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(groups[g].tensors, expected[g].tensors) << "group " << g;
    EXPECT_EQ(groups[g].scalars[norm], expected[g].scalars[norm]);
    EXPECT_NE(groups[g].scalars[norm], groups[(g + 1) % 3].scalars[norm]);
  }
}

TEST_F(MultiTensorInterpreterTest, NonFiniteGradSkipsEveryGroup) {
  func::FuncOp multi = compile(/*gradScaling=*/true);
  ASSERT_TRUE(multi);
  std::mt19937 rng(4);
  std::vector<UpdateValues> groups;
  for (int64_t size : {64, 7, 300})
    groups.push_back(makeGroup(multi, size, rng));
  std::vector<double> hypers = defaultHypers(multi, 1);
  unsigned gradIndex = 1;
  ASSERT_EQ(getArgRole(multi, gradIndex), Role::grad);

  for (double bad : {INFINITY, -INFINITY, NAN}) {
    std::vector<UpdateValues> stepped = groups;
    stepped[2].tensors[gradIndex][123] = bad;
    std::vector<UpdateValues> before = stepped;
    FailureOr<bool> skipped =
        interpretMultiTensor(multi, stepped, hypers, Precision::F32);
    ASSERT_TRUE(succeeded(skipped));
    EXPECT_TRUE(*skipped);
    for (size_t g = 0; g < stepped.size(); ++g)
      for (size_t t = 0; t < stepped[g].tensors.size(); ++t)
        for (size_t i = 0; i < stepped[g].tensors[t].size(); ++i) {
          double a = stepped[g].tensors[t][i], b = before[g].tensors[t][i];
          EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b)));
        }
  }
}

TEST_F(MultiTensorInterpreterTest, InverseScaleUnscalesGrads) {
  func::FuncOp multi = compile(/*gradScaling=*/true);
  ASSERT_TRUE(multi);
  std::mt19937 rng(5);
  std::vector<UpdateValues> scaled{makeGroup(multi, 100, rng)};
  std::vector<UpdateValues> plain = scaled;
  unsigned gradIndex = 1, invScaleIndex = multi.getNumArguments() - 1;
  ASSERT_EQ(getArgName(multi, invScaleIndex), "inv_scale");
  for (double &g : scaled[0].tensors[gradIndex])
    g *= 1024.0;
  std::vector<double> hypers = defaultHypers(multi, 1);
  std::vector<double> unscaled = hypers;
  hypers[invScaleIndex] = 1.0 / 1024.0;
  unscaled[invScaleIndex] = 1.0;
  ASSERT_TRUE(
      succeeded(interpretMultiTensor(multi, scaled, hypers, Precision::F64)));
  ASSERT_TRUE(
      succeeded(interpretMultiTensor(multi, plain, unscaled, Precision::F64)));
  for (size_t t = 0; t < plain[0].tensors.size(); ++t)
    if (t != gradIndex)
      for (size_t i = 0; i < plain[0].tensors[t].size(); ++i)
        EXPECT_NEAR(scaled[0].tensors[t][i], plain[0].tensors[t][i],
                    1e-12 * (1 + std::fabs(plain[0].tensors[t][i])));
}

TEST_F(MultiTensorInterpreterTest, WrongHyperCountFails) {
  func::FuncOp multi = compile(/*gradScaling=*/false);
  ASSERT_TRUE(multi);
  std::string message;
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  std::vector<UpdateValues> groups;
  EXPECT_TRUE(
      failed(interpretMultiTensor(multi, groups, {1.0}, Precision::F64)));
  EXPECT_EQ(message,
            "multi-tensor run needs 10 hyper slots (one per argument), got 1");
}

} // namespace
