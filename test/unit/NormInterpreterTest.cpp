//===- NormInterpreterTest.cpp - the norm interpreter and norm check -----===//
//
// The library norms in Exact mode against hand-written float64 LayerNorm and
// RMSNorm, the backward against finite differences of the forward, the
// fused residual add, the reductions and broadcasts op by op, a specialized
// (static cols, bf16) form, the diagnostics, and runNormCheck.
//
//===----------------------------------------------------------------------===//

#include "dialect/KFuseDialect.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/Check.h"
#include "interpreter/FloatRounding.h"
#include "interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

using namespace mlir;
using namespace kfuse;

namespace {

/// Values for `func` with tensors and scalars given by argument name.
ArgValues makeValues(func::FuncOp func,
                     const std::map<std::string, HostTensor> &tensors,
                     const std::map<std::string, double> &scalars = {}) {
  ArgValues values(func.getNumArguments());
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    std::string name = getArgName(func, i);
    if (auto it = tensors.find(name); it != tensors.end())
      values.tensors[i] = it->second;
    if (auto it = scalars.find(name); it != scalars.end())
      values.scalars[i] = it->second;
  }
  return values;
}

/// The tensor of argument `name` in `values`.
const HostTensor &get(func::FuncOp func, const ArgValues &values,
                      llvm::StringRef name) {
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (getArgName(func, i) == name && i < values.tensors.size() &&
        values.tensors[i])
      return *values.tensors[i];
  static const HostTensor none;
  ADD_FAILURE() << "no tensor " << name.str();
  return none;
}

/// A rows x cols tensor of N(mean, stddev^2) samples.
HostTensor randomTensor(std::mt19937_64 &engine, int64_t rows, int64_t cols,
                        double mean = 0.0, double stddev = 1.0) {
  std::normal_distribution<double> normal(mean, stddev);
  HostTensor tensor(rows, cols);
  for (double &element : tensor.elements)
    element = normal(engine);
  return tensor;
}

/// max |actual - expected| / max |expected|, as kfuse check measures.
double maxNormError(const HostTensor &actual, const HostTensor &expected) {
  EXPECT_EQ(actual.rows, expected.rows);
  EXPECT_EQ(actual.cols, expected.cols);
  return computeTensorError(actual.elements, expected.elements, 1.0);
}

class NormInterpreterTest : public ::testing::Test {
protected:
  NormInterpreterTest() {
    context.loadDialect<KFuseDialect, arith::ArithDialect, math::MathDialect,
                        func::FuncDialect>();
  }

  /// The norm of library/norm/<name>.mlir.
  func::FuncOp loadLibrary(llvm::StringRef name) {
    std::string path =
        std::string(KFUSE_SOURCE_DIR) + "/library/norm/" + name.str() + ".mlir";
    modules.push_back(parseSourceFile<ModuleOp>(path, &context));
    EXPECT_TRUE(modules.back()) << "cannot parse " << path;
    if (!modules.back())
      return nullptr;
    func::FuncOp norm = findNorm(*modules.back());
    return norm ? norm : findUpdate(*modules.back());
  }

  func::FuncOp parse(llvm::StringRef source) {
    modules.push_back(parseSourceString<ModuleOp>(source, &context));
    EXPECT_TRUE(modules.back()) << "cannot parse:\n" << source.str();
    if (!modules.back())
      return nullptr;
    func::FuncOp norm = findNorm(*modules.back());
    return norm ? norm : findUpdate(*modules.back());
  }

  /// Runs `func`, expecting failure, and returns the diagnostics, each as
  /// "file:line:col: message".
  std::string runExpectingFailure(func::FuncOp func, int64_t rows,
                                  const ArgValues &values) {
    std::string messages;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
      messages += formatLocation(diagnostic.getLocation()) + ": " +
                  diagnostic.str() + "\n";
      return success();
    });
    EXPECT_TRUE(failed(interpret(func, rows, values, Precision::F32)));
    return messages;
  }

  MLIRContext context;
  std::vector<OwningOpRef<ModuleOp>> modules;
};

//===----------------------------------------------------------------------===//
// The forward norms against hand-written float64 formulas
//===----------------------------------------------------------------------===//

struct NormReference {
  HostTensor y, mean, rstd;
};

/// torch.nn.functional.layer_norm over the last dimension (biased variance,
/// eps inside the square root), with the saved statistics.
NormReference layerNorm(const HostTensor &x, const HostTensor &weight,
                        const HostTensor &bias, double eps) {
  NormReference out{HostTensor(x.rows, x.cols), HostTensor(x.rows, 1),
                    HostTensor(x.rows, 1)};
  auto n = static_cast<double>(x.cols);
  for (int64_t r = 0; r < x.rows; ++r) {
    double sum = 0.0;
    for (int64_t c = 0; c < x.cols; ++c)
      sum += x.at(r, c);
    double mean = sum / n;
    double squares = 0.0;
    for (int64_t c = 0; c < x.cols; ++c)
      squares += (x.at(r, c) - mean) * (x.at(r, c) - mean);
    double rstd = 1.0 / std::sqrt(squares / n + eps);
    for (int64_t c = 0; c < x.cols; ++c)
      out.y.at(r, c) =
          (x.at(r, c) - mean) * rstd * weight.at(0, c) + bias.at(0, c);
    out.mean.at(r, 0) = mean;
    out.rstd.at(r, 0) = rstd;
  }
  return out;
}

