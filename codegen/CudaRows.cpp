//===- CudaRows.cpp - rows spread over threads ----------------------------===//
//
// A row is split into vectors (16-byte accesses when rows are
// aligned) and the vectors over the threads of the row: thread t owns
// vectors i * threads + t. The choice trades idle slots against registers:
// a thread holds its elements of every full input (and of the column sums)
// in registers, under the cap that keeps kMinThreadsPerSM threads resident.
// Staged rows keep the full inputs in shared memory instead, reading them
// back per phase, so fewer registers stay live and more blocks fit.
//
// The threads of a row then combine their parts of its reductions in a
// fixed order (emitRowCombine), so that results repeat bit for bit.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaRows.h"

#include "codegen/CudaOps.h"

#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>
#include <optional>

namespace kfuse {

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

/// Device helpers of staged rows: asynchronous copies into shared memory
/// (cp.async, sm_80 and later; a load and a store before) and reads back.
static constexpr llvm::StringLiteral kStagingPrelude = R"cuda(
static __device__ __forceinline__ unsigned kfuse_shared_address(const void *p) {
  unsigned address;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }"
      : "=r"(address) : "l"(p));
  return address;
}

// Copies the 16-byte vector at `src` to shared address `to`; zeros where
// !fill.
template <typename T>
static __device__ __forceinline__ void kfuse_stage(unsigned to, const T *src,
                                                   bool fill) {
  static_assert(sizeof(T) == 16, "staging copies 16-byte vectors");
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(to), "l"(src), "r"(fill ? 16 : 0) : "memory");
#else
  union { T value; unsigned words[4]; } u;
  u.value = fill ? *src : T{};
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};"
               :: "r"(to), "r"(u.words[0]), "r"(u.words[1]), "r"(u.words[2]),
                  "r"(u.words[3]) : "memory");
#endif
}

static __device__ __forceinline__ void kfuse_stage_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

// Waits until at most `Pending` committed copy groups are in flight.
template <int Pending>
static __device__ __forceinline__ void kfuse_stage_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" :: "n"(Pending) : "memory");
#endif
}

// Reads a staged vector back. The volatile load keeps the compiler from
// holding staged rows in registers across phases, which staging avoids.
template <typename T>
static __device__ __forceinline__ T kfuse_unstage(unsigned from) {
  union { T value; unsigned words[4]; } u;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.words[0]), "=r"(u.words[1]), "=r"(u.words[2]),
                 "=r"(u.words[3]) : "r"(from));
  return u.value;
}
)cuda";

llvm::StringRef getStagingPrelude() { return kStagingPrelude.drop_front(); }

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

uint64_t stageBytes(const RowLayout &layout, const RegisterDemand &demand) {
  return uint64_t(layout.rows) * layout.slotVectors() * layout.vec *
         demand.fullInputBytes;
}

uint64_t columnSumBytes(const RowLayout &layout, const RegisterDemand &demand) {
  return uint64_t(demand.columnSums) * layout.vectors * layout.vec * 4;
}

