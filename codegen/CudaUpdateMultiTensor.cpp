//===- CudaUpdateMultiTensor.cpp - multi-tensor update kernels -----------===//
//
// The kernels of an update marked kfuse.multi_tensor: the element function
// called from loops over the table's chunks (KernelPlan.h fixes the ABI,
// CudaMultiTensor.h has the pieces that do not depend on the update), one
// kernel per reduction phase or one cooperative kernel with grid barriers,
// the found-inf scan, and the states at the tensor level.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitterInternal.h"
#include "codegen/CudaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <fmt/format.h>

namespace kfuse::update {

LogicalResult UpdateEmitter::planTensorStateWrite(WriteOp write) {
  BlockArgument target = getWriteTarget(write);
  std::string name = getArgName(update, target.getArgNumber());
  if (!plan.multiTensor)
    return write.emitOpError()
           << "writes '" << name
           << "', a state at the tensor level, which only a multi-tensor "
              "plan binds";
  // The kernel after those whose reductions the value reads, and no
  // earlier than any that reads the state.
  unsigned kernel = 0;
  SmallVector<Value> worklist{write.getValue()};
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second || isa<BlockArgument>(value))
      continue;
    Operation *def = value.getDefiningOp();
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      kernel = std::max(kernel,
                        kernelOf.lookup(reduce.getInput().getDefiningOp()) + 1);
      continue;
    }
    if (isa<FusedOp>(def))
      return write.emitOpError() << "writes '" << name
                                 << "', a state at the tensor level, with a "
                                    "value that varies per element";
    llvm::append_range(worklist, def->getOperands());
  }
  for (auto [index, fused] : llvm::enumerate(fusedOps))
    if (llvm::is_contained(fused.getInputs(), Value(target)))
      kernel = std::max<unsigned>(kernel, index);
  if (kernel >= fusedOps.size())
    return write.emitOpError()
           << "writes '" << name
           << "', a state at the tensor level, with a reduction's result that "
              "no later kernel reads; the new value is stored by a kernel "
              "after the reduction";
  if (reduces.empty())
    return write.emitOpError()
           << "writes '" << name
           << "', a state at the tensor level, in an update without "
              "reductions; the block that stores it is counted with theirs";
  tensorStateWrites[kernel].push_back(write);
  return success();
}

std::string UpdateEmitter::readTensorState(BlockArgument arg,
                                           KernelBody &kernel) {
  unsigned pointer =
      llvm::find(plan.tensorArgs, arg.getArgNumber()) - plan.tensorArgs.begin();
  for (auto &[index, name] : kernel.stateInputs)
    if (index == pointer)
      return name;
  std::string name = kernel.names.unique(getArgName(update, arg.getArgNumber()),
                                         /*fromUser=*/true);
  kernel.stateInputs.push_back({pointer, name});
  return name;
}

