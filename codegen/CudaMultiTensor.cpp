//===- CudaMultiTensor.cpp - table walk of multi-tensor kernels ----------===//
//
// Blocks take the chunks of the table in turn (a grid-stride loop over
// chunks); the threads of a block stride through one chunk. A chunk whose
// entry has every pointer 16-byte aligned moves whole vectors (its begin is
// a multiple of the vector width), then a scalar tail; other chunks move
// scalars. Offsets are 64-bit: a tensor may exceed 2^31 elements.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaMultiTensor.h"
#include "codegen/CudaOps.h"

#include "llvm/ADT/SmallVector.h"

#include <fmt/format.h>

namespace kfuse {

static constexpr llvm::StringLiteral kMultiTensorPrelude = R"cuda(
// The multi-tensor table, laid out as kfuse::MultiTensorEntry and
// kfuse::MultiTensorChunk on the host.
struct alignas(16) kfuse_entry {
  unsigned long long pointers[8];
  long long numel;
  int aligned;
  int first_chunk;
  long long cols;
  long long row_base;
  long long col_partial_base;
  long long reserved;
};
static_assert(sizeof(kfuse_entry) == 112, "kfuse_entry layout");

struct kfuse_chunk {
  int entry;
  int reserved;
  long long begin;
  long long end;
};
static_assert(sizeof(kfuse_chunk) == 24, "kfuse_chunk layout");

// Finite: the exponent bits are not all ones (inf and NaN have them all).
static __device__ __forceinline__ bool kfuse_finite_f32(float x) {
  return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

static __device__ __forceinline__ bool kfuse_finite_bf16(unsigned short x) {
  return (x & 0x7f80u) != 0x7f80u;
}

static __device__ __forceinline__ bool kfuse_finite_f16(unsigned short x) {
  return (x & 0x7c00u) != 0x7c00u;
}
)cuda";

static_assert(kMaxTensorArgs == 8 && sizeof(MultiTensorEntry) == 112 &&
                  sizeof(MultiTensorChunk) == 24,
              "update kMultiTensorPrelude with the table layout");

// Block-wide combines of per-tensor reductions: a butterfly within each
// warp, then warp 0 over the warps' values, always in the same order, so a
// result has the same bits every run. Every thread of the block calls them;
// thread 0 gets the result.
static constexpr llvm::StringLiteral kReducePrelude = R"cuda(
static __device__ __forceinline__ float kfuse_sum_op(float a, float b) {
  return a + b;
}

template <float (*Combine)(float, float)>
static __device__ __forceinline__ float kfuse_block_combine(float value,
                                                            float identity) {
  __shared__ float warp_values[32];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1)
    value = Combine(value, __shfl_xor_sync(0xffffffffu, value, m));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads(); // warp_values may still be read by the last combine
  if (lane == 0)
    warp_values[warp] = value;
  __syncthreads();
  value = lane < (blockDim.x + 31) / 32 ? warp_values[lane] : identity;
  if (warp == 0) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1)
      value = Combine(value, __shfl_xor_sync(0xffffffffu, value, m));
  }
  return value;
}
)cuda";

// A barrier for every block of a cooperative launch (all resident at
// once): the last block to arrive resets the count and opens the next
// generation. The fences make each phase's writes (totals, found_inf)
// visible to the blocks of the next; those read them through L2 (__ldcg),
// as an SM's L1 may hold lines from before the barrier.
static constexpr llvm::StringLiteral kGridBarrierPrelude = R"cuda(
static __device__ __forceinline__ void kfuse_grid_barrier(unsigned int *barrier) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned int *generation = barrier + 1;
    const unsigned int seen = *generation;
    __threadfence();
    if (atomicAdd(barrier, 1u) == gridDim.x - 1) {
      atomicExch(barrier, 0u);
      __threadfence();
      atomicAdd(barrier + 1, 1u);
    } else {
      while (*generation == seen)
        __nanosleep(64);
    }
    __threadfence();
  }
  __syncthreads();
}
)cuda";

llvm::StringRef getGridBarrierPrelude() {
  return kGridBarrierPrelude.drop_front();
}

llvm::StringRef getMultiTensorPrelude() {
  return kMultiTensorPrelude.drop_front();
}

llvm::StringRef getMultiTensorReducePrelude() {
  return kReducePrelude.drop_front();
}

