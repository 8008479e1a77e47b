//===- CudaEmitterInternal.h - the update emitter's pieces ------*- C++ -*-===//
//
// The update code generator over two files: CudaEmitter.cpp collects the
// update's arguments and ops, emits element functions and the single-tensor
// kernels; CudaUpdateMultiTensor.cpp emits the multi-tensor kernels (the
// table walk, reduction phases, the grid-barrier kernel, the found-inf scan)
// and the states at the tensor level.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_CODEGEN_CUDAEMITTERINTERNAL_H
#define KFUSE_CODEGEN_CUDAEMITTERINTERNAL_H

#include "codegen/CudaEmitter.h"
#include "codegen/CudaMultiTensor.h"
#include "codegen/CudaNames.h"
#include "codegen/CudaNorm.h"
#include "codegen/CudaOps.h"
#include "codegen/PtxEmitter.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <string>
#include <vector>

namespace kfuse::update {

using namespace mlir;

/// The type of a uniform value (CudaEmitter.cpp).
std::string getUniformType(Type type);

/// The helpers of 2-D kernels, after the multi-tensor prelude
/// (CudaUpdateMatrix.cpp).
llvm::StringRef getMatrixPrelude();

constexpr unsigned kBlockSize = 256;
constexpr unsigned kMaxVectorBytes = 16;

inline ArgRole toArgRole(Role role) {
  switch (role) {
  case Role::param:
    return ArgRole::param;
  case Role::grad:
    return ArgRole::grad;
  case Role::state:
    return ArgRole::state;
  case Role::hyper:
    return ArgRole::hyper;
  case Role::model:
    return ArgRole::model;
  case Role::input:
    return ArgRole::input;
  case Role::output:
    return ArgRole::output;
  }
  return ArgRole::hyper;
}

/// Elements of a tensor type; -1 when a dimension is dynamic.
inline int64_t getNumElements(RankedTensorType type) {
  return type.hasStaticShape() ? type.getNumElements() : -1;
}

/// The names the update kernels' templates fix, and for multi-tensor
/// kernels those of the table walk.
inline const llvm::StringRef kKernelNames[] = {
    "u", "n", "i", "j", "count", "tid", "stride", "vectors"};
inline const llvm::StringRef kMultiTensorNames[] = {
    "entries",    "chunks",
    "num_chunks", "hypers",
    "found_inf",  "done_counter",
    "c",          "chunk",
    "entry",      "vector_end",
    "prev",       "finite",
    "k",          "partials",
    "totals",     "arrivals",
    "barrier",    "queue",
    "u",          "n",
    "i",          "j",
    "count",      "tid",
    "stride",     "vectors",
    "row_totals", "col_partials",
    "cols",       "r0",
    "r1",         "r",
    "cv",         "cv0",
    "vcols",      "active",
    "x",          "q",
    "nq",         "cb",
    "ce",         "rb"};

/// Identifiers of one kernel.
class NameTable : public CudaNameTable {
public:
  explicit NameTable(bool multiTensor = false)
      : CudaNameTable(multiTensor ? ArrayRef<StringRef>(kMultiTensorNames)
                                  : ArrayRef<StringRef>(kKernelNames)) {}
};

/// One parameter of a kernel being built, with its names in the source.
struct Slot {
  KernelParam param;
  ArgLevel level = ArgLevel::element; // of a tensor, in a 2-D update
  Type elementType; // tensor element type, or the scalar's type
  std::string name; // the kernel parameter
  std::string in;   // the element function's input
  std::string out;  // the element function's output
};

/// A store of the element function: `value` of the body, or the input of
/// slot `copyFrom` (a deferred write), into written slot `slot`.
struct Store {
  unsigned slot;
  Value value;
  std::optional<unsigned> copyFrom;
};

/// A kernel whose parameters, uniform values and element function are
/// emitted, ready for the loops that call the element function.
struct KernelBody {
  explicit KernelBody(bool multiTensor) : names(multiTensor) {}
  NameTable names;
  std::string name;
  std::vector<Slot> slots;
  std::string elementFunction;
  std::string prologue;      // uniform math, in double
  std::string entryPrologue; // uniform math on per-tensor reductions
  std::string uniformInit;   // the statement that fills `u`
  std::string uniformsType;
  KernelInfo info;
  /// Locals of the loops, per slot, named on first use.
  DenseMap<unsigned, std::string> vectorIn, vectorOut, scalarOut;
  /// What the direct PTX emitter needs of the body: the fused op, the slot
  /// of each element input, the stores and the uniform struct's fields.
  FusedOp fused;
  SmallVector<std::pair<Value, unsigned>> elementInputs;
  std::vector<Store> stores;
  SmallVector<Value> uniformFields;
  /// A multi-tensor kernel's uniform fields as a program over the device
  /// hypers, where every uniform op has a host form (the direct PTX computes
  /// them from it; the CUDA source from `prologue`).
  std::optional<HostUniforms> deviceUniforms;
  /// Reductions this kernel reads (index, local name), per tensor (read
  /// each chunk) and over the list (read once), and those it accumulates (a
  /// mean as a sum, divided by its count when the tensor's total is made).
  SmallVector<std::pair<unsigned, std::string>> reducedInputs, listInputs;
  std::vector<ChunkReduction> reductions;
  /// In a 2-D update, the totals per row or per column of earlier phases
  /// that the element function takes (reduction index, level, name).
  struct LineInput {
    unsigned reduction;
    ArgLevel level;
    std::string name;
    ReduceKind kind;
  };
  SmallVector<LineInput> lineInputs;
  /// Reductions of the element over its row, its rows held in registers
  /// (isRowLocalReduce): the element function accumulates the input into
  /// `accumulator` and takes the row's total as `total`. `depth` counts the
  /// row-local reductions its input depends on, itself included: the loop
  /// calls the element function once per depth, then once to store.
  struct RowLocal {
    ReduceKind kind;
    std::string accumulator, total;
    unsigned depth;
  };
  SmallVector<RowLocal> rowLocals;
  /// The phase that also does the found-inf scan: it reads every grad and
  /// writes nothing, so it tests the grads it loads and sets the flag.
  bool scansGrads = false;
  /// States at the tensor level (entry pointer, local name): those it reads
  /// once per chunk, and the new values it stores once per tensor.
  SmallVector<std::pair<unsigned, std::string>> stateInputs, entryStores;
};

class UpdateEmitter {
public:
  UpdateEmitter(func::FuncOp update, const PtxTarget *ptxTarget,
                const NormEmitOptions *rowsCall = nullptr)
      : update(update), ptxTarget(ptxTarget), rowsCall(rowsCall) {}
  FailureOr<KernelPlan> emit();

private:
  LogicalResult readAttributes();
  LogicalResult collectArgs();
  LogicalResult collectOps();
  LogicalResult collectReduce(ReduceOp reduce);
  LogicalResult planStores();
  LogicalResult planTensorStateWrite(WriteOp write);
  /// The expression of `value`, uniform over a tensor, computed in the
  /// kernel's entry prologue from hypers, reductions and per-tensor states.
  FailureOr<std::string> emitEntryValue(Value value, KernelBody &kernel,
                                        DenseMap<Value, std::string> &done);
  std::string readTensorState(BlockArgument arg, KernelBody &kernel);
  LogicalResult emitElementFunction(unsigned index, KernelBody &kernel,
                                    std::string &out);
  void emitGridStrideKernel(KernelBody &kernel, std::string &out);
  /// The element function's call: `input` and `output` by slot position,
  /// and in a 2-D kernel `lineInput` and `accumulator` (null: the
  /// reduction's own accumulator).
  std::string callElement(
      KernelBody &kernel, function_ref<std::string(unsigned)> input,
      function_ref<std::string(unsigned)> output,
      function_ref<std::string(const KernelBody::LineInput &)> lineInput =
          nullptr,
      function_ref<std::string(const ChunkReduction &)> accumulator = nullptr,
      function_ref<std::string(const KernelBody::RowLocal &)> rowTotal =
          nullptr,
      function_ref<std::string(const KernelBody::RowLocal &)> rowAccumulator =
          nullptr);
  /// The pieces of a multi-tensor kernel around its loop over a chunk's
  /// elements: the prologue before the chunk loop, the loop's head, the
  /// chunk's tensor and its values, the slots' pointers, and the end after
  /// the loop (CudaUpdateMultiTensor.cpp).
  std::string emitKernelPrologue(KernelBody &kernel);
  std::string emitChunkLoopHead(SignatureForm form);
  std::string emitChunkEntry(KernelBody &kernel);
  std::string emitSlotPointers(KernelBody &kernel);
  /// The end of a phase kernel: found_inf set where it scanned the grads
  /// (and KernelInfo::setsFoundInf with it), the step advanced.
  std::string emitKernelEpilogue(KernelBody &kernel, bool advancesStep);
  /// A phase of a 2-D update (CudaUpdateMatrix.cpp).
  LogicalResult emitMatrixKernel(KernelBody &kernel, bool advancesStep,
                                 SignatureForm form, std::string &out);
  std::string emitMatrixElementLoop(KernelBody &kernel, unsigned width);
  /// The element function's call in the loop over `level`, with the loaded
  /// `inputs` and `outputs` by slot position.
  std::string callElementAt(KernelBody &kernel, ArgLevel level,
                            const DenseMap<unsigned, std::string> &inputs,
                            const DenseMap<unsigned, std::string> &outputs);
  std::string emitMatrixLineLoop(KernelBody &kernel, ArgLevel level);
  /// The loop over a chunk's rows of a phase that reduces rows held in
  /// registers, `width` elements a vector (CudaUpdateMatrix.cpp).
  LogicalResult emitRowsCallKernel(KernelBody &kernel, std::string &out);
  LogicalResult emitRowsCallFinish(std::string &out);
  FailureOr<std::string> emitRegisterRowLoop(KernelBody &kernel,
                                             unsigned width);
  std::string emitVectorStep(KernelBody &kernel, StringRef indent,
                             bool fullyAligned);
  std::string emitScalarStep(KernelBody &kernel, StringRef indent);
  LogicalResult checkMultiTensor();
  bool phaseCanScanGrads(unsigned index);
  std::string emitFoundInfScan();
  void emitMultiTensorKernel(KernelBody &kernel, bool advancesStep,
                             SignatureForm form, std::string &out);
  void emitBarrierKernel(ArrayRef<KernelInfo> phases, std::string &out);
  std::string getVectorType(DType dtype, unsigned alignment);
  PtxKernelSpec getPtxSpec(const KernelBody &kernel) const;
  void emitPtx();

