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
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <vector>

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
    RoundEven,
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

/// IEEE 754-2019 maximum (arith.maximumf): NaN if either is NaN, and +0
/// above -0.
double ieeeMaximum(double lhs, double rhs);

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

/// Neumaier's compensated sum: sums exact to a few ulps of double whatever
/// the order and the cancellation (the interpreters' reductions).
class CompensatedSum {
public:
  void add(double value) {
    double next = sum + value;
    if (std::fabs(sum) >= std::fabs(value))
      compensation += (sum - next) + value;
    else
      compensation += (value - next) + sum;
    sum = next;
  }
  /// Infinities and NaNs make the compensation NaN; the plain sum is then
  /// the IEEE answer.
  double get() const { return std::isfinite(sum) ? sum + compensation : sum; }

private:
  double sum = 0.0;
  double compensation = 0.0;
};

/// One body op of a kfuse.fused region, compiled: the slots it reads and the
/// slot it writes.
struct FusedInstruction {
  ElementOp op;
  llvm::SmallVector<unsigned, 3> operands;
  unsigned result;
};

/// A kfuse.fused body as a program over value slots: slots 0..n-1 hold the
/// body's n arguments, then one slot per body op result.
struct FusedProgram {
  std::vector<FusedInstruction> instructions;
  /// The slots the body yields, in order.
  llvm::SmallVector<unsigned> yielded;
  unsigned numSlots = 0;

  /// Runs the body on one element: `slots` (numSlots long) holds the
  /// arguments' values and receives every result. `scratch` is reused.
  void run(llvm::MutableArrayRef<double> slots,
           llvm::SmallVectorImpl<double> &scratch) const;
};

/// The program of `op`'s body, each op compiled by `compileOp` (which
/// reports its own errors); fails on a body op reading a value from outside
/// the region.
mlir::FailureOr<FusedProgram> compileFusedBody(
    FusedOp op,
    llvm::function_ref<mlir::FailureOr<ElementOp>(mlir::Operation *)>
        compileOp);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_ELEMENTOPS_H
