//===- NvJitLink.cpp - direct PTX to cubin with nvJitLink -----------------===//

#include "runtime/NvJitLink.h"
#include "runtime/HeapRetention.h"
#include "runtime/Log.h"

#include "llvm/ADT/StringExtras.h"

#include <nvJitLink.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>

namespace kfuse {

const char *codegenModeName(CodegenMode mode) {
  switch (mode) {
  case CodegenMode::automatic:
    return "auto";
  case CodegenMode::ptx:
    return "ptx";
  case CodegenMode::cuda:
    return "cuda";
  }
  return "auto";
}

std::optional<CodegenMode> parseCodegenMode(llvm::StringRef name) {
  if (name == "auto")
    return CodegenMode::automatic;
  if (name == "ptx")
    return CodegenMode::ptx;
  if (name == "cuda")
    return CodegenMode::cuda;
  return std::nullopt;
}

namespace {
// -1: not set by the program; read KFUSE_CODEGEN.
std::atomic<int> setMode{-1};
} // namespace

CodegenMode processCodegenMode() {
  int mode = setMode.load(std::memory_order_relaxed);
  if (mode >= 0)
    return CodegenMode(mode);
  static const CodegenMode fromEnvironment = [] {
    const char *value = std::getenv("KFUSE_CODEGEN");
    if (!value || !*value)
      return CodegenMode::automatic;
    if (std::optional<CodegenMode> parsed = parseCodegenMode(value))
      return *parsed;
    logWarning(std::string("KFUSE_CODEGEN='") + value +
               "' is not auto, ptx or cuda; using auto");
    return CodegenMode::automatic;
  }();
  return fromEnvironment;
}

void setProcessCodegenMode(CodegenMode mode) {
  setMode.store(int(mode), std::memory_order_relaxed);
}

CodegenMode codegenModeFor(bool multiTensor, PtxCompiler compiler) {
  CodegenMode mode = processCodegenMode();
  return mode == CodegenMode::automatic && multiTensor &&
                 compiler == PtxCompiler::nvJitLink
             ? CodegenMode::cuda
             : mode;
}

namespace {

/// The entry points kfuse uses, resolved from the loaded library.
struct NvJitLinkApi {
  decltype(&__nvJitLinkCreate_13_0) create = nullptr;
  decltype(&__nvJitLinkDestroy_13_0) destroy = nullptr;
  decltype(&__nvJitLinkAddData_13_0) addData = nullptr;
  decltype(&__nvJitLinkComplete_13_0) complete = nullptr;
  decltype(&__nvJitLinkGetLinkedCubinSize_13_0) cubinSize = nullptr;
  decltype(&__nvJitLinkGetLinkedCubin_13_0) cubin = nullptr;
  decltype(&__nvJitLinkGetErrorLogSize_13_0) errorLogSize = nullptr;
  decltype(&__nvJitLinkGetErrorLog_13_0) errorLog = nullptr;
  decltype(&__nvJitLinkGetInfoLogSize_13_0) infoLogSize = nullptr;
  decltype(&__nvJitLinkGetInfoLog_13_0) infoLog = nullptr;
  std::string version;
  std::string loadError; // empty once loaded
};

/// Candidate files: KFUSE_NVJITLINK, the soname on the loader path, beside
/// the NVRTC kfuse links (the toolkit's lib64 or a wheel's lib/), the
/// toolkit's default place.
std::vector<std::string> candidatePaths() {
  if (const char *path = std::getenv("KFUSE_NVJITLINK"); path && *path)
    return {path};
  std::vector<std::string> paths{"libnvJitLink.so.13"};
  Dl_info info;
  if (void *nvrtc = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_NOLOAD)) {
    void *symbol = dlsym(nvrtc, "nvrtcVersion");
    if (symbol && dladdr(symbol, &info) && info.dli_fname) {
      llvm::StringRef file(info.dli_fname);
      size_t slash = file.rfind('/');
      if (slash != llvm::StringRef::npos)
        paths.push_back((file.take_front(slash) + "/libnvJitLink.so.13").str());
    }
    dlclose(nvrtc);
  }
  paths.push_back("/usr/local/cuda/lib64/libnvJitLink.so.13");
  return paths;
}

const NvJitLinkApi &api() {
  static const NvJitLinkApi loaded = [] {
    NvJitLinkApi result;
    void *handle = nullptr;
    std::string tried;
    for (const std::string &path : candidatePaths()) {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      const char *reason = dlerror();
      tried += "\n  " + path + ": " + (reason ? reason : "not loadable");
    }
    if (!handle) {
      result.loadError = "nvJitLink could not be loaded (set KFUSE_NVJITLINK "
                         "to its file); tried:" +
                         tried;
      return result;
    }
    bool complete = true;
    auto resolve = [&](auto &pointer, const char *name) {
      pointer = reinterpret_cast<std::decay_t<decltype(pointer)>>(
          dlsym(handle, name));
      if (!pointer)
        complete = false;
    };
    resolve(result.create, "__nvJitLinkCreate_13_0");
    resolve(result.destroy, "__nvJitLinkDestroy_13_0");
    resolve(result.addData, "__nvJitLinkAddData_13_0");
    resolve(result.complete, "__nvJitLinkComplete_13_0");
    resolve(result.cubinSize, "__nvJitLinkGetLinkedCubinSize_13_0");
    resolve(result.cubin, "__nvJitLinkGetLinkedCubin_13_0");
    resolve(result.errorLogSize, "__nvJitLinkGetErrorLogSize_13_0");
    resolve(result.errorLog, "__nvJitLinkGetErrorLog_13_0");
    resolve(result.infoLogSize, "__nvJitLinkGetInfoLogSize_13_0");
    resolve(result.infoLog, "__nvJitLinkGetInfoLog_13_0");
    if (!complete) {
      result.loadError = "the loaded nvJitLink lacks the CUDA 13.0 entry "
                         "points kfuse calls";
      return result;
    }
    using VersionFn = nvJitLinkResult (*)(unsigned *, unsigned *);
    auto version =
        reinterpret_cast<VersionFn>(dlsym(handle, "nvJitLinkVersion"));
    unsigned major = 0, minor = 0;
    if (version && version(&major, &minor) == NVJITLINK_SUCCESS)
      result.version = std::to_string(major) + "." + std::to_string(minor);
    else
      result.version = "13.x";
    return result;
  }();
  return loaded;
}

std::string readLog(nvJitLinkHandle handle, bool error) {
  const NvJitLinkApi &nv = api();
  size_t size = 0;
  if ((error ? nv.errorLogSize : nv.infoLogSize)(handle, &size) !=
          NVJITLINK_SUCCESS ||
      size == 0)
    return "";
  std::string log(size, '\0');
  if ((error ? nv.errorLog : nv.infoLog)(handle, log.data()) !=
      NVJITLINK_SUCCESS)
    return "";
  while (!log.empty() && log.back() == '\0')
    log.pop_back();
  return log;
}

} // namespace

