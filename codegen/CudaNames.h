//===- CudaNames.h - identifiers of generated CUDA sources ------*- C++ -*-===//
//
// Both code generators (updates and norms) name parameters, locals and
// kernels after the IR: the names must be valid C++, unique in their scope,
// and clear of keywords, CUDA builtins and the fixed names of each kernel
// template.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDANAMES_H
#define KFUSE_CODEGEN_CUDANAMES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <string>

namespace kfuse {

/// `text` with every character that cannot be in a C++ identifier replaced,
/// and an `a_` prefix where it would start with a digit or an underscore.
std::string sanitizeIdentifier(llvm::StringRef text);

/// Identifiers of one generated scope: valid C++, unique, and clear of
/// keywords, the CUDA builtins the sources use, and `fixedNames` (the
/// locals and parameters of the caller's kernel template).
class CudaNameTable {
public:
  explicit CudaNameTable(llvm::ArrayRef<llvm::StringRef> fixedNames = {});

  /// A fresh identifier like `base`. Names from the user (`fromUser`) stay
  /// clear of the `kfuse` prefix of generated names.
  std::string unique(llvm::StringRef base, bool fromUser = false);

private:
  llvm::StringSet<> used;
};

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDANAMES_H
