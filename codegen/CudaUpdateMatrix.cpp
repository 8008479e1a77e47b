//===- CudaUpdateMatrix.cpp - phase kernels of 2-D updates ----------------===//
//
// A 2-D update (params as matrices, states per row or per column) runs over
// the multi-tensor table like any other, with chunks of whole rows. A phase
// kernel has up to three loops per chunk, each calling the phase's element
// function: over the chunk's elements (the values per element, and the
// reductions of elements over rows, columns and the tensor), over its rows
// (the values per row a state stores, and their reductions over the
// tensor), and over its share of the tensor's columns (the same per
// column). Each loop passes the inputs of other levels as zero and discards
// their outputs; the element function is inlined, so the compiler drops
// the math they would feed.
//
// The element loop walks the chunk by strips of blockDim.x column vectors,
// each strip row by row: a thread keeps its columns' sums in registers over
// the chunk's rows, and each row's sum is a butterfly within each warp, then
// the warps' values in shared memory, combined in warp order once the chunk
// is done. Every combination happens in an order fixed by the table, so a
// result repeats bit for bit.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitterInternal.h"
#include "codegen/CudaOps.h"
#include "codegen/CudaRows.h"

#include <fmt/format.h>

namespace kfuse::update {

static constexpr unsigned kWarps = kBlockSize / 32;

/// Elements a thread of the scalar register-row loop holds at most, where
/// its rows fit a block so.
static constexpr unsigned kScalarRowElementsPerThread = 8;

// Every load of a 2-D kernel goes through L2 only (ld.global.cg): a phase
// writes values per row or per column (and elements of rows that share a
// cache line with another chunk's) that blocks on other SMs read in a later
// phase of the same cooperative launch, and an SM's L1 may still hold the
// line from before. Streams gain nothing from L1; the rows' and columns'
// values are read from L2.
static constexpr llvm::StringLiteral kMatrixPrelude = R"cuda(
template <typename T>
static __device__ __forceinline__ T kfuse_ldcg_vector(const T *address) {
  static_assert(sizeof(T) % 16 == 0, "vectors are whole 16-byte pieces");
  T value;
  const uint4 *in = reinterpret_cast<const uint4 *>(address);
  uint4 *out = reinterpret_cast<uint4 *>(&value);
#pragma unroll
  for (int k = 0; k < int(sizeof(T) / 16); ++k)
    out[k] = __ldcg(in + k);
  return value;
}
)cuda";

llvm::StringRef getMatrixPrelude() { return kMatrixPrelude.drop_front(); }

/// Combines `value` of every lane of the warp into each lane, in a fixed
/// butterfly.
static std::string emitWarpCombine(StringRef value, ReduceKind kind,
                                   StringRef indent) {
  return fmt::format(
      "#pragma unroll\n"
      "{0}for (int kfuse_m = 16; kfuse_m > 0; kfuse_m >>= 1)\n"
      "{0}  {1} = {2}({1}, __shfl_xor_sync(0xffffffffu, {1}, kfuse_m));\n",
      indent.str(), value.str(), getCombineFunction(kind));
}

static bool hasLevel(ArrayRef<ChunkReduction> reductions, ArgLevel level) {
  return llvm::any_of(reductions, [&](const ChunkReduction &reduction) {
    return reduction.level == level;
  });
}

/// The position of `reduction` among the kernel's row reductions.
static unsigned rowSlotOf(ArrayRef<ChunkReduction> reductions,
                          const ChunkReduction &reduction) {
  unsigned slot = 0;
  for (const ChunkReduction &other : reductions) {
    if (&other == &reduction)
      return slot;
    slot += other.level == ArgLevel::row;
  }
  return slot;
}

/// Whether a loop over `level` has anything to do: a store of that level or
/// a reduction of values of that level.
static bool hasWork(const KernelBody &kernel, ArgLevel level) {
  return llvm::any_of(kernel.slots,
                      [&](const Slot &slot) {
                        return slot.param.written && slot.level == level;
                      }) ||
         llvm::any_of(kernel.reductions, [&](const ChunkReduction &reduction) {
           return reduction.source == level;
         });
}

std::string
UpdateEmitter::callElementAt(KernelBody &kernel, ArgLevel level,
                             const DenseMap<unsigned, std::string> &inputs,
                             const DenseMap<unsigned, std::string> &outputs) {
  // Inputs of other levels are zero; a row's total is an input per element
  // too. Reductions of other levels' values accumulate into a discarded
  // float, a column's in the element loop into the lane's own column.
  return callElement(
      kernel,
      [&](unsigned position) {
        auto it = inputs.find(position);
        return it != inputs.end() ? it->second : std::string("{}");
      },
      [&](unsigned position) { return outputs.lookup(position); },
      [&](const KernelBody::LineInput &line) {
        bool available = line.level == level || (level == ArgLevel::element &&
                                                 line.level == ArgLevel::row);
        return available ? line.name : std::string("0.0f");
      },
      [&](const ChunkReduction &reduction) -> std::string {
        if (reduction.source != level)
          return "kfuse_unused";
        if (reduction.level == ArgLevel::column)
          return reduction.accumulator + "[j]";
        return reduction.accumulator;
      });
}

