//===- KernelPlan.h - what the code generator hands the runtime -*- C++ -*-===//
//
// Plain data, free of MLIR: the generated CUDA source of an update or a
// norm and, for each kernel, how to launch it and how its parameters map to
// the function's arguments. The runtime compiles and launches from this
// alone.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_KERNELPLAN_H
#define KFUSE_CODEGEN_KERNELPLAN_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfuse {

/// What a kernel source holds: a func.func with 'kfuse.update' or one with
/// 'kfuse.norm'.
enum class KernelKind { update, norm };

/// Storage element types of tensors (compute is always f32). `pred` is a
/// one-byte boolean, only for temporaries of unfused plans.
enum class DType { f32, bf16, f16, pred };

const char *dtypeName(DType dtype);
std::optional<DType> parseDType(const std::string &name);
unsigned dtypeSize(DType dtype);

/// Roles mirrored from the dialect for users of the plan.
enum class ArgRole { param, grad, state, hyper, model, input, output };
const char *argRoleName(ArgRole role);

/// How many values an argument holds per tensor: one per element, one per
/// tensor (a state at the tensor level), or, in a 2-D kernel (a norm or a
/// 2-D update), one per row (rows x 1) or per column (1 x columns). The C
/// API's kfuse_arg_info.level. A hyperparameter is at the element level: its
/// role says it is one value per launch.
enum class ArgLevel : int32_t { element = 0, tensor = 1, row = 2, column = 3 };
const char *argLevelName(ArgLevel level);

/// One argument of a kernel (an update or a norm), as a caller passes it.
struct ArgInfo {
  std::string name;
  ArgRole role;
  DType dtype = DType::f32; // storage dtype of a tensor; f32 for scalars
  std::optional<double> defaultValue;
  ArgLevel level = ArgLevel::element;
  /// A state at the tensor level (kfuse.level): one f32 per tensor, which a
  /// multi-tensor plan binds as a one-element tensor per group.
  bool perTensor() const { return level == ArgLevel::tensor; }
};

/// What one compiled kernel is specialized on.
struct Specialization {
  /// Storage dtypes by role: the shorthands for every argument that
  /// argDTypes does not give one.
  DType paramDType = DType::f32;
  DType gradDType = DType::f32;
  DType stateDType = DType::f32;
  DType modelDType = DType::bf16; // model copies of master weights
  /// The storage dtype of each argument of the kernel as written (indexed
  /// like its arguments; hyper and tensor-level slots are ignored), as a
  /// launch's tensors have them: an exp_avg in bf16 beside an f32
  /// exp_avg_sq. Empty: by role (a norm's inputs and outputs take
  /// stateDType).
  std::vector<DType> argDTypes;
  int64_t numel = -1;      // a 1-D update's element count; -1: dynamic
  int64_t cols = -1;       // a norm's row length; must be set (> 0) for norms
  unsigned alignment = 16; // bytes, a power of two
  /// A power of two a dynamic numel is a multiple of: the vector loop then
  /// covers every element when it is a multiple of the vector width.
  unsigned numelMultiple = 1;
  /// A stable text form, part of cache keys.
  std::string key() const;
  /// The storage dtype of argument `index`, of role `role`.
  DType dtypeOf(unsigned index, ArgRole role) const;
  /// The shorthand dtype of `role` (states for any role but param, grad
  /// and model).
  DType roleDType(ArgRole role) const;
  bool operator==(const Specialization &other) const;
  bool operator!=(const Specialization &other) const {
    return !(*this == other);
  }
};

/// One parameter of a generated kernel, in signature order.
struct KernelParam {
  enum class Kind {
    Tensor,      // a pointer to the update argument `index`
    Scalar,      // the float value of the update argument `index`
    Temporary,   // a pointer to intermediate buffer `index` (unfused plans)
    TensorValue, // the one f32 of per-tensor state `index`, at its entry
                 // pointer of a multi-tensor table
  };
  Kind kind;
  unsigned index = 0;
  DType dtype = DType::f32;
  bool read = false;
  bool written = false;
};

