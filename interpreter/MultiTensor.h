//===- MultiTensor.h - interpret an update over tensor groups ---*- C++ -*-===//

#ifndef KFUSE_INTERPRETER_MULTITENSOR_H
#define KFUSE_INTERPRETER_MULTITENSOR_H

#include "interpreter/Interpreter.h"

namespace kfuse {

/// Runs `update` once over every group of a parameter list, as one
/// multi-tensor launch does: `hypers` (by argument index) are shared by all
/// groups. When the update is marked kfuse.found_inf and any grad element of
/// any group is inf or NaN, nothing is written and the result is true
/// (skipped); otherwise false. Fails with a diagnostic as interpretUpdate.
mlir::FailureOr<bool> interpretMultiTensor(mlir::func::FuncOp update,
                                           std::vector<UpdateValues> &groups,
                                           llvm::ArrayRef<double> hypers,
                                           Precision precision);

} // namespace kfuse

#endif // KFUSE_INTERPRETER_MULTITENSOR_H