std::string UpdateEmitter::emitMatrixElementLoop(KernelBody &kernel,
                                                 unsigned width) {
  std::string out;
  std::string indent = "          ";
  bool vector = width > 1;
  auto vectorType = [&](const Slot &slot) {
    return getVectorType(slot.param.dtype, kMaxVectorBytes);
  };
  // Column values are the same for every row of a strip (no phase writes
  // one its element loop reads): loaded once per strip, before the rows.
  std::string columnLoads, loads, outputs, stores;
  DenseMap<unsigned, std::string> inputs, outs;
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind != KernelParam::Kind::Tensor)
      continue;
    std::string storage = getCudaStorageType(slot.param.dtype);
    if (slot.param.read) {
      std::string local = kernel.names.unique(slot.name + "_e");
      if (slot.level == ArgLevel::row) {
        loads += fmt::format("{}const {} {} = __ldcg(&{}[r]);\n", indent,
                             storage, local, slot.name);
        inputs[position] = local;
      } else if (slot.level == ArgLevel::column) {
        std::string type = vector ? vectorType(slot) : storage;
        std::string load =
            vector ? fmt::format("kfuse_ldcg_vector(reinterpret_cast<const {} "
                                 "*>({}) + cv)",
                                 type, slot.name)
                   : fmt::format("__ldcg(&{}[cv])", slot.name);
        columnLoads += fmt::format("        {0} {1}{{}};\n"
                                   "        if (active)\n"
                                   "          {1} = {2};\n",
                                   type, local, load);
        inputs[position] = vector ? local + ".v[j]" : local;
      } else if (vector) {
        loads += fmt::format("{0}const {1} {2} = kfuse_ldcg_vector(\n"
                             "{0}    reinterpret_cast<const {1} *>({3}) + "
                             "i);\n",
                             indent, vectorType(slot), local, slot.name);
        inputs[position] = local + ".v[j]";
      } else {
        loads += fmt::format("{}const {} {} = __ldcg(&{}[i]);\n", indent,
                             storage, local, slot.name);
        inputs[position] = local;
      }
    }
    if (slot.param.written) {
      std::string local = kernel.names.unique(slot.name + "_w");
      if (slot.level != ArgLevel::element) {
        outputs += fmt::format("{}{} {};\n", indent, storage, local);
        outs[position] = local; // per row or column: the other loops store
        continue;
      }
      if (vector) {
        outputs += fmt::format("{}{} {};\n", indent, vectorType(slot), local);
        outs[position] = local + ".v[j]";
        stores += fmt::format("{}reinterpret_cast<{} *>({})[i] = {};\n", indent,
                              vectorType(slot), slot.name, local);
      } else {
        outputs += fmt::format("{}{} {};\n", indent, storage, local);
        outs[position] = local;
        stores += fmt::format("{}{}[i] = {};\n", indent, slot.name, local);
      }
    }
  }
  for (const KernelBody::LineInput &line : kernel.lineInputs)
    if (line.level == ArgLevel::row)
      loads += fmt::format(
          "{}const float {} = __ldcg(&row_totals[(entry->row_base + r) * {} "
          "+ {}]);\n",
          indent, line.name, plan.numRowReductions, line.reduction);
  std::string call = callElementAt(kernel, ArgLevel::element, inputs, outs);

  out += fmt::format("      const long long vcols = cols / {};\n"
                     "      for (long long cv0 = 0; cv0 < vcols; cv0 += "
                     "blockDim.x) {{\n"
                     "        const long long cv = cv0 + threadIdx.x;\n"
                     "        const bool active = cv < vcols;\n",
                     width);
  out += columnLoads;
  for (const ChunkReduction &reduction : kernel.reductions)
    if (reduction.level == ArgLevel::column)
      out +=
          fmt::format("        float {}[{}];\n"
                      "#pragma unroll\n"
                      "        for (int j = 0; j < {}; ++j)\n"
                      "          {}[j] = {};\n",
                      reduction.accumulator, width, width,
                      reduction.accumulator, getReduceIdentity(reduction.kind));
  // Every lane of a warp takes part in each row's sum; without one, a lane
  // past the columns skips the rows, and the loop body runs unconditionally,
  // so that the compiler hoists what is the same for every row (a uniform
  // divisor's reciprocal) out of it.
  bool rowReductions = hasLevel(kernel.reductions, ArgLevel::row);
  if (rowReductions)
    out += "        for (long long r = r0; r < r1; ++r) {\n";
  else
    out += "        for (long long r = active ? r0 : r1; r < r1; ++r) {\n";
  for (const ChunkReduction &reduction : kernel.reductions)
    if (reduction.level == ArgLevel::row)
      out += fmt::format("          float {} = {};\n", reduction.accumulator,
                         getReduceIdentity(reduction.kind));
  out += rowReductions ? "          if (active) {\n" : "          {\n";
  std::string inner = "            ";
  auto reindent = [&](const std::string &text) {
    std::string result;
    for (StringRef line : llvm::split(StringRef(text).rtrim('\n'), '\n'))
      if (!line.empty())
        result += "  " + line.str() + "\n";
    return result;
  };
  out += inner + "const long long i = r * vcols + cv;\n";
  out += reindent(loads) + reindent(outputs);
  out += fmt::format("#pragma unroll\n"
                     "{0}for (int j = 0; j < {1}; ++j)\n"
                     "{0}  {2};\n",
                     inner, width, call);
  out += reindent(stores);
  out += "          }\n";
  // Each row's sum: a butterfly within the warp, then the warp's value into
  // its slot of the row in shared memory (inactive lanes add the identity).
  for (const ChunkReduction &reduction : kernel.reductions) {
    if (reduction.level != ArgLevel::row)
      continue;
    out += emitWarpCombine(reduction.accumulator, reduction.kind, "          ");
    out += fmt::format(
        "          if (threadIdx.x % 32 == 0) {{\n"
        "            float &kfuse_slot = kfuse_row_acc[({2} * {3} + (r - r0)) "
        "* {4} + threadIdx.x / 32];\n"
        "            kfuse_slot = {1}(kfuse_slot, {0});\n"
        "          }}\n",
        reduction.accumulator, getCombineFunction(reduction.kind),
        rowSlotOf(kernel.reductions, reduction), kMaxChunkRows, kWarps);
  }
  out += "        }\n";
  for (const ChunkReduction &reduction : kernel.reductions)
    if (reduction.level == ArgLevel::column)
      out += fmt::format(
          "        if (active) {{\n"
          "#pragma unroll\n"
          "          for (int j = 0; j < {0}; ++j)\n"
          "            col_partials[(entry->col_partial_base + (c - "
          "entry->first_chunk) * cols +\n"
          "                          cv * {0} + j) * {1} + {2}] = {3}[j];\n"
          "        }}\n",
          width, plan.numColReductions, reduction.index, reduction.accumulator);
  out += "      }\n";
  return out;
}

