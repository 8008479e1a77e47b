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

/// The base of one kind's runtime object (Update, Norm): Kernel::create of
/// that kind only (another is an error), as that type.
template <typename Derived, KernelKind Kind>
class KernelOfKind : public Kernel {
public:
  static constexpr KernelKind kKind = Kind;
  /// Parses `text` (named `sourceName` in diagnostics) and reads its
  /// arguments.
  static llvm::Expected<std::unique_ptr<Derived>>
  create(llvm::StringRef text, llvm::StringRef sourceName) {
    return downcast(Kernel::create(text, sourceName, Kind));
  }
  static llvm::Expected<std::unique_ptr<Derived>>
  createFromFile(llvm::StringRef path) {
    return downcast(Kernel::createFromFile(path, Kind));
  }

protected:
  KernelOfKind(llvm::StringRef text, llvm::StringRef sourceName,
               std::vector<ArgInfo> args)
      : Kernel(Kind, text, sourceName, std::move(args)) {}

private:
  static llvm::Expected<std::unique_ptr<Derived>>
  downcast(llvm::Expected<std::unique_ptr<Kernel>> kernel) {
    if (!kernel)
      return kernel.takeError();
    return std::unique_ptr<Derived>(static_cast<Derived *>(kernel->release()));
  }
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_KERNEL_H
