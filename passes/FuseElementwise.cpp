//===- FuseElementwise.cpp - group tensor math into kfuse.fused ----------===//
//
// Every tensor of an update has one shape, so any set of its elementwise
// operations can share a loop. Groups are runs of consecutive operations in
// program order, which is a topological order: a group depends only on
// earlier groups, and with no size cap and no reduction the whole update is
// one region (producer-consumer and sibling fusion at once). A reduction
// over a whole tensor ends a group: it needs all of its input first. One over
// each row of a 2-D value whose rows are held in registers (isRowLocalReduce)
// joins the group, as a reduction of the element over its row.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

namespace kfuse {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {

/// Whether `op` is whole-tensor elementwise math that belongs in a region.
static bool isFusable(Operation *op) {
  if (op->getNumResults() == 0 || op->getNumRegions() != 0 ||
      isUniformTensor(op->getResult(0)))
    return false;
  if (!llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
    return false;
  if (isa<ConvertOp>(op))
    return true;
  // A row held in registers is reduced inside the region that computes it.
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return isRowLocalReduce(reduce);
  return op->hasTrait<OpTrait::Elementwise>() &&
         isa<arith::ArithDialect, math::MathDialect>(op->getDialect());
}

/// Builds one kfuse.fused region from a group of operations.
class RegionBuilder {
public:
  RegionBuilder(func::FuncOp func, ArrayRef<Operation *> group)
      : func(func), group(group.begin(), group.end()) {}

  FusedOp build();

private:
  /// The region-side scalar for `value` (a tensor element or a uniform).
  Value lookupOrAddInput(Value value);
  /// Clones the scalar computation of `value` (a uniform scalar or the
  /// scalar of a broadcast) into the body.
  Value cloneScalar(Value value);
  Value addInput(Value value, Type bodyType);

  func::FuncOp func;
  llvm::SetVector<Operation *> group;
  SmallVector<Value> inputs;
  Block *body = nullptr;
  OpBuilder builder{func.getContext()};
  IRMapping mapping;
};

Value RegionBuilder::addInput(Value value, Type bodyType) {
  inputs.push_back(value);
  BlockArgument arg = body->addArgument(bodyType, value.getLoc());
  mapping.map(value, arg);
  return arg;
}

Value RegionBuilder::cloneScalar(Value value) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  // A value per tensor of a 2-D update (1 x 1) is a scalar here too.
  if (auto broadcast = dyn_cast_if_present<BroadcastOp>(def)) {
    Value scalar = cloneScalar(broadcast.getValue());
    mapping.map(value, scalar);
    return scalar;
  }
  // A hyperparameter, or a scalar computed from tensors (a reduction over
  // a whole tensor, a tensor's extent): the region reads it as an input.
  bool tensorLevelMath =
      def && isTensorLevelValue(value) && !isa<ReduceOp>(def);
  if (!def || (!tensorLevelMath &&
               llvm::any_of(def->getOperandTypes(), llvm::IsaPred<ShapedType>)))
    return addInput(value, getElementTypeOrSelf(value.getType()));
  for (Value operand : def->getOperands())
    cloneScalar(operand);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(body);
  Operation *clone = builder.clone(*def, mapping);
  for (OpResult result : clone->getResults())
    result.setType(getElementTypeOrSelf(result.getType()));
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

Value RegionBuilder::lookupOrAddInput(Value value) {
  if (Value mapped = mapping.lookupOrNull(value))
    return mapped;
  Operation *def = value.getDefiningOp();
  if (auto broadcast = dyn_cast_if_present<BroadcastOp>(def)) {
    // A scalar, or in a 2-D update a row, column or tensor value: an
    // element of the region either way.
    Value source = broadcast.getValue();
    Value scalar =
        isa<RankedTensorType>(source.getType()) && !isTensorLevelValue(source)
            ? lookupOrAddInput(source)
            : cloneScalar(source);
    mapping.map(value, scalar);
    return scalar;
  }
  if (isTensorLevelValue(value))
    return cloneScalar(value);
  DenseElementsAttr splat;
  if (matchPattern(value, m_Constant(&splat)) && splat.isSplat()) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(body);
    Value scalar = arith::ConstantOp::create(
                       builder, value.getLoc(),
                       cast<TypedAttr>(splat.getSplatValue<Attribute>()))
                       .getResult();
    mapping.map(value, scalar);
    return scalar;
  }
  auto tensor = cast<RankedTensorType>(value.getType());
  return addInput(value, tensor.getElementType());
}

FusedOp RegionBuilder::build() {
  Operation *last = group.back();
  auto region = std::make_unique<Region>();
  body = new Block();
  region->push_back(body);

  // Clone the group's ops as scalar ops, inputs first.
  for (Operation *op : group) {
    for (Value operand : op->getOperands())
      if (!group.contains(operand.getDefiningOp()))
        lookupOrAddInput(operand);
    builder.setInsertionPointToEnd(body);
    Operation *clone = builder.clone(*op, mapping);
    for (OpResult result : clone->getResults())
      result.setType(cast<RankedTensorType>(result.getType()).getElementType());
  }

  // Results: every value of the group used outside it.
  SmallVector<Value> escaping;
  for (Operation *op : group)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !group.contains(user); }))
        escaping.push_back(result);
  builder.setInsertionPointToEnd(body);
  SmallVector<Value> yielded = llvm::map_to_vector(
      escaping, [&](Value value) { return mapping.lookup(value); });
  YieldOp::create(builder, last->getLoc(), yielded);

  builder.setInsertionPointAfter(last);
  SmallVector<Location> locs =
      llvm::map_to_vector(group, [](Operation *op) { return op->getLoc(); });
  auto fused = FusedOp::create(
      builder, builder.getFusedLoc(locs),
      llvm::map_to_vector(escaping, [](Value v) { return v.getType(); }),
      inputs);
  fused.getBody().takeBody(*region);
  for (auto [old, replacement] : llvm::zip(escaping, fused.getResults()))
    old.replaceAllUsesWith(replacement);
  for (Operation *op : llvm::reverse(group))
    op->erase();
  return fused;
}

