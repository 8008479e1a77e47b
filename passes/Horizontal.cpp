//===- Horizontal.cpp - one update over a list of tensor groups ----------===//
//
// Horizontal fusion proper happens in the code generator (a kernel that
// walks a table of tensor groups) and the runtime's planner (the table); this
// pass decides it in the IR and checks that the update allows it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "codegen/KernelPlan.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"

namespace kfuse {
#define GEN_PASS_DEF_HORIZONTALPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {
struct HorizontalPass : public kfuse::impl::HorizontalPassBase<HorizontalPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isUpdate(func))
      return;
    unsigned tensors = 0;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      if (getArgRole(func, i) == Role::hyper)
        continue;
      ++tensors;
      if (isPerTensorArg(func, i))
        continue; // an entry pointer to one float
      auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
      if (type.hasStaticShape() && !isColumnOfStaticRows(func, type)) {
        func.emitError() << "argument #" << i << " has the static shape "
                         << type
                         << "; a multi-tensor update runs over groups of "
                            "any size and needs dynamic shapes";
        return signalPassFailure();
      }
    }
    if (tensors > kMaxTensorArgs) {
      func.emitError() << "a multi-tensor update has at most " << kMaxTensorArgs
                       << " tensor arguments, got " << tensors;
      return signalPassFailure();
    }
    func->setAttr(KFuseDialect::kMultiTensorAttrName,
                  UnitAttr::get(func.getContext()));
  }
};
} // namespace