//===----------------------------------------------------------------------===//
// Multi-tensor plans
//===----------------------------------------------------------------------===//
//
// An update marked `kfuse.multi_tensor` (kfuse-horizontal) runs over a whole
// list of tensor groups in one launch. Its kernel walks a device-side table:
// one MultiTensorEntry per group (the pointers of the update's tensor
// arguments, in argument order, and the element count) and a list of
// MultiTensorChunks, equal slices of the groups' elements, that the blocks of
// a grid-stride loop over chunks take in turn. The generated source declares
// the same two structs (layout asserted there with static_assert).
//
// Multi-tensor kernel signature, for every kernel of such a plan:
//   (const kfuse_entry *entries, const kfuse_chunk *chunks,
//    long long num_chunks, double *hypers, const float *found_inf,
//    unsigned int *done_counter)
// - hypers: device array of doubles, one slot per update argument (only the
//   hyper slots are read): hyperparameters live on the device, so a captured
//   graph replays with whatever a scheduler wrote there (capturable).
// - A hyper named "step" holds the number of steps taken: the kernel computes
//   with hypers[step] + 1, and the last block to finish (counted in
//   *done_counter, which it resets to 0) stores hypers[step] + 1.
// - found_inf: null, or a device flag; when *found_inf != 0 the kernel
//   returns before any write and the step does not advance.
// - A plan with per-tensor reductions (numReductions > 0) runs one update
//   kernel per reduction phase, and each takes three more parameters:
//     float *partials, float *totals, unsigned int *arrivals
//   partials: numReductions floats per chunk, at chunk * numReductions + r;
//   totals: numReductions floats for the list, at r, then per entry, at
//   (entry + 1) * numReductions + r;
//   arrivals: one counter for the list, then one per entry, zero between
//   launches. A kernel whose phase ends in reductions stores each chunk's
//   partial; the last block to finish an entry's chunks (counted in
//   arrivals[entry + 1]), or all chunks (arrivals[0]) for a reduction over
//   the list, combines them in chunk order into totals and resets the
//   counter. Later phases read the totals. Only the last update kernel
//   advances the step.
// - A state at the tensor level (ArgInfo::perTensor) has an entry pointer
//   to its one f32. The kernel that writes it reads the old value with each
//   chunk, and the last block to finish the entry's chunks (counted in
//   arrivals[entry + 1], which it resets) stores the new one.
// - With kfuse.grid_barrier, the phases are one kernel instead
//   (KernelInfo::phases > 1), launched cooperatively (every block resident)
//   with one more parameter, unsigned int *barrier: two counters that the
//   grid-wide barriers between phases use, then one per phase counting the
//   chunks its blocks took (each block takes the next chunk), all zero
//   before the first launch and left ready for the next.
// - A first phase that reads every grad and writes nothing (the grad norm
//   of kfuse-clip-grad-norm) does the found-inf scan itself
//   (KernelInfo::setsFoundInf): there is then no scan kernel, the runtime
//   zeroes found_inf before that kernel, and later phases skip on it.
// - A 2-D plan (KernelPlan::matrix; an update over matrices) cuts each
//   entry into chunks of whole rows (MultiTensorEntry::cols long), and its
//   kernels take two more parameters after those above:
//     float *row_totals, float *col_partials
//   A reduction over each row (numRowReductions) is complete at the end of
//   the chunk that holds the row (at most kMaxChunkRows of them), stored at
//   row_totals[(rowBase + row) * numRowReductions + r]; a reduction over
//   each column (numColReductions) stores each chunk's partial at
//   col_partials[(colPartialBase + k * cols + column) * numColReductions
//   + r] for the entry's chunk k. Later phases compute values per row once
//   per row (by the row's chunk) and values per column once per column
//   (the columns shared out over the entry's chunks), where a column's
//   total is its partials combined in chunk order.
// The found-inf scan kernel (KernelInfo::Role::FoundInfScan) has the
// signature (entries, chunks, num_chunks, const double *hypers,
// float *found_inf) and sets *found_inf = 1 when any grad element is inf or
// NaN; the runtime zeroes the flag before it.

