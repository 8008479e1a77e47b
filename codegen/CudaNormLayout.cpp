//===- CudaNormLayout.cpp - spreading a row over threads ------------------===//
//
// A row of a norm is split into vectors (16-byte accesses when rows are
// aligned) and the vectors over the threads of the row: thread t owns
// vectors i * threads + t. The choice trades idle slots against registers:
// a thread holds its elements of every full input (and of the column sums)
// in registers, under the cap that keeps kMinThreadsPerSM threads resident.
// Staged rows keep the full inputs in shared memory instead, reading them
// back per phase, so fewer registers stay live and more blocks fit.
//
// The layout knobs the environment sets for measuring are read here too.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaNormInternal.h"

#include "codegen/CudaOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cstdlib>
#include <optional>

namespace kfuse::norm {

/// Threads per row and elements per thread and chunk of the looped variant.
constexpr unsigned kLoopedThreadsPerRow = 512;
constexpr unsigned kLoopedElementsPerThread = 8;

/// Registers the estimate must leave free before a long row takes the wide
/// in-register layout (see chooseRowsLayout).
constexpr unsigned kLongRowHeadroom = 16;

/// Bytes of the rows' full inputs a forward row kernel aims to keep loading
/// per SM at once: about the H200's bandwidth times its loaded DRAM latency
/// over its 132 SMs (4 TB/s x 2 us / 132).
constexpr uint64_t kBytesInFlightPerSM = 64 * 1024;

/// Threads and shared memory of an SM (sm_80 and later).
constexpr unsigned kMaxThreadsPerSM = 2048;
constexpr uint64_t kSharedBytesPerSM = 228 * 1024;

/// Room left for the row reductions' static scratch (kfuse_red: a float
/// per warp, phase and reduction).
constexpr uint64_t kReductionScratchBytes = 2048;

unsigned minBlocksPerSM(unsigned blockSize, unsigned minThreadsPerSM) {
  return std::max(1u, minThreadsPerSM / blockSize);
}

/// Registers a thread may use when `blocks` blocks of `blockSize` threads
/// share an SM's 64 K (allocated 8 at a time, at most 255).
static unsigned registersPerThread(unsigned blockSize, unsigned blocks) {
  return std::min(255u, (65536 / (blockSize * blocks)) & ~7u);
}

/// Registers a thread may use in a block of `blockSize` threads.
static unsigned registerCap(unsigned blockSize, unsigned minThreadsPerSM) {
  return registersPerThread(blockSize,
                            minBlocksPerSM(blockSize, minThreadsPerSM));
}

/// A conservative estimate of the registers a thread needs for `elements`
/// elements of each array (16-bit inputs are widened to f32 early by the
/// compiler, so they count whole), calibrated on ptxas' allocation for the
/// library norms. A staged input counts half: a phase reads it back from
/// shared memory vector by vector, and ptxas keeps about half of a thread's
/// elements of it live (the bf16 LayerNorm backward of 12288 columns: 124
/// registers against 184 counted whole).
static unsigned estimateRegisters(const RegisterDemand &demand,
                                  unsigned elements, bool staged,
                                  bool sumsInRegisters) {
  unsigned full = (staged ? 1 : 2) * demand.fullInputs; // in halves
  if (demand.packedFullInputs)
    full /= 2;
  unsigned arrays2 = full + demand.colInputs +
                     (sumsInRegisters ? 2 * demand.columnSums : 0); // in halves
  return elements * arrays2 / 2 + 40;
}

uint64_t stageBytes(const Layout &layout, const RegisterDemand &demand) {
  return uint64_t(layout.rows) * layout.slotVectors() * layout.vec *
         demand.fullInputBytes;
}

uint64_t columnSumBytes(const Layout &layout, const RegisterDemand &demand) {
  return uint64_t(demand.columnSums) * layout.vectors * layout.vec * 4;
}

/// Dynamic shared memory a staged block may take: the limit less its static
/// scratch (the reductions', and kfuse_colsum, through which the row slots
/// of a block add their column sums).
static uint64_t stagedSharedLimit(const Layout &layout,
                                  const RegisterDemand &demand) {
  uint64_t scratch = kReductionScratchBytes;
  if (demand.columnSums > 0 && layout.rows > 1)
    scratch += uint64_t(layout.vectors) * layout.vec * 4;
  return kMaxSharedBytes - scratch;
}

/// The row spread over its threads, in registers or staged, or none. Of the
/// layouts that fit (registers by estimateRegisters, shared memory for one
/// stage), the one with the fewest (thread, item) slots, that is the fewest
/// idle ones, and of those the one with the most items a thread.
static std::optional<Layout>
chooseRowLayout(Layout base, const RegisterDemand &demand, bool staged,
                const NormEmitOptions &options, unsigned headroom = 0) {
  auto sharedFits = [&](const Layout &layout) {
    uint64_t shared = staged ? stageBytes(layout, demand) : 0;
    uint64_t limit =
        staged ? stagedSharedLimit(layout, demand) : kMaxSharedBytes;
    return shared + columnSumBytes(layout, demand) <= limit;
  };
  auto registersFit = [&](const Layout &layout) {
    return estimateRegisters(demand, layout.items * layout.vec, staged,
                             layout.sums == Layout::Sums::registers) +
               headroom <=
           registerCap(layout.blockSize(), options.minThreadsPerSM);
  };
  // The layout completed (rows per block, stages, where column sums go) if
  // it fits. Column sums stay in registers where they fit there: each
  // thread adds its own columns (measured on the H200, sums kept in shared
  // memory cost the LayerNorm backward 10-20 points). With one row per
  // block each column has a single owner thread, which may keep them in
  // shared memory instead when registers are short.
  auto complete = [&](Layout layout) -> std::optional<Layout> {
    layout.rows = std::max(1u, options.targetBlockSize / layout.threads);
    layout.stages = staged ? 1 : 0;
    if (staged &&
        stageBytes(layout, demand) > stagedSharedLimit(layout, demand))
      return std::nullopt;
    using Sums = NormEmitOptions::ColumnSums;
    bool mayShare = demand.columnSums > 0 && layout.rows == 1 &&
                    options.columnSums != Sums::registers && sharedFits(layout);
    if (mayShare && options.columnSums == Sums::shared) {
      layout.sums = Layout::Sums::shared;
      return registersFit(layout) ? std::optional<Layout>(layout)
                                  : std::nullopt;
    }
    if (registersFit(layout))
      return layout;
    if (!mayShare)
      return std::nullopt;
    layout.sums = Layout::Sums::shared;
    return registersFit(layout) ? std::optional<Layout>(layout) : std::nullopt;
  };
  if (base.vectors <= kWarpSize) {
    // A part of a warp per row: whole rows per warp access, coalesced.
    base.threads = llvm::PowerOf2Ceil(base.vectors);
    return complete(base);
  }
  std::optional<Layout> best;
  int64_t bestCost = INT64_MAX;
  unsigned maxItems = std::max(1u, options.maxElementsPerThread / base.vec);
  for (unsigned items = maxItems; items >= 1; --items) {
    Layout layout = base;
    layout.items = items;
    int64_t threads =
        llvm::alignTo(llvm::divideCeil(base.vectors, items), kWarpSize);
    if (threads > kMaxThreadsPerRow || threads * items >= bestCost)
      continue;
    layout.threads = threads;
    std::optional<Layout> completed = complete(layout);
    if (!completed)
      continue;
    bestCost = threads * items;
    best = completed;
  }
  return best;
}

/// The layout of the row itself: staged, in registers, or looped.
static Layout chooseRowsLayout(int64_t cols, unsigned vec,
                               const RegisterDemand &demand,
                               const NormEmitOptions &options) {
  Layout base;
  base.vec = vec;
  base.vectors = llvm::divideCeil(cols, vec);
  // Staging copies whole 16-byte vectors (cp.async.cg); rows of narrower
  // accesses (odd lengths, misaligned views) stay in registers.
  unsigned maxStages = options.stages < 0 ? 2 : options.stages;
  bool stageable = maxStages > 0 && demand.fullInputs > 0 &&
                   vec * demand.narrowestInputBytes == 16 &&
                   vec * demand.widestInputBytes == 16;
  if (stageable && options.stages < 0 && demand.columnSums == 0) {
    // A long row (one a block) without column sums: twice the elements a
    // thread in registers, unstaged, where the estimate leaves headroom
    // (it undercounts there by up to 18 registers). Fewer, fuller threads
    // keep more bytes in flight than staged blocks, which one-row blocks
    // limit (the H200, 12288 columns: the RMSNorm forward at 98 and 92 %
    // of the copy bandwidth in f32 and bf16 against 93 and 86 % staged;
    // bench/results/2026-12-03-h200-norm-columns-ab.jsonl, s0me64).
    NormEmitOptions wide = options;
    wide.maxElementsPerThread = 2 * options.maxElementsPerThread;
    // 16-bit elements counted packed, two a register, as ptxas keeps a
    // long row's: it gives the bf16 LayerNorm forward of 12288 columns (64
    // elements a thread) the 96 registers of the RMSNorm's, where counting
    // them whole asked 168.
    RegisterDemand wideDemand = demand;
    wideDemand.packedFullInputs = demand.widestInputBytes <= 2;
    if (std::optional<Layout> inRegisters = chooseRowLayout(
            base, wideDemand, /*staged=*/false, wide, kLongRowHeadroom);
        inRegisters && inRegisters->rows == 1 &&
        inRegisters->items * vec > options.maxElementsPerThread)
      return *inRegisters;
  }
  if (stageable) {
    if (std::optional<Layout> staged =
            chooseRowLayout(base, demand, /*staged=*/true, options)) {
      uint64_t sums = staged->sums == Layout::Sums::shared
                          ? columnSumBytes(*staged, demand)
                          : 0;
      uint64_t stage = stageBytes(*staged, demand);
      if (options.stages < 0 && staged->rows > 1)
        maxStages = 1;
      while (staged->stages < maxStages &&
             (staged->stages + 1) * stage + sums <=
                 stagedSharedLimit(*staged, demand))
        ++staged->stages;
      return *staged;
    }
  }
  if (std::optional<Layout> inRegisters =
          chooseRowLayout(base, demand, /*staged=*/false, options))
    return *inRegisters;
  // The looped variant: a few elements per thread and chunk; column sums
  // live in shared memory, or in the partials when they do not fit.
  Layout looped = base;
  looped.inRegisters = false;
  looped.threads = kLoopedThreadsPerRow;
  looped.items = std::max(1u, kLoopedElementsPerThread / vec);
  looped.chunks =
      llvm::divideCeil(looped.vectors, int64_t(looped.threads) * looped.items);
  looped.rows = 1;
  if (demand.columnSums > 0)
    looped.sums = columnSumBytes(looped, demand) <= kMaxSharedBytes
                      ? Layout::Sums::shared
                      : Layout::Sums::global;
  return looped;
}

/// Whether `layout` keeps its column inputs in registers across rows: where
/// asked for and the row is whole.
static bool holdColumnInputs(const Layout &layout, const RegisterDemand &demand,
                             const NormEmitOptions &options) {
  return demand.colInputs > 0 && layout.inRegisters &&
         options.columnInputs == NormEmitOptions::ColumnInputs::registers;
}

/// The registers a thread of `layout` needs at least, as ptxas allocates
/// them under pressure: estimateRegisters, with 16-bit elements counted as
/// half a register (ptxas keeps them packed when registers are short).
static unsigned estimateMinimumRegisters(const Layout &layout,
                                         const RegisterDemand &demand) {
  unsigned elements = layout.items * layout.vec;
  unsigned staged = layout.stages > 0 ? 1 : 2;
  unsigned halves = staged * demand.fullInputs + demand.colInputs;
  unsigned packing = demand.widestInputBytes <= 2 ? 2 : 1;
  return elements * halves / (2 * packing) + 40;
}

/// The blocks per SM a row kernel's __launch_bounds__ asks for. By default
/// those of minThreadsPerSM, the cap the layout was chosen under. A whole
/// row without column sums (the forward norms) asks for as many more as
/// keep kBytesInFlightPerSM of its rows loading, where threads, shared
/// memory and estimateMinimumRegisters allow: ptxas then fits in registers
/// its unconstrained allocation would leave idle, and the grid (one wave,
/// from the occupancy the driver reports) grows with it. On the H200 the
/// bf16 LayerNorm forward went from 72 registers and 3 blocks to 64 and 4
/// (1024 columns: 86.6 -> 90.4 % of the copy bandwidth; 4096: 83.7 ->
/// 92.4 %); kernels with column sums spilled and slowed down
/// (bench/results/2026-12-03-h200-norm-launch-blocks-ab.jsonl).
static unsigned chooseLaunchBlocks(const Layout &layout,
                                   const RegisterDemand &demand,
                                   const NormEmitOptions &options) {
  if (options.launchMinBlocksPerSM)
    return options.launchMinBlocksPerSM;
  unsigned blockSize = layout.blockSize();
  unsigned base = minBlocksPerSM(blockSize, options.minThreadsPerSM);
  if (!layout.inRegisters || demand.columnSums > 0 || demand.fullInputs == 0)
    return base;
  uint64_t bytesPerBlock = uint64_t(layout.rows) * layout.vectors * layout.vec *
                           demand.fullInputBytes;
  uint64_t shared = uint64_t(layout.stages) * stageBytes(layout, demand) +
                    kReductionScratchBytes + 1024; // the driver's reserve
  uint64_t blocks = std::min<uint64_t>(
      {llvm::divideCeil(kBytesInFlightPerSM, bytesPerBlock),
       kMaxThreadsPerSM / blockSize, kSharedBytesPerSM / shared});
  unsigned needed = estimateMinimumRegisters(layout, demand);
  for (; blocks > base; --blocks)
    if (registersPerThread(blockSize, blocks) >= needed)
      return blocks;
  return base;
}

Layout chooseLayout(int64_t cols, unsigned vec, const RegisterDemand &demand,
                    const NormEmitOptions &options) {
  Layout layout = chooseRowsLayout(cols, vec, demand, options);
  layout.columnInputsInRegisters = holdColumnInputs(layout, demand, options);
  layout.launchBlocks = chooseLaunchBlocks(layout, demand, options);
  return layout;
}

} // namespace kfuse::norm

