//===- NvJitLink.h - direct PTX to cubin with nvJitLink ---------*- C++ -*-===//
//
// The direct PTX of a kernel plan (codegen/PtxEmitter.h) needs only ptxas,
// which nvJitLink runs in process. The library is loaded at first use
// (dlopen): a process without it compiles the CUDA source with NVRTC.
//
// KFUSE_CODEGEN selects the path for the process: `auto` (the default: PTX
// where the emitter covers the plan and nvJitLink loads, NVRTC otherwise),
// `ptx` (PTX or an error saying why not) or `cuda` (always NVRTC).
// KFUSE_NVJITLINK names the library file to load.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_NVJITLINK_H
#define KFUSE_RUNTIME_NVJITLINK_H

#include "runtime/Nvrtc.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace kfuse {

enum class CodegenMode { automatic, ptx, cuda };

/// "auto", "ptx" or "cuda".
const char *codegenModeName(CodegenMode mode);
std::optional<CodegenMode> parseCodegenMode(llvm::StringRef name);

/// The process's mode: set by setProcessCodegenMode, else KFUSE_CODEGEN
/// (an unknown value is warned about once and read as auto).
CodegenMode processCodegenMode();
void setProcessCodegenMode(CodegenMode mode);

/// Who makes machine code of a direct PTX image.
enum class PtxCompiler {
  /// The driver, when the module loads (runtime/Jit.h loadPlan): a
  /// whole-program compile, as ptxas', and the driver's JIT cache keeps the
  /// result across processes. The image is the PTX alone.
  driverAtLoad,
  /// nvJitLink, now, for a cubin file (`kfuse compile --emit=cubin`). It
  /// compiles PTX as relocatable code, which can take more registers (the
  /// bf16 AdamW plan: 72 against 62).
  nvJitLink,
};

/// The mode a kernel compiles under: the process's, except that auto
/// compiles a multi-tensor plan whose PTX nvJitLink would compile through
/// NVRTC: nvJitLink's relocatable image of a plan steps slower (6-9 % with
/// bf16 params on the H200, bench/results/2026-12-07-h200-ptx-plans-ab.json),
/// the driver's whole-program one as fast as NVRTC's
/// (bench/results/2026-12-07-h100-driver-jit.json); `ptx` takes it anyway.
CodegenMode codegenModeFor(bool multiTensor, PtxCompiler compiler);

/// Loads nvJitLink once per process; an error says where it looked.
llvm::Error loadNvJitLink();

/// "13.0" style version of the loaded nvJitLink, or "" when it is absent.
std::string nvJitLinkVersion();

/// `ptx` linked for sm_`arch` into a cubin (NvrtcResult: the PTX, the cubin,
/// ptxas' verbose log and its resource report, the options, the time); a
/// failure carries nvJitLink's error log.
llvm::Expected<NvrtcResult> compileWithNvJitLink(const std::string &ptx,
                                                 int arch);

/// The options compileWithNvJitLink passes for `arch`.
std::vector<std::string> nvJitLinkCommandLine(int arch);

} // namespace kfuse

#endif // KFUSE_RUNTIME_NVJITLINK_H