FailureOr<std::string>
UpdateEmitter::emitEntryValue(Value value, KernelBody &kernel,
                              DenseMap<Value, std::string> &done) {
  if (auto it = done.find(value); it != done.end())
    return it->second;
  std::string expr;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    unsigned index = arg.getArgNumber();
    if (plan.args[index].perTensor()) {
      expr = readTensorState(arg, kernel);
    } else if (auto loaded = llvm::find_if(
                   kernel.slots,
                   [&](const Slot &slot) {
                     return slot.param.kind == KernelParam::Kind::Scalar &&
                            slot.param.index == index;
                   });
               loaded != kernel.slots.end()) {
      expr = loaded->name;
    } else {
      // A hyper, loaded as double at the kernel's start.
      expr = kernel.names.unique(getArgName(update, index), /*fromUser=*/true);
      Slot slot;
      slot.param.kind = KernelParam::Kind::Scalar;
      slot.param.index = index;
      slot.param.read = true;
      slot.elementType = arg.getType();
      slot.name = expr;
      kernel.slots.push_back(std::move(slot));
    }
  } else if (auto reduce = value.getDefiningOp<ReduceOp>()) {
    unsigned index = reductionOf.lookup(reduce.getResult());
    auto &inputs = reduce.getList() ? kernel.listInputs : kernel.reducedInputs;
    auto loaded = llvm::find_if(
        inputs, [&](const auto &input) { return input.first == index; });
    if (loaded != inputs.end()) {
      expr = loaded->second;
    } else {
      expr = kernel.names.unique(fmt::format("total{}", index));
      inputs.push_back({index, expr});
    }
  } else {
    Operation *op = value.getDefiningOp();
    SmallVector<std::string> operands;
    for (Value operand : op->getOperands()) {
      FailureOr<std::string> operandExpr =
          emitEntryValue(operand, kernel, done);
      if (failed(operandExpr))
        return failure();
      operands.push_back(*operandExpr);
    }
    FailureOr<std::string> opExpr =
        emitOpExpression(op, operands, /*uniform=*/true);
    if (failed(opExpr))
      return failure();
    if (isa<arith::ConstantOp>(op)) {
      expr = *opExpr;
    } else {
      expr = kernel.names.unique(fmt::format("s{}", done.size()));
      kernel.entryPrologue +=
          fmt::format("  const {} {} = {};\n", getUniformType(value.getType()),
                      expr, *opExpr);
    }
  }
  done[value] = expr;
  return expr;
}

LogicalResult UpdateEmitter::checkMultiTensor() {
  // One region per reduction phase: kfuse-schedule-phases orders them, and
  // any other split would need temporaries.
  bool anyReduction =
      !reduces.empty() || plan.numRowReductions || plan.numColReductions;
  if (fusedOps.empty() || (!anyReduction && fusedOps.size() != 1))
    return update.emitOpError()
           << "multi-tensor updates need exactly one fused region per "
              "reduction phase; got "
           << fusedOps.size() << " regions and " << reduces.size()
           << " reductions";
  plan.numReductions = reduces.size();
  if (!plan.temporaries.empty())
    return update.emitOpError()
           << "multi-tensor updates cannot keep temporaries (tensors one "
              "region computes, a later one reads and no argument stores; "
              "fusion makes one region per reduction phase); got "
           << plan.temporaries.size();
  for (BlockArgument arg : update.getArguments()) {
    unsigned index = arg.getArgNumber();
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor) {
      if (plan.args[index].perTensor())
        plan.tensorArgs.push_back(index); // an entry pointer to its value
      else if (getArgName(update, index) == "step")
        plan.stepArg = index;
      continue;
    }
    if (tensor.hasStaticShape() && !isColumnOfStaticRows(update, tensor))
      return update.emitOpError()
             << "argument #" << index << " '" << getArgName(update, index)
             << "' has the static shape " << tensor
             << "; multi-tensor updates need dynamic shapes";
    plan.tensorArgs.push_back(index);
  }
  if (plan.tensorArgs.size() > kMaxTensorArgs)
    return update.emitOpError()
           << "multi-tensor updates have at most " << kMaxTensorArgs
           << " tensor arguments; got " << plan.tensorArgs.size();
  if (plan.checksFoundInf &&
      llvm::none_of(plan.tensorArgs, [&](unsigned index) {
        return plan.args[index].role == ArgRole::grad;
      }))
    return update.emitOpError() << "'" << KFuseDialect::kFoundInfAttrName
                                << "' needs a grad argument to scan";
  return success();
}

