//===- CudaNormLayout.cpp - spreading a row over threads ------------------===//
//
// A row of a norm is split into vectors (16-byte accesses when rows are
// aligned) and the vectors over the threads of the row: thread t owns
// vectors i * threads + t. The choice trades idle slots against registers:
// a thread holds its elements of every full input (and of the column sums)
// in registers, under the cap that keeps kMinThreadsPerSM threads resident.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaNormInternal.h"

#include "llvm/Support/MathExtras.h"

namespace kfuse::norm {

/// Threads per row and elements per thread and chunk of the looped variant.
constexpr unsigned kLoopedThreadsPerRow = 512;
constexpr unsigned kLoopedElementsPerThread = 8;

unsigned minBlocksPerSM(unsigned blockSize, unsigned minThreadsPerSM) {
  return std::max(1u, minThreadsPerSM / blockSize);
}

/// Registers a thread may use in a block of `blockSize` threads.
static unsigned registerCap(unsigned blockSize, unsigned minThreadsPerSM) {
  unsigned blocks = minBlocksPerSM(blockSize, minThreadsPerSM);
  return std::min(255u, (65536 / (blockSize * blocks)) & ~7u);
}

/// A conservative estimate of the registers a thread needs for `elements`
/// elements of each array (16-bit inputs are widened to f32 early by the
/// compiler, so they count whole), calibrated on ptxas' allocation for the
/// library norms.
static unsigned estimateRegisters(const RegisterDemand &demand,
                                  unsigned elements, bool sumsInRegisters) {
  unsigned arrays2 = 2 * demand.fullInputs + demand.colInputs +
                     (sumsInRegisters ? 2 * demand.columnSums : 0); // in halves
  return elements * arrays2 / 2 + 40;
}

/// The row spread over its threads. Of the layouts whose registers fit
/// (see estimateRegisters), the one with the fewest (thread, item) slots,
/// that is the fewest idle ones, and of those the one with the most items a
/// thread. A row too long for registers takes the looped variant.
Layout chooseLayout(int64_t cols, unsigned vec, const RegisterDemand &demand,
                    const NormEmitOptions &options) {
  Layout best;
  best.vec = vec;
  best.vectors = llvm::divideCeil(cols, vec);
  uint64_t sumBytes = uint64_t(demand.columnSums) * best.vectors * vec * 4;
  auto finish = [&](Layout layout) {
    layout.rows = std::max(1u, options.targetBlockSize / layout.threads);
    // With one row per block each column has a single owner thread, which
    // may keep its sums in shared memory instead of registers.
    if (demand.columnSums > 0 && layout.rows == 1 &&
        sumBytes <= kMaxSharedBytes)
      layout.sums = Layout::Sums::shared;
    return layout;
  };
  auto fits = [&](const Layout &layout) {
    return estimateRegisters(demand, layout.items * vec,
                             layout.sums == Layout::Sums::registers) <=
           registerCap(layout.blockSize(), options.minThreadsPerSM);
  };
  if (best.vectors <= kWarpSize) {
    // A part of a warp per row: whole rows per warp access, coalesced.
    best.threads = llvm::PowerOf2Ceil(best.vectors);
    best = finish(best);
    if (fits(best))
      return best;
  } else {
    int64_t bestCost = INT64_MAX;
    unsigned maxItems = std::max(1u, options.maxElementsPerThread / vec);
    for (unsigned items = maxItems; items >= 1; --items) {
      Layout layout = best;
      layout.items = items;
      int64_t threads =
          llvm::alignTo(llvm::divideCeil(best.vectors, items), kWarpSize);
      if (threads > kMaxThreadsPerRow || threads * items >= bestCost)
        continue;
      layout.threads = threads;
      layout = finish(layout);
      if (!fits(layout))
        continue;
      bestCost = threads * items;
      best = layout;
    }
    if (bestCost != INT64_MAX)
      return best;
  }
  // The looped variant: a few elements per thread and chunk; column sums
  // live in shared memory, or in the partials when they do not fit.
  best.inRegisters = false;
  best.threads = kLoopedThreadsPerRow;
  best.items = std::max(1u, kLoopedElementsPerThread / vec);
  best.chunks =
      llvm::divideCeil(best.vectors, int64_t(best.threads) * best.items);
  best.rows = 1;
  if (demand.columnSums > 0)
    best.sums = sumBytes <= kMaxSharedBytes ? Layout::Sums::shared
                                            : Layout::Sums::global;
  return best;
}

} // namespace kfuse::norm