/// torch.nn.functional.rms_norm over the last dimension, with rstd.
NormReference rmsNorm(const HostTensor &x, const HostTensor &weight,
                      double eps) {
  NormReference out{HostTensor(x.rows, x.cols), HostTensor(),
                    HostTensor(x.rows, 1)};
  for (int64_t r = 0; r < x.rows; ++r) {
    double squares = 0.0;
    for (int64_t c = 0; c < x.cols; ++c)
      squares += x.at(r, c) * x.at(r, c);
    double rstd = 1.0 / std::sqrt(squares / static_cast<double>(x.cols) + eps);
    for (int64_t c = 0; c < x.cols; ++c)
      out.y.at(r, c) = x.at(r, c) * rstd * weight.at(0, c);
    out.rstd.at(r, 0) = rstd;
  }
  return out;
}

using Shape = std::pair<int64_t, int64_t>;

TEST_F(NormInterpreterTest, LayerNormForwardMatchesFloat64Formula) {
  func::FuncOp norm = loadLibrary("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::mt19937_64 engine(1);
  for (auto [rows, cols] :
       {Shape{1, 1}, Shape{3, 7}, Shape{5, 1000}, Shape{2, 4099}}) {
    HostTensor x = randomTensor(engine, rows, cols, 0.7, 2.0);
    HostTensor weight = randomTensor(engine, 1, cols, 1.0, 0.1);
    HostTensor bias = randomTensor(engine, 1, cols);
    double eps = 1e-5;
    FailureOr<ArgValues> out = interpret(
        norm, rows,
        makeValues(norm, {{"x", x}, {"weight", weight}, {"bias", bias}},
                   {{"eps", eps}}),
        Precision::F64);
    ASSERT_TRUE(succeeded(out)) << rows << " x " << cols;
    NormReference expected = layerNorm(x, weight, bias, eps);
    EXPECT_LT(maxNormError(get(norm, *out, "y"), expected.y), 1e-12);
    EXPECT_LT(maxNormError(get(norm, *out, "mean"), expected.mean), 1e-12);
    EXPECT_LT(maxNormError(get(norm, *out, "rstd"), expected.rstd), 1e-12);
  }
}

TEST_F(NormInterpreterTest, RMSNormForwardMatchesFloat64Formula) {
  func::FuncOp norm = loadLibrary("rmsnorm_fwd");
  ASSERT_TRUE(norm);
  std::mt19937_64 engine(2);
  for (auto [rows, cols] :
       {Shape{1, 1}, Shape{3, 7}, Shape{4, 1024}, Shape{2, 5128}}) {
    HostTensor x = randomTensor(engine, rows, cols);
    HostTensor weight = randomTensor(engine, 1, cols, 1.0, 0.1);
    double eps = 1e-6;
    FailureOr<ArgValues> out = interpret(
        norm, rows,
        makeValues(norm, {{"x", x}, {"weight", weight}}, {{"eps", eps}}),
        Precision::F64);
    ASSERT_TRUE(succeeded(out)) << rows << " x " << cols;
    NormReference expected = rmsNorm(x, weight, eps);
    EXPECT_LT(maxNormError(get(norm, *out, "y"), expected.y), 1e-12);
    EXPECT_LT(maxNormError(get(norm, *out, "rstd"), expected.rstd), 1e-12);
  }
}

TEST_F(NormInterpreterTest, HyperDefaultAppliesWhenNotGiven) {
  func::FuncOp norm = loadLibrary("rmsnorm_fwd");
  ASSERT_TRUE(norm);
  std::mt19937_64 engine(3);
  HostTensor x = randomTensor(engine, 2, 5, 0.0, 1e-3); // eps matters
  HostTensor weight(1, 5, 1.0);
  FailureOr<ArgValues> out =
      interpret(norm, 2, makeValues(norm, {{"x", x}, {"weight", weight}}),
                Precision::F64);
  ASSERT_TRUE(succeeded(out));
  // The default is the f32 attribute 1.0e-6, read as a double.
  NormReference expected = rmsNorm(x, weight, static_cast<float>(1e-6));
  EXPECT_LT(maxNormError(get(norm, *out, "rstd"), expected.rstd), 1e-12);
}

//===----------------------------------------------------------------------===//
// The backward norms against finite differences of the forward
//===----------------------------------------------------------------------===//

/// d/d(input `name`) of loss = sum(y * dy) of `forward` in Exact mode, by
/// central differences.
HostTensor finiteDifference(func::FuncOp forward,
                            std::map<std::string, HostTensor> inputs,
                            const std::map<std::string, double> &scalars,
                            const HostTensor &dy, const std::string &name) {
  auto loss = [&]() -> double {
    FailureOr<ArgValues> out = interpret(
        forward, dy.rows, makeValues(forward, inputs, scalars), Precision::F64);
    EXPECT_TRUE(succeeded(out));
    if (failed(out))
      return NAN;
    const HostTensor &y = get(forward, *out, "y");
    double sum = 0.0;
    for (size_t i = 0; i < y.elements.size(); ++i)
      sum += y.elements[i] * dy.elements[i];
    return sum;
  };
  HostTensor gradient = inputs.at(name);
  std::vector<double> &values = inputs.at(name).elements;
  for (size_t i = 0; i < values.size(); ++i) {
    double saved = values[i];
    double step = 1e-5 * std::max(1.0, std::fabs(saved));
    values[i] = saved + step;
    double plus = loss();
    values[i] = saved - step;
    double minus = loss();
    values[i] = saved;
    gradient.elements[i] = (plus - minus) / (2 * step);
  }
  return gradient;
}

TEST_F(NormInterpreterTest, LayerNormBackwardMatchesFiniteDifferences) {
  func::FuncOp forward = loadLibrary("layernorm_fwd");
  func::FuncOp backward = loadLibrary("layernorm_bwd");
  ASSERT_TRUE(forward && backward);
  std::mt19937_64 engine(4);
  const int64_t rows = 3, cols = 7;
  std::map<std::string, HostTensor> inputs = {
      {"x", randomTensor(engine, rows, cols, 0.5)},
      {"weight", randomTensor(engine, 1, cols, 1.0, 0.3)},
      {"bias", randomTensor(engine, 1, cols)}};
  std::map<std::string, double> scalars = {{"eps", 1e-5}};
  HostTensor dy = randomTensor(engine, rows, cols);

  FailureOr<ArgValues> saved = interpret(
      forward, rows, makeValues(forward, inputs, scalars), Precision::F64);
  ASSERT_TRUE(succeeded(saved));
  FailureOr<ArgValues> grads =
      interpret(backward, rows,
                makeValues(backward, {{"dy", dy},
                                      {"x", inputs.at("x")},
                                      {"mean", get(forward, *saved, "mean")},
                                      {"rstd", get(forward, *saved, "rstd")},
                                      {"weight", inputs.at("weight")}}),
                Precision::F64);
  ASSERT_TRUE(succeeded(grads));
  for (auto [output, input] : {std::pair<const char *, const char *>{"dx", "x"},
                               {"dweight", "weight"},
                               {"dbias", "bias"}}) {
    HostTensor numeric = finiteDifference(forward, inputs, scalars, dy, input);
    EXPECT_LT(maxNormError(get(backward, *grads, output), numeric), 1e-6)
        << output;
  }
}

TEST_F(NormInterpreterTest, RMSNormBackwardMatchesFiniteDifferences) {
  func::FuncOp forward = loadLibrary("rmsnorm_fwd");
  func::FuncOp backward = loadLibrary("rmsnorm_bwd");
  ASSERT_TRUE(forward && backward);
  std::mt19937_64 engine(5);
  const int64_t rows = 3, cols = 7;
  std::map<std::string, HostTensor> inputs = {
      {"x", randomTensor(engine, rows, cols)},
      {"weight", randomTensor(engine, 1, cols, 1.0, 0.3)}};
  std::map<std::string, double> scalars = {{"eps", 1e-6}};
  HostTensor dy = randomTensor(engine, rows, cols);

  FailureOr<ArgValues> saved = interpret(
      forward, rows, makeValues(forward, inputs, scalars), Precision::F64);
  ASSERT_TRUE(succeeded(saved));
  FailureOr<ArgValues> grads =
      interpret(backward, rows,
                makeValues(backward, {{"dy", dy},
                                      {"x", inputs.at("x")},
                                      {"rstd", get(forward, *saved, "rstd")},
                                      {"weight", inputs.at("weight")}}),
                Precision::F64);
  ASSERT_TRUE(succeeded(grads));
  for (auto [output, input] : {std::pair<const char *, const char *>{"dx", "x"},
                               {"dweight", "weight"}}) {
    HostTensor numeric = finiteDifference(forward, inputs, scalars, dy, input);
    EXPECT_LT(maxNormError(get(backward, *grads, output), numeric), 1e-6)
        << output;
  }
}

//===----------------------------------------------------------------------===//
// The residual add
//===----------------------------------------------------------------------===//

TEST_F(NormInterpreterTest, AddLayerNormIsTheSumThenLayerNorm) {
  func::FuncOp fused = loadLibrary("add_layernorm_fwd");
  func::FuncOp plain = loadLibrary("layernorm_fwd");
  ASSERT_TRUE(fused && plain);
  std::mt19937_64 engine(6);
  const int64_t rows = 4, cols = 1000;
  HostTensor x = randomTensor(engine, rows, cols, 1.0);
  HostTensor residual = randomTensor(engine, rows, cols);
  // f32 values, so both modes read the same inputs.
  for (HostTensor *tensor : {&x, &residual})
    for (double &element : tensor->elements)
      element = roundToF32(element);
  HostTensor weight(1, cols, 1.5), bias(1, cols, -0.25);
  for (Precision mode : {Precision::F64, Precision::F32}) {
    FailureOr<ArgValues> out =
        interpret(fused, rows,
                  makeValues(fused, {{"x", x},
                                     {"residual", residual},
                                     {"weight", weight},
                                     {"bias", bias}}),
                  mode);
    ASSERT_TRUE(succeeded(out));
    const HostTensor &h = get(fused, *out, "h");
    HostTensor sum(rows, cols);
    for (size_t i = 0; i < sum.elements.size(); ++i) {
      sum.elements[i] = x.elements[i] + residual.elements[i];
      if (mode == Precision::F32)
        sum.elements[i] = roundToF32(sum.elements[i]);
    }
    EXPECT_EQ(h.elements, sum.elements);
    FailureOr<ArgValues> expected = interpret(
        plain, rows,
        makeValues(plain, {{"x", h}, {"weight", weight}, {"bias", bias}}),
        mode);
    ASSERT_TRUE(succeeded(expected));
    for (const char *name : {"y", "mean", "rstd"})
      EXPECT_EQ(get(fused, *out, name).elements,
                get(plain, *expected, name).elements)
          << name;
  }
}

//===----------------------------------------------------------------------===//
// Ops one at a time
//===----------------------------------------------------------------------===//

const char *const kStats = R"(
func.func @stats(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %row_sum: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "row_sum"},
    %col_sum: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "col_sum"},
    %row_max: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "row_max"},
    %col_max: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "col_max"},
    %mixed: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "mixed"})
    attributes {kfuse.norm} {
  %rs = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cs = kfuse.reduce <sum> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %rm = kfuse.reduce <max> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cm = kfuse.reduce <max> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %rows = kfuse.dim_size %x dim 0 : tensor<?x?xf32> -> f32
  %rows_b = kfuse.broadcast %rows like %x : f32, tensor<?x?xf32>
  %rm_b = kfuse.broadcast %rm like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %cm_b = kfuse.broadcast %cm like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %t = arith.addf %rm_b, %cm_b : tensor<?x?xf32>
  %m = arith.mulf %t, %rows_b : tensor<?x?xf32>
  kfuse.write %rs to %row_sum : tensor<?x1xf32>
  kfuse.write %cs to %col_sum : tensor<1x?xf32>
  kfuse.write %rm to %row_max : tensor<?x1xf32>
  kfuse.write %cm to %col_max : tensor<1x?xf32>
  kfuse.write %m to %mixed : tensor<?x?xf32>
  return
})";

