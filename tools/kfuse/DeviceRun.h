//===- DeviceRun.h - host buffers to and from the GPU -----------*- C++ -*-===//

#ifndef KFUSE_TOOLS_KFUSE_DEVICERUN_H
#define KFUSE_TOOLS_KFUSE_DEVICERUN_H

#include "interpreter/Interpreter.h"
#include "runtime/Jit.h"

namespace kfuse {

/// Device copies of an update's tensors, in their storage dtypes.
class DeviceTensors {
public:
  /// Uploads `values.tensors` (rounded to each argument's dtype).
  static llvm::Expected<DeviceTensors> upload(CudaDriver &driver,
                                              llvm::ArrayRef<ArgInfo> args,
                                              const UpdateValues &values,
                                              int64_t numel);
  /// Overwrites tensor argument `index` with `values` (rounded to its dtype).
  llvm::Error write(unsigned index, llvm::ArrayRef<double> values) const;
  /// Launch arguments: these tensors and the scalars of `values`.
  std::vector<LaunchArg> launchArgs(const UpdateValues &values) const;
  /// Downloads every tensor into `values.tensors`.
  llvm::Error download(UpdateValues &values) const;

private:
  CudaDriver *driver = nullptr;
  std::vector<ArgInfo> args;
  std::vector<DeviceBuffer> buffers; // by argument; empty for hypers
  int64_t numel = 0;
};

/// `args` with each tensor's dtype set from `spec` by role.
std::vector<ArgInfo> withStorageDTypes(llvm::ArrayRef<ArgInfo> args,
                                       const Specialization &spec);

/// The inputs the interpreter's check draws for `update` over `numel`
/// elements (makeCheckInputs with `seed`), as UpdateValues for `numArgs`
/// arguments: `kfuse check` on the GPU and `kfuse bench` run on the values
/// the plans were checked on.
llvm::Expected<UpdateValues> drawCheckInputs(mlir::func::FuncOp update,
                                             size_t numArgs, int64_t numel,
                                             uint64_t seed);

/// Sets a hyper named "step" to `step`, if the update has one.
void setStep(llvm::ArrayRef<ArgInfo> args, UpdateValues &values, int step);

} // namespace kfuse

#endif // KFUSE_TOOLS_KFUSE_DEVICERUN_H
