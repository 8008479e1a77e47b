//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -----------===//

#include "runtime/CudaDriver.h"
#include "runtime/Errors.h"

#include <dlfcn.h>

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <system_error>

#define KFUSE_STRINGIFY_EXPANDED(x) KFUSE_STRINGIFY(x)
#define KFUSE_STRINGIFY(x) #x

namespace kfuse {

llvm::Expected<std::unique_ptr<CudaDriver>>
CudaDriver::load(const std::string &path) {
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  driver->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->handle) {
    const char *reason = dlerror();
    return makeError(ErrorCode::NoDriver,
                     "no CUDA driver: " + path + " could not be loaded (" +
                         (reason ? reason : "unknown reason") + ")");
  }

  // The names cuda.h maps each function to (cuMemAlloc -> cuMemAlloc_v2)
  // are the ABI its declarations describe; cuGetProcAddress would instead
  // hand out the newest variant, whose signature may differ (CUDA 13's
  // cuCtxGetDevice takes a context). Drivers before 12.8 lack
  // cuEventElapsedTime_v2, whose signature is the original's.
  auto resolve = [&](const char *name, const char *versioned) -> void * {
    if (void *pointer = dlsym(driver->handle, versioned))
      return pointer;
    if (llvm::StringRef(name) == "cuEventElapsedTime")
      return dlsym(driver->handle, name);
    return nullptr;
  };

#define KFUSE_RESOLVE(name)                                                    \
  driver->name = reinterpret_cast<decltype(&::name)>(                          \
      resolve(#name, KFUSE_STRINGIFY_EXPANDED(name)));                         \
  if (!driver->name)                                                           \
    return makeError(ErrorCode::NoDriver, "no CUDA driver: " + path +          \
                                              " lacks " +                      \
                                              KFUSE_STRINGIFY_EXPANDED(name));
  KFUSE_CUDA_FUNCTIONS(KFUSE_RESOLVE)
#undef KFUSE_RESOLVE
  driver->cuLaunchKernelEx = reinterpret_cast<decltype(&::cuLaunchKernelEx)>(
      resolve("cuLaunchKernelEx", KFUSE_STRINGIFY_EXPANDED(cuLaunchKernelEx)));

  CUresult init = driver->cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE)
    return makeError(ErrorCode::NoDevice, "no CUDA device");
  if (init != CUDA_SUCCESS)
    return makeError(ErrorCode::NoDriver,
                     "no CUDA driver: " +
                         llvm::toString(driver->check(init, "cuInit")));
  driver->cuDriverGetVersion(&driver->version);
  int count = 0;
  if (driver->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return makeError(ErrorCode::NoDevice, "no CUDA device");
  return std::move(driver);
}

int installedDriverVersion() {
  static const int version = [] {
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return 0;
    auto getVersion = reinterpret_cast<CUresult (*)(int *)>(
        dlsym(handle, "cuDriverGetVersion"));
    int value = 0;
    if (!getVersion || getVersion(&value) != CUDA_SUCCESS)
      value = 0;
    // The handle stays open: CudaDriver::load opens the same library.
    return value;
  }();
  return version;
}

std::future<int> installedDriverVersionAsync() {
  try {
    return std::async(std::launch::async, installedDriverVersion);
  } catch (const std::system_error &) {
    return std::async(std::launch::deferred, installedDriverVersion);
  }
}

CUcontext callerContext() {
  CUcontext context = nullptr;
  if (llvm::Expected<CudaDriver &> driver = CudaDriver::get())
    driver->cuCtxGetCurrent(&context);
  else
    llvm::consumeError(driver.takeError());
  return context;
}

void adoptContext(CUcontext context) {
  if (!context)
    return;
  if (llvm::Expected<CudaDriver &> driver = CudaDriver::get())
    driver->cuCtxSetCurrent(context);
  else
    llvm::consumeError(driver.takeError());
}

llvm::Expected<CudaDriver &> CudaDriver::get() {
  // Loaded once; a failure is remembered and reported to every caller.
  static std::once_flag once;
  static std::unique_ptr<CudaDriver> driver;
  static ErrorCode failureCode;
  static std::string failure;
  std::call_once(once, [] {
    llvm::Expected<std::unique_ptr<CudaDriver>> loaded = load("libcuda.so.1");
    if (loaded) {
      driver = std::move(*loaded);
      return;
    }
    std::tie(failureCode, failure) = takeMessage(loaded.takeError());
  });
  if (!driver)
    return makeError(failureCode, failure);
  return *driver;
}

CudaDriver::~CudaDriver() {
  // libcuda stays loaded: modules and buffers may outlive this object at
  // process exit, and unloading the driver under them would crash.
}

llvm::Error CudaDriver::check(CUresult result, const llvm::Twine &what) const {
  if (result == CUDA_SUCCESS)
    return llvm::Error::success();
  const char *text = nullptr;
  if (cuGetErrorString)
    cuGetErrorString(result, &text);
  return makeError(ErrorCode::Launch,
                   what + " failed: " + (text ? text : "unknown error") +
                       " (CUresult " + llvm::Twine(int(result)) + ")");
}

llvm::Expected<CudaDriver::Current> CudaDriver::getCurrent() {
  llvm::Expected<CudaDriver &> driver = get();
  if (!driver)
    return driver.takeError();
  llvm::Expected<DeviceInfo> device = driver->currentDevice();
  if (!device)
    return device.takeError();
  return Current{*driver, std::move(*device)};
}

llvm::Expected<DeviceInfo> CudaDriver::currentDevice() {
  DeviceInfo info;
  if (llvm::Error error =
          check(cuCtxGetCurrent(&info.context), "cuCtxGetCurrent"))
    return std::move(error);
  // Every launch asks: the answer for this thread's last context costs no
  // further driver call and no lock.
  thread_local const CudaDriver *lastDriver = nullptr;
  thread_local DeviceInfo last;
  if (info.context && info.context == last.context && lastDriver == this)
    return last;
  llvm::Expected<DeviceInfo> found = lookUpDevice(info);
  if (found) {
    last = *found;
    lastDriver = this;
  }
  return found;
}

llvm::Expected<DeviceInfo> CudaDriver::lookUpDevice(DeviceInfo info) {
  if (info.context) {
    if (llvm::Error error =
            check(cuCtxGetDevice(&info.device), "cuCtxGetDevice"))
      return std::move(error);
  } else {
    if (llvm::Error error = check(cuDeviceGet(&info.device, 0), "cuDeviceGet"))
      return makeError(ErrorCode::NoDevice,
                       "no CUDA device: " + llvm::toString(std::move(error)));
    if (llvm::Error error =
            check(cuDevicePrimaryCtxRetain(&info.context, info.device),
                  "cuDevicePrimaryCtxRetain"))
      return std::move(error);
    if (llvm::Error error =
            check(cuCtxSetCurrent(info.context), "cuCtxSetCurrent"))
      return std::move(error);
  }
  {
    std::lock_guard<std::mutex> lock(devicesMutex);
    auto found = devices.find(info.context);
    if (found != devices.end())
      return found->second;
  }
  int major = 0, minor = 0;
  if (llvm::Error error =
          check(cuDeviceGetAttribute(
                    &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    info.device),
                "cuDeviceGetAttribute"))
    return std::move(error);
  if (llvm::Error error =
          check(cuDeviceGetAttribute(
                    &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    info.device),
                "cuDeviceGetAttribute"))
    return std::move(error);
  if (llvm::Error error =
          check(cuDeviceGetAttribute(&info.smCount,
                                     CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                     info.device),
                "cuDeviceGetAttribute"))
    return std::move(error);
  info.arch = "sm_" + std::to_string(major * 10 + minor);
  info.computeMajor = major;
  std::lock_guard<std::mutex> lock(devicesMutex);
  devices[info.context] = info;
  return info;
}

llvm::Expected<bool> CudaDriver::isCapturing(CUstream stream) const {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  if (llvm::Error error =
          check(cuStreamIsCapturing(stream, &capture), "cuStreamIsCapturing"))
    return std::move(error);
  return capture != CU_STREAM_CAPTURE_STATUS_NONE;
}

/// KFUSE_PDL is not "0".
static bool readProgrammaticLaunch() {
  const char *text = std::getenv("KFUSE_PDL");
  return !text || llvm::StringRef(text) != "0";
}

CudaDriver::LaunchMode CudaDriver::kernelLaunchMode(int computeMajor,
                                                    bool live) {
  static const bool programmatic = readProgrammaticLaunch();
  return computeMajor >= 9 && (live ? readProgrammaticLaunch() : programmatic)
             ? LaunchMode::Programmatic
             : LaunchMode::Plain;
}

CUresult CudaDriver::launchKernel(CUfunction function, unsigned gridX,
                                  unsigned gridY, unsigned blockX,
                                  unsigned sharedBytes, CUstream stream,
                                  void **params, LaunchMode mode) const {
  if (mode == LaunchMode::Cooperative && !cuLaunchKernelEx)
    return CUDA_ERROR_NOT_SUPPORTED;
  if (mode == LaunchMode::Plain || !cuLaunchKernelEx)
    return cuLaunchKernel(function, gridX, gridY, 1, blockX, 1, 1, sharedBytes,
                          stream, params, nullptr);
  CUlaunchAttribute attribute{};
  if (mode == LaunchMode::Programmatic) {
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
  } else {
    attribute.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attribute.value.cooperative = 1;
  }
  CUlaunchConfig config{};
  config.gridDimX = gridX;
  config.gridDimY = gridY;
  config.gridDimZ = 1;
  config.blockDimX = blockX;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = sharedBytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cuLaunchKernelEx(&config, function, params, nullptr);
}

llvm::Expected<DeviceBuffer> DeviceBuffer::allocate(CudaDriver &driver,
                                                    size_t bytes) {
  DeviceBuffer buffer;
  if (bytes == 0)
    return buffer;
  if (llvm::Error error =
          driver.check(driver.cuMemAlloc(&buffer.pointer, bytes),
                       "cuMemAlloc of " + llvm::Twine(bytes) + " bytes"))
    return std::move(error);
  buffer.driver = &driver;
  buffer.bytes = bytes;
  return buffer;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    driver = other.driver;
    pointer = other.pointer;
    bytes = other.bytes;
    other.driver = nullptr;
    other.pointer = 0;
    other.bytes = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (driver && pointer)
    driver->cuMemFree(pointer);
  driver = nullptr;
  pointer = 0;
  bytes = 0;
}

} // namespace kfuse
