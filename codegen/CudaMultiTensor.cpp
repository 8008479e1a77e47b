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

#include <fmt/format.h>

namespace kfuse {

static constexpr llvm::StringLiteral kMultiTensorPrelude = R"cuda(
// The multi-tensor table, laid out as kfuse::MultiTensorEntry and
// kfuse::MultiTensorChunk on the host.
struct alignas(16) kfuse_entry {
  unsigned long long pointers[8];
  long long numel;
  int aligned;
  int reserved;
};
static_assert(sizeof(kfuse_entry) == 80, "kfuse_entry layout");

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

static_assert(kMaxTensorArgs == 8 && sizeof(MultiTensorEntry) == 80 &&
                  sizeof(MultiTensorChunk) == 24,
              "update kMultiTensorPrelude with the table layout");

llvm::StringRef getMultiTensorPrelude() {
  return kMultiTensorPrelude.drop_front();
}

std::string getMultiTensorSignature(llvm::StringRef name, KernelInfo::Role role,
                                    unsigned blockSize) {
  const char *tail = role == KernelInfo::Role::FoundInfScan
                         ? "const double *hypers, float *found_inf"
                         : "double *hypers, const float *found_inf,\n"
                           "    unsigned int *done_counter";
  return fmt::format("extern \"C\" __global__ void __launch_bounds__({})\n"
                     "{}(const kfuse_entry *__restrict__ entries,\n"
                     "    const kfuse_chunk *__restrict__ chunks, long long "
                     "num_chunks,\n"
                     "    {}) {{\n",
                     blockSize, name.str(), tail);
}

std::string emitFoundInfScanKernel(llvm::StringRef name,
                                   llvm::ArrayRef<ScanTensor> tensors,
                                   unsigned vectorWidth, unsigned blockSize) {
  std::string out = fmt::format(
      "// Sets *found_inf when a grad element is inf or NaN; the update "
      "kernels\n// after it then skip the step.\n");
  out +=
      getMultiTensorSignature(name, KernelInfo::Role::FoundInfScan, blockSize);
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