std::string getMultiTensorSignature(llvm::StringRef name, KernelInfo::Role role,
                                    unsigned blockSize, bool reductions,
                                    SignatureForm form, bool matrix,
                                    unsigned minBlocks) {
  std::string tail = role == KernelInfo::Role::FoundInfScan
                         ? "const double *hypers, float *found_inf"
                         : "double *hypers, float *found_inf,\n"
                           "    unsigned int *done_counter";
  if (reductions)
    tail += ", float *__restrict__ partials,\n"
            "    float *__restrict__ totals, unsigned int *arrivals";
  if (matrix)
    tail += ",\n    float *__restrict__ row_totals, float *__restrict__ "
            "col_partials";
  if (form == SignatureForm::BarrierKernel)
    tail += ",\n    unsigned int *barrier";
  if (form == SignatureForm::PhaseFunction)
    tail += ",\n    unsigned int *queue";
  std::string head =
      form == SignatureForm::PhaseFunction
          ? "static __device__ __forceinline__ void\n"
      : minBlocks > 1
          ? fmt::format(
                "extern \"C\" __global__ void __launch_bounds__({}, {})\n",
                blockSize, minBlocks)
          : fmt::format("extern \"C\" __global__ void __launch_bounds__({})\n",
                        blockSize);
  // A kernel's first statement waits for the kernel before it, where the
  // runtime launched it as a programmatic dependent launch.
  return fmt::format("{}{}(const kfuse_entry *__restrict__ entries,\n"
                     "    const kfuse_chunk *__restrict__ chunks, long long "
                     "num_chunks,\n"
                     "    {}) {{\n{}",
                     head, name.str(), tail,
                     form == SignatureForm::PhaseFunction
                         ? ""
                         : "  kfuse_grid_dependency_sync();\n");
}

std::string getMultiTensorCallArguments(bool reductions, bool matrix) {
  std::string out = reductions
                        ? "entries, chunks, num_chunks, hypers, found_inf, "
                          "done_counter, partials,\n      totals, arrivals"
                        : "entries, chunks, num_chunks, hypers, found_inf, "
                          "done_counter";
  if (matrix)
    out += ",\n      row_totals, col_partials";
  return out;
}

const char *getCombineFunction(ReduceKind kind) {
  return kind == ReduceKind::max ? "kfuse_maximumf" : "kfuse_sum_op";
}

const char *getReduceIdentity(ReduceKind kind) {
  // -inf by its bits: NVRTC compiles without the headers defining INFINITY.
  return kind == ReduceKind::max ? "__int_as_float(0xff800000)" : "0.0f";
}

/// The code of the last block to arrive at `counter` over chunks
/// [`first`, `end`): each reduction's partials combined in chunk order into
/// `total(index)`, and the counter reset for the next launch.
static std::string emitFinish(llvm::ArrayRef<const ChunkReduction *> reductions,
                              unsigned numReductions, llvm::StringRef flag,
                              llvm::StringRef counter, llvm::StringRef expected,
                              llvm::StringRef first, llvm::StringRef end,
                              llvm::function_ref<std::string(unsigned)> total,
                              llvm::StringRef stores = "") {
  std::string out = fmt::format("    __shared__ bool {0};\n"
                                "    if (threadIdx.x == 0) {{\n"
                                "      __threadfence();\n"
                                "      {0} = atomicAdd(&{1}, 1u) == {2};\n"
                                "    }}\n"
                                "    __syncthreads();\n"
                                "    if ({0}) {{\n"
                                "      __threadfence();\n",
                                flag.str(), counter.str(), expected.str());
  for (const ChunkReduction *reduction : reductions)
    out += fmt::format(
        "      {{\n"
        "        float kfuse_value = {0};\n"
        "        for (long long k = {4} + threadIdx.x; k < {5};\n"
        "             k += blockDim.x)\n"
        "          kfuse_value =\n"
        "              {1}(kfuse_value, __ldcg(&partials[k * {2} + {3}]));\n"
        "        kfuse_value = kfuse_block_combine<{1}>(kfuse_value, {0});\n"
        "        if (threadIdx.x == 0)\n"
        "          {6} = {7};\n"
        "      }}\n",
        getReduceIdentity(reduction->kind), getCombineFunction(reduction->kind),
        numReductions, reduction->index, first.str(), end.str(),
        total(reduction->index),
        // A mean over a tensor (the verifier allows no other).
        reduction->kind == ReduceKind::mean
            ? "(float)((double)kfuse_value / (double)entry->numel)"
            : "kfuse_value");
  out += stores;
  out += fmt::format("      if (threadIdx.x == 0)\n"
                     "        {} = 0;\n"
                     "    }}\n",
                     counter.str());
  return out;
}

static std::string getTotal(unsigned index, bool list, unsigned numReductions) {
  return list ? fmt::format("totals[{}]", index)
              : fmt::format("totals[(chunk.entry + 1) * {} + {}]",
                            numReductions, index);
}

std::string getReducedInput(unsigned index, bool list, unsigned numReductions) {
  return fmt::format("__ldcg(&{})", getTotal(index, list, numReductions));
}