TEST_F(NormInterpreterTest, ReduceBroadcastAndDimSizeByHand) {
  func::FuncOp norm = parse(kStats);
  ASSERT_TRUE(norm);
  HostTensor x(2, 3);
  x.elements = {1.0, -2.0, 4.0, //
                0.5, 3.0,  -1.0};
  FailureOr<ArgValues> out =
      interpret(norm, 2, makeValues(norm, {{"x", x}}), Precision::F64);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(get(norm, *out, "row_sum").elements,
            (std::vector<double>{3.0, 2.5}));
  EXPECT_EQ(get(norm, *out, "row_sum").cols, 1);
  EXPECT_EQ(get(norm, *out, "col_sum").elements,
            (std::vector<double>{1.5, 1.0, 3.0}));
  EXPECT_EQ(get(norm, *out, "col_sum").rows, 1);
  EXPECT_EQ(get(norm, *out, "row_max").elements,
            (std::vector<double>{4.0, 3.0}));
  EXPECT_EQ(get(norm, *out, "col_max").elements,
            (std::vector<double>{1.0, 3.0, 4.0}));
  // (row max + column max) * rows.
  EXPECT_EQ(get(norm, *out, "mixed").elements,
            (std::vector<double>{10.0, 14.0, 16.0, //
                                 8.0, 12.0, 14.0}));
}