llvm::Error loadNvJitLink() {
  const NvJitLinkApi &nv = api();
  if (!nv.loadError.empty())
    return llvm::createStringError(nv.loadError);
  return llvm::Error::success();
}

std::string nvJitLinkVersion() {
  const NvJitLinkApi &nv = api();
  return nv.loadError.empty() ? nv.version : "";
}

std::vector<std::string> nvJitLinkCommandLine(int arch) {
  // -verbose: ptxas' register and spill report, as NVRTC's -Xptxas -v.
  // -no-cache: kfuse keeps its own disk cache; a hit in nvJitLink's would
  // skip ptxas, and with it the resource report.
  return {"-arch=sm_" + std::to_string(arch), "-O3", "-verbose", "-no-cache"};
}

llvm::Expected<NvrtcResult> compileWithNvJitLink(const std::string &ptx,
                                                 int arch) {
  // Before the load: nvJitLink's start-up allocates from the same heap.
  retainHeapBetweenCompiles();
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error error = loadNvJitLink())
    return std::move(error);
  const NvJitLinkApi &nv = api();
  NvrtcResult result;
  result.ptx = ptx;
  result.options = nvJitLinkCommandLine(arch);
  std::vector<const char *> options;
  for (const std::string &option : result.options)
    options.push_back(option.c_str());
  nvJitLinkHandle handle = nullptr;
  if (nvJitLinkResult status =
          nv.create(&handle, options.size(), options.data());
      status != NVJITLINK_SUCCESS)
    return llvm::createStringError("nvJitLink: create failed (code %d)",
                                   int(status));
  auto failure = [&](const char *what, nvJitLinkResult status) {
    std::string log = readLog(handle, /*error=*/true);
    nv.destroy(&handle);
    return llvm::createStringError("nvJitLink: %s failed (code %d)%s%s", what,
                                   int(status), log.empty() ? "" : ":\n",
                                   llvm::StringRef(log).rtrim().str().c_str());
  };
  // The PTX text ends with its NUL, as nvJitLink expects of PTX.
  if (nvJitLinkResult status =
          nv.addData(handle, NVJITLINK_INPUT_PTX, ptx.c_str(), ptx.size() + 1,
                     "kfuse.ptx");
      status != NVJITLINK_SUCCESS)
    return failure("adding the PTX", status);
  if (nvJitLinkResult status = nv.complete(handle); status != NVJITLINK_SUCCESS)
    return failure("linking", status);
  size_t size = 0;
  if (nvJitLinkResult status = nv.cubinSize(handle, &size);
      status != NVJITLINK_SUCCESS || size == 0)
    return failure("reading the cubin size", status);
  result.cubin.resize(size);
  if (nvJitLinkResult status = nv.cubin(handle, result.cubin.data());
      status != NVJITLINK_SUCCESS)
    return failure("reading the cubin", status);
  result.log = readLog(handle, /*error=*/false);
  nv.destroy(&handle);
  result.resources = parsePtxasLog(result.log);
  result.compiler = "nvjitlink";
  result.compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return result;
}

} // namespace kfuse
