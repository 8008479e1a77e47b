//===- CudaOps.cpp - CUDA C++ expressions for scalar body ops ------------===//
//
// Compute is f32 and follows IEEE: division and square roots are correctly
// rounded (the prelude's kfuse_div_rn and kfuse_sqrt_rn), rsqrt is 1/sqrt
// rounded once (kfuse_rsqrt_rn) rather than the approximate rsqrtf, and
// min/max keep MLIR's NaN and signed-zero rules.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaOps.h"
#include "dialect/KFuseOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <fmt/format.h>

using namespace mlir;

namespace kfuse {

std::optional<DType> getStorageDType(Type type) {
  if (type.isF32())
    return DType::f32;
  if (type.isBF16())
    return DType::bf16;
  if (type.isF16())
    return DType::f16;
  if (type.isInteger(1))
    return DType::pred;
  return std::nullopt;
}

std::optional<StringRef> getCudaScalarType(Type type) {
  if (type.isF32())
    return StringRef("float");
  if (type.isBF16() || type.isF16())
    return StringRef("unsigned short");
  if (type.isInteger(1))
    return StringRef("bool");
  return std::nullopt;
}

const char *getCudaStorageType(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "float";
  case DType::bf16:
  case DType::f16:
    return "unsigned short";
  case DType::pred:
    return "unsigned char";
  }
  return "?";
}

std::string formatFloatLiteral(const llvm::APFloat &value) {
  if (&value.getSemantics() != &llvm::APFloat::IEEEsingle())
    return fmt::format("(unsigned short)0x{:04x}u",
                       value.bitcastToAPInt().getZExtValue());
  float f = value.convertToFloat();
  if (value.isInfinity() || value.isNaN())
    return fmt::format("__uint_as_float(0x{:08x}u)",
                       value.bitcastToAPInt().getZExtValue());
  // Nine significant digits round-trip every f32.
  std::string text = fmt::format("{:.9g}", f);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  text += "f";
  return text.front() == '-' ? "(" + text + ")" : text;
}

/// The expression converting `x` of scalar type `from` to `to`, among f32,
/// bf16 and f16; none for other types.
static std::optional<std::string> convertExpression(Type from, Type to,
                                                    const std::string &x) {
  if (from == to)
    return x;
  auto isHalf = [](Type type) { return type.isBF16() || type.isF16(); };
  if (!(from.isF32() || isHalf(from)) || !(to.isF32() || isHalf(to)))
    return std::nullopt;
  std::string wide = x;
  if (from.isBF16())
    wide = fmt::format("kfuse_bf16_to_f32({})", x);
  else if (from.isF16())
    wide = fmt::format("kfuse_f16_to_f32({})", x);
  if (to.isBF16())
    return fmt::format("kfuse_f32_to_bf16({})", wide);
  if (to.isF16())
    return fmt::format("kfuse_f32_to_f16({})", wide);
  return wide;
}

/// The condition of `arith.cmpf` with `predicate`: ordered predicates are
/// false on NaN, unordered ones true, as the negation of the opposite
/// ordered comparison.
static std::string compareExpression(arith::CmpFPredicate predicate,
                                     const std::string &a,
                                     const std::string &b) {
  using P = arith::CmpFPredicate;
  switch (predicate) {
  case P::AlwaysFalse:
    return "false";
  case P::AlwaysTrue:
    return "true";
  case P::OEQ:
    return fmt::format("{} == {}", a, b);
  case P::OGT:
    return fmt::format("{} > {}", a, b);
  case P::OGE:
    return fmt::format("{} >= {}", a, b);
  case P::OLT:
    return fmt::format("{} < {}", a, b);
  case P::OLE:
    return fmt::format("{} <= {}", a, b);
  case P::ONE:
    return fmt::format("({0} < {1} || {0} > {1})", a, b);
  case P::ORD:
    return fmt::format("({0} == {0} && {1} == {1})", a, b);
  case P::UEQ:
    return fmt::format("!({0} < {1} || {0} > {1})", a, b);
  case P::UGT:
    return fmt::format("!({} <= {})", a, b);
  case P::UGE:
    return fmt::format("!({} < {})", a, b);
  case P::ULT:
    return fmt::format("!({} >= {})", a, b);
  case P::ULE:
    return fmt::format("!({} > {})", a, b);
  case P::UNE:
    return fmt::format("{} != {}", a, b);
  case P::UNO:
    return fmt::format("({0} != {0} || {1} != {1})", a, b);
  }
  return "false";
}

