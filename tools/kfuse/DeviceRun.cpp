//===- DeviceRun.cpp - host buffers to and from the GPU ------------------===//

#include "tools/kfuse/DeviceRun.h"

#include "codegen/DiagnosticErrors.h"
#include "interpreter/Check.h"
#include "interpreter/FloatRounding.h"

#include <cmath>
#include <cstring>

using namespace llvm;

namespace kfuse {

/// Elements of argument `arg` for tensors of `numel`: one for a state at the
/// tensor level.
static int64_t countOf(const ArgInfo &arg, int64_t numel) {
  return arg.perTensor() ? 1 : numel;
}

std::vector<ArgInfo> withStorageDTypes(ArrayRef<ArgInfo> args,
                                       const Specialization &spec) {
  std::vector<ArgInfo> result(args.begin(), args.end());
  for (auto [index, arg] : llvm::enumerate(result))
    // A state at the tensor level is one f32 whatever the others' dtypes.
    if (arg.role != ArgRole::hyper && !arg.perTensor())
      arg.dtype = spec.dtypeOf(index, arg.role);
  return result;
}

Expected<UpdateValues> drawCheckInputs(mlir::func::FuncOp update,
                                       size_t numArgs, int64_t numel,
                                       uint64_t seed) {
  DiagnosticErrors diagnostics(update.getContext());
  mlir::FailureOr<ArgValues> drawn = makeCheckInputs(update, numel, 1, seed);
  if (mlir::failed(drawn))
    return diagnostics.takeError("the check's inputs could not be drawn");
  UpdateValues values;
  values.tensors.resize(numArgs);
  values.scalars.resize(numArgs);
  for (unsigned i = 0; i < numArgs && i < drawn->tensors.size(); ++i) {
    if (drawn->tensors[i])
      values.tensors[i] = std::move(drawn->tensors[i]->elements);
    if (drawn->scalars[i])
      values.scalars[i] = *drawn->scalars[i];
  }
  return values;
}

void setStep(ArrayRef<ArgInfo> args, UpdateValues &values, int step) {
  for (auto [index, arg] : llvm::enumerate(args))
    if (arg.role == ArgRole::hyper && arg.name == "step")
      values.scalars[index] = step;
}

Expected<DeviceTensors> DeviceTensors::upload(CudaDriver &driver,
                                              ArrayRef<ArgInfo> args,
                                              const UpdateValues &values,
                                              int64_t numel) {
  DeviceTensors result;
  result.driver = &driver;
  result.args.assign(args.begin(), args.end());
  result.numel = numel;
  result.buffers.resize(args.size());
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (arg.role == ArgRole::hyper)
      continue;
    size_t bytes =
        std::max<size_t>(1, countOf(arg, numel) * dtypeSize(arg.dtype));
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(driver, bytes);
    if (!buffer)
      return buffer.takeError();
    result.buffers[index] = std::move(*buffer);
  }
  for (auto [index, arg] : llvm::enumerate(args))
    if (arg.role != ArgRole::hyper)
      if (Error error = result.write(index, values.tensors[index]))
        return std::move(error);
  return std::move(result);
}

Error DeviceTensors::write(unsigned index, ArrayRef<double> values) const {
  const ArgInfo &arg = args[index];
  int64_t count = countOf(arg, numel);
  if (count == 0)
    return Error::success();
  std::vector<uint8_t> staging(count * dtypeSize(arg.dtype));
  for (int64_t i = 0; i < count; ++i) {
    double value = values[i];
    if (arg.dtype == DType::f32) {
      float f = static_cast<float>(value);
      std::memcpy(&staging[i * 4], &f, 4);
    } else {
      uint16_t bits =
          arg.dtype == DType::bf16 ? toBF16Bits(value) : toF16Bits(value);
      std::memcpy(&staging[i * 2], &bits, 2);
    }
  }
  return driver->check(driver->cuMemcpyHtoD(buffers[index].get(),
                                            staging.data(), staging.size()),
                       "cuMemcpyHtoD");
}

std::vector<LaunchArg>
DeviceTensors::launchArgs(const UpdateValues &values) const {
  std::vector<LaunchArg> launch(args.size());
  for (auto [index, arg] : llvm::enumerate(args)) {
    if (arg.role == ArgRole::hyper) {
      launch[index].value = values.scalars[index];
      continue;
    }
    launch[index].data = reinterpret_cast<const void *>(buffers[index].get());
    launch[index].numel = countOf(arg, numel);
    launch[index].dtype = arg.dtype;
  }
  return launch;
}

Error DeviceTensors::download(UpdateValues &values) const {
  std::vector<uint8_t> staging;
  for (auto [index, arg] : llvm::enumerate(args)) {
    int64_t count = countOf(arg, numel);
    if (arg.role == ArgRole::hyper || count == 0)
      continue;
    unsigned size = dtypeSize(arg.dtype);
    staging.resize(count * size);
    if (Error error = driver->check(driver->cuMemcpyDtoH(staging.data(),
                                                         buffers[index].get(),
                                                         staging.size()),
                                    "cuMemcpyDtoH"))
      return error;
    std::vector<double> &tensor = values.tensors[index];
    tensor.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      if (arg.dtype == DType::f32) {
        float f;
        std::memcpy(&f, &staging[i * 4], 4);
        tensor[i] = f;
      } else {
        uint16_t bits;
        std::memcpy(&bits, &staging[i * 2], 2);
        tensor[i] =
            arg.dtype == DType::bf16 ? fromBF16Bits(bits) : fromF16Bits(bits);
      }
    }
  }
  return Error::success();
}

} // namespace kfuse
