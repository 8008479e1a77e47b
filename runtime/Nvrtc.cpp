//===- Nvrtc.cpp - CUDA C++ to PTX or cubin with NVRTC --------------------===//

#include "runtime/Nvrtc.h"
#include "runtime/HeapRetention.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <nvrtc.h>

#include <chrono>
#include <memory>

namespace kfuse {

namespace {

/// Destroys the program on every exit path.
struct ProgramDeleter {
  void operator()(nvrtcProgram *program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};
using ProgramPtr = std::unique_ptr<nvrtcProgram, ProgramDeleter>;

std::vector<int> supportedArchs() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return {};
  std::vector<int> archs(count);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

/// Splits "sm_90a" into 90 and "a"; fails on anything but sm_<digits>[a|f].
std::optional<std::pair<int, std::string>> splitArch(llvm::StringRef arch) {
  if (!arch.consume_front("sm_"))
    return std::nullopt;
  llvm::StringRef digits = arch.take_while(llvm::isDigit);
  llvm::StringRef suffix = arch.drop_front(digits.size());
  int number = 0;
  if (digits.empty() || digits.getAsInteger(10, number))
    return std::nullopt;
  if (!suffix.empty() && suffix != "a" && suffix != "f")
    return std::nullopt;
  return std::make_pair(number, suffix.str());
}

llvm::Error unsupportedArch(llvm::StringRef arch) {
  std::string list;
  for (int number : supportedArchs())
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(number);
  return llvm::createStringError(
      "unsupported arch '%s' (NVRTC %s supports: %s)", arch.str().c_str(),
      nvrtcVersion().c_str(), list.c_str());
}

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS)
    return "";
  if (!log.empty() && log.back() == '\0')
    log.pop_back();
  return log;
}

llvm::Error nvrtcFailure(llvm::StringRef what, nvrtcResult result) {
  return llvm::createStringError("nvrtc: %s failed: %s", what.str().c_str(),
                                 nvrtcGetErrorString(result));
}

/// Reads "N bytes <what>" out of a ptxas line.
unsigned bytesBefore(llvm::StringRef line, llvm::StringRef what) {
  size_t pos = line.find(what);
  if (pos == llvm::StringRef::npos)
    return 0;
  llvm::StringRef head = line.take_front(pos).rtrim();
  if (!head.consume_back("bytes"))
    return 0;
  head = head.rtrim();
  size_t last = head.find_last_not_of("0123456789");
  llvm::StringRef number =
      last == llvm::StringRef::npos ? head : head.drop_front(last + 1);
  unsigned value = 0;
  if (number.getAsInteger(10, value))
    return 0;
  return value;
}

} // namespace

std::vector<KernelResources> parsePtxasLog(llvm::StringRef log) {
  std::vector<KernelResources> kernels;
  llvm::SmallVector<llvm::StringRef> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    size_t entry = line.find("Compiling entry function '");
    if (entry != llvm::StringRef::npos) {
      llvm::StringRef rest =
          line.drop_front(entry + strlen("Compiling entry function '"));
      kernels.push_back(
          {rest.take_until([](char c) { return c == '\''; }).str()});
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &current = kernels.back();
    if (line.contains("bytes stack frame")) {
      current.stackBytes = bytesBefore(line, "stack frame");
      current.spillStoreBytes = bytesBefore(line, "spill stores");
      current.spillLoadBytes = bytesBefore(line, "spill loads");
      continue;
    }
    size_t used = line.find("Used ");
    if (used != llvm::StringRef::npos && line.contains(" registers")) {
      llvm::StringRef number =
          line.drop_front(used + 5).take_while(llvm::isDigit);
      number.getAsInteger(10, current.registers);
    }
  }
  return kernels;
}

std::string describeNvrtcFailure(llvm::StringRef source,
                                 llvm::StringRef programName,
                                 llvm::StringRef log) {
  // NVRTC reports "NAME(LINE): error: MESSAGE".
  std::string prefix = (programName + "(").str();
  llvm::SmallVector<llvm::StringRef> logLines;
  log.split(logLines, '\n');
  unsigned line = 0;
  llvm::StringRef message;
  for (llvm::StringRef text : logLines) {
    size_t at = text.find(prefix);
    if (at == llvm::StringRef::npos || !text.contains("): error: "))
      continue;
    llvm::StringRef rest = text.drop_front(at + prefix.size());
    if (rest.take_until([](char c) { return c == ')'; }).getAsInteger(10, line))
      continue;
    message = rest.split("): error: ").second.trim();
    break;
  }
  llvm::SmallVector<llvm::StringRef> sourceLines;
  source.split(sourceLines, '\n');
  if (line == 0 || line > sourceLines.size())
    return "error: nvrtc rejected the generated code";
  // The nearest comment above naming where its code came from: "..., from
  // FILE:LINE:COL" (every kernel and element function has one).
  std::string location, what;
  for (unsigned index = line; index-- > 0;) {
    llvm::StringRef text = sourceLines[index].trim();
    size_t from = text.find(", from ");
    if (!text.starts_with("//") || from == llvm::StringRef::npos)
      continue;
    location = text.drop_front(from + 7)
                   .take_until([](char c) { return c == ' '; })
                   .rtrim(".:")
                   .str();
    what = text.drop_front(2).take_front(from - 2).trim().str();
    break;
  }
  std::string out =
      location.empty() ? std::string("error: ") : location + ": error: ";
  out += "nvrtc rejected the generated code";
  if (!what.empty())
    out += " of " + what;
  out += ": " + message.str() + "\n  " + programName.str() + ":" +
         std::to_string(line) + ": " + sourceLines[line - 1].trim().str();
  return out;
}

