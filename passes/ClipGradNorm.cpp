//===- ClipGradNorm.cpp - global grad-norm clipping inside the update ----===//
//
// torch.nn.utils.clip_grad_norm_ before a step reads every grad for the norm
// and then reads and writes every grad again to scale it, in launches of
// its own. Here the norm is a reduction over the parameter list in the
// update's first phase, and the scale is applied where the update reads the
// grad: the grads are read twice and never written. An update with a
// `global_grad_norm` hyper clips by its own rule (LAMB's); the pass then
// only makes that hyper the norm computed in the plan.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"

namespace kfuse {
#define GEN_PASS_DEF_CLIPGRADNORMPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {
struct ClipGradNormPass
    : public kfuse::impl::ClipGradNormPassBase<ClipGradNormPass> {
  using ClipGradNormPassBase::ClipGradNormPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func))
      return;
    // A 2-D update clips by a caller's norm: scaling its grads is
    // elementwise; the norm over a list of matrices is not generated yet.
    if (!externalNorm && isMatrixUpdate(func)) {
      func.emitError() << getArgument() << ": '" << func.getSymName()
                       << "' is a 2-D update; it clips by a norm the caller "
                          "computes (external-norm), not one reduced in the "
                          "plan yet";
      return signalPassFailure();
    }
    MLIRContext *context = func.getContext();
    SmallVector<BlockArgument> grads;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (getArgRole(func, i) == Role::grad)
        grads.push_back(func.getArgument(i));
    if (grads.empty()) {
      func.emitError() << "has no grad argument to clip";
      return signalPassFailure();
    }
    if (llvm::any_of(grads, [](BlockArgument grad) {
          return !isa<RankedTensorType>(grad.getType());
        })) {
      func.emitError() << "clips grads of the tensor form only (run "
                          "kfuse-lift-element-form first)";
      return signalPassFailure();
    }

    std::optional<BlockArgument> ownNorm;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (getArgRole(func, i) == Role::hyper &&
          getArgName(func, i) == kGlobalGradNormName)
        ownNorm = func.getArgument(i);
    if (ownNorm && !ownNorm->getType().isF32()) {
      func.emitError() << "hyper '" << kGlobalGradNormName
                       << "' must be an f32 scalar to hold the norm";
      return signalPassFailure();
    }
    // An update with its own rule and a caller's norm is complete as it is.
    if (ownNorm && externalNorm)
      return;
    FailureOr<BlockArgument> maxNorm =
        ownNorm ? FailureOr<BlockArgument>(BlockArgument())
                : appendHyperArgument(func, kMaxGradNormName, 1.0f);
    if (failed(maxNorm))
      return signalPassFailure();
    FailureOr<BlockArgument> callerNorm =
        externalNorm ? appendHyperArgument(func, kGlobalGradNormName, 0.0f)
                     : FailureOr<BlockArgument>(BlockArgument());
    if (failed(callerNorm))
      return signalPassFailure();
    Builder attrs(context);
    Type f32 = Float32Type::get(context);

    // The squared norm over every grad of the list, as the sum of squares.
    Location loc = func.getLoc();
    OpBuilder builder(context);
    builder.setInsertionPointToStart(&func.getBody().front());
    SmallPtrSet<Operation *, 8> readers;
    Value norm = *callerNorm;
    if (!externalNorm) {
      Value squares;
      for (BlockArgument grad : grads) {
        auto square = arith::MulFOp::create(builder, loc, grad, grad);
        readers.insert(square);
        squares = squares ? arith::AddFOp::create(builder, loc, squares, square)
                                .getResult()
                          : square.getResult();
      }
      auto normSq = ReduceOp::create(builder, loc, f32, ReduceKind::sum,
                                     squares, /*dim=*/0, /*list=*/true);
      normSq->setAttr(KFuseDialect::kNameAttrName,
                      attrs.getStringAttr(kGradNormSqName));
      norm = math::SqrtOp::create(builder, loc, normSq);
    }
    if (ownNorm) {
      // The argument stays, unread: callers pass the same arguments.
      ownNorm->replaceAllUsesWith(norm);
      return;
    }
    // torch's coefficient: max_norm / (norm + 1e-6), at most 1 (NaN stays).
    Value tiny = arith::ConstantOp::create(builder, loc, f32,
                                           attrs.getF32FloatAttr(1e-6f));
    Value one = arith::ConstantOp::create(builder, loc, f32,
                                          attrs.getF32FloatAttr(1.0f));
    Value denom = arith::AddFOp::create(builder, loc, norm, tiny);
    Value coef = arith::DivFOp::create(builder, loc, *maxNorm, denom);
    Value clip = arith::MinimumFOp::create(builder, loc, coef, one);
    for (BlockArgument grad : grads) {
      auto scale = BroadcastOp::create(builder, loc, clip, grad);
      auto clipped = arith::MulFOp::create(builder, loc, grad, scale);
      SmallPtrSet<Operation *, 8> except = readers;
      except.insert(scale);
      except.insert(clipped);
      grad.replaceAllUsesExcept(clipped, except);
    }
  }
};
} // namespace