std::string UpdateEmitter::emitMatrixLineLoop(KernelBody &kernel,
                                              ArgLevel level) {
  bool row = level == ArgLevel::row;
  std::string indent = row ? "        " : "          ";
  std::string out, loads, outputs, stores, totals;
  DenseMap<unsigned, std::string> inputs, outs;
  StringRef index = row ? "r" : "x";
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind != KernelParam::Kind::Tensor)
      continue;
    std::string storage = getCudaStorageType(slot.param.dtype);
    if (slot.param.read && slot.level == level) {
      std::string local = kernel.names.unique(slot.name + (row ? "_r" : "_c"));
      loads += fmt::format("{}const {} {} = __ldcg(&{}[{}]);\n", indent,
                           storage, local, slot.name, index.str());
      inputs[position] = local;
    }
    if (slot.param.written) {
      std::string local =
          kernel.names.unique(slot.name + (row ? "_rw" : "_cw"));
      outputs += fmt::format("{}{} {};\n", indent, storage, local);
      outs[position] = local;
      if (slot.level == level)
        stores += fmt::format("{}{}[{}] = {};\n", indent, slot.name,
                              index.str(), local);
    }
  }
  for (const KernelBody::LineInput &line : kernel.lineInputs) {
    if (line.level != level)
      continue;
    if (row) {
      loads +=
          fmt::format("{}const float {} = __ldcg(&row_totals[(entry->"
                      "row_base + r) * {} + {}]);\n",
                      indent, line.name, plan.numRowReductions, line.reduction);
      continue;
    }
    // A column's total: its partials, each lane's share in chunk order,
    // then the lanes' in a fixed butterfly (every lane gets it).
    ReduceKind kind = line.kind;
    totals += fmt::format(
        "{0}float {1} = {2};\n"
        "{0}for (long long k = kfuse_lane; k < nq; k += 32)\n"
        "{0}  {1} = {3}({1}, __ldcg(&col_partials[(entry->col_partial_base + "
        "k * cols + x) * {4} + {5}]));\n",
        indent, line.name, getReduceIdentity(kind), getCombineFunction(kind),
        plan.numColReductions, line.reduction);
    totals += emitWarpCombine(line.name, kind, indent);
  }
  std::string call = callElementAt(kernel, level, inputs, outs);
  if (row)
    out += "      for (long long r = r0 + threadIdx.x; r < r1; r += "
           "blockDim.x) {\n";
  if (row) {
    out += loads + outputs + indent + call + ";\n" + stores + "      }\n";
    return out;
  }
  // A warp per column: a tall matrix has thousands of chunks, whose
  // partials one thread would sum in a serial chain of L2 loads.
  out += "      // This chunk's share of the tensor's columns, a warp each.\n"
         "      const long long q = c - entry->first_chunk;\n"
         "      const long long cb = q * cols / nq, ce = (q + 1) * cols / "
         "nq;\n"
         "      const int kfuse_lane = threadIdx.x % 32;\n"
         "      for (long long x = cb + threadIdx.x / 32; x < ce;\n"
         "           x += blockDim.x / 32) {\n";
  out += totals + "        if (kfuse_lane == 0) {\n" + loads + outputs +
         indent + call + ";\n" + stores + "        }\n      }\n";
  return out;
}