struct FuseElementwisePass
    : public kfuse::impl::FuseElementwisePassBase<FuseElementwisePass> {
  using FuseElementwisePassBase::FuseElementwisePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func))
      return;
    sinkWrites(func);
    // A broadcast's `like` and a dim_size's input give only a shape:
    // pointing them at an argument keeps them from holding grouped values
    // alive as region results, or from reading one before its region.
    anchorShapeOperands(func);
    materializeUniformWrites(func);
    materializeReducedArguments(func);

    SmallVector<SmallVector<Operation *>> groups(1);
    for (Operation &op : func.getBody().front()) {
      if (!isFusable(&op)) {
        // A reduction reads a whole tensor that the ops before it compute:
        // they form a region of their own, which runs first. (A reduction
        // of a reduction over the whole tensor runs with the inner one.)
        if (auto reduce = dyn_cast<ReduceOp>(op);
            reduce && !getWholeTensorReduceInput(reduce) &&
            !groups.back().empty())
          groups.emplace_back();
        continue;
      }
      if (maxGroupSize != 0 && groups.back().size() >= maxGroupSize)
        groups.emplace_back();
      groups.back().push_back(&op);
    }
    for (ArrayRef<Operation *> group : groups) {
      if (group.empty())
        continue;
      RegionBuilder(func, group).build();
      ++numRegions;
      numFusedOps += group.size();
    }
    eraseDeadUniforms(func);
  }

  /// Writes take effect when the update returns, so they can all sit just
  /// before the return: then no group is split by a write that must see one
  /// of its values before the group's region exists.
  void sinkWrites(func::FuncOp func) {
    Operation *terminator = func.getBody().front().getTerminator();
    SmallVector<WriteOp> writes(func.getBody().front().getOps<WriteOp>());
    for (WriteOp write : writes)
      write->moveBefore(terminator);
  }

  /// A write of an argument or a uniform tensor gets an elementwise copy of
  /// its own, so that every write is fed by a region.
  void materializeUniformWrites(func::FuncOp func) {
    SmallVector<WriteOp> writes(func.getBody().front().getOps<WriteOp>());
    if (writes.empty())
      return;
    // Copies go before the first (sunk) write, ahead of every write.
    OpBuilder builder(writes.front());
    for (WriteOp write : writes) {
      Value value = write.getValue();
      Operation *def = value.getDefiningOp();
      // A state at the tensor level takes its scalar as it is.
      if ((def && isFusable(def)) || !isa<RankedTensorType>(value.getType()))
        continue;
      // The identity in whatever element type: a convert to the same type
      // folds away once inside the region.
      auto copy =
          ConvertOp::create(builder, write.getLoc(), value.getType(), value);
      write.getValueMutable().assign(copy);
    }
  }

  /// A reduction of an argument itself (the mean of the grad) reads it
  /// through an elementwise copy, so that a region feeds every reduction.
  /// The copy goes before the run of reductions that ends the reduction's
  /// group: the copy depends on nothing, and there it joins the region
  /// whose pass already reads the tensors (a LayerNorm backward's dbias, the
  /// column sum of dy, in the pass that sums dweight, not in one of its own).
  void materializeReducedArguments(func::FuncOp func) {
    func.walk([&](ReduceOp reduce) {
      Value input = reduce.getInput();
      Operation *def = input.getDefiningOp();
      if (!isa<RankedTensorType>(input.getType()) || (def && isFusable(def)) ||
          getWholeTensorReduceInput(reduce))
        return;
      Operation *at = reduce;
      while (auto previous = dyn_cast_or_null<ReduceOp>(at->getPrevNode())) {
        if (isFusable(previous))
          break;
        at = previous;
      }
      OpBuilder builder(at);
      auto copy =
          ConvertOp::create(builder, reduce.getLoc(), input.getType(), input);
      reduce.getInputMutable().assign(copy);
    });
  }

  void eraseDeadUniforms(func::FuncOp func) {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && !isa<WriteOp, func::ReturnOp, FusedOp>(op) &&
          isMemoryEffectFree(op))
        op->erase();
  }
};

} // namespace