namespace kfuse {

/// The value of environment variable `name` when it is a positive number
/// below 2^20, else 0.
static unsigned positiveEnvironment(const char *name) {
  const char *text = std::getenv(name);
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) ||
      value >= (1u << 20))
    return 0;
  return value;
}

/// KFUSE_NORM_STAGES, when set to 0, 1 or 2.
static std::optional<unsigned> stagesEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_STAGES");
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) || value > 4)
    return std::nullopt;
  return value;
}

/// KFUSE_NORM_SUMS, when set to `registers` or `shared`.
static NormEmitOptions::ColumnSums columnSumsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_SUMS");
  if (!text)
    return NormEmitOptions::ColumnSums::automatic;
  return llvm::StringSwitch<NormEmitOptions::ColumnSums>(text)
      .Case("registers", NormEmitOptions::ColumnSums::registers)
      .Case("shared", NormEmitOptions::ColumnSums::shared)
      .Default(NormEmitOptions::ColumnSums::automatic);
}

/// KFUSE_NORM_COLUMNS=registers holds the column inputs in registers.
static NormEmitOptions::ColumnInputs columnInputsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_COLUMNS");
  return text && llvm::StringRef(text) == "registers"
             ? NormEmitOptions::ColumnInputs::registers
             : NormEmitOptions::ColumnInputs::reload;
}

