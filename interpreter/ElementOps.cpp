//===- ElementOps.cpp - scalar semantics of elementwise ops --------------===//

#include "interpreter/ElementOps.h"
#include "interpreter/FloatRounding.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kfuse {

FailureOr<ElementKind> getElementKind(Type type, Location loc, StringRef what) {
  Type element = getElementTypeOrSelf(type);
  if (element.isF64())
    return ElementKind::F64;
  if (element.isF32())
    return ElementKind::F32;
  if (element.isBF16())
    return ElementKind::BF16;
  if (element.isF16())
    return ElementKind::F16;
  if (element.isInteger(1))
    return ElementKind::I1;
  return emitError(loc) << what << " has type " << type
                        << ", whose element type the interpreter does not "
                           "support (f64, f32, bf16, f16 or i1)";
}

double roundToKind(double value, ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return roundToF32(value);
  case ElementKind::BF16:
    return roundToBF16(value);
  case ElementKind::F16:
    return roundToF16(value);
  case ElementKind::F64:
  case ElementKind::I1:
    return value;
  }
  return value;
}

using Kind = ElementOp::Kind;

/// The kind of `op`, or nothing when the interpreter does not know it.
/// kfuse.convert, arith.extf and arith.truncf are copies whose result is
/// rounded to the result type.
static std::optional<Kind> getKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<Kind>>(op)
      .Case<arith::ConstantOp>([](auto) { return Kind::Constant; })
      .Case<ConvertOp, arith::ExtFOp, arith::TruncFOp>(
          [](auto) { return Kind::Copy; })
      .Case<arith::AddFOp>([](auto) { return Kind::AddF; })
      .Case<arith::SubFOp>([](auto) { return Kind::SubF; })
      .Case<arith::MulFOp>([](auto) { return Kind::MulF; })
      .Case<arith::DivFOp>([](auto) { return Kind::DivF; })
      .Case<arith::NegFOp>([](auto) { return Kind::NegF; })
      .Case<arith::RemFOp>([](auto) { return Kind::RemF; })
      .Case<arith::MaximumFOp>([](auto) { return Kind::MaximumF; })
      .Case<arith::MinimumFOp>([](auto) { return Kind::MinimumF; })
      .Case<arith::MaxNumFOp>([](auto) { return Kind::MaxNumF; })
      .Case<arith::MinNumFOp>([](auto) { return Kind::MinNumF; })
      .Case<arith::CmpFOp>([](auto) { return Kind::CmpF; })
      .Case<arith::SelectOp>([](auto) { return Kind::Select; })
      .Case<arith::AndIOp>([](auto) { return Kind::AndI; })
      .Case<arith::OrIOp>([](auto) { return Kind::OrI; })
      .Case<arith::XOrIOp>([](auto) { return Kind::XOrI; })
      .Case<arith::UIToFPOp>([](auto) { return Kind::UIToFP; })
      .Case<arith::SIToFPOp>([](auto) { return Kind::SIToFP; })
      .Case<math::SqrtOp>([](auto) { return Kind::Sqrt; })
      .Case<math::RsqrtOp>([](auto) { return Kind::Rsqrt; })
      .Case<math::PowFOp>([](auto) { return Kind::PowF; })
      .Case<math::ExpOp>([](auto) { return Kind::Exp; })
      .Case<math::Exp2Op>([](auto) { return Kind::Exp2; })
      .Case<math::ExpM1Op>([](auto) { return Kind::ExpM1; })
      .Case<math::LogOp>([](auto) { return Kind::Log; })
      .Case<math::Log2Op>([](auto) { return Kind::Log2; })
      .Case<math::Log1pOp>([](auto) { return Kind::Log1p; })
      .Case<math::AbsFOp>([](auto) { return Kind::AbsF; })
      .Case<math::TanhOp>([](auto) { return Kind::Tanh; })
      .Case<math::FmaOp>([](auto) { return Kind::Fma; })
      .Case<math::CopySignOp>([](auto) { return Kind::CopySign; })
      .Case<math::FloorOp>([](auto) { return Kind::Floor; })
      .Case<math::CeilOp>([](auto) { return Kind::Ceil; })
      .Case<math::RoundEvenOp>([](auto) { return Kind::RoundEven; })
      .Case<math::SinOp>([](auto) { return Kind::Sin; })
      .Case<math::CosOp>([](auto) { return Kind::Cos; })
      .Case<math::ErfOp>([](auto) { return Kind::Erf; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The value of a scalar or splat constant.
static FailureOr<double> getConstantValue(arith::ConstantOp op) {
  Attribute value = op.getValue();
  if (auto splat = dyn_cast<SplatElementsAttr>(value))
    value = splat.getSplatValue<Attribute>();
  if (auto floatAttr = dyn_cast<FloatAttr>(value))
    return floatAttr.getValueAsDouble();
  if (auto intAttr = dyn_cast<IntegerAttr>(value);
      intAttr && intAttr.getType().isInteger(1))
    return intAttr.getValue().getBoolValue() ? 1.0 : 0.0;
  return op.emitOpError() << "has value " << value
                          << ", which the interpreter does not support: only "
                             "float or i1 scalars and splats are";
}

FailureOr<ElementOp> compileElementOp(Operation *op, Precision precision) {
  std::optional<Kind> kind = getKind(op);
  if (!kind)
    return op->emitOpError() << "is not supported by the interpreter";
  if (op->getNumResults() != 1)
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results; the interpreter expects one";
  ElementOp element;
  element.kind = *kind;
  FailureOr<ElementKind> resultKind =
      getElementKind(op->getResult(0).getType(), op->getLoc(), "result");
  if (failed(resultKind))
    return failure();
  element.resultKind = *resultKind;

  for (Value operand : op->getOperands())
    if (failed(getElementKind(operand.getType(), op->getLoc(), "an operand")))
      return failure();
  if ((*kind == Kind::AndI || *kind == Kind::OrI || *kind == Kind::XOrI) &&
      *resultKind != ElementKind::I1)
    return op->emitOpError() << "on " << op->getResult(0).getType()
                             << " is not supported: only i1 logic is";
  if ((*kind == Kind::UIToFP || *kind == Kind::SIToFP) &&
      !getElementTypeOrSelf(op->getOperand(0).getType()).isInteger(1))
    return op->emitOpError() << "from " << op->getOperand(0).getType()
                             << " is not supported: only i1 sources are";
  if (auto trunc = dyn_cast<arith::TruncFOp>(op)) {
    std::optional<arith::RoundingMode> mode = trunc.getRoundingmode();
    if (mode && *mode != arith::RoundingMode::to_nearest_even)
      return op->emitOpError() << "rounds " << stringifyRoundingMode(*mode)
                               << "; the interpreter supports only "
                                  "to_nearest_even";
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    FailureOr<double> value = getConstantValue(constant);
    if (failed(value))
      return failure();
    element.constant = *value;
  }
  if (auto cmp = dyn_cast<arith::CmpFOp>(op))
    element.predicate = cmp.getPredicate();

  // F32 rounds every result to its type, as the GPU stores every register
  // value in its type. F64 keeps doubles everywhere except at the narrowing
  // to a 16-bit storage type: storage is storage, and a bf16 tensor holding
  // values bf16 cannot represent would not model any device run.
  bool narrowsToStorage =
      *kind == Kind::Copy &&
      (*resultKind == ElementKind::BF16 || *resultKind == ElementKind::F16);
  element.roundResult = precision == Precision::F32 || narrowsToStorage;
  return element;
}

static bool compare(arith::CmpFPredicate predicate, double lhs, double rhs) {
  using P = arith::CmpFPredicate;
  bool unordered = std::isnan(lhs) || std::isnan(rhs);
  switch (predicate) {
  case P::AlwaysFalse:
    return false;
  case P::OEQ:
    return !unordered && lhs == rhs;
  case P::OGT:
    return !unordered && lhs > rhs;
  case P::OGE:
    return !unordered && lhs >= rhs;
  case P::OLT:
    return !unordered && lhs < rhs;
  case P::OLE:
    return !unordered && lhs <= rhs;
  case P::ONE:
    return !unordered && lhs != rhs;
  case P::ORD:
    return !unordered;
  case P::UEQ:
    return unordered || lhs == rhs;
  case P::UGT:
    return unordered || lhs > rhs;
  case P::UGE:
    return unordered || lhs >= rhs;
  case P::ULT:
    return unordered || lhs < rhs;
  case P::ULE:
    return unordered || lhs <= rhs;
  case P::UNE:
    return unordered || lhs != rhs;
  case P::UNO:
    return unordered;
  case P::AlwaysTrue:
    return true;
  }
  return false;
}

double ieeeMaximum(double lhs, double rhs) {
  if (std::isnan(lhs) || std::isnan(rhs))
    return NAN;
  if (lhs == rhs)
    return std::signbit(lhs) ? rhs : lhs;
  return lhs > rhs ? lhs : rhs;
}

static double minimum(double lhs, double rhs) {
  if (std::isnan(lhs) || std::isnan(rhs))
    return NAN;
  if (lhs == rhs)
    return std::signbit(lhs) ? lhs : rhs;
  return lhs < rhs ? lhs : rhs;
}

static double evaluateUnrounded(const ElementOp &op, ArrayRef<double> x) {
  switch (op.kind) {
  case Kind::Constant:
    return op.constant;
  case Kind::Copy:
    return x[0];
  case Kind::AddF:
    return x[0] + x[1];
  case Kind::SubF:
    return x[0] - x[1];
  case Kind::MulF:
    return x[0] * x[1];
  case Kind::DivF:
    return x[0] / x[1];
  case Kind::NegF:
    return -x[0];
  case Kind::RemF:
    return std::fmod(x[0], x[1]);
  case Kind::MaximumF:
    return ieeeMaximum(x[0], x[1]);
  case Kind::MinimumF:
    return minimum(x[0], x[1]);
  case Kind::MaxNumF:
    return std::fmax(x[0], x[1]);
  case Kind::MinNumF:
    return std::fmin(x[0], x[1]);
  case Kind::CmpF:
    return compare(op.predicate, x[0], x[1]) ? 1.0 : 0.0;
  case Kind::Select:
    return x[0] != 0.0 ? x[1] : x[2];
  case Kind::AndI:
    return (x[0] != 0.0 && x[1] != 0.0) ? 1.0 : 0.0;
  case Kind::OrI:
    return (x[0] != 0.0 || x[1] != 0.0) ? 1.0 : 0.0;
  case Kind::XOrI:
    return ((x[0] != 0.0) != (x[1] != 0.0)) ? 1.0 : 0.0;
  case Kind::UIToFP:
    return x[0] != 0.0 ? 1.0 : 0.0;
  case Kind::SIToFP: // i1 true is -1 as a signed integer
    return x[0] != 0.0 ? -1.0 : 0.0;
  case Kind::Sqrt:
    return std::sqrt(x[0]);
  case Kind::Rsqrt:
    return 1.0 / std::sqrt(x[0]);
  case Kind::PowF:
    return std::pow(x[0], x[1]);
  case Kind::Exp:
    return std::exp(x[0]);
  case Kind::Exp2:
    return std::exp2(x[0]);
  case Kind::ExpM1:
    return std::expm1(x[0]);
  case Kind::Log:
    return std::log(x[0]);
  case Kind::Log2:
    return std::log2(x[0]);
  case Kind::Log1p:
    return std::log1p(x[0]);
  case Kind::AbsF:
    return std::fabs(x[0]);
  case Kind::Tanh:
    return std::tanh(x[0]);
  case Kind::Fma:
    return std::fma(x[0], x[1], x[2]);
  case Kind::CopySign:
    return std::copysign(x[0], x[1]);
  case Kind::Floor:
    return std::floor(x[0]);
  case Kind::Ceil:
    return std::ceil(x[0]);
  case Kind::RoundEven:
    return std::nearbyint(x[0]); // the default mode rounds ties to even
  case Kind::Sin:
    return std::sin(x[0]);
  case Kind::Cos:
    return std::cos(x[0]);
  case Kind::Erf:
    return std::erf(x[0]);
  }
  return NAN;
}

double evaluateElement(const ElementOp &op, ArrayRef<double> operands) {
  double result = evaluateUnrounded(op, operands);
  return op.roundResult ? roundToKind(result, op.resultKind) : result;
}

bool isDecision(const ElementOp &op) {
  switch (op.kind) {
  case Kind::CmpF:
    return op.predicate != arith::CmpFPredicate::AlwaysFalse &&
           op.predicate != arith::CmpFPredicate::AlwaysTrue &&
           op.predicate != arith::CmpFPredicate::ORD &&
           op.predicate != arith::CmpFPredicate::UNO;
  case Kind::Floor:
  case Kind::Ceil:
  case Kind::RoundEven:
  case Kind::CopySign:
  case Kind::RemF:
    return true;
  default:
    return false;
  }
}

bool preservesExactness(const ElementOp &op) {
  switch (op.kind) {
  case Kind::Constant:
  case Kind::Copy:
  case Kind::NegF:
  case Kind::AbsF:
  case Kind::MaximumF:
  case Kind::MinimumF:
  case Kind::MaxNumF:
  case Kind::MinNumF:
  case Kind::CmpF:
  case Kind::Select:
  case Kind::AndI:
  case Kind::OrI:
  case Kind::XOrI:
  case Kind::UIToFP:
  case Kind::SIToFP:
  case Kind::CopySign:
  case Kind::Floor:
  case Kind::Ceil:
  case Kind::RoundEven:
    return true;
  default:
    return false;
  }
}

bool isNearDecision(const ElementOp &op, ArrayRef<double> x,
                    ArrayRef<double> scales, double slack) {
  if (!isDecision(op))
    return false;
  for (double value : x)
    if (!std::isfinite(value))
      return false;
  switch (op.kind) {
  case Kind::CmpF:
    return std::fabs(x[0] - x[1]) <= slack * std::max(scales[0], scales[1]);
  case Kind::Floor:
  case Kind::Ceil:
    return std::fabs(x[0] - std::nearbyint(x[0])) <= slack * scales[0];
  case Kind::RoundEven: // near a half, between two integers
    return std::fabs(x[0] - std::floor(x[0]) - 0.5) <= slack * scales[0];
  case Kind::CopySign:
    return std::fabs(x[1]) <= slack * scales[1];
  case Kind::RemF: {
    double remainder = std::fabs(std::fmod(x[0], x[1]));
    double margin = slack * std::max(scales[0], scales[1]);
    return remainder <= margin || std::fabs(x[1]) - remainder <= margin;
  }
  default:
    return false;
  }
}

void FusedProgram::run(MutableArrayRef<double> slots,
                       SmallVectorImpl<double> &scratch) const {
  for (const FusedInstruction &instruction : instructions) {
    scratch.clear();
    for (unsigned operand : instruction.operands)
      scratch.push_back(slots[operand]);
    slots[instruction.result] = evaluateElement(instruction.op, scratch);
  }
}

FailureOr<FusedProgram>
compileFusedBody(FusedOp op,
                 function_ref<FailureOr<ElementOp>(Operation *)> compileOp) {
  Block &body = op.getBody().front();
  FusedProgram program;
  DenseMap<Value, unsigned> slots;
  for (BlockArgument arg : body.getArguments())
    slots[arg] = arg.getArgNumber();
  program.numSlots = body.getNumArguments();
  for (Operation &bodyOp : body.without_terminator()) {
    FailureOr<ElementOp> element = compileOp(&bodyOp);
    if (failed(element))
      return failure();
    FusedInstruction instruction{*element, {}, program.numSlots++};
    for (Value operand : bodyOp.getOperands()) {
      auto it = slots.find(operand);
      if (it == slots.end())
        return bodyOp.emitOpError()
               << "reads a value not defined in its kfuse.fused body";
      instruction.operands.push_back(it->second);
    }
    slots[bodyOp.getResult(0)] = instruction.result;
    program.instructions.push_back(std::move(instruction));
  }
  for (Value value : op.getYield().getValues())
    program.yielded.push_back(slots.lookup(value));
  return program;
}

} // namespace kfuse
