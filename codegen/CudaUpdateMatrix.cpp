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

#include <fmt/format.h>

namespace kfuse::update {

static constexpr unsigned kWarps = kBlockSize / 32;

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

/// Combines `value` of each group of `lanes` lanes (a power of two up to
/// 32, aligned in the warp) into every lane of the group, in a fixed
/// butterfly (every lane of the warp must run it).
static std::string emitWarpCombine(StringRef value, ReduceKind kind,
                                   StringRef indent, unsigned lanes = 32) {
  return fmt::format(
      "#pragma unroll\n"
      "{0}for (int kfuse_m = {3}; kfuse_m > 0; kfuse_m >>= 1)\n"
      "{0}  {1} = {2}({1}, __shfl_xor_sync(0xffffffffu, {1}, kfuse_m));\n",
      indent.str(), value.str(), getCombineFunction(kind), lanes / 2);
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

/// The lanes of a warp that hold one row of `vectors` vectors: the largest
/// power of two up to 32 that divides it.
static unsigned lanesPerRow(int64_t vectors) {
  unsigned lanes = 1;
  while (lanes < 32 && vectors % (2 * lanes) == 0)
    lanes *= 2;
  return lanes;
}

FailureOr<std::string> UpdateEmitter::emitRegisterRowLoop(KernelBody &kernel,
                                                          unsigned width) {
  const int64_t vectors = plan.cols / width;
  const unsigned lanes = lanesPerRow(vectors);
  const int64_t items = vectors / lanes;
  const bool vector = width > 1;
  unsigned depth = 0;
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    depth = std::max(depth, row.depth);

  std::string loads, outputs, stores, rowStores;
  DenseMap<unsigned, std::string> inputs, outs;
  auto element = [&](const std::string &array) {
    return array + (vector ? "[k].v[j]" : "[k]");
  };
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind == KernelParam::Kind::Temporary)
      return kernel.fused.emitOpError()
             << "keeps a value for a later phase in a kernel whose rows are "
                "held in registers, which is not generated; write it to a "
                "state instead";
    if (slot.param.kind != KernelParam::Kind::Tensor)
      continue;
    if (slot.level == ArgLevel::column)
      return kernel.fused.emitOpError()
             << "reads or writes '" << getArgName(update, slot.param.index)
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
      } else {
        std::string index =
            fmt::format("r * {} + k * {} + kfuse_lane", vectors, lanes);
        loads += fmt::format(
            "        {0} {1}[{2}] = {{}};\n"
            "        if (kfuse_valid) {{\n"
            "#pragma unroll\n"
            "          for (int k = 0; k < {2}; ++k)\n"
            "            {1}[k] = {3};\n"
            "        }}\n",
            type, local, items,
            vector ? fmt::format("kfuse_ldcg_vector(reinterpret_cast<const "
                                 "{} *>({}) + {})",
                                 type, slot.name, index)
                   : fmt::format("__ldcg(&{}[{}])", slot.name, index));
        inputs[position] = element(local);
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
      outputs += fmt::format("        {} {}[{}];\n", type, local, items);
      outs[position] = element(local);
      stores += fmt::format(
          "            {}[r * {} + k * {} + kfuse_lane] = {}[k];\n",
          vector ? fmt::format("reinterpret_cast<{} *>({})", type, slot.name)
                 : slot.name,
          vectors, lanes, local);
    }
  }
  // With a static row length every row reduction is row-local; totals of
  // earlier phases per row or column would be a schedule not generated.
  if (!kernel.lineInputs.empty() ||
      llvm::any_of(kernel.reductions, [](const ChunkReduction &reduction) {
        return reduction.level != ArgLevel::tensor;
      }))
    return kernel.fused.emitOpError()
           << "combines rows held in registers with reductions over rows or "
              "columns in phases, which is not generated";

  // Call `stage` (1 to depth: the row-local reductions of that depth; past
  // it: the stores) on every element the lane holds.
  auto call = [&](unsigned stage) {
    std::string text = callElement(
        kernel,
        [&](unsigned position) {
          auto it = inputs.find(position);
          return it != inputs.end() ? it->second : std::string("{}");
        },
        [&](unsigned position) { return outs.lookup(position); }, nullptr,
        [&](const ChunkReduction &reduction) {
          return stage > depth ? reduction.accumulator
                               : std::string("kfuse_unused");
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
    return fmt::format("#pragma unroll\n"
                       "          for (int k = 0; k < {0}; ++k) {{\n"
                       "#pragma unroll\n"
                       "            for (int j = 0; j < {1}; ++j)\n"
                       "              {2};\n",
                       items, width, text);
  };

  std::string out = fmt::format(
      "      // Rows of {0} elements in registers: {1} lanes a row, {2} "
      "vector(s) of {3} a lane.\n"
      "      const int kfuse_lane = threadIdx.x % {1};\n",
      plan.cols, lanes, items, width);
  // The loop is uniform over each warp, whose lanes all take part in the
  // row totals' butterflies; rows past the chunk's are invalid.
  out += fmt::format(
      "      for (long long rb = r0 + threadIdx.x / 32 * {0}; rb < r1;\n"
      "           rb += blockDim.x / {1}) {{\n"
      "        const long long r = rb + threadIdx.x % 32 / {1};\n"
      "        const bool kfuse_valid = r < r1;\n",
      32 / lanes, lanes);
  out += loads + outputs;
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    out += fmt::format("        float {} = 0.0f;\n", row.total);
  if (llvm::any_of(kernel.rowLocals, [](const KernelBody::RowLocal &row) {
        return row.kind == ReduceKind::variance;
      }))
    out += "        kfuse_moments kfuse_unused_moments = {};\n";
  for (unsigned stage = 1; stage <= depth; ++stage) {
    for (const KernelBody::RowLocal &row : kernel.rowLocals)
      if (row.depth == stage && row.kind == ReduceKind::variance)
        out +=
            fmt::format("        kfuse_moments {} = {{}};\n", row.accumulator);
      else if (row.depth == stage)
        out += fmt::format("        float {} = {};\n", row.accumulator,
                           getReduceIdentity(row.kind));
    out += "        if (kfuse_valid) {\n" + call(stage) + "          }\n" +
           "        }\n";
    // Each row's lanes combine their parts in a fixed butterfly; a
    // variance's parts (each of as many elements) by Chan's merge.
    for (const KernelBody::RowLocal &row : kernel.rowLocals) {
      if (row.depth != stage)
        continue;
      if (row.kind == ReduceKind::variance) {
        out += fmt::format(
            "        {{\n"
            "          float kfuse_n, kfuse_mean, kfuse_m2;\n"
            "          kfuse_moments_done({1}, kfuse_n, kfuse_mean, "
            "kfuse_m2);\n"
            "#pragma unroll\n"
            "          for (int kfuse_m = {0}; kfuse_m > 0; kfuse_m >>= 1)\n"
            "            kfuse_shuffle_equal_moments(kfuse_n, kfuse_mean, "
            "kfuse_m2, kfuse_m);\n"
            "          {2} = kfuse_n > 0.0f ? kfuse_m2 / kfuse_n : 0.0f;\n"
            "        }}\n",
            lanes / 2, row.accumulator, row.total);
        continue;
      }
      out += emitWarpCombine(row.accumulator, row.kind, "        ", lanes) +
             fmt::format("        {} = {};\n", row.total, row.accumulator);
    }
  }
  out += "        if (kfuse_valid) {\n" + call(depth + 1) + stores +
         "          }\n" + rowStores + "        }\n";
  out += "      }\n";
  return out;
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

  out += getMultiTensorSignature(kernel.name, KernelInfo::Role::Update,
                                 kBlockSize, plan.numReductions > 0, form,
                                 /*matrix=*/true);
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
    // Rows held in registers: the one loop does the values per element and
    // per row, and the reductions of each row.
    FailureOr<std::string> vectors = emitRegisterRowLoop(kernel, vectorWidth);
    if (failed(vectors))
      return failure();
    if (vectorWidth > 1) {
      FailureOr<std::string> scalars = emitRegisterRowLoop(kernel, 1);
      if (failed(scalars))
        return failure();
      out += "    if (entry->aligned) {\n" + *vectors + "    } else {\n" +
             *scalars + "    }\n";
    } else {
      out += "    {\n" + *vectors + "    }\n";
    }
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