llvm::Expected<int> validateArch(llvm::StringRef arch) {
  std::optional<std::pair<int, std::string>> parts = splitArch(arch);
  if (!parts)
    return unsupportedArch(arch);
  std::vector<int> archs = supportedArchs();
  if (!llvm::is_contained(archs, parts->first))
    return unsupportedArch(arch);
  return parts->first;
}

std::vector<int> nvrtcSupportedArchs() { return supportedArchs(); }

/// Whether the NVRTC loaded is `major`.`minor` or later.
static bool nvrtcAtLeast(int major, int minor) {
  int haveMajor = 0, haveMinor = 0;
  if (::nvrtcVersion(&haveMajor, &haveMinor) != NVRTC_SUCCESS)
    return false;
  return haveMajor > major || (haveMajor == major && haveMinor >= minor);
}

std::vector<std::string> nvrtcCommandLine(const NvrtcOptions &options,
                                          int archNumber) {
  std::string suffix =
      splitArch(options.arch) ? splitArch(options.arch)->second : std::string();
  std::vector<std::string> args = {"--std=c++17", "-default-device"};
  // Generated code uses no textures, no device-side runtime calls and no
  // runtime API types, which -minimal leaves undeclared: a fifth less NVRTC
  // time on AdamW, with byte-identical cubins for every library update and
  // norm (CUDA 13).
  if (nvrtcAtLeast(12, 4))
    args.push_back("-minimal");
  if (options.ptxOnly) {
    args.push_back("-arch=compute_" + std::to_string(archNumber) + suffix);
  } else {
    args.push_back("-arch=sm_" + std::to_string(archNumber) + suffix);
    args.push_back("--ptxas-options=-v");
    // NVRTC 12.9 brought a disk cache of its own, and --no-cache with it.
    if (!options.nvrtcCache && nvrtcAtLeast(12, 9))
      args.push_back("--no-cache");
  }
  llvm::append_range(args, options.extraOptions);
  return args;
}

llvm::Expected<NvrtcResult> compileWithNvrtc(const std::string &source,
                                             const std::string &programName,
                                             const NvrtcOptions &options) {
  llvm::Expected<int> archNumber = validateArch(options.arch);
  if (!archNumber)
    return archNumber.takeError();

  NvrtcResult result;
  result.options = nvrtcCommandLine(options, *archNumber);
  std::vector<const char *> argv;
  for (const std::string &arg : result.options)
    argv.push_back(arg.c_str());

  retainHeapBetweenCompiles();
  auto start = std::chrono::steady_clock::now();
  ProgramPtr program(new nvrtcProgram(nullptr));
  if (nvrtcResult rc =
          nvrtcCreateProgram(program.get(), source.c_str(), programName.c_str(),
                             0, nullptr, nullptr);
      rc != NVRTC_SUCCESS) {
    *program = nullptr;
    return nvrtcFailure("creating program '" + programName + "'", rc);
  }
  nvrtcResult compiled =
      nvrtcCompileProgram(*program, static_cast<int>(argv.size()), argv.data());
  result.log = programLog(*program);
  if (compiled != NVRTC_SUCCESS)
    return llvm::createStringError(
        describeNvrtcFailure(source, programName, result.log) +
        "\nnvrtc failed to compile '" + programName + "' for " + options.arch +
        " (" + nvrtcGetErrorString(compiled) + "):\n" + result.log);

  size_t size = 0;
  if (nvrtcResult rc = nvrtcGetPTXSize(*program, &size); rc != NVRTC_SUCCESS)
    return nvrtcFailure("nvrtcGetPTXSize", rc);
  result.ptx.resize(size);
  if (nvrtcResult rc = nvrtcGetPTX(*program, result.ptx.data());
      rc != NVRTC_SUCCESS)
    return nvrtcFailure("nvrtcGetPTX", rc);
  if (!result.ptx.empty() && result.ptx.back() == '\0')
    result.ptx.pop_back();

  if (!options.ptxOnly) {
    if (nvrtcResult rc = nvrtcGetCUBINSize(*program, &size);
        rc != NVRTC_SUCCESS)
      return nvrtcFailure("nvrtcGetCUBINSize", rc);
    result.cubin.resize(size);
    if (nvrtcResult rc = nvrtcGetCUBIN(*program, result.cubin.data());
        rc != NVRTC_SUCCESS)
      return nvrtcFailure("nvrtcGetCUBIN", rc);
    result.resources = parsePtxasLog(result.log);
  }
  result.compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  return result;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (::nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace kfuse