  func::FuncOp update;
  const PtxTarget *ptxTarget;
  /// A norm's call-shaped row kernel (emitRowsCuda), with its layout's
  /// knobs; null for the update's own plans.
  const NormEmitOptions *rowsCall;
  /// The layout the last register-row loop chose.
  RowLayout rowLayout;
  /// Single-tensor kernels as the direct PTX emitter takes them.
  std::vector<PtxKernelSpec> ptxKernels;
  KernelPlan plan;
  unsigned vectorWidth = 1;
  unsigned indexBits = 64;
  /// The phases run in one kernel with grid barriers (kfuse.grid_barrier).
  bool gridBarrier = false;
  SmallVector<FusedOp> fusedOps;
  DenseMap<Operation *, unsigned> kernelOf;
  /// Reductions per tensor and over the list, numbered in program order;
  /// in a 2-D update, those per row and per column numbered apart.
  DenseMap<Value, unsigned> reductionOf;
  SmallVector<ReduceOp> reduces;
  /// The update is 2-D (isMatrixUpdate).
  bool matrix = false;
  /// A kernel reduces a row's variance in registers (the moments helpers).
  bool usesMoments = false;
  /// A kernel stages rows in shared memory (the staging helpers).
  bool usesStaging = false;
  SmallVector<WriteOp> writes;
  /// Per kernel, the writes of states at the tensor level it stores.
  DenseMap<unsigned, SmallVector<WriteOp>> tensorStateWrites;
  /// Function arguments the producing kernel of a result stores it to.
  DenseMap<Value, SmallVector<BlockArgument, 1>> directTargets;
  /// Results kept in a temporary, with its index.
  DenseMap<Value, unsigned> temporaryOf;
  /// Per kernel, the (result, argument) writes it performs as a copy from
  /// the result's temporary, being the argument's last reader.
  std::vector<SmallVector<std::pair<Value, BlockArgument>>> deferredCopies;
  llvm::StringSet<> vectorTypeNames;
  std::string vectorTypeDefs;
};

} // namespace kfuse::update

#endif // KFUSE_CODEGEN_CUDAEMITTERINTERNAL_H