/// Checks that every operand and the result of a float compute op are f32.
static LogicalResult checkF32(Operation *op) {
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (!operand.getType().isF32())
      return op->emitOpError()
             << "operand #" << index << " has type " << operand.getType()
             << "; generated code computes in f32 only (convert first)";
  for (Type type : op->getResultTypes())
    if (!type.isF32())
      return op->emitOpError() << "result has type " << type
                               << "; generated code computes in f32 only";
  return success();
}

/// Checks that every operand and the result are i1.
static LogicalResult checkI1(Operation *op) {
  for (auto [index, operand] : llvm::enumerate(op->getOperands()))
    if (!operand.getType().isInteger(1))
      return op->emitOpError()
             << "operand #" << index << " has type " << operand.getType()
             << "; only i1 logic is supported";
  return success();
}

ArgLevel getValueLevel(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return ArgLevel::tensor;
  if (tensor.getRank() != 2)
    return ArgLevel::element;
  bool oneRow = tensor.getDimSize(0) == 1,
       oneColumn = tensor.getDimSize(1) == 1;
  return oneRow && oneColumn ? ArgLevel::tensor
         : oneColumn         ? ArgLevel::row
         : oneRow            ? ArgLevel::column
                             : ArgLevel::element;
}

namespace {
/// How an f32 op is spelled in CUDA (an operator, a function, negation or
/// rsqrt's 1 / sqrt) and computed by a host uniform program: one list for
/// both, so that an op with a device form has its host form too.
struct FloatOpForm {
  enum class Spelling { binary, call, neg, rsqrt };
  Spelling spelling;
  const char *token; // the operator or the f32 CUDA function
  UniformInstr::Op host;
};
} // namespace