/// Most tensor arguments an update may have in a multi-tensor plan.
constexpr unsigned kMaxTensorArgs = 8;

/// Rows a chunk of a 2-D plan holds: at least the first (so that column
/// partials take at most 1/32 of the elements' memory), at most the second
/// (the row sums a block keeps in shared memory).
constexpr int64_t kMinChunkRows = 32;
constexpr int64_t kMaxChunkRows = 128;

struct alignas(16) MultiTensorEntry {
  uint64_t pointers[kMaxTensorArgs]; // by tensor-argument order; rest 0
  int64_t numel;
  int32_t aligned;    // 1 when every pointer is 16-byte aligned
  int32_t firstChunk; // its chunks are this one and those after it
  // 2-D plans only (0 otherwise): the row length, the entry's first row in
  // the row totals, and its first column partial (chunk k of the entry has
  // cols of them from colPartialBase + k * cols).
  int64_t cols;
  int64_t rowBase;
  int64_t colPartialBase;
  int64_t reserved;
};
static_assert(sizeof(MultiTensorEntry) == 8 * kMaxTensorArgs + 48,
              "MultiTensorEntry layout is shared with generated code");

struct MultiTensorChunk {
  int32_t entry; // index into the entries
  int32_t reserved;
  int64_t begin; // first element; a multiple of the vector width
  int64_t end;   // one past the last element
};
static_assert(sizeof(MultiTensorChunk) == 24,
              "MultiTensorChunk layout is shared with generated code");

/// One step of a kernel's uniform program: its value from update argument
/// `arg` (a hyper), a constant, or an operation on earlier steps.
struct UniformInstr {
  enum class Op {
    arg,
    constant,
    add,
    sub,
    mul,
    div,
    neg,
    rem,
    maximum, // NaN-propagating, on the values rounded to f32
    minimum,
    maxnum, // NaN-ignoring
    minnum,
    sqrt,
    rsqrt,
    pow,
    exp,
    log,
    abs,
    tanh,
    fma,
    copysign,
    floor,
    ceil,
    roundeven, // to the nearest integer, ties to even
    cmp,       // 1.0 or 0.0; `arg` holds the arith::CmpFPredicate
    select,    // operands[0] != 0 ? operands[1] : operands[2]
  };
  Op op = Op::constant;
  unsigned operands[3] = {0, 0, 0}; // indices of earlier instructions
  unsigned arg = 0;                 // Op::arg: the update argument
  double constant = 0.0;            // Op::constant
};

/// Whether `a predicate b` holds, for `predicate` an arith::CmpFPredicate
/// by its value (0 false, 1-6 ordered eq gt ge lt le ne, 7 ordered, 8-13
/// unordered or eq gt ge lt le ne, 14 unordered, 15 true).
bool compareUniforms(unsigned predicate, double a, double b);

/// The uniform values of a single-tensor kernel, computed on the host at
/// launch instead of by every thread: the scalar math over hypers (bias
/// corrections, step sizes) in double, as the device would compute it, and
/// the f32 values the element function reads (`fields`, indices into
/// `program`), passed by value as the kernel's first parameter, a struct of
/// as many floats. The device code then has no double-precision pow, sqrt
/// or division, which cost about half of NVRTC's time on AdamW.
struct HostUniforms {
  std::vector<UniformInstr> program;
  std::vector<unsigned> fields;

  /// The fields for the update argument values `args` (indexed by argument;
  /// only hypers are read), rounded to f32, into `out` (fields.size()).
  void evaluate(const double *args, float *out) const;
};