/// The knobs' key as the environment sets them now.
static std::string readTuningKey() {
  std::optional<unsigned> stages = stagesEnvironment();
  NormEmitOptions::ColumnSums sums = columnSumsEnvironment();
  return "stages=" + (stages ? std::to_string(*stages) : std::string("-")) +
         ";min_threads=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM")) +
         ";launch_blocks=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS")) +
         ";max_elements=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS")) +
         ";block=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_BLOCK_SIZE")) +
         ";sums=" + std::to_string(static_cast<int>(sums)) + ";columns=" +
         std::to_string(static_cast<int>(columnInputsEnvironment()));
}

bool normLiveKnobs() {
  static const bool live = [] {
    const char *text = std::getenv("KFUSE_NORM_LIVE_KNOBS");
    return text && llvm::StringRef(text) == "1";
  }();
  return live;
}

const std::string &normTuningKey() {
  // Six getenv calls cost more than the rest of an in-memory cache hit, so
  // the knobs are read once, unless a measuring process asks to change them
  // as it goes.
  if (normLiveKnobs()) {
    thread_local std::string key;
    key = readTuningKey();
    return key;
  }
  static const std::string key = readTuningKey();
  return key;
}

NormEmitOptions getNormEmitOptions(mlir::func::FuncOp norm, int64_t cols) {
  NormEmitOptions options;
  options.cols = cols;
  // Measurement overrides (bench/bench_norm.py sweeps them); part of the
  // runtime's cache key through normTuningKey().
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM"))
    options.minThreadsPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS"))
    options.launchMinBlocksPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS"))
    options.maxElementsPerThread = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_BLOCK_SIZE"))
    options.targetBlockSize = value;
  if (std::optional<unsigned> stages = stagesEnvironment())
    options.stages = *stages;
  options.columnSums = columnSumsEnvironment();
  options.columnInputs = columnInputsEnvironment();
  if (norm)
    for (mlir::Type type : norm.getArgumentTypes())
      options.argLevels.push_back(getValueLevel(type));
  return options;
}

} // namespace kfuse