std::string UpdateEmitter::emitFoundInfScan() {
  NameTable names(/*multiTensor=*/true);
  std::string name = names.unique(fmt::format(
      "kfuse_{}_found_inf", sanitizeIdentifier(update.getSymName())));
  KernelInfo info;
  info.role = KernelInfo::Role::FoundInfScan;
  info.name = name;
  info.location = formatLocation(update.getLoc());
  info.vectorWidth = vectorWidth;
  info.indexBits = 64;
  info.blockSize = kBlockSize;
  std::vector<ScanTensor> grads;
  for (auto [pointer, index] : llvm::enumerate(plan.tensorArgs)) {
    const ArgInfo &arg = plan.args[index];
    if (arg.role != ArgRole::grad)
      continue;
    info.params.push_back({KernelParam::Kind::Tensor, index, arg.dtype,
                           /*read=*/true,
                           /*written=*/false});
    std::string local = names.unique(arg.name, /*fromUser=*/true);
    std::string vectorLocal = names.unique(local + "_v");
    grads.push_back({unsigned(pointer), arg.dtype, local, vectorLocal,
                     getVectorType(arg.dtype, kMaxVectorBytes)});
  }
  plan.kernels.push_back(std::move(info));
  return emitFoundInfScanKernel(name, grads, vectorWidth, kBlockSize);
}

std::string UpdateEmitter::emitKernelPrologue(KernelBody &kernel) {
  std::string out;
  if (kernel.scansGrads)
    out += "  // This phase writes nothing: it also sets found_inf, which "
           "the runtime\n"
           "  // zeroed, when a grad it reads is inf or NaN.\n"
           "  bool kfuse_nonfinite = false;\n";
  else
    out += "  // Every block reads the same flag, set by an earlier kernel "
           "or phase: a\n"
           "  // step with a non-finite grad is skipped whole, before any "
           "write.\n"
           "  if (found_inf != nullptr && __ldcg(found_inf) != 0.0f)\n"
           "    return;\n";
  std::string hyperLoads;
  for (const Slot &slot : kernel.slots)
    if (slot.param.kind == KernelParam::Kind::Scalar)
      hyperLoads += fmt::format(
          "  const double {} = hypers[{}]{};\n", slot.name, slot.param.index,
          int(slot.param.index) == plan.stepArg ? " + 1.0" : "");
  if (!hyperLoads.empty())
    out += "  // Hyperparameters live on the device; the step slot counts the "
           "steps taken.\n" +
           hyperLoads;
  if (!kernel.listInputs.empty())
    out += "  // Reductions over the whole list, from an earlier phase.\n";
  for (auto [index, name] : kernel.listInputs)
    out +=
        fmt::format("  const float {} = {};\n", name,
                    getReducedInput(index, /*list=*/true, plan.numReductions));
  if (!kernel.prologue.empty())
    out += "  // Uniform values, once per thread.\n" + kernel.prologue;
  bool perEntry = !kernel.reducedInputs.empty() ||
                  !kernel.stateInputs.empty() || !kernel.entryPrologue.empty();
  if (!perEntry)
    out += kernel.uniformInit;
  return out;
}

std::string UpdateEmitter::emitChunkLoopHead(SignatureForm form) {
  if (form == SignatureForm::PhaseFunction)
    // A resident grid loops over many chunks: each block takes the next
    // from a counter, so blocks that got small chunks take more.
    return "  __shared__ unsigned int kfuse_taken;\n"
           "  for (;;) {\n"
           "    if (threadIdx.x == 0)\n"
           "      kfuse_taken = atomicAdd(queue, 1u);\n"
           "    __syncthreads();\n"
           "    const long long c = kfuse_taken;\n"
           "    __syncthreads();\n"
           "    if (c >= num_chunks)\n"
           "      break;\n";
  return "  for (long long c = blockIdx.x; c < num_chunks; c += gridDim.x) {\n";
}

std::string UpdateEmitter::emitChunkEntry(KernelBody &kernel) {
  std::string out = "    const kfuse_chunk chunk = chunks[c];\n"
                    "    const kfuse_entry *entry = entries + chunk.entry;\n";
  bool perEntry = !kernel.reducedInputs.empty() ||
                  !kernel.stateInputs.empty() || !kernel.entryPrologue.empty();
  if (!perEntry)
    return out;
  out += "    // The chunk's tensor's reductions, and the values from them.\n";
  for (auto [index, name] : kernel.reducedInputs)
    out +=
        fmt::format("    const float {} = {};\n", name,
                    getReducedInput(index, /*list=*/false, plan.numReductions));
  for (auto [pointer, name] : kernel.stateInputs)
    out += fmt::format("    const float {} = __ldcg(reinterpret_cast<const "
                       "float *>(entry->pointers[{}]));\n",
                       name, pointer);
  for (StringRef line :
       llvm::split(StringRef(kernel.entryPrologue).rtrim('\n'), '\n'))
    if (!line.empty())
      out += "  " + line.str() + "\n";
  out += "  " + kernel.uniformInit;
  return out;
}

