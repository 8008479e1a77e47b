//===- MultiTensor.cpp - interpret an update over tensor groups ----------===//

#include "interpreter/MultiTensor.h"

#include "dialect/KFuseUpdate.h"

#include <cmath>

using namespace mlir;

namespace kfuse {

FailureOr<bool> interpretMultiTensor(func::FuncOp update,
                                     std::vector<UpdateValues> &groups,
                                     ArrayRef<double> hypers,
                                     Precision precision) {
  unsigned numArgs = update.getNumArguments();
  if (hypers.size() != numArgs)
    return update.emitError()
           << "multi-tensor run needs " << numArgs
           << " hyper slots (one per argument), got " << hypers.size();
  if (update->hasAttr(KFuseDialect::kFoundInfAttrName))
    for (const UpdateValues &group : groups)
      for (unsigned i = 0; i < numArgs; ++i)
        if (getArgRole(update, i) == Role::grad && i < group.tensors.size())
          for (double element : group.tensors[i])
            if (!std::isfinite(element))
              return true;

  // Run every group on a copy so that a failure leaves all of them intact.
  std::vector<UpdateValues> results = groups;
  // Hypers are the plan's; states at the tensor level each group's own.
  auto perTensor = [&](unsigned i) { return isPerTensorArg(update, i); };
  for (UpdateValues &group : results) {
    std::vector<double> scalars(hypers.begin(), hypers.end());
    for (unsigned i = 0; i < numArgs; ++i)
      if (perTensor(i) && i < group.scalars.size())
        scalars[i] = group.scalars[i];
    group.scalars = std::move(scalars);
    if (failed(interpretUpdate(update, group, precision)))
      return failure();
  }
  for (auto [group, result] : llvm::zip(groups, results)) {
    group.tensors = std::move(result.tensors);
    group.scalars.resize(numArgs);
    for (unsigned i = 0; i < numArgs; ++i)
      if (perTensor(i))
        group.scalars[i] = result.scalars[i];
  }
  return false;
}

} // namespace kfuse