const char *const kVariance = R"(
func.func @variance(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %row_var: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "row_var"},
    %col_var: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "col_var"})
    attributes {kfuse.norm} {
  %rv = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cv = kfuse.reduce <variance> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  kfuse.write %rv to %row_var : tensor<?x1xf32>
  kfuse.write %cv to %col_var : tensor<1x?xf32>
  return
})";

TEST_F(NormInterpreterTest, VarianceIsTheBiasedOneWithoutCancellation) {
  func::FuncOp norm = parse(kVariance);
  ASSERT_TRUE(norm);
  // Row 0: mean 2, deviations -1, 0, 1: variance 2/3. Row 1 sits at 1e8,
  // where E[x^2] - E[x]^2 in double would lose every digit of its 2/3.
  HostTensor x(2, 3);
  x.elements = {1.0,     2.0,     3.0, //
                1e8 + 1, 1e8 + 2, 1e8 + 3};
  FailureOr<ArgValues> out =
      interpret(norm, 2, makeValues(norm, {{"x", x}}), Precision::F64);
  ASSERT_TRUE(succeeded(out));
  const HostTensor &rowVar = get(norm, *out, "row_var");
  ASSERT_EQ(rowVar.elements.size(), 2u);
  EXPECT_DOUBLE_EQ(rowVar.elements[0], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(rowVar.elements[1], 2.0 / 3.0);
  // Columns: pairs (1, 1e8+1), ...: each (1e8 / 2)^2.
  const HostTensor &colVar = get(norm, *out, "col_var");
  ASSERT_EQ(colVar.elements.size(), 3u);
  for (double value : colVar.elements)
    EXPECT_DOUBLE_EQ(value, 0.25e16);
}

TEST_F(NormInterpreterTest, F32SumIsTheCorrectlyRoundedSum) {
  func::FuncOp norm = parse(kStats);
  ASSERT_TRUE(norm);
  // In f32, 1e8 + 1 is 1e8 (the spacing there is 8): added in order the sum
  // would be 1. The GPU adds in a tree whose order is not this one; both
  // precisions give the exact sum, rounded, which any order approaches. The
  // column sums see the same column.
  std::vector<double> values = {1e8, 1.0, -1e8, 1.0};
  HostTensor row(1, 4), column(4, 1);
  row.elements = values;
  column.elements = values;
  for (Precision precision : {Precision::F64, Precision::F32}) {
    FailureOr<ArgValues> out =
        interpret(norm, 1, makeValues(norm, {{"x", row}}), precision);
    ASSERT_TRUE(succeeded(out));
    EXPECT_EQ(get(norm, *out, "row_sum").elements[0], 2.0);
    out = interpret(norm, 4, makeValues(norm, {{"x", column}}), precision);
    ASSERT_TRUE(succeeded(out));
    EXPECT_EQ(get(norm, *out, "col_sum").elements[0], 2.0);
  }
}

TEST_F(NormInterpreterTest, MaxPropagatesNaN) {
  func::FuncOp norm = parse(kStats);
  ASSERT_TRUE(norm);
  HostTensor x(1, 3);
  x.elements = {1.0, NAN, 2.0};
  FailureOr<ArgValues> out =
      interpret(norm, 1, makeValues(norm, {{"x", x}}), Precision::F32);
  ASSERT_TRUE(succeeded(out));
  EXPECT_TRUE(std::isnan(get(norm, *out, "row_max").elements[0]));
  EXPECT_TRUE(std::isnan(get(norm, *out, "row_sum").elements[0]));
  EXPECT_EQ(get(norm, *out, "col_max").elements[2], 2.0);
}

TEST_F(NormInterpreterTest, FusedRegionOverFullTensors) {
  func::FuncOp norm = parse(R"(
func.func @scale_shift(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %shift: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "shift", kfuse.default = 0.5 : f32})
    attributes {kfuse.norm} {
  %w_b = kfuse.broadcast %weight like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %r = kfuse.fused (%x, %w_b, %shift) : (tensor<?x?xf32>, tensor<?x?xf32>, f32) -> tensor<?x?xf32> {
  ^bb0(%xe: f32, %we: f32, %s: f32):
    %m = arith.mulf %xe, %we : f32
    %a = arith.addf %m, %s : f32
    kfuse.yield %a : f32
  }
  kfuse.write %r to %y : tensor<?x?xf32>
  return
})");
  ASSERT_TRUE(norm);
  HostTensor x(2, 2), weight(1, 2);
  x.elements = {1.0, 2.0, 3.0, 4.0};
  weight.elements = {10.0, -1.0};
  FailureOr<ArgValues> out =
      interpret(norm, 2, makeValues(norm, {{"x", x}, {"weight", weight}}),
                Precision::F32);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(get(norm, *out, "y").elements,
            (std::vector<double>{10.5, -1.5, 30.5, -3.5}));
}