std::string UpdateEmitter::emitSlotPointers(KernelBody &kernel) {
  std::string out;
  for (const Slot &slot : kernel.slots) {
    if (slot.param.kind != KernelParam::Kind::Tensor)
      continue;
    unsigned pointer =
        llvm::find(plan.tensorArgs, slot.param.index) - plan.tensorArgs.begin();
    std::string type = fmt::format("{}{} *", slot.param.written ? "" : "const ",
                                   getCudaStorageType(slot.param.dtype));
    // The table holds generic pointers: the hint makes the accesses global.
    out += fmt::format("    {0}__restrict__ {1} =\n"
                       "        reinterpret_cast<{0}>(entry->pointers[{2}]);\n"
                       "    __builtin_assume(__isGlobal({1}));\n",
                       type, slot.name, pointer);
  }
  return out;
}

std::string UpdateEmitter::emitKernelEpilogue(KernelBody &kernel,
                                              bool advancesStep) {
  std::string out;
  kernel.info.setsFoundInf = kernel.scansGrads;
  if (kernel.scansGrads)
    out +=
        "  // Null in a step that does not scan.\n"
        "  if (__syncthreads_or(kfuse_nonfinite) && found_inf != nullptr &&\n"
        "      threadIdx.x == 0)\n"
        "    *found_inf = 1.0f;\n";
  if (plan.stepArg >= 0 && advancesStep)
    out += fmt::format(
        "  // The last block to finish advances the step for the next "
        "launch.\n"
        "  __syncthreads();\n"
        "  if (threadIdx.x == 0) {{\n"
        "    __threadfence();\n"
        "    const unsigned int prev = atomicAdd(done_counter, 1u);\n"
        "    if (prev == gridDim.x - 1) {{\n"
        "      hypers[{0}] = hypers[{0}] + 1.0;\n"
        "      *done_counter = 0;\n"
        "      __threadfence();\n"
        "    }}\n"
        "  }}\n",
        plan.stepArg);
  out += "}\n";
  return out;
}

void UpdateEmitter::emitMultiTensorKernel(KernelBody &kernel, bool advancesStep,
                                          SignatureForm form,
                                          std::string &out) {
  out += getMultiTensorSignature(kernel.name, KernelInfo::Role::Update,
                                 kBlockSize, plan.numReductions > 0, form);
  out += emitKernelPrologue(kernel);
  out += emitChunkLoopHead(form);
  out += emitChunkEntry(kernel);
  for (const ChunkReduction &reduction : kernel.reductions)
    out += fmt::format("    float {} = {};\n", reduction.accumulator,
                       getReduceIdentity(reduction.kind));
  out += emitSlotPointers(kernel);
  auto scalarLoop = [&](StringRef start, StringRef indent) {
    return fmt::format("{0}for (long long i = {1} + threadIdx.x; i < "
                       "chunk.end;\n"
                       "{0}     i += blockDim.x) {{\n{2}{0}}}\n",
                       indent.str(), start.str(),
                       emitScalarStep(kernel, indent.str() + "  "));
  };
  if (vectorWidth > 1) {
    // Named in a fixed order: argument evaluation order is unspecified.
    std::string vectorStep =
        emitVectorStep(kernel, "        ", /*fullyAligned=*/true);
    std::string tailLoop =
        scalarLoop(fmt::format("vector_end * {}", vectorWidth), "      ");
    std::string unalignedLoop = scalarLoop("chunk.begin", "      ");
    out += fmt::format(
        "    if (entry->aligned) {{\n"
        "      // chunk.begin is a multiple of {0}.\n"
        "      const long long vector_end = chunk.end / {0};\n"
        "      for (long long i = chunk.begin / {0} + threadIdx.x; i < "
        "vector_end;\n"
        "           i += blockDim.x) {{\n"
        "{1}"
        "      }}\n"
        "      // The last chunk.end % {0} elements.\n"
        "{2}"
        "    }} else {{\n"
        "{3}"
        "    }}\n",
        vectorWidth, vectorStep, tailLoop, unalignedLoop);
  } else {
    out += scalarLoop("chunk.begin", "    ");
  }
  if (!kernel.reductions.empty() || !kernel.entryStores.empty())
    out += emitChunkReductions(kernel.reductions, plan.numReductions,
                               kernel.entryStores);
  out += "  }\n";
  out += emitKernelEpilogue(kernel, advancesStep);
  if (ptxTarget && form == SignatureForm::Kernel) {
    ptxKernels.push_back(getPtxSpec(kernel));
    ptxKernels.back().advancesStep = advancesStep;
  }
  plan.kernels.push_back(std::move(kernel.info));
}