static std::optional<FloatOpForm> getFloatOpForm(Operation *op) {
  using S = FloatOpForm::Spelling;
  using H = UniformInstr::Op;
  return llvm::TypeSwitch<Operation *, std::optional<FloatOpForm>>(op)
      .Case([](arith::AddFOp) { return FloatOpForm{S::binary, "+", H::add}; })
      .Case([](arith::SubFOp) { return FloatOpForm{S::binary, "-", H::sub}; })
      .Case([](arith::MulFOp) { return FloatOpForm{S::binary, "*", H::mul}; })
      .Case([](arith::DivFOp) { return FloatOpForm{S::binary, "/", H::div}; })
      .Case([](arith::NegFOp) { return FloatOpForm{S::neg, "", H::neg}; })
      .Case([](arith::RemFOp) { return FloatOpForm{S::call, "fmodf", H::rem}; })
      .Case([](arith::MaximumFOp) {
        return FloatOpForm{S::call, "kfuse_maximumf", H::maximum};
      })
      .Case([](arith::MinimumFOp) {
        return FloatOpForm{S::call, "kfuse_minimumf", H::minimum};
      })
      .Case([](arith::MaxNumFOp) {
        return FloatOpForm{S::call, "fmaxf", H::maxnum};
      })
      .Case([](arith::MinNumFOp) {
        return FloatOpForm{S::call, "fminf", H::minnum};
      })
      .Case([](math::SqrtOp) { return FloatOpForm{S::call, "sqrtf", H::sqrt}; })
      .Case([](math::RsqrtOp) { return FloatOpForm{S::rsqrt, "", H::rsqrt}; })
      .Case([](math::PowFOp) { return FloatOpForm{S::call, "powf", H::pow}; })
      .Case([](math::ExpOp) { return FloatOpForm{S::call, "expf", H::exp}; })
      .Case([](math::LogOp) { return FloatOpForm{S::call, "logf", H::log}; })
      .Case([](math::AbsFOp) { return FloatOpForm{S::call, "fabsf", H::abs}; })
      .Case([](math::TanhOp) { return FloatOpForm{S::call, "tanhf", H::tanh}; })
      .Case([](math::FmaOp) { return FloatOpForm{S::call, "fmaf", H::fma}; })
      .Case([](math::CopySignOp) {
        return FloatOpForm{S::call, "copysignf", H::copysign};
      })
      .Case([](math::FloorOp) {
        return FloatOpForm{S::call, "floorf", H::floor};
      })
      .Case([](math::CeilOp) { return FloatOpForm{S::call, "ceilf", H::ceil}; })
      .Case([](math::RoundEvenOp) {
        return FloatOpForm{S::call, "rintf", H::roundeven};
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<UniformInstr::Op> getHostUniformOp(Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).getType().isF32())
    return std::nullopt;
  if (std::optional<FloatOpForm> form = getFloatOpForm(op))
    return form->host;
  return std::nullopt;
}

/// Expressions of f32 ops that map one to one to a CUDA function or an
/// operator; none for other ops.
static std::optional<std::string> floatExpression(Operation *op,
                                                  ArrayRef<std::string> x,
                                                  bool wide,
                                                  bool plainDivision) {
  std::optional<FloatOpForm> form = getFloatOpForm(op);
  if (!form)
    return std::nullopt;
  StringRef token = form->token;
  // f32 division and roots go through the prelude's kfuse_div_rn and
  // kfuse_sqrt_rn: as exact as the operators, cheaper to compile.
  bool helpers = !wide && !plainDivision;
  if (helpers && isa<arith::DivFOp>(op))
    return fmt::format("kfuse_div_rn({}, {})", x[0], x[1]);
  if (helpers && isa<math::SqrtOp>(op))
    return "kfuse_sqrt_rn(" + x[0] + ")";
  switch (form->spelling) {
  case FloatOpForm::Spelling::binary:
    return fmt::format("{} {} {}", x[0], token.str(), x[1]);
  case FloatOpForm::Spelling::neg:
    return "-(" + x[0] + ")";
  case FloatOpForm::Spelling::rsqrt:
    if (helpers)
      return "kfuse_rsqrt_rn(" + x[0] + ")";
    return std::string(wide ? "1.0 / sqrt(" : "1.0f / sqrtf(") + x[0] + ")";
  case FloatOpForm::Spelling::call:
    break;
  }
  // Uniform code runs in double: the libm name without the f suffix, or
  // for pow, exp and log kfuse's own (getCudaUniformMathFunctions).
  std::string name = token.str();
  if (wide && isa<math::PowFOp, math::ExpOp, math::LogOp>(op))
    name = fmt::format("kfuse_{}_f64", token.drop_back().str());
  else if (wide && !token.starts_with("kfuse_") && token.ends_with("f"))
    name.pop_back();
  std::string text = name + "(";
  for (auto [index, operand] : llvm::enumerate(x))
    text += (index ? ", " : "") + operand;
  return text + ")";
}

FailureOr<std::string> emitOpExpression(Operation *op,
                                        ArrayRef<std::string> operands,
                                        bool wide, bool plainDivision) {
  if (op->getNumResults() != 1)
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results; generated code needs exactly one";
  Type resultType = op->getResult(0).getType();
  if (!getCudaScalarType(resultType))
    return op->emitOpError() << "result type " << resultType
                             << " is not supported; use f32, bf16, f16 or i1";

  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    if (auto value = dyn_cast<FloatAttr>(constant.getValue()))
      return formatFloatLiteral(value.getValue());
    if (auto value = dyn_cast<IntegerAttr>(constant.getValue());
        value && resultType.isInteger(1))
      return std::string(value.getValue().isZero() ? "false" : "true");
    return op->emitOpError()
           << "constant " << constant.getValue() << " is not supported";
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    if (!cmp.getLhs().getType().isF32())
      return op->emitOpError() << "compares " << cmp.getLhs().getType()
                               << "; generated code compares f32 only";
    return compareExpression(cmp.getPredicate(), operands[0], operands[1]);
  }
  if (auto select = dyn_cast<arith::SelectOp>(op)) {
    if (!select.getCondition().getType().isInteger(1))
      return op->emitOpError()
             << "condition has type " << select.getCondition().getType()
             << "; only a scalar i1 is supported";
    return fmt::format("{} ? {} : {}", operands[0], operands[1], operands[2]);
  }
  if (isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op)) {
    if (failed(checkI1(op)))
      return failure();
    StringRef symbol = isa<arith::AndIOp>(op)  ? "&&"
                       : isa<arith::OrIOp>(op) ? "||"
                                               : "!=";
    return fmt::format("{} {} {}", operands[0], symbol.str(), operands[1]);
  }
  if (isa<ConvertOp, arith::ExtFOp, arith::TruncFOp>(op)) {
    if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
      std::optional<arith::RoundingMode> mode = trunc.getRoundingmode();
      if (mode && *mode != arith::RoundingMode::to_nearest_even)
        return op->emitOpError()
               << "rounding mode '" << arith::stringifyRoundingMode(*mode)
               << "' is not supported; only to_nearest_even is";
    }
    Type from = op->getOperand(0).getType();
    if (std::optional<std::string> text =
            convertExpression(from, resultType, operands[0]))
      return *text;
    return op->emitOpError() << "conversion from " << from << " to "
                             << resultType << " is not supported";
  }
  std::optional<std::string> text =
      floatExpression(op, operands, wide, plainDivision);
  if (!text)
    return op->emitOpError()
           << "is not supported in a fused body by the CUDA code generator";
  if (failed(checkF32(op)))
    return failure();
  return *text;
}

} // namespace kfuse
