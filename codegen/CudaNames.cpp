//===- CudaNames.cpp - identifiers of generated CUDA sources -------------===//

#include "codegen/CudaNames.h"

#include "llvm/ADT/StringExtras.h"

namespace kfuse {

std::string sanitizeIdentifier(llvm::StringRef text) {
  std::string name;
  for (char c : text)
    name += llvm::isAlnum(c) ? c : '_';
  if (name.empty() || llvm::isDigit(name.front()) || name.front() == '_')
    name = "a_" + name;
  return name;
}

CudaNameTable::CudaNameTable(llvm::ArrayRef<llvm::StringRef> fixedNames) {
  for (const char *reserved : {"auto",       "bool",      "break",
                               "case",       "char",      "const",
                               "continue",   "default",   "delete",
                               "do",         "double",    "else",
                               "enum",       "extern",    "false",
                               "float",      "for",       "goto",
                               "if",         "inline",    "int",
                               "long",       "new",       "operator",
                               "private",    "public",    "register",
                               "return",     "short",     "signed",
                               "sizeof",     "static",    "struct",
                               "switch",     "template",  "this",
                               "true",       "typedef",   "union",
                               "unsigned",   "void",      "volatile",
                               "while",      "class",     "namespace",
                               "using",      "asm",       "alignas",
                               "restrict",   "nullptr",   "constexpr",
                               "decltype",   "noexcept",  "static_assert",
                               "__shared__", "threadIdx", "blockIdx",
                               "blockDim",   "gridDim",   "warpSize",
                               "atomicAdd",  "fmodf",     "fmaxf",
                               "fminf",      "sqrtf",     "powf",
                               "expf",       "logf",      "fabsf",
                               "tanhf",      "fmaf",      "copysignf"})
    used.insert(reserved);
  for (llvm::StringRef name : fixedNames)
    used.insert(name);
}

std::string CudaNameTable::unique(llvm::StringRef base, bool fromUser) {
  std::string name = sanitizeIdentifier(base);
  if (fromUser && llvm::StringRef(name).starts_with("kfuse"))
    name = "a_" + name;
  while (!used.insert(name).second)
    name += "_";
  return name;
}

} // namespace kfuse
