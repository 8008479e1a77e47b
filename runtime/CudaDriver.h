//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// libcuda.so.1 is opened with dlopen so that everything built here loads and
// reports a clear error on machines without a GPU driver. <cuda.h> provides
// the types only; every entry point is resolved through the table below.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_CUDADRIVER_H
#define KFUSE_RUNTIME_CUDADRIVER_H

#include "llvm/Support/Error.h"

#include <cuda.h>

#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace kfuse {

/// The device a context belongs to, with what launches need to know.
struct DeviceInfo {
  CUcontext context = nullptr;
  CUdevice device = 0;
  std::string arch; // "sm_90"
  int computeMajor = 0;
  int smCount = 0;
};

/// The installed driver's version (cuDriverGetVersion, e.g. 13000), read
/// without initializing it (no cuInit, no device needed); 0 without a
/// driver. Read once per process.
int installedDriverVersion();

/// Starts installedDriverVersion() on another thread, so that loading the
/// driver library (~1.5 ms) overlaps other work; deferred where no thread
/// can be started. Its destructor joins the thread.
std::future<int> installedDriverVersionAsync();

class CudaDriver {
public:
#define KFUSE_CUDA_FUNCTIONS(X)                                                \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetDevice)                                                            \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadData)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleGetFunction)                                                       \
  X(cuModuleUnload)                                                            \
  X(cuFuncGetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD8)                                                                \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemcpyDtoDAsync)                                                         \
  X(cuMemsetD32Async)                                                          \
  X(cuStreamIsCapturing)                                                       \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuEventDestroy)                                                            \
  X(cuFuncSetAttribute)                                                        \
  X(cuMemsetD8Async)                                                           \
  X(cuMemPoolCreate)                                                           \
  X(cuMemPoolSetAttribute)                                                     \
  X(cuMemAllocFromPoolAsync)                                                   \
  X(cuMemFreeAsync)                                                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)

  // cuda.h maps each name to its current ABI version (cuMemAlloc ->
  // cuMemAlloc_v2), so decltype picks the matching signature.
#define KFUSE_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  KFUSE_CUDA_FUNCTIONS(KFUSE_DECLARE_POINTER)
#undef KFUSE_DECLARE_POINTER

  /// Optional: drivers before CUDA 12.0 lack it (launchKernel then falls
  /// back to cuLaunchKernel).
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;

  /// How launchKernel launches.
  enum class LaunchMode {
    Plain,
    /// Where the driver has cuLaunchKernelEx, a programmatic dependent
    /// launch: the kernel may start while the previous kernel in the stream
    /// drains, so it must wait for it (griddepcontrol.wait, sm_90 and later)
    /// before it touches memory; elsewhere a plain launch.
    Programmatic,
    /// Every block resident at once, as grid-wide barriers need:
    /// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE when the grid does not fit,
    /// CUDA_ERROR_NOT_SUPPORTED without cuLaunchKernelEx.
    Cooperative,
  };

  /// The mode of a kernel launch that needs no grid-wide barrier on a
  /// device of compute capability `computeMajor`: a programmatic dependent
  /// launch on sm_90 and later (every kfuse kernel waits for the kernel
  /// before it), unless KFUSE_PDL=0 (an A/B knob, read once; `live`: read
  /// now, for a measuring process that changes it).
  static LaunchMode kernelLaunchMode(int computeMajor, bool live = false);

  /// cuLaunchKernel of a 2-D grid of 1-D blocks, as `mode` says.
  CUresult launchKernel(CUfunction function, unsigned gridX, unsigned gridY,
                        unsigned blockX, unsigned sharedBytes, CUstream stream,
                        void **params, LaunchMode mode) const;

  /// The process-wide driver: libcuda.so.1 loaded and cuInit done, or why
  /// not ("no CUDA driver: ...", "no CUDA device"). Never crashes.
  static llvm::Expected<CudaDriver &> get();

  /// Loads a driver library from `path`; for tests and get().
  static llvm::Expected<std::unique_ptr<CudaDriver>>
  load(const std::string &path);

  /// The calling thread's current context, or device 0's primary context
  /// made current when there is none.
  llvm::Expected<DeviceInfo> currentDevice();

  /// get() and its currentDevice(): what a compile or a launch starts from.
  struct Current;
  static llvm::Expected<Current> getCurrent();

  /// `what` failed with `result`, as an error naming both.
  llvm::Error check(CUresult result, const llvm::Twine &what) const;

  /// Whether `stream` is being captured into a CUDA graph.
  llvm::Expected<bool> isCapturing(CUstream stream) const;

  int driverVersion() const { return version; }

  CudaDriver(const CudaDriver &) = delete;
  CudaDriver &operator=(const CudaDriver &) = delete;
  ~CudaDriver();

private:
  CudaDriver() = default;
  void *handle = nullptr;
  int version = 0;
  /// currentDevice() for `info.context` (null: device 0's primary context,
  /// retained and made current): the attributes, read once per context.
  llvm::Expected<DeviceInfo> lookUpDevice(DeviceInfo info);
  std::mutex devicesMutex;
  std::map<CUcontext, DeviceInfo> devices; // attributes read once a context
};

struct CudaDriver::Current {
  CudaDriver &driver;
  DeviceInfo device;
};

/// Device memory freed on destruction, in the context current then.
/// The calling thread's current CUDA context, or null (no driver, or none
/// current).
CUcontext callerContext();

/// Makes `context` current on this thread when it is not null (a worker
/// thread taking over its caller's context; see callerContext).
void adoptContext(CUcontext context);

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  static llvm::Expected<DeviceBuffer> allocate(CudaDriver &driver,
                                               size_t bytes);
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer() { reset(); }

  CUdeviceptr get() const { return pointer; }
  size_t size() const { return bytes; }
  void reset();

private:
  CudaDriver *driver = nullptr;
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_CUDADRIVER_H