FailureOr<std::string> UpdateEmitter::emitRegisterRowLoop(KernelBody &kernel,
                                                          unsigned width) {
  const bool vector = width > 1;
  unsigned depth = 0;
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    depth = std::max(depth, row.depth);

  // The row spread over the block's threads as a norm's is: every tensor of
  // the row's elements the loop reads is an array a thread holds (or
  // stages), every column sum one it accumulates.
  RegisterDemand demand;
  for (const Slot &slot : kernel.slots) {
    if (slot.param.kind != KernelParam::Kind::Tensor || !slot.param.read)
      continue;
    if (slot.level == ArgLevel::column)
      ++demand.colInputs;
    if (slot.level != ArgLevel::element)
      continue;
    unsigned bytes = dtypeSize(slot.param.dtype);
    ++demand.fullInputs;
    demand.fullInputBytes += bytes;
    demand.narrowestInputBytes = std::min(demand.narrowestInputBytes, bytes);
    demand.widestInputBytes = std::max(demand.widestInputBytes, bytes);
  }
  demand.columnSums =
      llvm::count_if(kernel.reductions, [](const ChunkReduction &reduction) {
        return reduction.level == ArgLevel::column;
      });
  // Rows of 16-byte vectors are staged in shared memory, as a norm's are:
  // registers then stop limiting the blocks resident. A table's chunk has
  // too few rows for the norm's prefetch of the next row group, so it takes
  // one buffer.
  RowLayoutOptions options;
  if (rowsCall) {
    // A norm's row kernel: blocks of the layout's size, and its staging
    // (with the next row groups prefetched where the layout asks). Column
    // inputs are loaded where a call reads them (ColumnInputs::reload).
    options = *rowsCall;
    options.columnInputs = RowLayoutOptions::ColumnInputs::reload;
  } else {
    options.stages = 1;
    options.targetBlockSize = kBlockSize;
    options.fixedBlockSize = true;
    // The table walk keeps each tensor's 64-bit pointer and the chunk's
    // bounds live through the loop (ptxas: the LayerNorm backward's layout
    // of 32 elements a thread, estimated at 120 registers, took 128 and
    // spilled).
    options.reservedRegisters = 8;
    for (const Slot &slot : kernel.slots)
      if (slot.param.kind == KernelParam::Kind::Tensor)
        options.reservedRegisters += 2;
    options.columnSums = RowLayoutOptions::ColumnSums::registers;
  }
  // A table's scalar loop (entries not aligned for vectors, rare) holds
  // few elements a thread, so that its registers never set the kernel's.
  if (!vector && !rowsCall)
    options.maxElementsPerThread = std::max<int64_t>(
        kScalarRowElementsPerThread, llvm::divideCeil(plan.cols, kBlockSize));
  const RowLayout layout = chooseRowLayout(plan.cols, width, demand, options);
  rowLayout = layout;
  // A row kernel's row longer than a block holds is looped over: each call
  // loads the thread's vectors of the element inputs again (from L2 where
  // the row fits there).
  const bool looped = rowsCall && !layout.inRegisters;
  // With one row a block each column has one owner thread, which may add
  // the block's rows in shared memory or in the block's own slice of the
  // partials instead of registers (RowLayout::sums).
  const bool ownedSums = layout.sums != RowLayout::Sums::registers;
  if (!looped &&
      (!layout.inRegisters || (!rowsCall && layout.blockSize() != kBlockSize)))
    return kernel.fused.emitOpError()
           << "holds rows of " << plan.cols << " elements of "
           << demand.fullInputs
           << " tensors in registers, more than a block's registers hold";
  const int64_t vectors = layout.vectors;
  const unsigned threads = layout.threads;
  const unsigned items = layout.items * layout.chunks;
  const std::string unroll =
      looped ? fmt::format("#pragma unroll {}\n", layout.items)
             : std::string("#pragma unroll\n");

  std::string loads, outputs, stores, rowStores;
  DenseMap<unsigned, std::string> inputs, outs;
  auto element = [&](const std::string &array) {
    return array + (vector ? "[k].v[j]" : "[k]");
  };
  // Staged inputs: the shared-memory address of the thread's vector k of
  // the row (`{base} + k * {threads * 16}`, plus the buffer's offset where
  // there are several), read back before each call. Each input has
  // `stages` buffers of a row group.
  struct StagedInput {
    std::string base, type, pointer;
  };
  SmallVector<StagedInput> staged;
  std::string stageBases, vectorReads;
  uint64_t stageOffset = 0;
  const unsigned stages = layout.stages;
  const uint64_t bufferBytes =
      uint64_t(layout.rows) * layout.slotVectors() * 16;
  std::string bufferOffset = stages > 1 ? " + kfuse_buffer" : "";
  // The vector k of a thread is vector k * threads + lane of its row; past
  // the row's end (a layout that does not split it exactly) there is none.
  std::string index =
      fmt::format("r * {} + k * {} + kfuse_lane", vectors, threads);
  std::string inRow = layout.exact() ? std::string()
                                     : fmt::format("k * {} + kfuse_lane < {}",
                                                   threads, vectors);
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind == KernelParam::Kind::Temporary)
      return kernel.fused.emitOpError()
             << "keeps a value for a later phase in a kernel whose rows are "
                "held in registers, which is not generated; write it to a "
                "state instead";
    if (slot.param.kind != KernelParam::Kind::Tensor)
      continue;
    if (slot.level == ArgLevel::column && slot.param.written)
      return kernel.fused.emitOpError()
             << "writes '" << getArgName(update, slot.param.index)
             << "', a value per column, in a kernel whose rows are held in "
                "registers, which is not generated";
    std::string storage = getCudaStorageType(slot.param.dtype);
    std::string type =
        vector ? getVectorType(slot.param.dtype, kMaxVectorBytes) : storage;
    if (slot.param.read) {
      std::string local = kernel.names.unique(slot.name + "_e");
      if (slot.level == ArgLevel::row) {
        loads += fmt::format("        {0} {1}{{}};\n"
                             "        if (kfuse_valid)\n"
                             "          {1} = __ldcg(&{2}[r]);\n",
                             storage, local, slot.name);
        inputs[position] = local;
      } else if (layout.stages > 0 && slot.level == ArgLevel::element) {
        // Each thread copies the vectors it reads back: no barrier needed.
        std::string base = kernel.names.unique(slot.name + "_stage");
        stageBases += fmt::format(
            "      const unsigned {} = kfuse_stages + {}u + (kfuse_slot * {} + "
            "kfuse_lane) * 16u;\n",
            base, stageOffset, layout.slotVectors());
        stageOffset += stages * bufferBytes;
        staged.push_back({base, type, slot.name});
        vectorReads +=
            fmt::format("{{0}}const {0} {1} = kfuse_unstage<{0}>({2}{3} + "
                        "k * {4}u);\n",
                        type, local, base, bufferOffset, threads * 16);
        inputs[position] = local + ".v[j]";
      } else {
        bool column = slot.level == ArgLevel::column;
        std::string at =
            column ? fmt::format("k * {} + kfuse_lane", threads) : index;
        std::string load =
            vector ? fmt::format("kfuse_ldcg_vector(reinterpret_cast<const "
                                 "{} *>({}) + {})",
                                 type, slot.name, at)
                   : fmt::format("__ldcg(&{}[{}])", slot.name, at);
        if (column || looped) {
          // A value per column (the thread's columns, the same in every
          // row) is loaded where a call reads it: held over the row, it
          // would take registers the row's elements need, as a norm's
          // column inputs would (ColumnInputs::reload). So is every input
          // of a looped row.
          vectorReads +=
              fmt::format("{{0}}const {} {} = {};\n", type, local, load);
          inputs[position] = vector ? local + ".v[j]" : local;
          if (column)
            continue;
        } else {
          loads += fmt::format(
              "        {0} {1}[{2}] = {{}};\n"
              "        if (kfuse_valid) {{\n"
              "#pragma unroll\n"
              "          for (int k = 0; k < {2}; ++k)\n"
              "{3}"
              "            {4}{1}[k] = {5};\n"
              "        }}\n",
              type, local, items,
              inRow.empty() ? "" : "            if (" + inRow + ")\n",
              inRow.empty() ? "" : "  ", load);
          inputs[position] = element(local);
        }
      }
    }
    if (!slot.param.written)
      continue;
    std::string local = kernel.names.unique(slot.name + "_w");
    if (slot.level == ArgLevel::row) {
      outputs += fmt::format("        {} {};\n", storage, local);
      outs[position] = local;
      rowStores += fmt::format("          if (kfuse_lane == 0)\n"
                               "            {}[r] = {};\n",
                               slot.name, local);
    } else {
      // Each call's vector k, stored by the last call.
      vectorReads += fmt::format("{{0}}{} {};\n", type, local);
      outs[position] = vector ? local + ".v[j]" : local;
      stores += fmt::format(
          "            {}[{}] = {};\n",
          vector ? fmt::format("reinterpret_cast<{} *>({})", type, slot.name)
                 : slot.name,
          index, local);
    }
  }
  // Copies of row `row` (valid where `valid`) into the buffer at byte
  // offset `buffer` of every staged input's, as one commit group.
  auto stageCopies = [&](StringRef row, StringRef valid, StringRef buffer) {
    std::string text;
    std::string at = row == "r" ? index
                                : fmt::format("({}) * {} + k * {} + kfuse_lane",
                                              row.str(), vectors, threads);
    for (const StagedInput &input : staged)
      text += fmt::format(
          "#pragma unroll\n"
          "          for (int k = 0; k < {0}; ++k)\n"
          "{1}"
          "            {2}kfuse_stage<{3}>({4}{5} + k * {6}u, reinterpret_cast<"
          "const {3} *>({7}) + ({8} ? {9} : 0), {8});\n",
          items, inRow.empty() ? "" : "            if (" + inRow + ")\n",
          inRow.empty() ? "" : "  ", input.type, input.base, buffer.str(),
          threads * 16, input.pointer, valid.str(), at);
    return text + "          kfuse_stage_commit();\n";
  };
  // With a static row length every row reduction is row-local; totals of
  // earlier phases per row or column would be a schedule not generated.
  if (!kernel.lineInputs.empty() ||
      llvm::any_of(kernel.reductions, [](const ChunkReduction &reduction) {
        return reduction.level == ArgLevel::row ||
               (reduction.level == ArgLevel::column &&
                reduction.source != ArgLevel::element);
      }))
    return kernel.fused.emitOpError()
           << "combines rows held in registers with reductions over rows or "
              "columns in phases, which is not generated";
  // A column's sum: each thread adds its columns over the rows it holds,
  // then the block's row slots add theirs in slot order.
  std::string columnAccumulators, columnPartials;
  // Loops over the thread's columns (its vector k's element j) from
  // `indent` spaces, and the indent of their body.
  auto forEachColumn = [&](unsigned indent, bool unrollVectors) {
    std::string in(indent, ' ');
    return fmt::format("{0}{1}for (int k = 0; k < {2}; ++k)\n"
                       "{3}"
                       "#pragma unroll\n"
                       "{1}  {4}for (int j = 0; j < {5}; ++j)\n",
                       unrollVectors ? "#pragma unroll\n" : "", in, items,
                       inRow.empty() ? "" : in + "  if (" + inRow + ")\n",
                       inRow.empty() ? "" : "  ", width);
  };
  auto columnBodyIndent = [&](unsigned indent) {
    return std::string(indent + (inRow.empty() ? 4 : 6), ' ');
  };
  const std::string column =
      fmt::format("(k * {} + kfuse_lane) * {} + j", threads, width);
  for (const ChunkReduction &reduction : kernel.reductions) {
    if (reduction.level != ArgLevel::column)
      continue;
    if (ownedSums) {
      // The owner adds the block's rows in row order, then (from shared
      // memory) stores them as the block's partial.
      std::string partial = fmt::format(
          "partials + ((long long){} * gridDim.x + blockIdx.x) * {}",
          reduction.index, plan.cols);
      std::string base =
          layout.sums == RowLayout::Sums::shared
              ? fmt::format("reinterpret_cast<float *>(kfuse_smem + {}) + {}",
                            stageOffset, reduction.index * plan.cols)
              : partial;
      std::string forEach = forEachColumn(6, /*unrollVectors=*/false);
      std::string indent = columnBodyIndent(6);
      columnAccumulators +=
          fmt::format("      float *const {0} = {1};\n", reduction.accumulator,
                      base) +
          forEach +
          fmt::format("{}{}[{}] = {};\n", indent, reduction.accumulator, column,
                      getReduceIdentity(reduction.kind));
      if (layout.sums == RowLayout::Sums::shared)
        columnPartials +=
            forEach + fmt::format("{}({})[{}] = {}[{}];\n", indent, partial,
                                  column, reduction.accumulator, column);
      continue;
    }
    columnAccumulators += fmt::format("      float {0}[{1}][{2}];\n"
                                      "#pragma unroll\n"
                                      "      for (int k = 0; k < {1}; ++k)\n"
                                      "#pragma unroll\n"
                                      "        for (int j = 0; j < {2}; ++j)\n"
                                      "          {0}[k][j] = {3};\n",
                                      reduction.accumulator, items, width,
                                      getReduceIdentity(reduction.kind));
    std::string forEach = forEachColumn(8, /*unrollVectors=*/true);
    std::string body = columnBodyIndent(8);
    if (layout.rows > 1)
      columnPartials += emitSlotOrderCombine(
          layout.rows, "kfuse_slot", "kfuse_s",
          fmt::format("{0}{1}kfuse_col_red[{2}] = {3}[k][j];\n", forEach, body,
                      column, reduction.accumulator),
          fmt::format("{0}{1}{3}[k][j] = {4}({3}[k][j], kfuse_col_red[{2}]);\n",
                      forEach, body, column, reduction.accumulator,
                      getCombineFunction(reduction.kind)),
          "      ");
    // A table's chunk stores one partial per column and reduction; a call's
    // block one per column, reduction and block (the norm ABI's partials,
    // which the finish kernel adds in block order).
    std::string partial =
        rowsCall ? fmt::format("partials[((long long){} * gridDim.x + "
                               "blockIdx.x) * {} + {}]",
                               reduction.index, plan.cols, column)
                 : fmt::format("col_partials[(entry->col_partial_base + (c - "
                               "entry->first_chunk) * cols + {}) * {} + {}]",
                               column, plan.numColReductions, reduction.index);
    columnPartials +=
        fmt::format("      if (kfuse_slot == 0) {{\n"
                    "{0}{1}{2} = {3}[k][j];\n"
                    "      }}\n",
                    forEach, body, partial, reduction.accumulator);
  }
  bool rowSourced =
      llvm::any_of(kernel.reductions, [](const ChunkReduction &reduction) {
        return reduction.source == ArgLevel::row;
      });

  // Call `stage` (1 to depth: the row-local reductions of that depth; past
  // it: the stores) on every element the thread holds.
  auto callText = [&](unsigned stage, ArgLevel source) {
    return callElement(
        kernel,
        [&](unsigned position) {
          auto it = inputs.find(position);
          return it != inputs.end() ? it->second : std::string("{}");
        },
        [&](unsigned position) { return outs.lookup(position); }, nullptr,
        [&](const ChunkReduction &reduction) {
          // Values per row are reduced once per row, by the row call.
          if (stage <= depth || reduction.source != source)
            return std::string("kfuse_unused");
          if (reduction.level != ArgLevel::column)
            return reduction.accumulator;
          return ownedSums ? fmt::format("{}[(k * {} + kfuse_lane) * {} + j]",
                                         reduction.accumulator, threads, width)
                           : reduction.accumulator + "[k][j]";
        },
        [&](const KernelBody::RowLocal &row) {
          return row.depth < stage ? row.total : std::string("0.0f");
        },
        [&](const KernelBody::RowLocal &row) {
          return row.depth == stage ? row.accumulator
                 : row.kind == ReduceKind::variance
                     ? std::string("kfuse_unused_moments")
                     : std::string("kfuse_unused");
        });
  };
  auto call = [&](unsigned stage, StringRef after) {
    std::string text = callText(stage, ArgLevel::element);
    // Past the row's end a thread holds no vector k.
    std::string indent = inRow.empty() ? "            " : "              ";
    std::string body = fmt::format(fmt::runtime(vectorReads), indent) +
                       fmt::format("#pragma unroll\n"
                                   "{0}for (int j = 0; j < {1}; ++j)\n"
                                   "{0}  {2};\n",
                                   indent, width, text);
    for (StringRef line : llvm::split(after.rtrim('\n'), '\n'))
      if (!line.empty())
        body += indent.substr(12) + line.str() + "\n";
    if (!inRow.empty())
      body = "            if (" + inRow + ") {\n" + body + "            }\n";
    return fmt::format("{0}"
                       "          for (int k = 0; k < {1}; ++k) {{\n"
                       "{2}"
                       "          }}\n",
                       unroll, items, body);
  };

  // Scratch for the warps of a row: one region per depth, or two that
  // alternate by row when there is one depth, so that a fast warp never
  // overwrites what a slow one still reads.
  unsigned warps = layout.warpsPerRow();
  unsigned scratchFloats = 0;
  for (unsigned stage = 1; stage <= depth; ++stage) {
    SmallVector<RowPart> parts;
    for (const KernelBody::RowLocal &row : kernel.rowLocals)
      if (row.depth == stage)
        parts.push_back({row.kind, row.accumulator});
    scratchFloats = std::max(scratchFloats, getRowPartFloats(parts));
  }
  std::string out = fmt::format(
      "      // Rows of {0} elements in registers{5}: {1} thread(s) a row, {2} "
      "vector(s) of {3} a thread, {4} row(s) a block.\n"
      "      const int kfuse_lane = threadIdx.x % {1};\n"
      "      const int kfuse_slot = threadIdx.x / {1};\n",
      plan.cols, threads, items, width, layout.rows,
      layout.stages > 0 ? " (inputs staged in shared memory)" : "");
  // Dynamic shared memory: the stages, then column sums kept there.
  uint64_t sharedBytes = stageOffset;
  if (layout.sums == RowLayout::Sums::shared)
    sharedBytes += uint64_t(demand.columnSums) * plan.cols * 4;
  if (sharedBytes > 0) {
    out +=
        "      extern __shared__ __align__(16) unsigned char kfuse_smem[];\n";
    kernel.info.sharedBytes =
        std::max<uint64_t>(kernel.info.sharedBytes, sharedBytes);
  }
  if (layout.stages > 0) {
    out += "      const unsigned kfuse_stages = "
           "kfuse_shared_address(kfuse_smem);\n" +
           stageBases;
    usesStaging = true;
  }
  // The vector loop's layout bounds the kernel: the scalar one is for
  // the rare entries not aligned for vectors.
  if (width == vectorWidth)
    kernel.info.launchBlocks = layout.launchBlocks;
  if (warps > 1) {
    out +=
        fmt::format("      __shared__ float kfuse_row_red[{}][{}];\n",
                    std::max(depth, 2u), layout.rows * warps * scratchFloats);
    if (depth == 1)
      out += "      int kfuse_parity = 0;\n";
  }
  out += columnAccumulators;
  if (!columnPartials.empty() && layout.rows > 1)
    out +=
        fmt::format("      __shared__ float kfuse_col_red[{}];\n", plan.cols);
  // The loop is uniform over each warp, whose lanes all take part in the
  // row totals' butterflies, and over the block where a row's warps meet
  // in shared memory; rows past the chunk's are invalid. (A block-uniform
  // loop for rows within a warp costs the block-rounded momentum 10
  // registers, and a resident block per SM.)
  // A table's chunk has its rows [r0, r1); a call's block takes every
  // gridDim.x-th group of rows.
  std::string stride = rowsCall ? fmt::format("gridDim.x * {}ll", layout.rows)
                                : std::to_string(layout.rows);
  if (stages > 1) {
    // The thread's first row is r0 + kfuse_slot in every form of the loop.
    out += "      int kfuse_read_stage = 0;\n";
    for (unsigned ahead = 0; ahead + 1 < stages; ++ahead)
      out +=
          fmt::format("      {{\n"
                      "          const long long kfuse_ahead = r0 + "
                      "kfuse_slot{};\n"
                      "          const bool kfuse_ahead_valid = "
                      "kfuse_ahead < r1;\n",
                      ahead == 0 ? std::string()
                                 : fmt::format(" + {} * ({})", ahead, stride)) +
          stageCopies("kfuse_ahead", "kfuse_ahead_valid",
                      ahead == 0 ? std::string()
                                 : fmt::format(" + {}u", ahead * bufferBytes)) +
          "      }\n";
  }
  if (warps > 1) {
    out += fmt::format("      for (long long rb = r0; rb < r1; rb += {}) {{\n"
                       "        const long long r = rb + kfuse_slot;\n",
                       stride);
  } else if (threads == kWarpSize) {
    out += fmt::format("      for (long long rb = r0 + kfuse_slot; rb < r1; "
                       "rb += {}) {{\n"
                       "        const long long r = rb;\n",
                       stride);
  } else {
    out += fmt::format("      for (long long rb = r0 + (kfuse_slot & ~{0}); "
                       "rb < r1;\n"
                       "           rb += {1}) {{\n"
                       "        const long long r = rb + (kfuse_slot & {0});\n",
                       kWarpSize / threads - 1, stride);
  }
  out += "        const bool kfuse_valid = r < r1;\n";
  if (stages == 1 && !staged.empty())
    out += "        {\n" + stageCopies("r", "kfuse_valid", "") +
           "          kfuse_stage_wait<0>();\n"
           "        }\n";
  if (stages > 1) {
    // This iteration reads buffer kfuse_read_stage, copied stages - 1
    // iterations ago; it copies the row stages - 1 iterations ahead into
    // the buffer the previous one read. Each thread reads back only what it
    // copied, so no barrier orders the buffers.
    std::string previous = stages == 2
                               ? std::string("(kfuse_read_stage ^ 1)")
                               : fmt::format("(kfuse_read_stage == 0 ? {} : "
                                             "kfuse_read_stage - 1)",
                                             stages - 1);
    out += fmt::format("        {{\n"
                       "          const long long kfuse_ahead = r + {0} * "
                       "({1});\n"
                       "          const bool kfuse_ahead_valid = kfuse_ahead "
                       "< r1;\n"
                       "          const unsigned kfuse_fill = {2} * {3}u;\n",
                       stages - 1, stride, previous, bufferBytes) +
           stageCopies("kfuse_ahead", "kfuse_ahead_valid", " + kfuse_fill") +
           fmt::format("          kfuse_stage_wait<{}>();\n"
                       "        }}\n"
                       "        const unsigned kfuse_buffer = "
                       "kfuse_read_stage * {}u;\n",
                       stages - 1, bufferBytes);
  }
  out += loads + outputs;
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    out += fmt::format("        float {} = 0.0f;\n", row.total);
  if (llvm::any_of(kernel.rowLocals, [](const KernelBody::RowLocal &row) {
        return row.kind == ReduceKind::variance;
      }))
    out += "        kfuse_moments kfuse_unused_moments = {};\n";
  for (unsigned stage = 1; stage <= depth; ++stage) {
    SmallVector<RowPart> parts;
    std::string finish;
    for (const KernelBody::RowLocal &row : kernel.rowLocals) {
      if (row.depth != stage)
        continue;
      if (row.kind == ReduceKind::variance)
        out +=
            fmt::format("        kfuse_moments {} = {{}};\n", row.accumulator);
      else
        out += fmt::format("        float {} = {};\n", row.accumulator,
                           getReduceIdentity(row.kind));
      parts.push_back({row.kind, row.accumulator});
      // A variance's part is the moments of the thread's elements (each of
      // as many elements where the row splits exactly: Chan's symmetric
      // merge).
      finish +=
          row.kind == ReduceKind::variance
              ? fmt::format("        {0} = {1}_n > 0.0f ? {1}_q / {1}_n : "
                            "0.0f;\n",
                            row.total, row.accumulator)
              : fmt::format("        {} = {};\n", row.total, row.accumulator);
    }
    out += "        if (kfuse_valid) {\n" + call(stage, "") + "        }\n";
    for (const RowPart &part : parts)
      if (part.kind == ReduceKind::variance)
        out += fmt::format("        float {0}_n, {0}_m, {0}_q;\n"
                           "        kfuse_moments_done({0}, {0}_n, {0}_m, "
                           "{0}_q);\n",
                           part.name);
    std::string region =
        depth == 1 ? std::string("kfuse_parity") : std::to_string(stage - 1);
    out += emitRowCombine(parts, layout, "kfuse_lane", "kfuse_slot",
                          "kfuse_row_red[" + region + "]", scratchFloats,
                          "        ") +
           finish;
  }
  std::string rowCall;
  if (rowSourced)
    // Reductions of values per row: the row's first thread, once, with its
    // first element (the values per row do not depend on it).
    rowCall = "          if (kfuse_lane == 0) {\n"
              "            const int k = 0, j = 0;\n" +
              fmt::format(fmt::runtime(vectorReads), "            ") +
              "            " + callText(depth + 1, ArgLevel::row) +
              ";\n"
              "          }\n";
  out += "        if (kfuse_valid) {\n" + call(depth + 1, stores) + rowCall +
         rowStores + "        }\n";
  if (warps > 1 && depth == 1)
    out += "        kfuse_parity ^= 1;\n";
  if (stages == 2)
    out += "        kfuse_read_stage ^= 1;\n";
  else if (stages > 2)
    out += fmt::format("        kfuse_read_stage = kfuse_read_stage == {} ? 0 "
                       ": kfuse_read_stage + 1;\n",
                       stages - 1);
  out += "      }\n";
  if (stages > 1)
    out += "      kfuse_stage_wait<0>(); // the last, empty prefetches\n";
  out += columnPartials;
  // The next chunk's rows use the scratch again.
  if (warps > 1 || (!columnPartials.empty() && layout.rows > 1))
    out += "      __syncthreads();\n";
  return out;
}

