//===- CudaMultiTensor.h - table walk of multi-tensor kernels ---*- C++ -*-===//
//
// The pieces of multi-tensor sources that do not depend on the update's
// math: the table structs (KernelPlan.h's MultiTensorEntry and
// MultiTensorChunk), the kernel signatures and the found-inf scan kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDAMULTITENSOR_H
#define KFUSE_CODEGEN_CUDAMULTITENSOR_H

#include "codegen/KernelPlan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kfuse {

/// The table structs, with their layout asserted, and finiteness tests on
/// storage bits; multi-tensor sources have them after the common prelude.
llvm::StringRef getMultiTensorPrelude();

/// `extern "C" ... name(<table parameters>) {` and a newline, with the
/// parameters KernelPlan.h fixes for kernels of `role`.
std::string getMultiTensorSignature(llvm::StringRef name, KernelInfo::Role role,
                                    unsigned blockSize);

/// One tensor a found-inf scan reads.
struct ScanTensor {
  unsigned pointer;       // its index in kfuse_entry::pointers
  DType dtype;            // its storage dtype
  std::string name;       // its typed pointer in the kernel
  std::string vectorName; // its vector of elements in the kernel
  std::string vectorType; // a 16-byte-aligned struct of `vectorWidth`
};

/// The FoundInfScan kernel `name`: sets *found_inf = 1 when an element of a
/// tensor in `tensors` is inf or NaN, over the chunks of the table.
std::string emitFoundInfScanKernel(llvm::StringRef name,
                                   llvm::ArrayRef<ScanTensor> tensors,
                                   unsigned vectorWidth, unsigned blockSize);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAMULTITENSOR_H
