//===- CApi.cpp - the C API over the JIT runtime --------------------------===//

#include "runtime/kfuse.h"

#include "runtime/Errors.h"
#include "runtime/Jit.h"

#include <cstring>
#include <exception>

using namespace kfuse;

struct kfuse_update {
  std::unique_ptr<Update> update;
};

namespace {

thread_local std::string lastError;

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

kfuse_status fail(llvm::Error error) {
  auto [code, message] = takeMessage(std::move(error));
  lastError = std::move(message);
  return statusOf(code);
}

kfuse_status fail(kfuse_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

kfuse_status succeed() {
  lastError.clear();
  return KFUSE_OK;
}

/// Runs `body`, turning any escaping C++ exception into KFUSE_INTERNAL: none
/// may cross the C boundary.
template <typename Body> kfuse_status guarded(Body body) {
  try {
    return body();
  } catch (const std::exception &exception) {
    return fail(KFUSE_INTERNAL,
                std::string("internal error: ") + exception.what());
  } catch (...) {
    return fail(KFUSE_INTERNAL, "internal error: unknown exception");
  }
}

kfuse_status created(llvm::Expected<std::unique_ptr<Update>> update,
                     kfuse_update **out) {
  if (!update)
    return fail(update.takeError());
  *out = new kfuse_update{std::move(*update)};
  return succeed();
}

} // namespace

extern "C" {

kfuse_status kfuse_update_create(const char *ir_text, const char *source_name,
                                 kfuse_update **out) {
  return guarded([&] {
    if (!out)
      return fail(KFUSE_INVALID_ARGUMENT, "out is null");
    *out = nullptr;
    if (!ir_text)
      return fail(KFUSE_INVALID_ARGUMENT, "ir_text is null");
    return created(
        Update::create(ir_text, source_name ? source_name : "<update>"), out);
  });
}

kfuse_status kfuse_update_create_from_file(const char *path,
                                           kfuse_update **out) {
  return guarded([&] {
    if (!out)
      return fail(KFUSE_INVALID_ARGUMENT, "out is null");
    *out = nullptr;
    if (!path)
      return fail(KFUSE_INVALID_ARGUMENT, "path is null");
    return created(Update::createFromFile(path), out);
  });
}

void kfuse_update_destroy(kfuse_update *update) { delete update; }

size_t kfuse_update_num_args(const kfuse_update *update) {
  return update ? update->update->args().size() : 0;
}

kfuse_status kfuse_update_arg_info(const kfuse_update *update, size_t index,
                                   kfuse_arg_info *out) {
  return guarded([&] {
    if (!update || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "update or out is null");
    llvm::ArrayRef<ArgInfo> args = update->update->args();
    if (index >= args.size())
      return fail(KFUSE_INVALID_ARGUMENT,
                  "argument index " + std::to_string(index) +
                      " out of range: the update has " +
                      std::to_string(args.size()) + " arguments");
    const ArgInfo &info = args[index];
    out->name = info.name.c_str();
    out->role = static_cast<int32_t>(info.role);
    out->has_default = info.defaultValue.has_value();
    out->default_value = info.defaultValue.value_or(0.0);
    return succeed();
  });
}

kfuse_status kfuse_update_launch(kfuse_update *update, const kfuse_arg *args,
                                 size_t nargs, void *stream, int fuse) {
  return guarded([&] {
    if (!update)
      return fail(KFUSE_INVALID_ARGUMENT, "update is null");
    if (!args && nargs != 0)
      return fail(KFUSE_INVALID_ARGUMENT, "args is null");
    llvm::ArrayRef<ArgInfo> infos = update->update->args();
    std::vector<LaunchArg> launchArgs(nargs);
    for (size_t i = 0; i < nargs; ++i) {
      const kfuse_arg &arg = args[i];
      LaunchArg &launchArg = launchArgs[i];
      launchArg.data = arg.data;
      launchArg.numel = arg.numel;
      launchArg.value = arg.value;
      bool isTensor = i < infos.size() && infos[i].role != ArgRole::hyper;
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
        return fail(KFUSE_INVALID_ARGUMENT, "tensor '" + infos[i].name +
                                                "' has unknown dtype code " +
                                                std::to_string(arg.dtype));
      }
    }
    PipelineOptions options;
    options.fuse = fuse != 0;
    if (llvm::Error error = update->update->launch(
            launchArgs, static_cast<CUstream>(stream), options))
      return fail(std::move(error));
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

const char *kfuse_last_error(void) { return lastError.c_str(); }

} // extern "C"
