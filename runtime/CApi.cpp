//===- CApi.cpp - the C API over the JIT runtime --------------------------===//

#include "runtime/kfuse.h"

#include "runtime/CApiSupport.h"

#include "runtime/Errors.h"
#include "runtime/Jit.h"
#include "runtime/MultiTensorPlan.h"

#include <nvrtc.h>

#include <cstdint>
#include <cstring>
#include <exception>

using namespace kfuse;

struct kfuse_plan {
  std::unique_ptr<MultiTensorPlan> plan;
};

namespace kfuse::capi {

std::string &lastError() {
  static thread_local std::string message;
  return message;
}

kfuse_status statusOf(ErrorCode code) {
  switch (code) {
  case ErrorCode::InvalidArgument:
    return KFUSE_INVALID_ARGUMENT;
  case ErrorCode::Parse:
    return KFUSE_PARSE;
  case ErrorCode::Compile:
    return KFUSE_COMPILE;
  case ErrorCode::NoDriver:
    return KFUSE_NO_DRIVER;
  case ErrorCode::NoDevice:
    return KFUSE_NO_DEVICE;
  case ErrorCode::Launch:
    return KFUSE_LAUNCH;
  case ErrorCode::Internal:
    return KFUSE_INTERNAL;
  }
  return KFUSE_INTERNAL;
}

} // namespace kfuse::capi

using namespace kfuse::capi;

namespace {

/// Converts C arguments; argument i has the role of update argument
/// i % period (period 0: no wrap, for one launch's arguments).
kfuse_status toLaunchArgs(llvm::ArrayRef<ArgInfo> infos, const kfuse_arg *args,
                          size_t count, size_t period,
                          std::vector<LaunchArg> &out) {
  out.assign(count, LaunchArg());
  for (size_t i = 0; i < count; ++i) {
    const kfuse_arg &arg = args[i];
    LaunchArg &launchArg = out[i];
    launchArg.data = arg.data;
    launchArg.numel = arg.numel;
    launchArg.value = arg.value;
    size_t index = period ? i % period : i;
    bool isTensor = index < infos.size() && infos[index].role != ArgRole::hyper;
    if (!isTensor)
      continue;
    switch (arg.dtype) {
    case KFUSE_F32:
      launchArg.dtype = DType::f32;
      break;
    case KFUSE_BF16:
      launchArg.dtype = DType::bf16;
      break;
    case KFUSE_F16:
      launchArg.dtype = DType::f16;
      break;
    default:
      return fail(KFUSE_INVALID_ARGUMENT,
                  (period ? "tensor group " + std::to_string(i / period) + ": "
                          : std::string()) +
                      "tensor '" + infos[index].name +
                      "' has unknown dtype code " + std::to_string(arg.dtype));
    }
  }
  return KFUSE_OK;
}

/// Checks a group-major argument list's shape for `update`.
kfuse_status checkGroups(llvm::ArrayRef<ArgInfo> infos,
                         const kfuse_arg *tensors, size_t numGroups,
                         size_t argsPerGroup) {
  size_t numArgs = infos.size();
  if (argsPerGroup != numArgs)
    return fail(KFUSE_INVALID_ARGUMENT,
                "args_per_group is " + std::to_string(argsPerGroup) +
                    " but the plan takes " + std::to_string(numArgs) +
                    " arguments per group");
  if (numArgs != 0 && numGroups > SIZE_MAX / numArgs)
    return fail(KFUSE_INVALID_ARGUMENT,
                std::to_string(numGroups) + " groups overflow size_t");
  if (!tensors && numGroups != 0)
    return fail(KFUSE_INVALID_ARGUMENT, "tensors is null");
  return KFUSE_OK;
}

} // namespace

