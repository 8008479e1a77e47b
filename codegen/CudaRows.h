//===- CudaRows.h - rows spread over threads --------------------*- C++ -*-===//
//
// The row schedule both code generators share: how a row of a static length
// is spread over the threads of a block (RowLayout, chosen under a register
// estimate), and how the threads of a row combine their parts of a row
// reduction. A norm's row kernel and a 2-D update whose rows are held in
// registers both take their layout and their combination from here.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDAROWS_H
#define KFUSE_CODEGEN_CUDAROWS_H

#include "codegen/KernelPlan.h"
#include "dialect/KFuseOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace kfuse {

/// Threads of a warp, and most threads a row is spread over.
constexpr unsigned kWarpSize = 32;
constexpr unsigned kMaxThreadsPerRow = 1024;
/// Bytes of dynamic shared memory one block may use (sm_90's opt-in limit).
constexpr unsigned kMaxSharedBytes = 227 * 1024;

/// The knobs of the row layout.
struct RowLayoutOptions {
  /// Most elements of one tensor a thread keeps in registers (the row is
  /// split over at most 1024 threads; longer rows take the looped variant).
  unsigned maxElementsPerThread = 32;
  /// Threads the row kernel keeps resident per SM at least: the register
  /// cap per thread follows (more threads, more bytes in flight).
  unsigned minThreadsPerSM = 512;
  /// Registers the code around the row loop keeps live besides the row's
  /// (a multi-tensor kernel's pointers and chunk bounds), which the
  /// register estimate leaves free.
  unsigned reservedRegisters = 0;
  /// Blocks per SM the row kernel's __launch_bounds__ asks ptxas to fit; 0
  /// chooses (see chooseLaunchBlocks in CudaRows.cpp). More blocks
  /// make ptxas allocate fewer registers, so more bytes are in flight.
  unsigned launchMinBlocksPerSM = 0;
  /// Threads per block the row kernel aims for when rows are short (several
  /// rows per block).
  unsigned targetBlockSize = 256;
  /// Whether every block has exactly `targetBlockSize` threads (a power of
  /// two): a row's threads are then a power of two that divides it. The
  /// multi-tensor kernels of updates have blocks of one size.
  bool fixedBlockSize = false;
  /// Most buffers of a row group staged in shared memory (0: rows stay in
  /// registers; see RowLayout::stages). Fewer are used where they do not
  /// fit; rows of vectors under 16 bytes are not staged. -1 chooses: the
  /// next row group is prefetched (2) when a block holds a single row,
  /// whose phases would otherwise leave the SM without loads in flight;
  /// blocks of several rows overlap each other well enough with one buffer,
  /// and prefetching, which needs a one-wave grid, costs them (measured on
  /// the H200: bench/results/2026-12-03-h200-norm-sweep.jsonl).
  int stages = -1;
  /// Where a block of one row keeps its column sums (every column has a
  /// single owner thread): `automatic` keeps them in the owner's registers
  /// where the register estimate allows, else in shared memory where that
  /// fits beside the stages; `registers` and `shared` force either. Blocks
  /// of several rows always add them up in registers.
  enum class ColumnSums { automatic, registers, shared };
  ColumnSums columnSums = ColumnSums::automatic;
  /// Where a thread keeps its vectors of the column inputs (weight, bias):
  /// `reload` loads them in every phase of every row that reads them;
  /// `registers` loads them once per thread, before the row loop, where the
  /// row is whole (in registers or staged). Reloading is the default: the
  /// held vectors cost occupancy, and on the H200 that cost more than the
  /// loads saved (the bf16 LayerNorm forward at 4096 columns: 86.5 % of
  /// the copy bandwidth reloading, 68.2 % held;
  /// bench/results/2026-12-03-h200-norm-columns-ab.jsonl).
  enum class ColumnInputs { reload, registers };
  ColumnInputs columnInputs = ColumnInputs::reload;
};

/// How a row is spread over threads.
struct RowLayout {
  unsigned vec = 1;      // elements per vector access
  int64_t vectors = 0;   // vectors per row, the last one maybe partial
  unsigned threads = 32; // threads per row
  unsigned items = 1;    // vectors a thread handles per chunk
  unsigned chunks = 1;   // chunks per row: 1 when the row is in registers
  unsigned rows = 1;     // rows per block
  /// The whole row at once (in registers, or staged when stages > 0), not
  /// looped over in chunks.
  bool inRegisters = true;
  /// Where column sums accumulate: in registers; with one row per block
  /// (each column has a single owner thread) in shared memory, or, when that
  /// is too small, in the block's own slice of the partials.
  enum class Sums { registers, shared, global } sums = Sums::registers;

  /// Buffers of the row group staged in shared memory: 0 keeps the full
  /// inputs in registers; 1 copies them in (cp.async) and reads them back
  /// per phase, which frees the registers for more resident blocks; 2 also
  /// copies the next row group while the current one is computed, in a
  /// grid of one wave.
  unsigned stages = 0;

  /// Whether each thread loads its vectors of the column inputs (weight,
  /// bias) once, before the row loop, and keeps them in registers for every
  /// row it handles, instead of loading them again in each phase of each
  /// row: their loads then overlap the row's own instead of waiting behind
  /// the row reduction. Rows in registers or staged only.
  bool columnInputsInRegisters = false;

  /// Blocks per SM the kernel's __launch_bounds__ asks ptxas to fit (see
  /// chooseLaunchBlocks in CudaRows.cpp).
  unsigned launchBlocks = 1;