LogicalResult UpdateEmitter::emitRowsCallKernel(KernelBody &kernel,
                                                std::string &out) {
  FailureOr<std::string> loop = emitRegisterRowLoop(kernel, vectorWidth);
  if (failed(loop))
    return failure();
  const RowLayout &layout = rowLayout;
  // The norm ABI: every tensor argument's pointer and every hyper, each in
  // argument order, the row count and the column sums' workspace.
  DenseMap<unsigned, const Slot *> slotOf;
  for (const Slot &slot : kernel.slots)
    slotOf[slot.param.index] = &slot;
  SmallVector<std::string> params =
      getRowKernelParams(plan.args, [&](unsigned index) {
        const Slot *slot = slotOf.lookup(index);
        return slot ? slot->name
                    : kernel.names.unique("kfuse_unused_" +
                                          getArgName(update, index));
      });

  KernelInfo &info = kernel.info;
  setRowKernelLaunch(info, layout);
  info.name = kernel.name;
  info.location = formatLocation(update.getLoc());
  out += fmt::format(
      "// The row kernel of @{}, from {}: the register-row loop over a "
      "block's\n// groups of {} row(s), every gridDim.x-th.\n"
      "extern \"C\" __global__ void __launch_bounds__({}, {})\n{}({}) {{\n"
      "  kfuse_grid_dependency_sync();\n"
      "  float kfuse_unused = 0.0f; // what other loops' values feed\n",
      plan.name, info.location, layout.rows, info.blockSize, info.launchBlocks,
      info.name, llvm::join(params, ", "));
  if (!kernel.prologue.empty())
    out += "  // Uniform values, once per thread.\n" + kernel.prologue;
  out += kernel.uniformInit;
  out += fmt::format("  const long long r0 = blockIdx.x * {}ll, r1 = rows;\n",
                     layout.rows);
  out += "  {\n" + *loop + "  }\n}\n";
  plan.kernels.push_back(std::move(info));
  return success();
}

