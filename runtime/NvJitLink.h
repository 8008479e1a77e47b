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

/// The mode a kernel compiles under: the process's, except that auto
/// compiles a multi-tensor plan through NVRTC. Its direct PTX image steps
/// slower (0.4-0.7 % in f32, 6-9 % with bf16 params on the H200,
/// bench/results/2026-12-07-h200-ptx-plans-ab.json: nvJitLink compiles it as
/// relocatable code, with more registers), which a cold start does not buy;
/// `ptx` takes it.
CodegenMode codegenModeFor(bool multiTensor);

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