  unsigned blockSize() const { return threads * rows; }
  /// Vectors of one full input a row slot stages: every (item, thread).
  int64_t slotVectors() const { return int64_t(threads) * items; }
  unsigned warpsPerRow() const {
    return threads > kWarpSize ? threads / kWarpSize : 1;
  }
  /// Whether every (chunk, item, thread) slot holds a vector of the row.
  bool exact() const { return int64_t(threads) * items * chunks == vectors; }
};

/// What a thread keeps live per element it owns, for the register estimate.
struct RegisterDemand {
  unsigned fullInputs = 0; // arrays loaded once per row
  unsigned colInputs = 0;  // per-column loads in flight in a phase
  unsigned columnSums = 0; // accumulators, unless in shared memory
  /// For staging: bytes of one element of every full input together, and
  /// of the narrowest and the widest one.
  unsigned fullInputBytes = 0;
  unsigned narrowestInputBytes = 4;
  unsigned widestInputBytes = 0;
  /// Full inputs counted two elements a register (16-bit ones of a long
  /// row kept in registers; see chooseRowsLayout).
  bool packedFullInputs = false;
};

/// Device helpers of staged rows (kfuse_stage, kfuse_stage_commit,
/// kfuse_stage_wait, kfuse_unstage, kfuse_shared_address): cp.async copies
/// of 16-byte vectors into shared memory and volatile reads back.
llvm::StringRef getStagingPrelude();

/// Blocks of a row kernel of `blockSize` threads kept resident per SM.
unsigned minBlocksPerSM(unsigned blockSize, unsigned minThreadsPerSM);

/// The row of `cols` columns, accessed `vec` elements at a time, spread over
/// threads: staged in shared memory (options.stages > 0, in as many buffers
/// as fit), else in registers when they fit, else the looped variant.
RowLayout chooseRowLayout(int64_t cols, unsigned vec,
                          const RegisterDemand &demand,
                          const RowLayoutOptions &options);

/// Sets the launch fields of the row kernel `info` (KernelInfo::Role::
/// NormRows) from `layout`: its block, rows a block, threads a row, vectors a
/// thread, stages, vector width, blocks the launch bounds ask for and
/// whether the row is whole.
void setRowKernelLaunch(KernelInfo &info, const RowLayout &layout);

/// Bytes of shared memory one stage of a row group takes (every full
/// input of every row slot), and the column sums kept there, per block.
uint64_t stageBytes(const RowLayout &layout, const RegisterDemand &demand);
uint64_t columnSumBytes(const RowLayout &layout, const RegisterDemand &demand);

/// A thread's part of one row reduction: a float `name` (sum or max), or
/// for a variance the floats `name`_n, `name`_m and `name`_q (the count,
/// mean and sum of squared deviations of the thread's elements).
struct RowPart {
  ReduceKind kind;
  std::string name;
};

/// Floats of scratch one row slot's warp needs to pass `parts` on.
unsigned getRowPartFloats(llvm::ArrayRef<RowPart> parts);

/// Combines the parts of every thread of a row over the row's threads, so
/// that each thread ends with the row's total, bit for bit the same: a
/// butterfly within the warp (or the row's lanes of it), then, for rows of
/// several warps, the warps' values through shared memory `scratch` (a
/// float array of `layout.rows * layout.warpsPerRow()` times
/// `scratchFloats`, which must be at least getRowPartFloats), combined in
/// warp order. `lane` and `slot` name the thread's index in its row and its
/// row's slot in the block. Every thread of the block runs it (the shuffles
/// take every lane of a warp; several warps a row take a block barrier).
std::string emitRowCombine(llvm::ArrayRef<RowPart> parts,
                           const RowLayout &layout, llvm::StringRef lane,
                           llvm::StringRef slot, llvm::StringRef scratch,
                           unsigned scratchFloats, llvm::StringRef indent);

/// Passes a block's column accumulators from its `rows` row slots to slot 0
/// in slot order, so that the sums repeat bit for bit: for each slot s past
/// 0, between block barriers, slot s runs `publish` (its accumulators into
/// shared memory) and then slot 0 runs `fold` (those into its own). `slot`
/// names the thread's row slot, `counter` the loop's variable; `publish`
/// and `fold` come indented. Every thread of the block runs it.
std::string emitSlotOrderCombine(unsigned rows, llvm::StringRef slot,
                                 llvm::StringRef counter,
                                 llvm::StringRef publish, llvm::StringRef fold,
                                 llvm::StringRef indent);

/// The parameters of a norm's row kernel (the ABI under "Norm plans" in
/// codegen/KernelPlan.h): a pointer per tensor argument of `args` (const for
/// inputs), then a double per hyper, each in argument order and named by
/// `name`, then the row count and the column sums' partials.
llvm::SmallVector<std::string>
getRowKernelParams(llvm::ArrayRef<ArgInfo> args,
                   llvm::function_ref<std::string(unsigned)> name);

/// A column output of a row kernel's finish kernel: its storage type, its
/// parameter name and its value, an expression of the float `total`.
struct ColumnFinishOutput {
  std::string type;
  std::string name;
  std::string value;
};

/// The finish kernel of a row kernel's column sums (KernelInfo::Role::
/// NormColumnFinish, the ABI under "Norm plans" in codegen/KernelPlan.h):
/// `finish.columnsPerBlock` columns a block, each slice of the block's
/// threads adding the partials of the row kernel's blocks congruent to it,
/// then the slices in order, so the bits depend only on the grid;
/// blockIdx.y picks the output.
std::string emitColumnFinishKernel(llvm::StringRef planName,
                                   const KernelInfo &finish, int64_t cols,
                                   llvm::ArrayRef<ColumnFinishOutput> outputs);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAROWS_H