//===----------------------------------------------------------------------===//
// Norm plans
//===----------------------------------------------------------------------===//
//
// A norm (`kfuse.norm`: LayerNorm, RMSNorm, forward or backward) is
// specialized on a dtype per tensor argument and a static row length
// (KernelPlan::cols); its plan holds a row kernel and, with column
// reductions, a finish kernel:
//
//   Row kernel (KernelInfo::Role::NormRows), grid = min(ceil(rows /
//   rowsPerBlock), maxGridBlocks) blocks of `blockSize` threads,
//   `sharedBytes` of dynamic shared memory (it may exceed 48 KiB, up to
//   227 KiB: raise the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
//   to it first). Parameters, in order:
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
//   Finish kernel (KernelInfo::Role::NormColumnFinish, only with column
//   reductions), grid = (ceil(cols / columnsPerBlock), columnOutputs.size())
//   blocks of `blockSize` threads: blockIdx.y is the column output.
//   Parameters: `const float *partials`, `int grid` (the row kernel's grid),
//   then one pointer per column-reduction output, in the order of
//   `columnOutputs`. It sums each column's partials over the blocks in a
//   fixed order (each slice of the block's threads the blocks congruent to
//   it, then the slices in order), so the result has the same bits every run
//   for a given grid; the runtime fixes the grid for a given (rows, device)
//   to keep it so. With no rows, skip the row kernel and launch the finish
//   kernel with grid 0: it stores zeros.

/// One generated kernel: the launch of one fused region.
struct KernelInfo {
  enum class Role {
    Update,           // one fused region
    FoundInfScan,     // multi-tensor pre-pass: any non-finite grad?
    NormRows,         // a norm's row kernel
    NormColumnFinish, // a norm's column sums from the row kernel's partials
  };
  Role role = Role::Update;
  std::string name;     // extern "C" symbol in the source
  std::string location; // IR location of the region, for errors
  /// In signature order, then `n` (int64) when numel is dynamic. With
  /// hostUniforms, the uniform struct comes first (when it has fields) and
  /// the hypers are not parameters.
  std::vector<KernelParam> params;
  std::optional<HostUniforms> hostUniforms;
  unsigned vectorWidth = 1; // elements a thread handles per iteration
  unsigned indexBits = 64;
  unsigned blockSize = 256;
  unsigned numBodyOps = 0;
  /// Reduction phases this kernel runs, with a grid-wide barrier between
  /// them (a cooperative launch when more than 1); `params` then lists
  /// each phase's accesses in turn.
  unsigned phases = 1;
  /// Whether the kernel sets found_inf (a multi-tensor update kernel whose
  /// first phase also scans the grads).
  bool setsFoundInf = false;

  // Norm kernels (the ABI under "Norm plans" above).
  /// Bytes of dynamic shared memory per block.
  unsigned sharedBytes = 0;
  /// NormRows: rows a block takes at a time, and the upper bound on the grid
  /// (0: none; the code generator sets 1024 with column reductions, each
  /// block adding `cols` partials per reduction for the finish kernel).
  unsigned rowsPerBlock = 1;
  unsigned maxGridBlocks = 0;
  /// NormRows, informational: threads per row (blockSize / rowsPerBlock)
  /// and vectors each thread handles per row.
  unsigned threadsPerRow = 0;
  unsigned itemsPerThread = 0;
  /// NormRows: blocks per SM its __launch_bounds__ asks for.
  unsigned launchBlocks = 1;
  /// NormRows: whether a thread holds its part of the whole row at once (in
  /// registers, or staged in shared memory when `stages` > 0; else the
  /// kernel loops over the row in chunks), and its column inputs for all its
  /// rows.
  bool rowInRegisters = true;
  bool columnInputsInRegisters = false;
  /// NormRows: buffers of a row group staged in shared memory (0: none).
  /// With 2 the kernel copies the next row group while it computes one:
  /// launch at most the blocks resident at once (one wave), so that every
  /// block runs several row groups.
  unsigned stages = 0;
  /// NormColumnFinish: columns per block.
  unsigned columnsPerBlock = 32;
};