extern "C" {

/// An owning update handle of `kernel`, an update.
static kfuse_update *updateHandle(std::unique_ptr<Kernel> kernel) {
  auto *update = static_cast<Update *>(kernel.release());
  return new kfuse_update{std::unique_ptr<Update>(update), update};
}

kfuse_status kfuse_update_create(const char *ir_text, const char *source_name,
                                 kfuse_update **out) {
  return createKernelHandle(ir_text, source_name, /*fromFile=*/false,
                            KernelKind::update, out, updateHandle);
}

kfuse_status kfuse_update_create_from_file(const char *path,
                                           kfuse_update **out) {
  return createKernelHandle(path, nullptr, /*fromFile=*/true,
                            KernelKind::update, out, updateHandle);
}

void kfuse_update_destroy(kfuse_update *update) {
  if (update && update->owned) // a kfuse_kernel's view is the kernel's
    delete update;
}

size_t kfuse_update_num_args(const kfuse_update *update) {
  return update ? update->update->args().size() : 0;
}

int kfuse_update_is_matrix(const kfuse_update *update) {
  return update && update->update->isMatrix() ? 1 : 0;
}

int64_t kfuse_update_row_length(const kfuse_update *update) {
  return update ? update->update->rowLength() : 0;
}

kfuse_status kfuse_update_arg_info(const kfuse_update *update, size_t index,
                                   kfuse_arg_info *out) {
  return guarded([&] {
    if (!update || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "update or out is null");
    return describeArg(update->update->args(), index, "update", out);
  });
}

/// The launch arguments of `args` for `update` (both checked), or a failed
/// status.
static kfuse_status updateLaunchArgs(const kfuse_update *update,
                                     const kfuse_arg *args, size_t nargs,
                                     std::vector<LaunchArg> &launchArgs) {
  if (!update)
    return fail(KFUSE_INVALID_ARGUMENT, "update is null");
  if (!args && nargs != 0)
    return fail(KFUSE_INVALID_ARGUMENT, "args is null");
  return toLaunchArgs(update->update->args(), args, nargs, /*period=*/0,
                      launchArgs);
}

kfuse_status kfuse_update_launch(kfuse_update *update, const kfuse_arg *args,
                                 size_t nargs, void *stream, int fuse) {
  return guarded([&] {
    std::vector<LaunchArg> launchArgs;
    if (kfuse_status status = updateLaunchArgs(update, args, nargs, launchArgs))
      return status;
    PipelineOptions options;
    options.fuse = fuse != 0;
    if (llvm::Error error = update->update->launch(
            launchArgs, static_cast<CUstream>(stream), options))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_update_compile(kfuse_update *update, const kfuse_arg *args,
                                  size_t nargs, int fuse,
                                  kfuse_compile_info *info) {
  return guarded([&] {
    auto start = std::chrono::steady_clock::now();
    std::vector<LaunchArg> launchArgs;
    if (kfuse_status status = updateLaunchArgs(update, args, nargs, launchArgs))
      return status;
    llvm::Expected<Specialization> spec =
        update->update->specialize(launchArgs);
    if (!spec)
      return fail(spec.takeError());
    PipelineOptions options;
    options.fuse = fuse != 0;
    bool built = false;
    llvm::Expected<std::shared_ptr<CompiledUpdate>> compiled =
        update->update->compile(*spec, options, &built);
    if (!compiled)
      return fail(compiled.takeError());
    reportCompile(info, built, (*compiled)->cacheSource, start);
    return succeed();
  });
}

kfuse_status kfuse_update_compile_for_arch(const kfuse_update *update,
                                           const char *arch, int fuse,
                                           kfuse_compile_info *info) {
  return guarded([&] {
    auto start = std::chrono::steady_clock::now();
    if (!update || !arch)
      return fail(KFUSE_INVALID_ARGUMENT, "update or arch is null");
    PipelineOptions options;
    options.fuse = fuse != 0;
    llvm::Expected<PlannedImage> made =
        update->update->compileForArch(Specialization(), options, arch);
    if (!made)
      return fail(made.takeError());
    reportCompile(info, /*built=*/true, made->image.source, start);
    return succeed();
  });
}

/// Runs `interpret` on host arguments `args`, checked as a launch's are
/// (host pointers for device ones), and copies the values it leaves back.
static kfuse_status interpretOnHost(
    const kfuse_update *update, kfuse_host_arg *args, size_t nargs,
    llvm::function_ref<llvm::Error(llvm::ArrayRef<LaunchArg>,
                                   std::vector<std::vector<double>> &)>
        interpret) {
  return guarded([&] {
    std::vector<kfuse_arg> asLaunch(nargs);
    std::vector<std::vector<double>> tensors(nargs);
    for (size_t i = 0; args && i < nargs; ++i) {
      asLaunch[i] = {args[i].data, args[i].numel, args[i].dtype, args[i].value};
      if (args[i].data && args[i].numel > 0)
        tensors[i].assign(args[i].data, args[i].data + args[i].numel);
    }
    std::vector<LaunchArg> launchArgs;
    if (kfuse_status status = updateLaunchArgs(
            update, args ? asLaunch.data() : nullptr, nargs, launchArgs))
      return status;
    if (llvm::Error error = interpret(launchArgs, tensors))
      return fail(std::move(error));
    for (size_t i = 0; i < nargs; ++i)
      if (args[i].data && args[i].numel > 0)
        std::copy(tensors[i].begin(), tensors[i].end(), args[i].data);
    return succeed();
  });
}

kfuse_status kfuse_update_interpret(const kfuse_update *update,
                                    kfuse_host_arg *args, size_t nargs) {
  return kfuse_update_interpret_matrix(update, args, nargs, 0, 0);
}

kfuse_status kfuse_update_interpret_matrix(const kfuse_update *update,
                                           kfuse_host_arg *args, size_t nargs,
                                           int64_t rows, int64_t cols) {
  return interpretOnHost(update, args, nargs,
                         [&](llvm::ArrayRef<LaunchArg> launchArgs,
                             std::vector<std::vector<double>> &tensors) {
                           return update->update->interpret(launchArgs, rows,
                                                            cols, tensors);
                         });
}

kfuse_status kfuse_plan_create(kfuse_update *update, const kfuse_arg *tensors,
                               size_t num_groups, size_t args_per_group,
                               int flags, kfuse_plan **out) {
  return kfuse_plan_create_matrix(update, tensors, num_groups, args_per_group,
                                  nullptr, flags, out);
}

kfuse_status kfuse_plan_create_matrix(kfuse_update *update,
                                      const kfuse_arg *tensors,
                                      size_t num_groups, size_t args_per_group,
                                      const int64_t *cols, int flags,
                                      kfuse_plan **out) {
  return guarded([&] {
    if (!out)
      return fail(KFUSE_INVALID_ARGUMENT, "out is null");
    *out = nullptr;
    if (!update)
      return fail(KFUSE_INVALID_ARGUMENT, "update is null");
    if (flags & ~(KFUSE_PLAN_GRAD_SCALING | KFUSE_PLAN_MASTER_WEIGHTS |
                  KFUSE_PLAN_CLIP_GRAD_NORM | KFUSE_PLAN_SEPARATE_PHASES |
                  KFUSE_PLAN_CLIP_EXTERNAL_NORM))
      return fail(KFUSE_INVALID_ARGUMENT,
                  "unknown plan flags " + std::to_string(flags));
    MultiTensorPlanOptions options;
    options.gradScaling = flags & KFUSE_PLAN_GRAD_SCALING;
    options.masterWeights = flags & KFUSE_PLAN_MASTER_WEIGHTS;
    options.clipGradNorm = flags & KFUSE_PLAN_CLIP_GRAD_NORM;
    if (flags & KFUSE_PLAN_SEPARATE_PHASES)
      options.gridBarrier = false;
    options.clipNormExternal = flags & KFUSE_PLAN_CLIP_EXTERNAL_NORM;
    if (cols)
      options.cols.assign(cols, cols + num_groups);
    if (options.clipNormExternal && !options.clipGradNorm)
      return fail(KFUSE_INVALID_ARGUMENT, "KFUSE_PLAN_CLIP_EXTERNAL_NORM needs "
                                          "KFUSE_PLAN_CLIP_GRAD_NORM");
    std::vector<ArgInfo> infos =
        planArgInfos(update->update->args(), options.masterWeights);
    if (kfuse_status status =
            checkGroups(infos, tensors, num_groups, args_per_group))
      return status;
    std::vector<LaunchArg> groups;
    if (kfuse_status status =
            toLaunchArgs(infos, tensors, num_groups * args_per_group,
                         args_per_group, groups))
      return status;
    std::vector<double> hyperValues(infos.size(), 0.0);
    if (num_groups > 0)
      for (size_t i = 0; i < infos.size(); ++i)
        hyperValues[i] = tensors[i].value;
    llvm::Expected<std::unique_ptr<MultiTensorPlan>> plan =
        MultiTensorPlan::create(*update->update, groups, num_groups,
                                hyperValues, options);
    if (!plan)
      return fail(plan.takeError());
    *out = new kfuse_plan{std::move(*plan)};
    return succeed();
  });
}

void kfuse_plan_destroy(kfuse_plan *plan) { delete plan; }

kfuse_status kfuse_plan_step(kfuse_plan *plan, void *stream) {
  return guarded([&] {
    if (!plan)
      return fail(KFUSE_INVALID_ARGUMENT, "plan is null");
    if (llvm::Error error = plan->plan->step(static_cast<CUstream>(stream)))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_step_phases(kfuse_plan *plan, int phases,
                                    void *stream) {
  return guarded([&] {
    if (!plan)
      return fail(KFUSE_INVALID_ARGUMENT, "plan is null");
    if (phases <= 0)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "step phases must be a nonempty combination of "
                  "KFUSE_STEP_ZERO_FOUND_INF, KFUSE_STEP_SCAN and "
                  "KFUSE_STEP_UPDATE");
    if (llvm::Error error = plan->plan->step(static_cast<CUstream>(stream),
                                             static_cast<unsigned>(phases)))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_rebind(kfuse_plan *plan, size_t arg_index,
                               const uint64_t *addresses, size_t num_groups,
                               void *stream) {
  return guarded([&] {
    if (!plan || (!addresses && num_groups != 0))
      return fail(KFUSE_INVALID_ARGUMENT, "plan or addresses is null");
    if (arg_index > UINT32_MAX)
      return fail(KFUSE_INVALID_ARGUMENT, "argument index out of range");
    if (llvm::Error error =
            plan->plan->rebind(static_cast<unsigned>(arg_index),
                               llvm::ArrayRef<uint64_t>(addresses, num_groups),
                               static_cast<CUstream>(stream)))
      return fail(std::move(error));
    return succeed();
  });
}

int kfuse_plan_matches(const kfuse_plan *plan, const kfuse_arg *tensors,
                       size_t num_groups, size_t args_per_group) {
  if (!plan || (!tensors && num_groups != 0))
    return 0;
  try {
    llvm::ArrayRef<ArgInfo> infos = plan->plan->args();
    if (args_per_group == 0 || args_per_group > infos.size() ||
        num_groups > SIZE_MAX / args_per_group)
      return 0;
    infos = infos.take_front(args_per_group);
    std::vector<LaunchArg> groups;
    if (toLaunchArgs(infos, tensors, num_groups * args_per_group,
                     args_per_group, groups) != KFUSE_OK)
      return 0;
    return plan->plan->matches(groups, num_groups) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

kfuse_status kfuse_plan_set_hyper(kfuse_plan *plan, const char *name,
                                  double value) {
  return guarded([&] {
    if (!plan || !name)
      return fail(KFUSE_INVALID_ARGUMENT, "plan or name is null");
    if (llvm::Error error = plan->plan->setHyperSync(name, value))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_set_hyper_async(kfuse_plan *plan, const char *name,
                                        double value, void *stream) {
  return guarded([&] {
    if (!plan || !name)
      return fail(KFUSE_INVALID_ARGUMENT, "plan or name is null");
    if (llvm::Error error =
            plan->plan->setHyper(name, value, static_cast<CUstream>(stream)))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_get_hyper(kfuse_plan *plan, const char *name,
                                  double *out) {
  return guarded([&] {
    if (!plan || !name || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "plan, name or out is null");
    llvm::Expected<double> value = plan->plan->getHyper(name);
    if (!value)
      return fail(value.takeError());
    *out = *value;
    return succeed();
  });
}

kfuse_status kfuse_plan_hyper_pointer(const kfuse_plan *plan, const char *name,
                                      uint64_t *device_address) {
  return guarded([&] {
    if (!plan || !name || !device_address)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "plan, name or device_address is null");
    llvm::Expected<CUdeviceptr> address = plan->plan->hyperPointer(name);
    if (!address)
      return fail(address.takeError());
    *device_address = *address;
    return succeed();
  });
}

kfuse_status kfuse_plan_found_inf_pointer(const kfuse_plan *plan,
                                          uint64_t *device_address) {
  return guarded([&] {
    if (!plan || !device_address)
      return fail(KFUSE_INVALID_ARGUMENT, "plan or device_address is null");
    CUdeviceptr address = plan->plan->foundInfPointer();
    if (!address)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "the plan has no found_inf flag (grad scaling is off)");
    *device_address = address;
    return succeed();
  });
}

kfuse_status kfuse_plan_bind_hypers(kfuse_plan *plan, uint64_t device_address,
                                    size_t num_slots, void *stream) {
  return guarded([&] {
    if (!plan)
      return fail(KFUSE_INVALID_ARGUMENT, "plan is null");
    if (llvm::Error error = plan->plan->bindHyperStorage(
            device_address, num_slots, static_cast<CUstream>(stream)))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_bind_found_inf(kfuse_plan *plan,
                                       uint64_t device_address) {
  return guarded([&] {
    if (!plan)
      return fail(KFUSE_INVALID_ARGUMENT, "plan is null");
    if (llvm::Error error = plan->plan->bindFoundInfStorage(device_address))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_plan_total_slot(const kfuse_plan *plan, const char *name,
                                   size_t *slot, size_t *num_floats) {
  return guarded([&] {
    if (!plan || !name || !slot || !num_floats)
      return fail(KFUSE_INVALID_ARGUMENT, "plan, name, slot or num_floats is "
                                          "null");
    llvm::Expected<size_t> found = plan->plan->totalSlot(name);
    if (!found)
      return fail(found.takeError());
    *slot = *found;
    *num_floats = plan->plan->numTotals();
    return succeed();
  });
}

kfuse_status kfuse_plan_bind_totals(kfuse_plan *plan, uint64_t device_address,
                                    size_t num_floats) {
  return guarded([&] {
    if (!plan)
      return fail(KFUSE_INVALID_ARGUMENT, "plan is null");
    if (llvm::Error error =
            plan->plan->bindTotalsStorage(device_address, num_floats))
      return fail(std::move(error));
    return succeed();
  });
}

size_t kfuse_plan_num_args(const kfuse_plan *plan) {
  return plan ? plan->plan->args().size() : 0;
}

kfuse_status kfuse_plan_arg_info(const kfuse_plan *plan, size_t index,
                                 kfuse_arg_info *out) {
  return guarded([&] {
    if (!plan || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "plan or out is null");
    return describeArg(plan->plan->args(), index, "plan", out);
  });
}

size_t kfuse_plan_num_launches(const kfuse_plan *plan) {
  return plan ? plan->plan->launchesPerStep() : 0;
}

size_t kfuse_plan_num_launches_in(const kfuse_plan *plan, int phases) {
  if (!plan || phases <= 0 ||
      (unsigned(phases) & ~unsigned(MultiTensorPlan::WholeStep)) != 0)
    return 0;
  return plan->plan->launchesIn(unsigned(phases));
}

int64_t kfuse_plan_num_chunks(const kfuse_plan *plan) {
  return plan ? plan->plan->numChunks() : -1;
}

kfuse_status kfuse_plan_bytes_per_step(const kfuse_plan *plan, uint64_t *out) {
  return guarded([&] {
    if (!plan || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "plan or out is null");
    *out = plan->plan->bytesPerStep();
    return succeed();
  });
}

kfuse_status kfuse_device_arch(char *buf, size_t len) {
  return guarded([&] {
    if (!buf || len == 0)
      return fail(KFUSE_INVALID_ARGUMENT, "buf is null or len is 0");
    buf[0] = '\0';
    llvm::Expected<CudaDriver &> driver = CudaDriver::get();
    if (!driver)
      return fail(driver.takeError());
    llvm::Expected<DeviceInfo> device = driver->currentDevice();
    if (!device)
      return fail(device.takeError());
    if (device->arch.size() + 1 > len)
      return fail(KFUSE_INVALID_ARGUMENT, "buffer of " + std::to_string(len) +
                                              " bytes too small for '" +
                                              device->arch + "'");
    std::memcpy(buf, device->arch.c_str(), device->arch.size() + 1);
    return succeed();
  });
}

const char *kfuse_last_error(void) { return lastError().c_str(); }

const char *kfuse_version(void) { return KFUSE_VERSION_STRING; }

kfuse_status kfuse_nvrtc_version(int *major, int *minor) {
  return guarded([&] {
    if (!major || !minor)
      return fail(KFUSE_INVALID_ARGUMENT, "major or minor is null");
    if (::nvrtcVersion(major, minor) != NVRTC_SUCCESS)
      return fail(KFUSE_COMPILE, "nvrtcVersion failed");
    return succeed();
  });
}

kfuse_status kfuse_driver_version(int *version) {
  return guarded([&] {
    if (!version)
      return fail(KFUSE_INVALID_ARGUMENT, "version is null");
    *version = installedDriverVersion();
    if (*version == 0)
      return fail(KFUSE_NO_DRIVER, "no CUDA driver (libcuda.so.1 does not "
                                   "load or reports no version)");
    return succeed();
  });
}

} // extern "C"
