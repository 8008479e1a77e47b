//===- DeviceRun.h - host buffers to and from the GPU -----------*- C++ -*-===//

#ifndef KFUSE_TOOLS_KFUSE_DEVICERUN_H
#define KFUSE_TOOLS_KFUSE_DEVICERUN_H

#include "interpreter/Interpreter.h"
#include "runtime/Jit.h"

#include <random>

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

/// Random inputs for `kfuse bench` (values only need to be plausible; the
/// check draws its own, makeCheckInputs): params and grads ~ N(0, 1),
/// states ~ N(0, 0.1) or |N(0, 0.01)| for second moments ("sq" in the
/// name), hypers at their defaults; every tensor rounded to its dtype.
UpdateValues makeRandomInputs(llvm::ArrayRef<ArgInfo> args, int64_t numel,
                              std::mt19937_64 &rng);

/// Sets a hyper named "step" to `step`, if the update has one.
void setStep(llvm::ArrayRef<ArgInfo> args, UpdateValues &values, int step);

} // namespace kfuse

#endif // KFUSE_TOOLS_KFUSE_DEVICERUN_H
