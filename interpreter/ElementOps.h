//===- ElementOps.h - scalar semantics of elementwise ops -------*- C++ -*-===//
//
// The interpreter's meaning of one element of each supported arith, math and
// kfuse op: every value is a double (i1 is 0 or 1), rounded after each op to
// its result element type as the precision asks.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_INTERPRETER_ELEMENTOPS_H
#define KFUSE_INTERPRETER_ELEMENTOPS_H

#include "interpreter/Interpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace kfuse {

/// Element types values can have; each rounds differently.
enum class ElementKind { F64, F32, BF16, F16, I1 };

/// The kind of the element type of `type` (a scalar or a tensor), or an
/// error at `loc` naming `what`.
mlir::FailureOr<ElementKind> getElementKind(mlir::Type type, mlir::Location loc,
                                            llvm::StringRef what);

/// `value` rounded to `kind` (identity for f64 and i1).
double roundToKind(double value, ElementKind kind);

/// One op reduced to what its elements need.
struct ElementOp {
  enum class Kind {
    Constant,
    Copy,
    AddF,
    SubF,
    MulF,
    DivF,
    NegF,
    RemF,
    MaximumF,
    MinimumF,
    MaxNumF,
    MinNumF,
    CmpF,
    Select,
    AndI,
    OrI,
    XOrI,
    UIToFP,
    SIToFP,
    Sqrt,
    Rsqrt,
    PowF,
    Exp,
    Exp2,
    ExpM1,
    Log,
    Log2,
    Log1p,
    AbsF,
    Tanh,
    Fma,
    CopySign,
    Floor,
    Ceil,
    Sin,
    Cos,
    Erf,
  };
  Kind kind;
  double constant = 0.0;
  mlir::arith::CmpFPredicate predicate =
      mlir::arith::CmpFPredicate::AlwaysFalse;
  ElementKind resultKind = ElementKind::F64;
  /// Whether the result is rounded to `resultKind` after each evaluation.
  bool roundResult = false;
};

/// Reduces `op` (one result) to an ElementOp, or emits an error naming the
/// op when it is not supported. Non-splat tensor constants are not.
mlir::FailureOr<ElementOp> compileElementOp(mlir::Operation *op,
                                            Precision precision);

/// One element of `op` on `operands` (one per op operand), rounded.
double evaluateElement(const ElementOp &op, llvm::ArrayRef<double> operands);

/// Whether `op` decides between outcomes at thresholds of its operands (a
/// comparison, floor, ceil, copysign, remainder): a discontinuous function.
bool isDecision(const ElementOp &op);

/// Whether `op`'s result is exact when its operands are: it picks, negates
/// or compares values rather than rounding new ones. Two precisions then
/// agree on it wherever they agree on the operands.
bool preservesExactness(const ElementOp &op);

/// Whether `op` on `operands` decides within `slack` of a threshold, relative
/// to `scales`, the largest magnitude of each operand over its tensor: where
/// the rounding of its operands could tip the outcome.
bool isNearDecision(const ElementOp &op, llvm::ArrayRef<double> operands,
                    llvm::ArrayRef<double> scales, double slack);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_ELEMENTOPS_H
