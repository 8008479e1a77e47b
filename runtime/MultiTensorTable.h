//===- MultiTensorTable.h - host image of a multi-tensor table --*- C++ -*-===//
//
// A multi-tensor kernel walks one MultiTensorEntry per tensor group and a
// list of equal MultiTensorChunks over the groups' elements (the ABI is in
// codegen/KernelPlan.h). This builds both on the host, once per parameter
// list; nothing here touches device memory or dereferences a pointer.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_MULTITENSORTABLE_H
#define KFUSE_RUNTIME_MULTITENSORTABLE_H

#include "codegen/KernelPlan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kfuse {

/// Elements per chunk unless asked otherwise. Measured on the H200 over the
/// GPT-2-small list (bench/results/2026-12-02-h200-multi-tensor-sweep.jsonl):
/// 16384 with one chunk per block beat 32768 and 65536 by 1 to 3 %, and
/// persistent grids of 3 to 16 blocks per SM by 3 to 6 %.
constexpr int64_t kDefaultChunkElements = 16384;

/// A chunk of a 2-D table (whole rows) holds about this many times the
/// elements of a 1-D chunk: a 2-D phase writes a partial per column of each
/// chunk, which a later phase sums. Measured on the H100 with Adafactor over
/// GPT-2 small (bench/results/2026-12-07-h100-session13-adafactor.json):
/// 98304 elements (128 rows of 768) took the step from 1.447 to 1.385 ms,
/// the column phase from 0.081 to 0.041 ms; 393216 left too few chunks to
/// spread over the SMs (1.930 ms).
constexpr int64_t kMatrixChunkScale = 6;

/// kDefaultChunkElements, or KFUSE_CHUNK_ELEMENTS where set to a positive
/// number (for measuring; read at every call).
int64_t defaultChunkElements();

/// Whether multi-tensor plans run their reduction phases in one cooperative
/// launch: true unless KFUSE_SEPARATE_PHASES is set to 1.
bool defaultGridBarrier();

/// One tensor of a group: a device address (never dereferenced here) and
/// its element count.
struct TableTensor {
  uint64_t address = 0;
  int64_t numel = 0;
};

struct MultiTensorTable {
  std::vector<MultiTensorEntry> entries; // one per group, in group order
  std::vector<MultiTensorChunk> chunks;  // by group, then by begin
  int64_t totalElements = 0;             // over all groups
  /// 2-D tables: the rows of all groups, and the column partials of all
  /// their chunks (the cols of each chunk), which size the workspaces.
  int64_t totalRows = 0;
  int64_t totalColPartials = 0;
};

/// Checks `tensors` (group-major, `argNames.size()` tensors a group, in
/// KernelPlan::tensorArgs order): at most kMaxTensorArgs a group, no null
/// pointer with elements, one element count within each group, fewer than
/// 2^31 groups. `levels` (by argument; empty: all per element) says how
/// many values each holds: a state at the tensor level is one element
/// whatever the group's count, and is left out of the alignment test. For a
/// 2-D update, `cols` holds each group's row length: its tensors per element
/// hold rows x cols, those per row rows and those per column cols. Errors
/// name the group index and the arguments.
llvm::Error validateTensorGroups(llvm::ArrayRef<TableTensor> tensors,
                                 llvm::ArrayRef<std::string> argNames,
                                 llvm::ArrayRef<ArgLevel> levels = {},
                                 llvm::ArrayRef<int64_t> cols = {});

/// validateTensorGroups, then the entries and chunks: each group cut into
/// chunks of `chunkElements` (rounded up to a multiple of `vectorWidth`, so
/// every chunk begins on a vector boundary), none for an empty group. With
/// `cols` (a 2-D update), chunks hold whole rows instead: as many as make
/// kMatrixChunkScale x `chunkElements`, within [kMinChunkRows,
/// kMaxChunkRows]. Fails when the chunks would number 2^31 or more.
llvm::Expected<MultiTensorTable> buildMultiTensorTable(
    llvm::ArrayRef<TableTensor> tensors, llvm::ArrayRef<std::string> argNames,
    unsigned vectorWidth, int64_t chunkElements = kDefaultChunkElements,
    llvm::ArrayRef<ArgLevel> levels = {}, llvm::ArrayRef<int64_t> cols = {});

} // namespace kfuse

#endif // KFUSE_RUNTIME_MULTITENSORTABLE_H