LogicalResult UpdateEmitter::emitRowsCallFinish(std::string &out) {
  // The second phase stores each column sum's total, converted to its
  // storage dtype at most: that is the finish kernel's work.
  FusedOp columns = fusedOps[1];
  Block &body = columns.getBody().front();
  auto yield = cast<YieldOp>(body.getTerminator());
  SmallVector<std::optional<ColumnFinishOutput>> outputs(plan.numColReductions);
  plan.columnOutputs.assign(plan.numColReductions, 0);
  auto notGenerated = [&] {
    return columns.emitOpError()
           << "computes values per column from the column sums, which a "
              "norm's row kernel from the update emitter does not generate; "
              "it stores the sums as they are";
  };
  for (auto [result, yielded] :
       llvm::zip_equal(columns.getResults(), yield.getOperands())) {
    WriteOp write;
    for (Operation *user : result.getUsers())
      if (auto candidate = dyn_cast<WriteOp>(user))
        write = candidate;
    if (!write)
      return notGenerated();
    SmallVector<Operation *> converts;
    Value value = yielded;
    while (auto convert = value.getDefiningOp<ConvertOp>()) {
      converts.push_back(convert);
      value = convert.getInput();
    }
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != &body)
      return notGenerated();
    auto reduce =
        columns->getOperand(arg.getArgNumber()).getDefiningOp<ReduceOp>();
    if (!reduce || reduce.getDim() != 0 || !reductionOf.count(reduce))
      return notGenerated();
    unsigned index = reductionOf.lookup(reduce);
    if (index >= outputs.size() || outputs[index])
      return notGenerated();
    std::string text = "total";
    for (Operation *convert : llvm::reverse(converts)) {
      FailureOr<std::string> converted = emitOpExpression(convert, {text});
      if (failed(converted))
        return failure();
      text = std::move(*converted);
    }
    unsigned target = getWriteTarget(write).getArgNumber();
    plan.columnOutputs[index] = target;
    outputs[index] = ColumnFinishOutput{
        getCudaStorageType(plan.args[target].dtype),
        "out_" + sanitizeIdentifier(getArgName(update, target)), text};
  }
  SmallVector<ColumnFinishOutput> ordered;
  for (std::optional<ColumnFinishOutput> &output : outputs) {
    if (!output)
      return notGenerated();
    ordered.push_back(std::move(*output));
  }
  KernelInfo finish;
  finish.role = KernelInfo::Role::NormColumnFinish;
  finish.name = fmt::format("kfuse_{}_finish", sanitizeIdentifier(plan.name));
  finish.location = formatLocation(columns.getLoc());
  finish.blockSize = rowsCall->finishBlockSize;
  finish.columnsPerBlock = rowsCall->finishColumnsPerBlock;
  plan.kernels.front().maxGridBlocks = rowsCall->maxColumnReductionGrid;
  out += emitColumnFinishKernel(plan.name, finish, plan.cols, ordered);
  plan.kernels.push_back(std::move(finish));
  return success();
}