/// The whole generated program for one specialization of a kernel.
struct KernelPlan {
  KernelKind kind = KernelKind::update;
  std::string name; // the function's symbol
  std::vector<ArgInfo> args;
  std::vector<KernelInfo> kernels; // launched in order
  std::vector<DType> temporaries;  // buffers of numel elements each
  int64_t numel = -1;              // -1: dynamic, passed at launch
  unsigned numelMultiple = 1;      // a dynamic numel must be a multiple
  unsigned alignment = 16;         // bytes every pointer must be aligned to
  std::string source;              // CUDA C++ for all kernels
  /// The same kernels as one PTX module for the GPU emitCuda was given,
  /// which the runtime links without NVRTC; empty when not asked for or not
  /// covered, with the reason in ptxUnsupported.
  std::string ptx;
  std::string ptxUnsupported;
  /// Multi-tensor plans: the kernels take the table signature above.
  bool multiTensor = false;
  /// The update arguments that are tensors, in entry-pointer order.
  std::vector<unsigned> tensorArgs;
  /// The argument index of the hyper named "step", or -1.
  int stepArg = -1;
  /// Per-tensor reductions over all kernels: the floats per chunk and per
  /// entry of the reduction workspace (multi-tensor plans only).
  unsigned numReductions = 0;
  /// A 2-D plan (an update over matrices): chunks of whole rows, and the
  /// reductions over rows and over columns of the ABI above.
  bool matrix = false;
  unsigned numRowReductions = 0;
  unsigned numColReductions = 0;
  /// Reductions over the list that have a name (kfuse.name), with their
  /// index: their totals are values a caller may read (the grad norm).
  std::vector<std::pair<std::string, unsigned>> listTotals;
  /// Whether the plan skips steps with non-finite grads (kfuse.found_inf:
  /// a FoundInfScan kernel first, or an update kernel that setsFoundInf,
  /// then the update gated on its flag).
  bool checksFoundInf = false;
  /// Bytes a whole step of the plan moves per element over its kernels
  /// (no scan kernel where an update kernel scans the grads), temporaries
  /// included; for a fully fused update, every tensor argument read once and
  /// every written one written once, in its storage dtype.
  unsigned bytesPerElement() const;

  /// The row length the kernels are for: a norm's, or a 2-D update's whose
  /// argument types give one (0: any).
  int64_t cols = 0;
  /// Norm plans: the row kernel (kernels[0]) and the finish kernel of the
  /// column reductions, or null; the output argument index of each column
  /// reduction, in partials order.
  std::vector<unsigned> columnOutputs;
  const KernelInfo &rowKernel() const { return kernels.front(); }
  const KernelInfo *finishKernel() const {
    return kernels.size() > 1 ? &kernels[1] : nullptr;
  }
  /// Floats of workspace the row kernel needs for a grid of `grid` blocks.
  uint64_t partialFloats(unsigned grid) const {
    return uint64_t(columnOutputs.size()) * grid * uint64_t(cols);
  }
  /// Minimum bytes a norm launch over `rows` rows moves: every tensor
  /// argument read (inputs) or written (outputs) once in its storage dtype
  /// (UINT64_MAX past 2^64).
  uint64_t minimumBytes(int64_t rows) const;
};

/// Minimum bytes a norm launch over `rows` x `cols` moves when the tensors
/// have `dtypes` (one per argument, hyper entries ignored; empty: each
/// argument's own dtype): every tensor read or written once. Nothing when
/// an extent is negative or the count passes 2^64.
std::optional<uint64_t> normMinimumBytes(llvm::ArrayRef<ArgInfo> args,
                                         llvm::ArrayRef<DType> dtypes,
                                         int64_t rows, int64_t cols);

} // namespace kfuse

#endif // KFUSE_CODEGEN_KERNELPLAN_H
