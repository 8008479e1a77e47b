//===- Nvrtc.h - CUDA C++ to PTX or cubin with NVRTC ------------*- C++ -*-===//

#ifndef KFUSE_RUNTIME_NVRTC_H
#define KFUSE_RUNTIME_NVRTC_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kfuse {

struct NvrtcOptions {
  std::string arch = "sm_90"; // sm_XY; validated
  bool ptxOnly = false;       // compile for compute_XY and return PTX only
  /// NVRTC's own disk cache (NVRTC >= 12.9, needs a driver). Off by default:
  /// a cache hit skips ptxas, and with it the register and spill report.
  bool nvrtcCache = false;
  std::vector<std::string> extraOptions;
};

/// Per-kernel resource use as ptxas reports it.
struct KernelResources {
  std::string name;
  unsigned registers = 0;
  unsigned spillStoreBytes = 0;
  unsigned spillLoadBytes = 0;
  unsigned stackBytes = 0;
};

struct NvrtcResult {
  std::string ptx;   // always filled
  std::string cubin; // filled unless ptxOnly
  std::string log;
  std::vector<std::string> options; // exactly what NVRTC was given
  std::vector<KernelResources> resources;
  double compileMs = 0;
  /// What makes the machine code: "nvrtc" (the CUDA source), "nvjitlink"
  /// (the direct PTX, into a cubin) or "driver" (the direct PTX, compiled
  /// when the module loads; no cubin).
  std::string compiler = "nvrtc";
};

/// Compiles `source`; an NVRTC failure returns an error carrying the log.
llvm::Expected<NvrtcResult> compileWithNvrtc(const std::string &source,
                                             const std::string &programName,
                                             const NvrtcOptions &options);

/// The first error of an NVRTC `log` for `source` (compiled as
/// `programName`), placed at the IR location its generated code came from
/// (the nearest "..., from FILE:LINE:COL" comment above the offending line),
/// with that line: "FILE:LINE:COL: error: nvrtc rejected the generated code
/// of WHAT: MESSAGE" and "  PROGRAM:LINE: TEXT".
std::string describeNvrtcFailure(llvm::StringRef source,
                                 llvm::StringRef programName,
                                 llvm::StringRef log);

/// "13.0" style version of the NVRTC in use.
std::string nvrtcVersion();

/// The SM numbers (75, 80, 90, ...) this NVRTC compiles for.
std::vector<int> nvrtcSupportedArchs();

/// The SM number of an "sm_XY[a|f]" string this NVRTC supports, or an
/// "unsupported arch 'ARCH'" error.
llvm::Expected<int> validateArch(llvm::StringRef arch);

/// The exact options compileWithNvrtc passes for `options` (arch validated).
std::vector<std::string> nvrtcCommandLine(const NvrtcOptions &options,
                                          int archNumber);

/// Per-kernel registers, stack and spills out of a `ptxas -v` log.
std::vector<KernelResources> parsePtxasLog(llvm::StringRef log);

} // namespace kfuse

#endif // KFUSE_RUNTIME_NVRTC_H