bool UpdateEmitter::phaseCanScanGrads(unsigned index) {
  FusedOp fused = fusedOps[index];
  if (tensorStateWrites.count(index))
    return false;
  if (llvm::any_of(writes, [&](WriteOp write) {
        Operation *def = write.getValue().getDefiningOp();
        return def && kernelOf.lookup(def) == index && isa<FusedOp>(def);
      }))
    return false;
  return llvm::all_of(plan.tensorArgs, [&](unsigned arg) {
    return plan.args[arg].role != ArgRole::grad ||
           llvm::is_contained(fused->getOperands(), update.getArgument(arg));
  });
}

void UpdateEmitter::emitBarrierKernel(ArrayRef<KernelInfo> phases,
                                      std::string &out) {
  // One kernel: its phases in turn, every block at a barrier between them.
  KernelInfo info;
  info.name =
      fmt::format("kfuse_{}_phases", sanitizeIdentifier(update.getSymName()));
  info.location = formatLocation(update.getLoc());
  info.vectorWidth = vectorWidth;
  info.indexBits = 64;
  info.blockSize = kBlockSize;
  info.phases = phases.size();
  for (const KernelInfo &phase : phases) {
    info.params.insert(info.params.end(), phase.params.begin(),
                       phase.params.end());
    info.numBodyOps += phase.numBodyOps;
    info.setsFoundInf |= phase.setsFoundInf;
    info.sharedBytes = std::max(info.sharedBytes, phase.sharedBytes);
    info.launchBlocks = std::max(info.launchBlocks, phase.launchBlocks);
  }
  out += fmt::format("\n// The {} phases of @{} in one cooperative launch, "
                     "a grid-wide barrier\n// between them.\n",
                     phases.size(), update.getSymName().str());
  out += getMultiTensorSignature(
      info.name, KernelInfo::Role::Update, kBlockSize, plan.numReductions > 0,
      SignatureForm::BarrierKernel, plan.matrix, info.launchBlocks);
  // barrier[2 + p] counts the chunks phase p took; block 0 resets it once
  // every block is past the phase (the last phase's, before it begins).
  out += fmt::format("  if (blockIdx.x == 0 && threadIdx.x == 0)\n"
                     "    barrier[{}] = 0;\n",
                     2 + phases.size() - 1);
  for (auto [index, phase] : llvm::enumerate(phases)) {
    if (index) {
      out += "  kfuse_grid_barrier(barrier);\n";
      out += fmt::format("  if (blockIdx.x == 0 && threadIdx.x == 0)\n"
                         "    barrier[{}] = 0;\n",
                         2 + index - 1);
    }
    out += fmt::format(
        "  {}({}, barrier + {});\n", phase.name,
        getMultiTensorCallArguments(plan.numReductions > 0, plan.matrix),
        2 + index);
  }
  out += "}\n";
  plan.kernels.push_back(std::move(info));
}

} // namespace kfuse::update
