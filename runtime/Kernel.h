//===- Kernel.h - a parsed kernel source, either kind -----------*- C++ -*-===//
//
// The runtime object of one kernel source: its text, its name in
// diagnostics, its kind and its arguments (ArgInfo, one description for
// updates and norms). Update (runtime/Jit.h) and Norm (runtime/Norm.h) are
// its two kinds, each with the launches its kind takes; Kernel::create
// parses a source once and makes whichever it holds.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_KERNEL_H
#define KFUSE_RUNTIME_KERNEL_H

#include "codegen/KernelPlan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kfuse {

class Kernel {
public:
  virtual ~Kernel();

  /// Parses `text` (named `sourceName` in diagnostics) and makes its runtime
  /// object: an Update or a Norm, by what it holds, or only `required`'s
  /// kind (another is an error). A parse error has ErrorCode::Parse.
  static llvm::Expected<std::unique_ptr<Kernel>>
  create(llvm::StringRef text, llvm::StringRef sourceName,
         std::optional<KernelKind> required = std::nullopt);
  /// create() on the file at `path` (named by it); an unreadable file has
  /// ErrorCode::InvalidArgument.
  static llvm::Expected<std::unique_ptr<Kernel>>
  createFromFile(llvm::StringRef path,
                 std::optional<KernelKind> required = std::nullopt);

  KernelKind kind() const { return kernelKind; }
  llvm::ArrayRef<ArgInfo> args() const { return argInfos; }
  llvm::StringRef text() const { return irText; }
  llvm::StringRef sourceName() const { return name; }

protected:
  Kernel(KernelKind kind, llvm::StringRef text, llvm::StringRef sourceName,
         std::vector<ArgInfo> args);

  std::string irText;
  std::string name;
  std::vector<ArgInfo> argInfos;

private:
  KernelKind kernelKind;
};

/// Kernel::create of a `Kind` kernel (Update or Norm), as that type.
template <typename Kind>
llvm::Expected<std::unique_ptr<Kind>> createKernelOf(llvm::StringRef text,
                                                     llvm::StringRef sourceName,
                                                     bool fromFile) {
  llvm::Expected<std::unique_ptr<Kernel>> kernel =
      fromFile ? Kernel::createFromFile(text, Kind::kKind)
               : Kernel::create(text, sourceName, Kind::kKind);
  if (!kernel)
    return kernel.takeError();
  return std::unique_ptr<Kind>(static_cast<Kind *>(kernel->release()));
}

} // namespace kfuse

#endif // KFUSE_RUNTIME_KERNEL_H
