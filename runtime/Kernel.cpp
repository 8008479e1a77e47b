//===- Kernel.cpp - a parsed kernel source, either kind -------------------===//

#include "runtime/Kernel.h"
#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "dialect/SourceLimits.h"
#include "runtime/Errors.h"
#include "runtime/Jit.h"
#include "runtime/Norm.h"

namespace kfuse {

Kernel::Kernel(KernelKind kind, llvm::StringRef text,
               llvm::StringRef sourceName, std::vector<ArgInfo> args)
    : irText(text.str()), name(sourceName.str()), argInfos(std::move(args)),
      kernelKind(kind) {}

Kernel::~Kernel() = default;

llvm::Expected<std::unique_ptr<Kernel>>
Kernel::create(llvm::StringRef text, llvm::StringRef sourceName,
               std::optional<KernelKind> required) {
  llvm::Expected<ParsedKernel> parsed =
      parseKernel(threadContext(), text, sourceName, required);
  if (!parsed)
    return withCode(parsed.takeError(), ErrorCode::Parse);
  mlir::ModuleOp module = *parsed->module;
  if (parsed->kind == KernelKind::norm)
    return std::unique_ptr<Kernel>(
        new Norm(text, sourceName, describeArgs(findNorm(module))));
  mlir::func::FuncOp update = findUpdate(module);
  return std::unique_ptr<Kernel>(
      new Update(text, sourceName, describeArgs(update), isMatrixUpdate(update),
                 isMatrixUpdate(update) ? getStaticRowLength(update) : 0));
}

llvm::Expected<std::unique_ptr<Kernel>>
Kernel::createFromFile(llvm::StringRef path,
                       std::optional<KernelKind> required) {
  llvm::Expected<std::string> text = readKernelSource(path);
  if (!text)
    return makeError(ErrorCode::InvalidArgument,
                     llvm::toString(text.takeError()));
  return create(*text, path, required);
}

} // namespace kfuse
