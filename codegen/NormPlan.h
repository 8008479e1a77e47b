//===- NormPlan.h - what the norm code generator hands the runtime -*- C++
//-*-===//
//
// Plain data, free of MLIR, for a function marked `kfuse.norm` (LayerNorm,
// RMSNorm, forward or backward): the generated CUDA source for one
// Specialization (a dtype per tensor argument and a static row length) and
// how to launch it. The runtime compiles and launches from this alone.
//
// Launch ABI (every norm plan):
//
//   Row kernel `rowKernel`, grid = min(ceil(rows / rowsPerBlock),
//   maxGridBlocks) blocks of `blockSize` threads, `sharedBytes` of dynamic
//   shared memory (it may exceed 48 KiB, up to 227 KiB: raise the kernel's
//   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to it first). Parameters,
//   in order:
//     - one pointer per tensor argument, in argument order (`const T *` for
//       inputs, `T *` for outputs; T the argument's storage dtype);
//     - one `double` per hyper argument, in argument order;
//     - `long long rows`;
//     - `float *partials`: with column reductions, a 16-byte aligned
//       workspace of partialFloats(grid) floats (see below), else null.
//   Blocks take rows blockIdx.x * rowsPerBlock + k * gridDim.x * rowsPerBlock
//   (a grid-stride loop over row groups), so a block accumulates its column
//   partials over all its rows (in registers or shared memory) and writes
//   them once at the end:
//   partials[(reduction * grid + blockIdx.x) * cols + col]. Every block
//   writes all of its partials (zeros when it got no rows), so the workspace
//   needs no clearing.
//
//   Finish kernel `finishKernel` (only with column reductions), grid =
//   (ceil(cols / finishColumnsPerBlock), columnOutputs.size()) blocks of
//   `finishBlockSize` threads: blockIdx.y is the column output. Parameters:
//   `const float *partials`, `int grid` (the row kernel's grid), then one
//   pointer per column-reduction output, in the order of `columnOutputs`.
//   It sums each column's partials over the blocks in a fixed order (each
//   slice of the block's threads the blocks congruent to it, then the
//   slices in order), so the result has the same bits every run for a given
//   grid; the runtime fixes the grid for a given (rows, device) to keep it
//   so. With no rows, skip the row kernel and launch the finish kernel with
//   grid 0: it stores zeros.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_NORMPLAN_H
#define KFUSE_CODEGEN_NORMPLAN_H

#include "codegen/KernelPlan.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfuse {

struct NormPlan {
  std::string normName;
  std::vector<ArgInfo> args; // dtypes as specialized
  int64_t cols = 0;
  std::string location; // IR location of the function, for errors
  std::string source;   // CUDA C++ for both kernels

  std::string rowKernel;
  unsigned blockSize = 256;
  unsigned rowsPerBlock = 1;
  unsigned sharedBytes = 0;
  /// Upper bound on the row kernel's grid (e.g. a few blocks per SM times
  /// the SM count is the runtime's choice below this); 0: no bound. The norm
  /// code generator sets 1024 with column reductions (each block adds `cols`
  /// partials per reduction for the finish kernel to read), else 0.
  unsigned maxGridBlocks = 0;
  unsigned vectorWidth = 1; // elements per 16-byte access, 1 when scalar
  /// How the row is spread (informational): threads per row (blockSize /
  /// rowsPerBlock) and vectors each thread handles per row.
  unsigned threadsPerRow = 0;
  unsigned itemsPerThread = 0;
  /// Blocks per SM the row kernel's __launch_bounds__ asks for.
  unsigned launchBlocks = 1;
  /// Whether a thread holds its part of the whole row at once: in
  /// registers, or staged in shared memory when `stages` > 0 (else the
  /// kernel loops over the row in chunks).
  bool rowInRegisters = true;
  /// Whether a thread loads its column inputs once and keeps them in
  /// registers for all its rows.
  bool columnInputsInRegisters = false;
  /// Buffers of a row group staged in shared memory (0: none). With 2 the
  /// row kernel copies the next row group while it computes one: launch
  /// at most the blocks resident at once (one wave), so that every block
  /// runs several row groups.
  unsigned stages = 0;

  /// Column reductions: the output argument index of each, in partials
  /// order. Empty: no finish kernel.
  std::vector<unsigned> columnOutputs;
  std::string finishKernel;
  unsigned finishBlockSize = 256;
  unsigned finishColumnsPerBlock = 32;

  /// Floats of workspace the row kernel needs for a grid of `grid` blocks.
  uint64_t partialFloats(unsigned grid) const {
    return uint64_t(columnOutputs.size()) * grid * uint64_t(cols);
  }
  /// Minimum bytes a launch over `rows` rows moves: every tensor argument
  /// read (inputs) or written (outputs) once in its storage dtype
  /// (UINT64_MAX past 2^64).
  uint64_t minimumBytes(int64_t rows) const;
};

/// Minimum bytes a launch over `rows` x `cols` moves when the tensors have
/// `dtypes` (one per argument, hyper entries ignored; empty: each
/// argument's own dtype): every tensor read or written once. Nothing when
/// an extent is negative or the count passes 2^64.
std::optional<uint64_t> normMinimumBytes(llvm::ArrayRef<ArgInfo> args,
                                         llvm::ArrayRef<DType> dtypes,
                                         int64_t rows, int64_t cols);

} // namespace kfuse

#endif // KFUSE_CODEGEN_NORMPLAN_H