//===----------------------------------------------------------------------===//
// A specialized form: static row length, bf16 storage, converts
//===----------------------------------------------------------------------===//

const char *const kRMSNormBF16 = R"(
func.func @rmsnorm_fwd(
    %x: tensor<?x8xbf16> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x8xbf16> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %y: tensor<?x8xbf16> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-6 : f32})
    attributes {kfuse.norm} {
  %xf = kfuse.convert %x : tensor<?x8xbf16> to tensor<?x8xf32>
  %wf = kfuse.convert %weight : tensor<1x8xbf16> to tensor<1x8xf32>
  %n = arith.constant 8.0 : f32
  %x_sq = arith.mulf %xf, %xf : tensor<?x8xf32>
  %ssq = kfuse.reduce <sum> %x_sq dim 1 : tensor<?x8xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %ssq : f32, tensor<?x1xf32>
  %ms = arith.divf %ssq, %n_r : tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %ms : f32, tensor<?x1xf32>
  %ms_eps = arith.addf %ms, %eps_r : tensor<?x1xf32>
  %rs = math.rsqrt %ms_eps : tensor<?x1xf32>
  %rs_b = kfuse.broadcast %rs like %xf : tensor<?x1xf32>, tensor<?x8xf32>
  %xhat = arith.mulf %xf, %rs_b : tensor<?x8xf32>
  %w_b = kfuse.broadcast %wf like %xf : tensor<1x8xf32>, tensor<?x8xf32>
  %out = arith.mulf %xhat, %w_b : tensor<?x8xf32>
  %out_bf16 = kfuse.convert %out : tensor<?x8xf32> to tensor<?x8xbf16>
  kfuse.write %out_bf16 to %y : tensor<?x8xbf16>
  kfuse.write %rs to %rstd : tensor<?x1xf32>
  return
})";

TEST_F(NormInterpreterTest, SpecializedBF16FormRoundsStorage) {
  func::FuncOp norm = parse(kRMSNormBF16);
  ASSERT_TRUE(norm);
  EXPECT_EQ(getStaticCols(norm), 8);
  std::mt19937_64 engine(7);
  const int64_t rows = 3;
  HostTensor x = randomTensor(engine, rows, 8);
  HostTensor weight = randomTensor(engine, 1, 8, 1.0, 0.1);
  ArgValues inputs = makeValues(norm, {{"x", x}, {"weight", weight}});
  FailureOr<ArgValues> exact = interpret(norm, rows, inputs, Precision::F64);
  FailureOr<ArgValues> device = interpret(norm, rows, inputs, Precision::F32);
  ASSERT_TRUE(succeeded(exact) && succeeded(device));

  // Both precisions load the bf16 inputs as bf16 and round y to bf16 at
  // its convert: storage is storage. F64 computes everything else in
  // double, F32 rounds every op to f32.
  HostTensor xBF16 = x, weightBF16 = weight;
  for (HostTensor *tensor : {&xBF16, &weightBF16})
    for (double &element : tensor->elements)
      element = roundToBF16(element);
  NormReference expected = rmsNorm(xBF16, weightBF16, static_cast<float>(1e-6));
  const HostTensor &exactY = get(norm, *exact, "y");
  ASSERT_EQ(exactY.elements.size(), expected.y.elements.size());
  for (auto [element, reference] :
       llvm::zip(exactY.elements, expected.y.elements))
    EXPECT_EQ(element, roundToBF16(reference));
  EXPECT_LT(maxNormError(get(norm, *exact, "rstd"), expected.rstd), 1e-12);
  const HostTensor &deviceY = get(norm, *device, "y");
  for (double element : deviceY.elements)
    EXPECT_EQ(roundToBF16(element), element);
  for (double element : get(norm, *device, "rstd").elements)
    EXPECT_EQ(roundToF32(element), element);
  EXPECT_LT(maxNormError(deviceY, exactY), 0x1p-7);
}

