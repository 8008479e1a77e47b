//===- LiftElementForm.cpp - element-form updates onto tensors -----------===//
//
// An element-form update states the math of one element; the tensor form
// states it for the whole tensor, with every hyper used elementwise
// broadcast first. The lift walks the body once, in order: a value varies
// per element when it is a tensor argument or an op reads one, and an op
// that reads one gets tensor results and broadcasts of its scalar operands.
// A kfuse.reduce reads its operand as a tensor (broadcast if it does not
// vary) and yields one scalar for the tensor. A state at the tensor level
// stays a scalar: it is uniform, as a reduction's result.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace kfuse {
#define GEN_PASS_DEF_LIFTELEMENTFORMPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

static RankedTensorType elementsOf(Type type) {
  return RankedTensorType::get({ShapedType::kDynamic}, type);
}

/// Rewrites element-form update `func` on tensors; fails, with an error at
/// the op, on a body the tensor form cannot take.
static LogicalResult liftElementForm(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> varying;
  // Broadcasts take their shape from a tensor argument: every tensor of an
  // update has one shape.
  BlockArgument like;
  SmallVector<Type> inputs(func.getArgumentTypes());
  for (BlockArgument arg : body.getArguments()) {
    std::optional<Role> role = getArgRole(func, arg.getArgNumber());
    if (!role || *role == Role::hyper ||
        isPerTensorArg(func, arg.getArgNumber()))
      continue; // uniform over the tensor
    RankedTensorType type = elementsOf(arg.getType());
    arg.setType(type);
    inputs[arg.getArgNumber()] = type;
    varying.insert(arg);
    if (!like)
      like = arg;
  }
  func.setType(
      FunctionType::get(func.getContext(), inputs, func.getResultTypes()));

  llvm::DenseMap<Value, Value> broadcasts;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    // A write yields nothing, and a reduction over the element's tensor one
    // scalar for the whole tensor: neither result varies.
    bool uniformResult = isa<WriteOp, ReduceOp>(op);
    if (auto write = dyn_cast<WriteOp>(op);
        write && varying.contains(write.getValue()) &&
        !varying.contains(write.getTarget()))
      return write.emitOpError()
             << "writes a value that varies per element to '"
             << getArgName(func, getWriteTarget(write).getArgNumber())
             << "', a state at the tensor level; reduce it over the tensor "
                "first";
    if (!isa<ReduceOp>(op) && llvm::none_of(op.getOperands(), [&](Value value) {
          return varying.contains(value);
        }))
      continue; // math on hypers and constants: once per launch
    if (!uniformResult &&
        (!op.hasTrait<OpTrait::Tensorizable>() || op.getNumRegions() != 0))
      return op.emitOpError()
             << "in an element-form update: its body takes elementwise ops "
                "(arith, math) and kfuse.write; write the update on tensors "
                "to use this op";
    for (OpOperand &operand : op.getOpOperands()) {
      Value value = operand.get();
      if (varying.contains(value))
        continue;
      Type type = value.getType();
      if (!isa<FloatType>(type) && !type.isInteger(1))
        return op.emitOpError()
               << "reads a scalar of type " << type
               << " elementwise; an element-form update broadcasts float and "
                  "i1 scalars only";
      Value &broadcast = broadcasts[value];
      if (!broadcast) {
        OpBuilder builder(&op);
        broadcast = BroadcastOp::create(builder, value.getLoc(), value, like);
      }
      operand.set(broadcast);
    }
    if (uniformResult)
      continue;
    for (OpResult result : op.getResults()) {
      if (!result.getType().isIntOrFloat())
        return op.emitOpError() << "yields a " << result.getType()
                                << "; an element-form update computes "
                                   "scalars";
      result.setType(elementsOf(result.getType()));
      varying.insert(result);
    }
  }
  return success();
}

namespace {
struct LiftElementFormPass
    : public kfuse::impl::LiftElementFormPassBase<LiftElementFormPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isElementForm(func))
      return;
    if (failed(liftElementForm(func)))
      signalPassFailure();
  }
};
} // namespace