LogicalResult UpdateEmitter::emitMatrixKernel(KernelBody &kernel,
                                              bool advancesStep,
                                              SignatureForm form,
                                              std::string &out) {
  bool elementWork = hasWork(kernel, ArgLevel::element);
  bool rowWork = hasWork(kernel, ArgLevel::row);
  bool columnWork = hasWork(kernel, ArgLevel::column);
  FusedOp fused = kernel.fused;
  if (elementWork) {
    // A column's total is combined where a value per column is computed,
    // once per column, not for each element.
    for (const KernelBody::LineInput &line : kernel.lineInputs)
      if (line.level == ArgLevel::column)
        return fused.emitOpError()
               << "reads a reduction over columns in a phase that also "
                  "computes values per element; compute the values per "
                  "column from it into a state, which later phases read";
    // Other chunks' element loops read what one chunk's column loop would
    // write.
    for (const Slot &slot : kernel.slots)
      if (slot.param.read && slot.param.written &&
          slot.level == ArgLevel::column)
        return fused.emitOpError()
               << "writes '" << getArgName(update, slot.param.index)
               << "', a state per column, in a phase whose element math "
                  "reads its previous value; a state per column is written "
                  "in a phase of its own";
  }
  bool rowReductions = hasLevel(kernel.reductions, ArgLevel::row);
  unsigned numRowSlots =
      llvm::count_if(kernel.reductions, [](const ChunkReduction &r) {
        return r.level == ArgLevel::row;
      });

  // Rows held in registers: the one loop does the values per element and
  // per row, and the reductions of each row. Emitted first: its layout
  // gives the kernel's launch bounds and shared memory.
  std::string registerRows;
  if (!kernel.rowLocals.empty()) {
    FailureOr<std::string> vectors = emitRegisterRowLoop(kernel, vectorWidth);
    if (failed(vectors))
      return failure();
    if (vectorWidth > 1) {
      FailureOr<std::string> scalars = emitRegisterRowLoop(kernel, 1);
      if (failed(scalars))
        return failure();
      registerRows = "    if (entry->aligned) {\n" + *vectors +
                     "    } else {\n" + *scalars + "    }\n";
    } else {
      registerRows = "    {\n" + *vectors + "    }\n";
    }
  }
  out += getMultiTensorSignature(kernel.name, KernelInfo::Role::Update,
                                 kBlockSize, plan.numReductions > 0, form,
                                 /*matrix=*/true, kernel.info.launchBlocks);
  out += emitKernelPrologue(kernel);
  out += "  float kfuse_unused = 0.0f; // what other loops' values feed\n";
  if (rowReductions)
    out += fmt::format("  // Per reduction, row of the chunk and warp.\n"
                       "  __shared__ float kfuse_row_acc[{} * {} * {}];\n",
                       numRowSlots, kMaxChunkRows, kWarps);
  out += emitChunkLoopHead(form);
  out += emitChunkEntry(kernel);
  out += "    const long long cols = entry->cols;\n"
         "    const long long r0 = chunk.begin / cols, r1 = chunk.end / "
         "cols;\n";
  if (columnWork)
    out += "    const long long kfuse_rows_per_chunk =\n"
           "        (chunks[entry->first_chunk].end - "
           "chunks[entry->first_chunk].begin) / cols;\n"
           "    const long long nq = (entry->numel / cols + "
           "kfuse_rows_per_chunk - 1) /\n"
           "                         kfuse_rows_per_chunk;\n";
  for (const ChunkReduction &reduction : kernel.reductions)
    if (reduction.level == ArgLevel::tensor)
      out += fmt::format("    float {} = {};\n", reduction.accumulator,
                         getReduceIdentity(reduction.kind));
  out += emitSlotPointers(kernel);
  if (rowReductions) {
    out += "    __syncthreads(); // the last chunk's row sums are read\n";
    for (const ChunkReduction &reduction : kernel.reductions)
      if (reduction.level == ArgLevel::row)
        out += fmt::format(
            "    for (int x = threadIdx.x; x < {0} * {1}; x += blockDim.x)\n"
            "      kfuse_row_acc[{2} * {0} * {1} + x] = {3};\n",
            kMaxChunkRows, kWarps, rowSlotOf(kernel.reductions, reduction),
            getReduceIdentity(reduction.kind));
    out += "    __syncthreads();\n";
  }
  if (!kernel.rowLocals.empty()) {
    out += registerRows;
    elementWork = rowWork = columnWork = false;
  }
  if (elementWork) {
    out += "    // The chunk's elements, by strips of columns.\n";
    if (vectorWidth > 1)
      out +=
          fmt::format("    if (entry->aligned && cols % {} == 0) {{\n{}"
                      "    }} else {{\n{}"
                      "    }}\n",
                      vectorWidth, emitMatrixElementLoop(kernel, vectorWidth),
                      emitMatrixElementLoop(kernel, 1));
    else
      out += "    {\n" + emitMatrixElementLoop(kernel, 1) + "    }\n";
  }
  if (rowReductions) {
    out += fmt::format("    // The chunk holds its rows whole: their totals "
                       "are complete.\n"
                       "    __syncthreads();\n"
                       "    for (long long x = threadIdx.x; x < r1 - r0; x += "
                       "blockDim.x) {{\n");
    for (const ChunkReduction &reduction : kernel.reductions) {
      if (reduction.level != ArgLevel::row)
        continue;
      out += fmt::format(
          "      {{\n"
          "        float kfuse_value = {0};\n"
          "#pragma unroll\n"
          "        for (int kfuse_w = 0; kfuse_w < {1}; ++kfuse_w)\n"
          "          kfuse_value = {2}(kfuse_value, kfuse_row_acc[({3} * {4} "
          "+ x) * {1} + kfuse_w]);\n"
          "        row_totals[(entry->row_base + r0 + x) * {5} + {6}] = "
          "kfuse_value;\n"
          "      }}\n",
          getReduceIdentity(reduction.kind), kWarps,
          getCombineFunction(reduction.kind),
          rowSlotOf(kernel.reductions, reduction), kMaxChunkRows,
          plan.numRowReductions, reduction.index);
    }
    out += "    }\n";
  }
  if (rowWork) {
    out += "    // Values per row, once per row: the element loop read the "
           "old ones.\n"
           "    __syncthreads();\n";
    out += "    {\n" + emitMatrixLineLoop(kernel, ArgLevel::row) + "    }\n";
  }
  if (columnWork)
    out += "    // Values per column, once per column.\n"
           "    {\n" +
           emitMatrixLineLoop(kernel, ArgLevel::column) + "    }\n";
  SmallVector<ChunkReduction> perTensor;
  for (const ChunkReduction &reduction : kernel.reductions)
    if (reduction.level == ArgLevel::tensor)
      perTensor.push_back(reduction);
  if (!perTensor.empty() || !kernel.entryStores.empty())
    out +=
        emitChunkReductions(perTensor, plan.numReductions, kernel.entryStores);
  out += "  }\n";
  out += emitKernelEpilogue(kernel, advancesStep);
  plan.kernels.push_back(std::move(kernel.info));
  return success();
}

} // namespace kfuse::update
