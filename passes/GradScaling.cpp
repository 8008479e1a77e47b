//===- GradScaling.cpp - unscale grads and gate on non-finite ones -------===//
//
// torch.amp.GradScaler multiplies the loss by a scale; the optimizer divides
// the grads by it and skips the step when any grad overflowed. Here the
// division is IR (a multiply by `inv_scale` on every grad read) and the skip
// is the `kfuse.found_inf` contract with the code generator.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"

namespace kfuse {
#define GEN_PASS_DEF_GRADSCALINGPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {
struct GradScalingPass
    : public kfuse::impl::GradScalingPassBase<GradScalingPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func) || func->hasAttr(KFuseDialect::kFoundInfAttrName))
      return;
    MLIRContext *context = func.getContext();
    unsigned index = func.getNumArguments();
    FailureOr<BlockArgument> invScale =
        appendHyperArgument(func, "inv_scale", 1.0f);
    if (failed(invScale))
      return signalPassFailure();

    OpBuilder builder(context);
    builder.setInsertionPointToStart(&func.getBody().front());
    for (unsigned i = 0; i < index; ++i) {
      if (getArgRole(func, i) != Role::grad)
        continue;
      BlockArgument grad = func.getArgument(i);
      auto scale = BroadcastOp::create(builder, grad.getLoc(), *invScale, grad);
      auto unscaled =
          arith::MulFOp::create(builder, grad.getLoc(), grad, scale);
      grad.replaceAllUsesExcept(unscaled,
                                SmallPtrSet<Operation *, 2>{scale, unscaled});
    }
    func->setAttr(KFuseDialect::kFoundInfAttrName, UnitAttr::get(context));
  }
};
} // namespace