//===----------------------------------------------------------------------===//
// Bad inputs
//===----------------------------------------------------------------------===//

TEST_F(NormInterpreterTest, WrongInputShapeFailsWithMessage) {
  func::FuncOp norm = loadLibrary("layernorm_fwd");
  ASSERT_TRUE(norm);
  HostTensor x(3, 5), weight(1, 4), bias(1, 5);
  std::string messages = runExpectingFailure(
      norm, 3,
      makeValues(norm, {{"x", x}, {"weight", weight}, {"bias", bias}}));
  EXPECT_NE(
      messages.find("input argument #1 'weight' is 1 x 4 but its type "
                    "'tensor<1x?xf32>' needs 1 x 5 in a function over 3 x 5"),
      std::string::npos)
      << messages;

  messages = runExpectingFailure(
      norm, 2,
      makeValues(norm,
                 {{"x", x}, {"weight", HostTensor(1, 5)}, {"bias", bias}}));
  EXPECT_NE(messages.find("input argument #0 'x' is 3 x 5 but its type "
                          "'tensor<?x?xf32>' needs 2 x 5"),
            std::string::npos)
      << messages;

  HostTensor shortX(3, 5);
  shortX.elements.pop_back();
  messages = runExpectingFailure(
      norm, 3,
      makeValues(
          norm, {{"x", shortX}, {"weight", HostTensor(1, 5)}, {"bias", bias}}));
  EXPECT_NE(messages.find("input argument #0 'x' holds 14 elements but its "
                          "extents 3 x 5 need 15"),
            std::string::npos)
      << messages;
}

TEST_F(NormInterpreterTest, StaticColumnsMustMatchTheInputs) {
  func::FuncOp norm = parse(kRMSNormBF16);
  ASSERT_TRUE(norm);
  std::string messages =
      runExpectingFailure(norm, 2,
                          makeValues(norm, {{"x", HostTensor(2, 7)},
                                            {"weight", HostTensor(1, 7)}}));
  EXPECT_NE(messages.find("input argument #0 'x' is 2 x 7 but its type "
                          "'tensor<?x8xbf16>' needs 2 x 8"),
            std::string::npos)
      << messages;
}

TEST_F(NormInterpreterTest, MissingInputFailsWithMessage) {
  func::FuncOp norm = loadLibrary("layernorm_fwd");
  ASSERT_TRUE(norm);
  std::string messages = runExpectingFailure(
      norm, 3,
      makeValues(norm, {{"x", HostTensor(3, 5)}, {"bias", HostTensor(1, 5)}}));
  EXPECT_NE(messages.find("no tensor for argument #1 'weight'"),
            std::string::npos)
      << messages;
  // Nothing tells the row length without an input.
  messages = runExpectingFailure(norm, 3, ArgValues());
  EXPECT_NE(messages.find("cannot tell the row length of "
                          "'layernorm_fwd'"),
            std::string::npos)
      << messages;
}