std::string emitChunkReductions(
    llvm::ArrayRef<ChunkReduction> reductions, unsigned numReductions,
    llvm::ArrayRef<std::pair<unsigned, std::string>> entryStores,
    llvm::StringRef entryFinish) {
  std::string out = "    // One partial per chunk and reduction. The last "
                    "block to finish a\n"
                    "    // tensor's chunks (or all chunks, for the list) "
                    "combines the partials\n"
                    "    // in chunk order.\n";
  llvm::SmallVector<const ChunkReduction *> perTensor, perList;
  for (const ChunkReduction &reduction : reductions) {
    out += fmt::format(
        "    {0} = kfuse_block_combine<{1}>({0}, {2});\n"
        "    if (threadIdx.x == 0)\n"
        "      partials[c * {3} + {4}] = {0};\n",
        reduction.accumulator, getCombineFunction(reduction.kind),
        getReduceIdentity(reduction.kind), numReductions, reduction.index);
    (reduction.list ? perList : perTensor).push_back(&reduction);
  }
  std::string stores = entryFinish.str();
  for (auto [pointer, value] : entryStores)
    stores += fmt::format("      if (threadIdx.x == 0)\n"
                          "        *reinterpret_cast<float *>(entry->pointers["
                          "{}]) = (float){};\n",
                          pointer, value);
  if (!perTensor.empty() || !stores.empty()) {
    out += "    const kfuse_chunk kfuse_first = chunks[entry->first_chunk];\n"
           "    const long long kfuse_entry_end =\n"
           "        entry->first_chunk +\n"
           "        (entry->numel + (kfuse_first.end - kfuse_first.begin) - "
           "1) /\n"
           "            (kfuse_first.end - kfuse_first.begin);\n";
    out += emitFinish(
        perTensor, numReductions, "kfuse_last_of_tensor",
        "arrivals[chunk.entry + 1]", "kfuse_entry_end - entry->first_chunk - 1",
        "entry->first_chunk", "kfuse_entry_end",
        [&](unsigned index) {
          return getTotal(index, /*list=*/false, numReductions);
        },
        stores);
  }
  if (!perList.empty())
    out +=
        emitFinish(perList, numReductions, "kfuse_last_of_list", "arrivals[0]",
                   "num_chunks - 1", "0", "num_chunks", [&](unsigned index) {
                     return getTotal(index, /*list=*/true, numReductions);
                   });
  return out;
}

std::string emitFoundInfScanKernel(llvm::StringRef name,
                                   llvm::ArrayRef<ScanTensor> tensors,
                                   unsigned vectorWidth, unsigned blockSize) {
  std::string out = fmt::format(
      "// Sets *found_inf when a grad element is inf or NaN; the update "
      "kernels\n// after it then skip the step.\n");
  out +=
      getMultiTensorSignature(name, KernelInfo::Role::FoundInfScan, blockSize,
                              /*reductions=*/false);
  out += "  bool finite = true;\n"
         "  for (long long c = blockIdx.x; finite && c < num_chunks; "
         "c += gridDim.x) {\n"
         "    const kfuse_chunk chunk = chunks[c];\n"
         "    const kfuse_entry *entry = entries + chunk.entry;\n";
  for (const ScanTensor &tensor : tensors) {
    const char *type = getCudaStorageType(tensor.dtype);
    std::string test = fmt::format("kfuse_finite_{}", dtypeName(tensor.dtype));
    out += fmt::format("    const {0} *__restrict__ {1} =\n"
                       "        reinterpret_cast<const {0} *>("
                       "entry->pointers[{2}]);\n"
                       "    __builtin_assume(__isGlobal({1}));\n",
                       type, tensor.name, tensor.pointer);
    auto scalarLoop = [&](llvm::StringRef start, llvm::StringRef indent) {
      return fmt::format("{0}for (long long i = {1} + threadIdx.x;\n"
                         "{0}     finite && i < chunk.end; i += blockDim.x)\n"
                         "{0}  finite &= {2}({3}[i]);\n",
                         indent.str(), start.str(), test, tensor.name);
    };
    if (vectorWidth == 1) {
      out += scalarLoop("chunk.begin", "    ");
      continue;
    }
    out += fmt::format(
        "    if (entry->aligned) {{\n"
        "      const long long vector_end = chunk.end / {0};\n"
        "      for (long long i = chunk.begin / {0} + threadIdx.x;\n"
        "           finite && i < vector_end; i += blockDim.x) {{\n"
        "        const {1} {2} = reinterpret_cast<const {1} *>({3})[i];\n"
        "#pragma unroll\n"
        "        for (int j = 0; j < {0}; ++j)\n"
        "          finite &= {4}({2}.v[j]);\n"
        "      }}\n"
        "{5}"
        "    }} else {{\n"
        "{6}"
        "    }}\n",
        vectorWidth, tensor.vectorType, tensor.vectorName, tensor.name, test,
        scalarLoop(fmt::format("vector_end * {}", vectorWidth), "      "),
        scalarLoop("chunk.begin", "      "));
  }
  out += "  }\n"
         "  if (!finite)\n"
         "    *found_inf = 1.0f;\n"
         "}\n";
  return out;
}

} // namespace kfuse
