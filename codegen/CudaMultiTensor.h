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
#include "dialect/KFuseOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kfuse {

/// The table structs, with their layout asserted, and finiteness tests on
/// storage bits; multi-tensor sources have them after the common prelude.
llvm::StringRef getMultiTensorPrelude();

/// What a multi-tensor signature declares: a kernel of its own, one phase
/// of a kernel with grid barriers (a device function with the same
/// parameters and the counter of chunks taken), or that kernel (one more
/// parameter: the barrier's two counters, then one chunk counter per
/// phase).
enum class SignatureForm { Kernel, PhaseFunction, BarrierKernel };

/// `extern "C" ... name(<table parameters>) {` and a newline, with the
/// parameters KernelPlan.h fixes for kernels of `role`.
/// `matrix`: the row and column workspaces of a 2-D plan follow.
/// `minBlocks` > 1 asks __launch_bounds__ for that many resident blocks.
std::string getMultiTensorSignature(llvm::StringRef name, KernelInfo::Role role,
                                    unsigned blockSize, bool reductions,
                                    SignatureForm form = SignatureForm::Kernel,
                                    bool matrix = false,
                                    unsigned minBlocks = 1);

/// The arguments a barrier kernel passes to each phase function.
std::string getMultiTensorCallArguments(bool reductions, bool matrix = false);

/// kfuse_grid_barrier(unsigned int *barrier), for sources with a barrier
/// kernel.
llvm::StringRef getGridBarrierPrelude();

/// Block-wide combines that emitChunkReductions' code calls; a source
/// includes them when its plan has reductions.
llvm::StringRef getMultiTensorReducePrelude();

/// A per-tensor reduction that a phase kernel accumulates: each thread's
/// value in `accumulator` over the elements of a chunk, stored as partial
/// `index` of the plan's reductions.
/// In a 2-D update, `level` is what it reduces to (a tensor, each row, each
/// column; `index` counts each level apart) and `source` the level of its
/// input (elements, or the values per row or per column).
struct ChunkReduction {
  unsigned index;
  ReduceKind kind;
  bool list; // over the whole table, not per tensor
  std::string accumulator;
  ArgLevel level = ArgLevel::tensor;
  ArgLevel source = ArgLevel::element;
};

/// How kernels read reduction `index`'s total: the list's, or the tensor
/// of the current chunk's (through L2, where a barrier kernel's earlier
/// phase wrote it).
std::string getReducedInput(unsigned index, bool list, unsigned numReductions);

/// The value a thread's accumulator of `kind` starts from.
const char *getReduceIdentity(ReduceKind kind);

/// The device function combining two partial values of `kind`.
const char *getCombineFunction(ReduceKind kind);

/// The end of one chunk of a phase kernel that accumulates `reductions`: the
/// block combine of each accumulator into its partial, and in the last block
/// to finish an entry's chunks, the combine of its partials into totals and
/// the stores of `entryStores` (entry pointer, value): the new values of
/// states at the tensor level, which every chunk has read by then, and the
/// code `entryFinish` (a 2-D plan's column totals).
std::string emitChunkReductions(
    llvm::ArrayRef<ChunkReduction> reductions, unsigned numReductions,
    llvm::ArrayRef<std::pair<unsigned, std::string>> entryStores = {},
    llvm::StringRef entryFinish = "");

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