/// Dynamic shared memory a staged block may take: the limit less its static
/// scratch (the reductions', and kfuse_colsum, through which the row slots
/// of a block add their column sums).
static uint64_t stagedSharedLimit(const RowLayout &layout,
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
static std::optional<RowLayout>
chooseWholeRowLayout(RowLayout base, const RegisterDemand &demand, bool staged,
                     const RowLayoutOptions &options, unsigned headroom = 0) {
  auto sharedFits = [&](const RowLayout &layout) {
    uint64_t shared = staged ? stageBytes(layout, demand) : 0;
    uint64_t limit =
        staged ? stagedSharedLimit(layout, demand) : kMaxSharedBytes;
    return shared + columnSumBytes(layout, demand) <= limit;
  };
  auto registersFit = [&](const RowLayout &layout) {
    return estimateRegisters(demand, layout.items * layout.vec, staged,
                             layout.sums == RowLayout::Sums::registers) +
               headroom + options.reservedRegisters <=
           registerCap(layout.blockSize(), options.minThreadsPerSM);
  };
  // The layout completed (rows per block, stages, where column sums go) if
  // it fits. Column sums stay in registers where they fit there: each
  // thread adds its own columns (measured on the H200, sums kept in shared
  // memory cost the LayerNorm backward 10-20 points). With one row per
  // block each column has a single owner thread, which may keep them in
  // shared memory instead when registers are short.
  auto complete = [&](RowLayout layout) -> std::optional<RowLayout> {
    layout.rows = std::max(1u, options.targetBlockSize / layout.threads);
    layout.stages = staged ? 1 : 0;
    if (staged &&
        stageBytes(layout, demand) > stagedSharedLimit(layout, demand))
      return std::nullopt;
    using Sums = RowLayoutOptions::ColumnSums;
    bool mayShare = demand.columnSums > 0 && layout.rows == 1 &&
                    options.columnSums != Sums::registers && sharedFits(layout);
    if (mayShare && options.columnSums == Sums::shared) {
      layout.sums = RowLayout::Sums::shared;
      return registersFit(layout) ? std::optional<RowLayout>(layout)
                                  : std::nullopt;
    }
    if (registersFit(layout))
      return layout;
    if (!mayShare)
      return std::nullopt;
    layout.sums = RowLayout::Sums::shared;
    return registersFit(layout) ? std::optional<RowLayout>(layout)
                                : std::nullopt;
  };
  unsigned maxItems = std::max(1u, options.maxElementsPerThread / base.vec);
  if (base.vectors <= kWarpSize) {
    // A part of a warp per row: whole rows per warp access, coalesced. Of
    // 8 or more lanes, as many as split the row exactly (rows of 24 vectors:
    // 8 lanes of 3), else a power of two with idle lanes.
    unsigned exact = 1u << llvm::countr_zero(uint64_t(base.vectors));
    if (exact >= 8 && base.vectors / exact <= maxItems) {
      base.threads = exact;
      base.items = base.vectors / exact;
    } else {
      base.threads = llvm::PowerOf2Ceil(base.vectors);
    }
    return complete(base);
  }
  std::optional<RowLayout> best;
  int64_t bestCost = INT64_MAX;
  unsigned maxThreads =
      options.fixedBlockSize ? options.targetBlockSize : kMaxThreadsPerRow;
  for (unsigned items = maxItems; items >= 1; --items) {
    RowLayout layout = base;
    layout.items = items;
    int64_t threads =
        llvm::alignTo(llvm::divideCeil(base.vectors, items), kWarpSize);
    // Blocks of one size hold whole rows: a power of two of threads each.
    if (options.fixedBlockSize)
      threads = llvm::PowerOf2Ceil(threads);
    if (threads > maxThreads || threads * items >= bestCost)
      continue;
    layout.threads = threads;
    std::optional<RowLayout> completed = complete(layout);
    if (!completed)
      continue;
    bestCost = threads * items;
    best = completed;
  }
  return best;
}

/// The layout of the row itself: staged, in registers, or looped.
static RowLayout chooseRowsLayout(int64_t cols, unsigned vec,
                                  const RegisterDemand &demand,
                                  const RowLayoutOptions &options) {
  RowLayout base;
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
    RowLayoutOptions wide = options;
    wide.maxElementsPerThread = 2 * options.maxElementsPerThread;
    // 16-bit elements counted packed, two a register, as ptxas keeps a
    // long row's: it gives the bf16 LayerNorm forward of 12288 columns (64
    // elements a thread) the 96 registers of the RMSNorm's, where counting
    // them whole asked 168.
    RegisterDemand wideDemand = demand;
    wideDemand.packedFullInputs = demand.widestInputBytes <= 2;
    if (std::optional<RowLayout> inRegisters = chooseWholeRowLayout(
            base, wideDemand, /*staged=*/false, wide, kLongRowHeadroom);
        inRegisters && inRegisters->rows == 1 &&
        inRegisters->items * vec > options.maxElementsPerThread)
      return *inRegisters;
  }
  if (stageable) {
    if (std::optional<RowLayout> staged =
            chooseWholeRowLayout(base, demand, /*staged=*/true, options)) {
      uint64_t sums = staged->sums == RowLayout::Sums::shared
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
  if (std::optional<RowLayout> inRegisters =
          chooseWholeRowLayout(base, demand, /*staged=*/false, options))
    return *inRegisters;
  // The looped variant: a few elements per thread and chunk; column sums
  // live in shared memory, or in the partials when they do not fit.
  RowLayout looped = base;
  looped.inRegisters = false;
  looped.threads = kLoopedThreadsPerRow;
  looped.items = std::max(1u, kLoopedElementsPerThread / vec);
  looped.chunks =
      llvm::divideCeil(looped.vectors, int64_t(looped.threads) * looped.items);
  looped.rows = 1;
  if (demand.columnSums > 0)
    looped.sums = columnSumBytes(looped, demand) <= kMaxSharedBytes
                      ? RowLayout::Sums::shared
                      : RowLayout::Sums::global;
  return looped;
}

/// Whether `layout` keeps its column inputs in registers across rows: where
/// asked for and the row is whole.
static bool holdColumnInputs(const RowLayout &layout,
                             const RegisterDemand &demand,
                             const RowLayoutOptions &options) {
  return demand.colInputs > 0 && layout.inRegisters &&
         options.columnInputs == RowLayoutOptions::ColumnInputs::registers;
}

/// The registers a thread of `layout` needs at least, as ptxas allocates
/// them under pressure: estimateRegisters, with 16-bit elements counted as
/// half a register (ptxas keeps them packed when registers are short).
static unsigned estimateMinimumRegisters(const RowLayout &layout,
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
static unsigned chooseLaunchBlocks(const RowLayout &layout,
                                   const RegisterDemand &demand,
                                   const RowLayoutOptions &options) {
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
  unsigned needed =
      estimateMinimumRegisters(layout, demand) + options.reservedRegisters;
  for (; blocks > base; --blocks)
    if (registersPerThread(blockSize, blocks) >= needed)
      return blocks;
  return base;
}

RowLayout chooseRowLayout(int64_t cols, unsigned vec,
                          const RegisterDemand &demand,
                          const RowLayoutOptions &options) {
  RowLayout layout = chooseRowsLayout(cols, vec, demand, options);
  layout.columnInputsInRegisters = holdColumnInputs(layout, demand, options);
  layout.launchBlocks = chooseLaunchBlocks(layout, demand, options);
  return layout;
}

void setRowKernelLaunch(KernelInfo &info, const RowLayout &layout) {
  info.role = KernelInfo::Role::NormRows;
  info.blockSize = layout.blockSize();
  info.rowsPerBlock = layout.rows;
  info.threadsPerRow = layout.threads;
  info.itemsPerThread = layout.items * layout.chunks;
  info.launchBlocks = layout.launchBlocks;
  info.stages = layout.stages;
  info.vectorWidth = layout.vec;
  info.rowInRegisters = layout.inRegisters;
  info.columnInputsInRegisters = layout.columnInputsInRegisters;
}

unsigned getRowPartFloats(llvm::ArrayRef<RowPart> parts) {
  unsigned floats = 0;
  for (const RowPart &part : parts)
    floats += part.kind == ReduceKind::variance ? 3 : 1;
  return floats;
}

/// The floats of `part` a warp passes to the others.
static llvm::SmallVector<std::string, 3> getPartFloats(const RowPart &part) {
  if (part.kind == ReduceKind::variance)
    return {part.name + "_n", part.name + "_m", part.name + "_q"};
  return {part.name};
}

static std::string combineText(const RowPart &part, llvm::StringRef a,
                               llvm::StringRef b) {
  return part.kind == ReduceKind::max
             ? fmt::format("kfuse_maximumf({}, {})", a.str(), b.str())
             : fmt::format("{} + {}", a.str(), b.str());
}

std::string emitRowCombine(llvm::ArrayRef<RowPart> parts,
                           const RowLayout &layout, llvm::StringRef lane,
                           llvm::StringRef slot, llvm::StringRef scratch,
                           unsigned scratchFloats, llvm::StringRef indent) {
  std::string out;
  std::string in = indent.str();
  unsigned width = std::min(layout.threads, kWarpSize);
  if (width > 1) {
    out += fmt::format("{0}#pragma unroll\n"
                       "{0}for (int m = {1}; m > 0; m >>= 1) {{\n",
                       in, width / 2);
    for (const RowPart &part : parts) {
      if (part.kind == ReduceKind::variance && layout.exact())
        out += fmt::format("{0}  kfuse_shuffle_equal_moments({1}_n, {1}_m, "
                           "{1}_q, m);\n",
                           in, part.name);
      else if (part.kind == ReduceKind::variance)
        // Lanes past the row's end hold no elements: the merge's order
        // then depends on the lane, not on equal counts.
        out += fmt::format("{0}  kfuse_shuffle_moments({1}_n, {1}_m, {1}_q, "
                           "m, ({2} & m) != 0);\n",
                           in, part.name, lane.str());
      else
        out += fmt::format(
            "{}  {} = {};\n", in, part.name,
            combineText(
                part, part.name,
                fmt::format("__shfl_xor_sync(0xffffffffu, {}, m)", part.name)));
    }
    out += in + "}\n";
  }
  unsigned warps = layout.warpsPerRow();
  if (warps == 1)
    return out;
  // Each part's floats at its offset in the warp's slots; every warp then
  // reads all of them and combines them in warp order.
  llvm::SmallVector<unsigned> offsets;
  unsigned offset = 0;
  for (const RowPart &part : parts) {
    offsets.push_back(offset);
    offset += getPartFloats(part).size();
  }
  std::string base = fmt::format("({} * {} + {} / {}) * {}", slot.str(), warps,
                                 lane.str(), kWarpSize, scratchFloats);
  out += fmt::format("{}if ({} % {} == 0) {{\n", in, lane.str(), kWarpSize);
  for (auto [part, first] : llvm::zip_equal(parts, offsets))
    for (auto [k, name] : llvm::enumerate(getPartFloats(part)))
      out += fmt::format("{}  {}[{} + {}] = {};\n", in, scratch.str(), base,
                         first + k, name);
  out += in + "}\n" + in + "__syncthreads();\n";
  out += fmt::format("{0}{{\n"
                     "{0}  const float *part = &{1}[{2} * {3}];\n",
                     in, scratch.str(), slot.str(), warps * scratchFloats);
  for (auto [part, first] : llvm::zip_equal(parts, offsets))
    for (auto [k, name] : llvm::enumerate(getPartFloats(part)))
      out += fmt::format("{}  {} = part[{}];\n", in, name, first + k);
  out += fmt::format("{0}  for (int w = 1; w < {1}; ++w) {{\n", in, warps);
  for (auto [part, first] : llvm::zip_equal(parts, offsets)) {
    if (part.kind == ReduceKind::variance)
      out += fmt::format("{0}    kfuse_merge_moments({1}_n, {1}_m, {1}_q, "
                         "part[w * {2} + {3}], part[w * {2} + {4}], "
                         "part[w * {2} + {5}]);\n",
                         in, part.name, scratchFloats, first, first + 1,
                         first + 2);
    else
      out += fmt::format(
          "{}    {} = {};\n", in, part.name,
          combineText(part, part.name,
                      fmt::format("part[w * {} + {}]", scratchFloats, first)));
  }
  out += in + "  }\n" + in + "}\n";
  return out;
}

std::string emitSlotOrderCombine(unsigned rows, llvm::StringRef slot,
                                 llvm::StringRef counter,
                                 llvm::StringRef publish, llvm::StringRef fold,
                                 llvm::StringRef indent) {
  return fmt::format("{0}for (int {1} = 1; {1} < {2}; ++{1}) {{\n"
                     "{0}  __syncthreads();\n"
                     "{0}  if ({3} == {1}) {{\n"
                     "{4}"
                     "{0}  }}\n"
                     "{0}  __syncthreads();\n"
                     "{0}  if ({3} == 0) {{\n"
                     "{5}"
                     "{0}  }}\n"
                     "{0}}}\n",
                     indent.str(), counter.str(), rows, slot.str(),
                     publish.str(), fold.str());
}

llvm::SmallVector<std::string>
getRowKernelParams(llvm::ArrayRef<ArgInfo> args,
                   llvm::function_ref<std::string(unsigned)> name) {
  llvm::SmallVector<std::string> params;
  for (auto [index, arg] : llvm::enumerate(args))
    if (arg.role != ArgRole::hyper)
      params.push_back(fmt::format("{}{} *__restrict__ {}",
                                   arg.role == ArgRole::input ? "const " : "",
                                   getCudaStorageType(arg.dtype), name(index)));
  for (auto [index, arg] : llvm::enumerate(args))
    if (arg.role == ArgRole::hyper)
      params.push_back("double " + name(index));
  params.push_back("long long rows");
  params.push_back("float *__restrict__ partials");
  return params;
}

std::string emitColumnFinishKernel(llvm::StringRef planName,
                                   const KernelInfo &finish, int64_t cols,
                                   llvm::ArrayRef<ColumnFinishOutput> outputs) {
  llvm::SmallVector<std::string> params{"const float *__restrict__ partials",
                                        "int grid"};
  for (const ColumnFinishOutput &output : outputs)
    params.push_back(
        fmt::format("{} *__restrict__ {}", output.type, output.name));
  unsigned columns = finish.columnsPerBlock;
  unsigned slices = finish.blockSize / columns;
  // Loads of one thread in flight together: the partials were just written,
  // so each round trip is an L2 hit, and a slice of about grid / slices
  // partial rows takes a few rounds.
  constexpr unsigned kLoadsInFlight = 16;
  std::string out = fmt::format(
      "// The column sums of @{0}: the partials of {1} columns a block, slice\n"
      "// s of its threads adding the blocks b = s (mod {2}) in order, then "
      "the\n"
      "// slices added in order, so the bits depend only on the grid.\n"
      "extern \"C\" __global__ void __launch_bounds__({3})\n{4}({5}) {{\n"
      "  kfuse_grid_dependency_sync();\n"
      "  __shared__ float kfuse_slices[{2}][{1}];\n"
      "  const int column = threadIdx.x % {1};\n"
      "  const int slice = threadIdx.x / {1};\n"
      "  const int col = blockIdx.x * {1} + column;\n"
      "  float total = 0.0f;\n"
      "  if (col < {6}) {{\n"
      "    const float *p = partials + (long long)blockIdx.y * grid * {6} + "
      "col;\n"
      "    for (int b0 = slice; b0 < grid; b0 += {7}) {{\n"
      "      float t[{8}];\n"
      "#pragma unroll\n"
      "      for (int k = 0; k < {8}; ++k) {{\n"
      "        const int b = b0 + k * {2};\n"
      "        t[k] = b < grid ? p[(long long)b * {6}] : 0.0f;\n"
      "      }}\n"
      "#pragma unroll\n"
      "      for (int k = 0; k < {8}; ++k)\n"
      "        total += t[k];\n"
      "    }}\n"
      "  }}\n"
      "  kfuse_slices[slice][column] = total;\n"
      "  __syncthreads();\n"
      "  if (slice != 0 || col >= {6})\n"
      "    return;\n"
      "  total = kfuse_slices[0][column];\n"
      "#pragma unroll\n"
      "  for (int s = 1; s < {2}; ++s)\n"
      "    total += kfuse_slices[s][column];\n"
      "  switch (blockIdx.y) {{\n",
      planName.str(), columns, slices, finish.blockSize, finish.name,
      llvm::join(params, ", "), cols, slices * kLoadsInFlight, kLoadsInFlight);
  for (auto [position, output] : llvm::enumerate(outputs))
    out += fmt::format("  case {}:\n"
                       "    {}[col] = {};\n"
                       "    break;\n",
                       position, output.name, output.value);
  out += "  }\n}\n";
  return out;
}

} // namespace kfuse
