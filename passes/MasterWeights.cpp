//===- MasterWeights.cpp - model copies of f32 master params -------------===//
//
// The copy is one more store in the same loop as the update, instead of a
// separate cast kernel over every param after the step.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/Sequence.h"

namespace kfuse {
#define GEN_PASS_DEF_MASTERWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {
struct MasterWeightsPass
    : public kfuse::impl::MasterWeightsPassBase<MasterWeightsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func))
      return;
    if (failed(refuseMatrixUpdate(func, getArgument())))
      return signalPassFailure();
    MLIRContext *context = func.getContext();
    Builder attrs(context);
    // In param order: the runtime lays the copies out the same way.
    SmallVector<WriteOp> paramWrites;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (getArgRole(func, i) == Role::param)
        for (Operation *user : func.getArgument(i).getUsers())
          if (auto write = dyn_cast<WriteOp>(user);
              write && write.getTarget() == func.getArgument(i))
            paramWrites.push_back(write);
    if (llvm::any_of(llvm::seq(func.getNumArguments()), [&](unsigned i) {
          return getArgRole(func, i) == Role::model;
        })) {
      func.emitError() << "the update already has 'model' arguments";
      return signalPassFailure();
    }
    for (WriteOp write : paramWrites) {
      unsigned param = getWriteTarget(write).getArgNumber();
      std::string name = getArgName(func, param) + "_model";
      DictionaryAttr argAttrs = attrs.getDictionaryAttr({
          attrs.getNamedAttr(KFuseDialect::kRoleAttrName,
                             RoleAttr::get(context, Role::model)),
          attrs.getNamedAttr(KFuseDialect::kNameAttrName,
                             attrs.getStringAttr(name)),
      });
      // Appended: the update's own arguments keep their positions, so a
      // caller that knows them adds only the copies.
      unsigned index = func.getNumArguments();
      Type type = func.getArgumentTypes()[param];
      if (failed(func.insertArgument(index, type, argAttrs, write.getLoc())))
        return signalPassFailure();
      OpBuilder builder(context);
      builder.setInsertionPointAfter(write);
      WriteOp::create(builder, write.getLoc(), write.getValue(),
                      func.getArgument(index));
    }
  }
};
} // namespace