TEST_F(NormInterpreterTest, MissingHyperAndBadRowsFailWithMessage) {
  func::FuncOp norm = parse(R"(
func.func @scale(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %alpha: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "alpha"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"})
    attributes {kfuse.norm} {
  %a = kfuse.broadcast %alpha like %x : f32, tensor<?x?xf32>
  %r = arith.mulf %x, %a : tensor<?x?xf32>
  kfuse.write %r to %y : tensor<?x?xf32>
  return
})");
  ASSERT_TRUE(norm);
  HostTensor x(1, 2, 3.0);
  std::string messages =
      runExpectingFailure(norm, 1, makeValues(norm, {{"x", x}}));
  EXPECT_NE(messages.find("no value for hyper argument #1 'alpha', which has "
                          "no kfuse.default"),
            std::string::npos)
      << messages;
  messages = runExpectingFailure(norm, 0, makeValues(norm, {{"x", x}}));
  EXPECT_NE(messages.find("a function over rows runs over at least one, "
                          "got 0"),
            std::string::npos)
      << messages;
  FailureOr<ArgValues> out = interpret(
      norm, 1, makeValues(norm, {{"x", x}}, {{"alpha", 2.0}}), Precision::F64);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(get(norm, *out, "y").elements, (std::vector<double>{6.0, 6.0}));
}

TEST_F(NormInterpreterTest, UnsupportedOpFailsAtItsLocation) {
  func::FuncOp norm = parse(R"(
func.func @atan(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"})
    attributes {kfuse.norm} {
  %a = math.atan %x : tensor<?x?xf32>
  kfuse.write %a to %y : tensor<?x?xf32>
  return
})");
  ASSERT_TRUE(norm);
  std::string messages =
      runExpectingFailure(norm, 1, makeValues(norm, {{"x", HostTensor(1, 2)}}));
  EXPECT_NE(messages.find(":6:8: 'math.atan' op is not supported by the "
                          "interpreter"),
            std::string::npos)
      << messages;
}

TEST_F(NormInterpreterTest, MatrixUpdateReadsAndWritesItsLevels) {
  func::FuncOp update = parse(R"(
func.func @levels(
    %p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"},
    %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "r"},
    %c: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "c"},
    %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "v",
             kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  %rows = kfuse.reduce <sum> %g dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cols = kfuse.reduce <sum> %g dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %r_new = arith.addf %r, %rows : tensor<?x1xf32>
  %r_b = kfuse.broadcast %r_new like %p : tensor<?x1xf32>, tensor<?x?xf32>
  %c_b = kfuse.broadcast %c like %p : tensor<1x?xf32>, tensor<?x?xf32>
  %sum = arith.addf %r_b, %c_b : tensor<?x?xf32>
  %p_new = arith.addf %p, %sum : tensor<?x?xf32>
  %v_new = arith.addf %v, %v : f32
  kfuse.write %p_new to %p : tensor<?x?xf32>
  kfuse.write %r_new to %r : tensor<?x1xf32>
  kfuse.write %cols to %c : tensor<1x?xf32>
  kfuse.write %v_new to %v : f32
  return
})");
  ASSERT_TRUE(update);
  HostTensor p(2, 3), g(2, 3), r(2, 1), c(1, 3);
  p.elements = {0, 0, 0, 100, 100, 100};
  g.elements = {1, 2, 3, 4, 5, 6};
  r.elements = {10, 20};
  c.elements = {0.5, 0.25, 0.125};
  ArgValues values =
      makeValues(update, {{"p", p}, {"g", g}, {"r", r}, {"c", c}}, {{"v", 3}});
  FailureOr<ArgValues> out = interpret(update, 2, values, Precision::F64);
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(get(update, *out, "r").elements, (std::vector<double>{16, 35}));
  EXPECT_EQ(get(update, *out, "c").elements, (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(get(update, *out, "p").elements,
            (std::vector<double>{16.5, 16.25, 16.125, 135.5, 135.25, 135.125}));
  EXPECT_EQ(out->scalars[4], 6.0);
  EXPECT_FALSE(out->tensors[1]) << "the grad is read only";
}

TEST_F(NormInterpreterTest, OneDimensionalUpdateRunsAsOneColumn) {
  // One interpreter: a 1-D update over n elements is n rows of one column,
  // and interpretUpdate's flat buffers are the same run.
  func::FuncOp update = parse(R"(
func.func @scaled(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 0.5 : f32})
    attributes {kfuse.update} {
  %n = kfuse.reduce <sum> %grad dim 0 : tensor<?xf32> -> f32
  %s = arith.mulf %lr, %n : f32
  %s_b = kfuse.broadcast %s like %param : f32, tensor<?xf32>
  %d = arith.mulf %grad, %s_b : tensor<?xf32>
  %p_new = arith.subf %param, %d : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
})");
  ASSERT_TRUE(update);
  std::mt19937_64 engine(3);
  UpdateValues flat;
  ArgValues values(update.getNumArguments());
  for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i) {
    if (!isa<ShapedType>(update.getArgument(i).getType())) {
      double value = getArgDefault(update, i).value_or(0.5);
      flat.scalars.push_back(value);
      flat.tensors.emplace_back();
      values.scalars[i] = value;
      continue;
    }
    HostTensor tensor = randomTensor(engine, 5, 1);
    flat.tensors.push_back(tensor.elements);
    flat.scalars.push_back(0.0);
    values.tensors[i] = std::move(tensor);
  }
  FailureOr<ArgValues> out = interpret(update, 5, values, Precision::F32);
  ASSERT_TRUE(succeeded(out));
  ASSERT_TRUE(succeeded(interpretUpdate(update, flat, Precision::F32)));
  const HostTensor &param = get(update, *out, "param");
  EXPECT_EQ(param.rows, 5);
  EXPECT_EQ(param.cols, 1);
  EXPECT_EQ(param.elements, flat.tensors[0]);
  EXPECT_NE(param.elements, values.tensors[0]->elements);
}

//===----------------------------------------------------------------------===//
// runNormCheck
//===----------------------------------------------------------------------===//

TEST_F(NormInterpreterTest, CheckInputsCarryConsistentRowStatistics) {
  func::FuncOp norm = loadLibrary("layernorm_bwd");
  ASSERT_TRUE(norm);
  FailureOr<ArgValues> inputs = makeCheckInputs(norm, 3, 1000, 42);
  ASSERT_TRUE(succeeded(inputs));
  const HostTensor &x = get(norm, *inputs, "x");
  const HostTensor &mean = get(norm, *inputs, "mean");
  const HostTensor &rstd = get(norm, *inputs, "rstd");
  ASSERT_EQ(mean.rows, 3);
  ASSERT_EQ(rstd.cols, 1);
  for (int64_t r = 0; r < 3; ++r) {
    double sum = 0.0, squares = 0.0;
    for (int64_t c = 0; c < 1000; ++c)
      sum += x.at(r, c);
    for (int64_t c = 0; c < 1000; ++c)
      squares += (x.at(r, c) - sum / 1000) * (x.at(r, c) - sum / 1000);
    EXPECT_EQ(mean.at(r, 0), roundToF32(sum / 1000));
    EXPECT_EQ(rstd.at(r, 0),
              roundToF32(1.0 / std::sqrt(squares / 1000 + 1e-5)));
    EXPECT_NEAR(mean.at(r, 0), 1.0, 0.2); // x ~ N(1, 1)
  }
  // The same seed and shape give the same inputs, in bf16 rounded.
  FailureOr<ArgValues> again =
      makeCheckInputs(norm, 3, 1000, 42, ElementKind::BF16);
  ASSERT_TRUE(succeeded(again));
  const HostTensor &xBF16 = get(norm, *again, "x");
  for (size_t i = 0; i < x.elements.size(); ++i)
    ASSERT_EQ(xBF16.elements[i], roundToBF16(x.elements[i]));
}

TEST_F(NormInterpreterTest, CheckPassesEveryLibraryNorm) {
  CheckOptions options;
  options.rowCounts = {1, 3};
  options.colCounts = {1, 7, 1000};
  for (const char *name : {"layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd",
                           "rmsnorm_bwd", "add_layernorm_fwd"}) {
    func::FuncOp norm = loadLibrary(name);
    ASSERT_TRUE(norm);
    FailureOr<CheckReport> report = runNormCheck(norm, options);
    ASSERT_TRUE(succeeded(report)) << name;
    std::string text;
    llvm::raw_string_ostream os(text);
    printCheckReport(*report, options, os);
    EXPECT_TRUE(report->passed()) << name << ":\n" << text;
    // f32 and emulated bf16 for every shape.
    EXPECT_EQ(report->cases.size(), 2u * 2u * 3u) << name;
    double worstF32 = 0.0, worstBF16 = 0.0;
    for (const CheckCase &check : report->cases) {
      if (check.conditioned)
        continue; // RMSNorm's dx over one column, see below
      EXPECT_EQ(check.tolerance, check.emulated ? 1e-2 : 1e-5);
      (check.emulated ? worstBF16 : worstF32) =
          std::max(check.emulated ? worstBF16 : worstF32, check.error);
    }
    EXPECT_GT(worstF32, 0.0) << name;
    EXPECT_LT(worstF32, 1e-5) << name;
    EXPECT_GT(worstBF16, 1e-4) << name; // a bf16 rounding shows
    EXPECT_NE(text.find("check: 12 passed, 0 failed"), std::string::npos)
        << text;
  }
}

TEST_F(NormInterpreterTest, CheckRaisesToleranceOnlyWhereInputsAreNoise) {
  // RMSNorm's dx over one column is g * rstd * eps / (x^2 + eps): f32
  // inputs alone move it by ~1e-3 of itself. Over 1000 columns it is well
  // conditioned and held to 1e-5.
  func::FuncOp norm = loadLibrary("rmsnorm_bwd");
  ASSERT_TRUE(norm);
  CheckOptions options;
  options.rowCounts = {3};
  options.colCounts = {1, 1000};
  options.emulateBF16 = false;
  FailureOr<CheckReport> report = runNormCheck(norm, options);
  ASSERT_TRUE(succeeded(report));
  ASSERT_EQ(report->cases.size(), 2u);
  const CheckCase &oneColumn = report->cases[0];
  EXPECT_TRUE(oneColumn.passed);
  EXPECT_TRUE(oneColumn.conditioned);
  EXPECT_EQ(oneColumn.worstArg, "dx");
  EXPECT_GT(oneColumn.error, 1e-5);
  EXPECT_GT(oneColumn.inputNoise, 1e-4);
  EXPECT_EQ(oneColumn.tolerance, 8 * oneColumn.inputNoise);
  const CheckCase &wide = report->cases[1];
  EXPECT_TRUE(wide.passed);
  EXPECT_FALSE(wide.conditioned);
  EXPECT_EQ(wide.tolerance, 1e-5);
  EXPECT_LT(wide.inputNoise, 1e-6);
}

TEST_F(NormInterpreterTest, CheckFailsBelowTheRoundingError) {
  func::FuncOp norm = loadLibrary("rmsnorm_fwd");
  ASSERT_TRUE(norm);
  CheckOptions options;
  options.rowCounts = {3};
  options.colCounts = {1000};
  options.toleranceOverride = 1e-30;
  FailureOr<CheckReport> report = runNormCheck(norm, options);
  ASSERT_TRUE(succeeded(report));
  EXPECT_FALSE(report->passed());
  // bf16 storage rounds y by ~1e-3, far above its input-rounding noise.
  ASSERT_EQ(report->cases.size(), 2u);
  const CheckCase &bf16 = report->cases[1];
  EXPECT_TRUE(bf16.emulated);
  EXPECT_FALSE(bf16.passed);
  EXPECT_EQ(bf16.worstArg, "y");
  EXPECT_GE(bf16.worstRow, 0);
  EXPECT_GE(bf16.worstCol, 0);
  EXPECT_LT(bf16.tolerance, 1e-5);
}

TEST_F(NormInterpreterTest, CheckOfSpecializedFormUsesItsShapeAndDType) {
  func::FuncOp norm = parse(kRMSNormBF16);
  ASSERT_TRUE(norm);
  CheckOptions options;
  options.rowCounts = {1, 64};
  FailureOr<CheckReport> report = runNormCheck(norm, options);
  ASSERT_TRUE(succeeded(report));
  ASSERT_EQ(report->cases.size(), 2u); // static 8 columns, bf16 declared
  for (const CheckCase &check : report->cases) {
    EXPECT_EQ(check.cols, 8);
    EXPECT_EQ(check.dtype, "bf16");
    EXPECT_FALSE(check.emulated);
    EXPECT_EQ(check.tolerance, 1e-2);
    EXPECT_TRUE(check.passed) << check.error;
  }
}

} // namespace
