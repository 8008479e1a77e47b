//===- CudaEmitter.cpp - CUDA C++ for fused updates ----------------------===//
//
// Each kfuse.fused op becomes one grid-stride kernel. Its body becomes a
// __forceinline__ element function called from two loops: a vector loop in
// which each thread moves `vector_width` consecutive elements of every tensor
// with whole-struct (16-byte) loads and stores, and a scalar tail loop for
// the last numel % vector_width elements. Body ops that depend only on
// scalars (bias corrections, powf) reach the element function through a
// per-kernel uniform struct: the runtime computes it on the host at launch
// and passes it by value (KernelInfo::hostUniforms), or, for multi-tensor
// kernels (hypers on the device) and uniform math the host program does not
// cover, each thread computes it at the kernel's start.
//
// Unfused plans chain kernels through temporaries. Since every read of an
// update argument sees its value before the step, a kernel must not store an
// argument that a later kernel still reads: such a store goes to a temporary
// that the last reader of the argument copies into it.
//
// An update marked kfuse.multi_tensor gets one kernel over a table of tensor
// groups instead (CudaUpdateMultiTensor.cpp): the same element function,
// called from loops over the table's chunks, with hyperparameters read from
// the device; kfuse.found_inf puts a scan of the grads before it.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitterInternal.h"
#include "codegen/CudaOps.h"
#include "codegen/CudaPrelude.h"
#include "codegen/CudaRows.h"
#include "codegen/PtxEmitter.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

using namespace mlir;

namespace kfuse::update {
/// The type of a uniform value: hyperparameters arrive as double and the
/// uniform math (bias corrections, 1 - beta) stays in double, as the peers
/// compute it on the host, before it is rounded once to f32 for the body.
std::string getUniformType(Type type) {
  return type.isF32() ? "double" : getCudaScalarType(type)->str();
}

/// Appends the host form of uniform `op` to `host`, its operands already
/// there or constants (added through `addConstant`); clears `evaluable` for
/// ops without one (comparisons, selects, conversions: the device then
/// computes the uniforms).
static void addHostInstr(Operation *op, HostUniforms &host,
                         DenseMap<Value, unsigned> &hostValue,
                         llvm::function_ref<void(Value)> addConstant,
                         bool &evaluable) {
  // Comparisons of f32 values and selects are values 1.0 and 0.0.
  static_assert(unsigned(arith::CmpFPredicate::OEQ) == 1 &&
                    unsigned(arith::CmpFPredicate::UNE) == 13 &&
                    unsigned(arith::CmpFPredicate::AlwaysTrue) == 15,
                "compareUniforms numbers predicates as arith does");
  std::optional<UniformInstr::Op> kind = getHostUniformOp(op);
  UniformInstr instr;
  if (auto cmp = dyn_cast<arith::CmpFOp>(op);
      cmp && cmp.getLhs().getType().isF32()) {
    kind = UniformInstr::Op::cmp;
    instr.arg = unsigned(cmp.getPredicate());
  } else if (auto select = dyn_cast<arith::SelectOp>(op);
             select && select.getCondition().getType().isInteger(1) &&
             (select.getType().isF32() || select.getType().isInteger(1))) {
    kind = UniformInstr::Op::select;
  }
  if (!kind || op->getNumOperands() > 3) {
    evaluable = false;
    return;
  }
  instr.op = *kind;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    if (!hostValue.count(operand))
      addConstant(operand);
    if (!evaluable)
      return;
    instr.operands[index] = hostValue.lookup(operand);
  }
  hostValue[op->getResult(0)] = host.program.size();
  host.program.push_back(instr);
}

LogicalResult UpdateEmitter::readAttributes() {
  auto readInt = [&](StringRef name, unsigned &value) -> LogicalResult {
    Attribute attr = update->getAttr(name);
    if (!attr)
      return success();
    auto integer = dyn_cast<IntegerAttr>(attr);
    if (!integer || integer.getValue().isNegative() ||
        !llvm::isPowerOf2_64(integer.getValue().getZExtValue()))
      return update.emitOpError()
             << "attribute '" << name << "' must be a power-of-two integer, "
             << "got " << attr;
    value = integer.getValue().getZExtValue();
    return success();
  };
  if (failed(readInt(KFuseDialect::kVectorWidthAttrName, vectorWidth)) ||
      failed(readInt(KFuseDialect::kIndexBitsAttrName, indexBits)) ||
      failed(readInt(KFuseDialect::kAlignmentAttrName, plan.alignment)) ||
      failed(readInt(KFuseDialect::kNumelMultipleAttrName, plan.numelMultiple)))
    return failure();
  plan.multiTensor = update->hasAttr(KFuseDialect::kMultiTensorAttrName);
  matrix = plan.matrix = isMatrixUpdate(update);
  if (matrix && !plan.multiTensor)
    return update.emitOpError()
           << "is a 2-D update, which runs only as a multi-tensor plan (its "
              "table gives each tensor's row length); run kfuse-horizontal";
  // A row length in the argument types: the kernels are for it alone (and
  // hold rows in registers where they reduce them).
  if (matrix)
    plan.cols = getStaticRowLength(update);
  plan.checksFoundInf = update->hasAttr(KFuseDialect::kFoundInfAttrName);
  if (plan.checksFoundInf && !plan.multiTensor)
    return update.emitOpError()
           << "'" << KFuseDialect::kFoundInfAttrName << "' needs '"
           << KFuseDialect::kMultiTensorAttrName
           << "': the found-inf scan walks the multi-tensor table";
  if (vectorWidth > 16)
    return update.emitOpError() << "vector width " << vectorWidth
                                << " is larger than the supported 16";
  if (indexBits != 32 && indexBits != 64)
    return update.emitOpError()
           << "index bits " << indexBits << " must be 32 or 64";
  return success();
}

LogicalResult UpdateEmitter::collectArgs() {
  std::optional<unsigned> minElementSize;
  for (BlockArgument arg : update.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::string name = getArgName(update, index);
    std::optional<Role> role = getArgRole(update, index);
    if (!role)
      return update.emitOpError()
             << "argument #" << index << " '" << name << "' has no kfuse.role";
    ArgInfo info{name, toArgRole(*role), DType::f32,
                 getArgDefault(update, index)};
    if (auto tensor = dyn_cast<RankedTensorType>(arg.getType())) {
      std::optional<DType> dtype = getStorageDType(tensor.getElementType());
      if (*role == Role::hyper || !dtype || *dtype == DType::pred)
        return update.emitOpError()
               << "argument #" << index << " '" << name << "' of type "
               << tensor << " is not supported; tensors must be param, grad "
               << "or state of f32, bf16 or f16";
      info.dtype = *dtype;
      // In a 2-D update, a state per row (rows x 1) or per column.
      info.level = getValueLevel(tensor);
      unsigned size = dtypeSize(*dtype);
      minElementSize = std::min(minElementSize.value_or(size), size);
    } else if (isPerTensorArg(update, index)) {
      info.level = ArgLevel::tensor; // one f32 per tensor
    } else if (*role != Role::hyper || !arg.getType().isF32()) {
      return update.emitOpError()
             << "argument #" << index << " '" << name << "' of type "
             << arg.getType() << " is not supported; scalars must be f32 "
             << "hyperparameters";
    }
    plan.args.push_back(std::move(info));
  }
  if (!update->hasAttr(KFuseDialect::kAlignmentAttrName))
    plan.alignment = minElementSize.value_or(4);
  return success();
}

LogicalResult UpdateEmitter::collectOps() {
  if (!llvm::hasSingleElement(update.getBody()))
    return update.emitOpError() << "must have a single block";
  auto checkShape = [&](Operation *op, Type type) -> LogicalResult {
    auto tensor = cast<RankedTensorType>(type);
    int64_t numel = getNumElements(tensor);
    if (plan.numel == -2 || numel == -1 || plan.numel == -1) {
      plan.numel = plan.numel == -2 ? numel : -1;
      return success();
    }
    if (numel != plan.numel)
      return op->emitOpError() << "tensor type " << tensor << " has " << numel
                               << " elements but the update has " << plan.numel;
    return success();
  };
  plan.numel = -2; // not seen yet
  for (BlockArgument arg : update.getArguments())
    if (isa<RankedTensorType>(arg.getType()) &&
        failed(checkShape(update, arg.getType())))
      return failure();

  for (Operation &op : update.getBody().front()) {
    if (auto fused = dyn_cast<FusedOp>(op)) {
      for (Type type : fused.getResultTypes())
        if (failed(checkShape(fused, type)))
          return failure();
      kernelOf[fused] = fusedOps.size();
      fusedOps.push_back(fused);
      continue;
    }
    if (auto write = dyn_cast<WriteOp>(op)) {
      writes.push_back(write);
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError() << "returns values; an update returns none";
      continue;
    }
    // Scalar constants may remain outside when canonicalization hoisted
    // them; they become literals in the kernels that take them.
    if (auto constant = dyn_cast<arith::ConstantOp>(op);
        constant && getCudaScalarType(constant.getType()))
      continue;
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      if (failed(collectReduce(reduce)))
        return failure();
      continue;
    }
    // Uniform math that a state at the tensor level stores: emitted in the
    // kernel that stores it.
    if (op.getNumRegions() == 0 && op.getNumResults() == 1 &&
        (op.getResult(0).getType().isIntOrFloat() ||
         isTensorLevelValue(op.getResult(0))) &&
        (isa<arith::ArithDialect, math::MathDialect>(op.getDialect()) ||
         isa<BroadcastOp, DimSizeOp>(op)))
      continue;
    return op.emitOpError()
           << "outside kfuse.fused cannot be emitted as CUDA; only "
           << "kfuse.fused, kfuse.write and scalar constants may remain at "
           << "the top level (run kfuse-fuse-elementwise first)";
  }
  if (plan.numel == -2)
    plan.numel = -1;
  if (indexBits == 32 && plan.numel > int64_t(INT32_MAX))
    return update.emitOpError()
           << plan.numel << " elements need 64-bit indexing, not 32";
  return success();
}

LogicalResult UpdateEmitter::collectReduce(ReduceOp reduce) {
  if (!plan.multiTensor)
    return reduce.emitOpError()
           << "reduces a whole tensor, which runs only as a multi-tensor plan "
              "(a table of one tensor or more; kfuse compile --multi-tensor)";
  if (reduce.getKind() == ReduceKind::variance)
    return reduce.emitOpError()
           << "computes a variance, which the update schedules do not "
              "generate code for; reduce the sum of the values and of their "
              "squares instead";
  Value source = getWholeTensorReduceInput(reduce);
  if (!source)
    source = reduce.getInput();
  if (!source.getDefiningOp<FusedOp>() ||
      !getElementTypeOrSelf(source.getType()).isF32())
    return reduce.emitOpError()
           << "reduces a value that is not an f32 result of a kfuse.fused "
              "region (run kfuse-fuse-elementwise first)";
  ArgLevel level = getValueLevel(reduce.getType());
  if (level == ArgLevel::row || level == ArgLevel::column) {
    // Read only by reductions over the whole tensor, which accumulate its
    // input themselves: nothing of its own to generate.
    if (llvm::all_of(reduce->getUsers(), [](Operation *user) {
          auto outer = dyn_cast<ReduceOp>(user);
          return outer && getWholeTensorReduceInput(outer);
        }))
      return success();
    if (getValueLevel(source.getType()) != ArgLevel::element)
      return reduce.emitOpError()
             << "reduces a value per row or per column over its own "
                "dimension, which generates no code; reduce it over the "
                "other one to a value per tensor";
    reductionOf[reduce.getResult()] = level == ArgLevel::row
                                          ? plan.numRowReductions++
                                          : plan.numColReductions++;
    return success();
  }
  if (auto name =
          reduce->getAttrOfType<StringAttr>(KFuseDialect::kNameAttrName);
      name && reduce.getList())
    plan.listTotals.push_back({name.str(), unsigned(reduces.size())});
  reductionOf[reduce.getResult()] = reduces.size();
  reduces.push_back(reduce);
  return success();
}

LogicalResult UpdateEmitter::planStores() {
  // The last kernel that reads each argument.
  DenseMap<Value, unsigned> lastReader;
  for (auto [index, fused] : llvm::enumerate(fusedOps))
    for (Value input : fused.getInputs())
      if (isa<BlockArgument>(input))
        lastReader[input] = index;

  deferredCopies.resize(fusedOps.size());
  SetVector<Value> needsTemporary;
  DenseSet<Value> writtenArgs;
  for (WriteOp write : writes) {
    Value value = write.getValue();
    if (plan.args[getWriteTarget(write).getArgNumber()].perTensor()) {
      if (failed(planTensorStateWrite(write)))
        return failure();
      continue;
    }
    auto producer = value.getDefiningOp<FusedOp>();
    if (!producer)
      return write.emitOpError()
             << "writes a value not produced by a kfuse.fused op";
    BlockArgument target = getWriteTarget(write);
    if (!writtenArgs.insert(target).second)
      return write.emitOpError()
             << "writes argument '" << getArgName(update, target.getArgNumber())
             << "' a second time";
    unsigned producerIndex = kernelOf.lookup(producer);
    auto reader = lastReader.find(target);
    if (reader != lastReader.end() && reader->second > producerIndex) {
      needsTemporary.insert(value);
      deferredCopies[reader->second].push_back({value, target});
    } else {
      directTargets[value].push_back(target);
    }
  }
  // A later region reads a written result back from its argument: the
  // producer stored it there and no region after it reads the old value.
  for (FusedOp fused : fusedOps)
    for (Value input : fused.getInputs())
      if (input.getDefiningOp<FusedOp>() && !directTargets.count(input))
        needsTemporary.insert(input);

  // Number temporaries in program order.
  for (FusedOp fused : fusedOps)
    for (Value result : fused.getResults()) {
      if (!needsTemporary.contains(result))
        continue;
      Type element = cast<RankedTensorType>(result.getType()).getElementType();
      std::optional<DType> dtype = getStorageDType(element);
      if (!dtype)
        return fused.emitOpError()
               << "result #" << cast<OpResult>(result).getResultNumber()
               << " of element type " << element
               << " cannot be kept in a temporary; use f32, bf16, f16 or i1";
      temporaryOf[result] = plan.temporaries.size();
      plan.temporaries.push_back(*dtype);
    }
  return success();
}

std::string UpdateEmitter::getVectorType(DType dtype, unsigned alignment) {
  unsigned natural = std::min(vectorWidth * dtypeSize(dtype), kMaxVectorBytes);
  alignment = std::min(alignment, natural);
  std::string name = fmt::format("kfuse_{}x{}", dtypeName(dtype), vectorWidth);
  if (alignment != natural)
    name += fmt::format("_a{}", alignment);
  if (vectorTypeNames.insert(name).second)
    vectorTypeDefs +=
        fmt::format("struct alignas({}) {} {{\n  {} v[{}];\n}};\n", alignment,
                    name, getCudaStorageType(dtype), vectorWidth);
  return name;
}

/// The element function's line adding `value` to a thread's part of a
/// reduction of `kind` (a sum, a maximum, a variance's moments).
static std::string accumulateElement(ReduceKind kind, StringRef accumulator,
                                     StringRef value) {
  switch (kind) {
  case ReduceKind::max:
    return fmt::format("  {0} = kfuse_maximumf({0}, {1});\n", accumulator.str(),
                       value.str());
  case ReduceKind::variance:
    return fmt::format("  kfuse_moments_add({}, {});\n", accumulator.str(),
                       value.str());
  default:
    return fmt::format("  {} += {};\n", accumulator.str(), value.str());
  }
}

LogicalResult UpdateEmitter::emitElementFunction(unsigned index,
                                                 KernelBody &kernel,
                                                 std::string &out) {
  FusedOp fused = fusedOps[index];
  Block &body = fused.getBody().front();
  NameTable &names = kernel.names;
  std::string kernelName = names.unique(
      rowsCall ? fmt::format("kfuse_{}_rows",
                             sanitizeIdentifier(update.getSymName()))
      : plan.multiTensor && fusedOps.size() == 1
          ? fmt::format("kfuse_{}_multi",
                        sanitizeIdentifier(update.getSymName()))
      : plan.multiTensor
          ? fmt::format("kfuse_{}_phase{}",
                        sanitizeIdentifier(update.getSymName()), index)
          : fmt::format("kfuse_{}_{}", sanitizeIdentifier(update.getSymName()),
                        index));

  // Parameters, deduplicated by the value they stand for.
  std::vector<Slot> &slots = kernel.slots;
  DenseMap<Value, unsigned> slotOf;
  auto getSlot = [&](Value value, KernelParam::Kind kind) -> Slot & {
    auto [it, inserted] = slotOf.try_emplace(value, slots.size());
    if (!inserted)
      return slots[it->second];
    Slot slot;
    slot.param.kind = kind;
    if (kind == KernelParam::Kind::Temporary) {
      slot.param.index = temporaryOf.lookup(value);
      slot.name = names.unique(fmt::format("tmp{}", slot.param.index));
    } else {
      slot.param.index = cast<BlockArgument>(value).getArgNumber();
      slot.name =
          names.unique(getArgName(update, slot.param.index), /*fromUser=*/true);
    }
    slot.elementType = getElementTypeOrSelf(value.getType());
    slot.level = getValueLevel(value.getType());
    slot.param.dtype = kind == KernelParam::Kind::Scalar
                           ? DType::f32
                           : *getStorageDType(slot.elementType);
    slots.push_back(std::move(slot));
    return slots.back();
  };

  // How body values are spelled: literals anywhere; uniform values by name
  // in the prologue and as `u.<name>` in the element function; varying
  // values by name in the element function.
  DenseMap<Value, std::string> literals, uniformNames, varyingNames;
  SetVector<Value> uniformFields;
  // Uniform fields elements are divided by (kfuse_recip fields after them).
  SetVector<Value> reciprocalFields;
  // The same uniform values as a host program, while every op has a host
  // form (hostValue: the instruction computing each value).
  HostUniforms host;
  DenseMap<Value, unsigned> hostValue;
  bool hostEvaluable = true;
  auto hostConstant = [&](Value value) {
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    auto attr = constant ? dyn_cast<FloatAttr>(constant.getValue()) : nullptr;
    auto flag = constant ? dyn_cast<IntegerAttr>(constant.getValue()) : nullptr;
    if ((!attr || !attr.getType().isF32()) &&
        (!flag || !flag.getType().isInteger(1))) {
      hostEvaluable = false;
      return;
    }
    UniformInstr instr;
    instr.constant = attr                       ? attr.getValueAsDouble()
                     : flag.getValue().isZero() ? 0.0
                                                : 1.0;
    hostValue[value] = host.program.size();
    host.program.push_back(instr);
  };
  auto prologueExpr = [&](Value value) -> std::string {
    auto it = literals.find(value);
    return it != literals.end() ? it->second : uniformNames.lookup(value);
  };
  auto isUniform = [&](Value value) {
    return literals.count(value) || uniformNames.count(value);
  };
  // Uniform values that depend on a per-tensor reduction: computed per
  // chunk, from the chunk's tensor's totals.
  DenseSet<Value> entryValues;
  auto bodyExpr = [&](Value value) -> std::string {
    if (auto it = literals.find(value); it != literals.end())
      return it->second;
    if (auto it = uniformNames.find(value); it != uniformNames.end()) {
      uniformFields.insert(value);
      return "u." + it->second;
    }
    return varyingNames.lookup(value);
  };

  // Element inputs, named once the element function's parameters are.
  SmallVector<std::pair<Value, unsigned>> elementInputs;
  for (auto [position, input] : llvm::enumerate(fused.getInputs())) {
    BlockArgument element = body.getArgument(position);
    if (auto arg = dyn_cast<BlockArgument>(input);
        arg && arg.getOwner()->getParentOp() == update) {
      if (isa<RankedTensorType>(arg.getType())) {
        getSlot(arg, KernelParam::Kind::Tensor).param.read = true;
        elementInputs.push_back({element, slotOf.lookup(arg)});
      } else if (plan.args[arg.getArgNumber()].perTensor()) {
        // Uniform over the chunk's tensor, read once per chunk.
        uniformNames[element] = readTensorState(arg, kernel);
        entryValues.insert(element);
        hostEvaluable = false;
      } else {
        Slot &slot = getSlot(arg, KernelParam::Kind::Scalar);
        slot.param.read = true;
        uniformNames[element] = slot.name;
        UniformInstr instr;
        instr.op = UniformInstr::Op::arg;
        instr.arg = slot.param.index;
        hostValue[element] = host.program.size();
        host.program.push_back(instr);
      }
      continue;
    }
    if (input.getDefiningOp<FusedOp>()) {
      if (!directTargets.count(input)) {
        getSlot(input, KernelParam::Kind::Temporary).param.read = true;
        elementInputs.push_back({element, slotOf.lookup(input)});
        continue;
      }
      // Read back from where its producer stored it.
      BlockArgument target = directTargets.lookup(input).front();
      getSlot(target, KernelParam::Kind::Tensor).param.read = true;
      elementInputs.push_back({element, slotOf.lookup(target)});
      continue;
    }
    if (auto reduced = reductionOf.find(input); reduced != reductionOf.end()) {
      ArgLevel level = getValueLevel(input.getType());
      if (level == ArgLevel::row || level == ArgLevel::column) {
        // A total per row or per column: the element function's input.
        std::string name = names.unique(
            fmt::format("{}_total{}", level == ArgLevel::row ? "row" : "col",
                        reduced->second));
        kernel.lineInputs.push_back(
            {reduced->second, level, name,
             input.getDefiningOp<ReduceOp>().getKind()});
        varyingNames[element] = name;
        continue;
      }
      // Uniform over a tensor, read from the totals once per chunk, or over
      // the list, read once.
      std::string name = names.unique(fmt::format("total{}", reduced->second));
      uniformNames[element] = name;
      hostEvaluable = false;
      if (input.getDefiningOp<ReduceOp>().getList()) {
        kernel.listInputs.push_back({reduced->second, name});
        continue;
      }
      kernel.reducedInputs.push_back({reduced->second, name});
      entryValues.insert(element);
      continue;
    }
    if (auto dim = input.getDefiningOp<DimSizeOp>(); dim && plan.multiTensor) {
      // The extent of the chunk's tensor, from its table entry.
      std::string name = names.unique("extent");
      std::string extent = !matrix             ? "entry->numel"
                           : dim.getDim() == 1 ? "entry->cols"
                                               : "(entry->numel / entry->cols)";
      kernel.entryPrologue += fmt::format(
          "  const {} {} = ({}){};\n", getUniformType(dim.getType()), name,
          getUniformType(dim.getType()), extent);
      uniformNames[element] = name;
      entryValues.insert(element);
      hostEvaluable = false;
      continue;
    }
    if (auto constant = input.getDefiningOp<arith::ConstantOp>()) {
      FailureOr<std::string> literal = emitOpExpression(constant, {});
      if (failed(literal))
        return failure();
      literals[element] = *literal;
      if (hostEvaluable)
        hostConstant(constant);
      if (hostValue.count(constant))
        hostValue[element] = hostValue.lookup(constant);
      continue;
    }
    return fused.emitOpError()
           << "input #" << position << " is neither an update argument, a "
           << "scalar constant nor the result of an earlier kfuse.fused op";
  }

  std::vector<Store> stores;
  YieldOp yield = fused.getYield();
  for (auto [position, result] : llvm::enumerate(fused.getResults())) {
    Value yielded = yield.getValues()[position];
    for (BlockArgument target : directTargets.lookup(result)) {
      Slot &slot = getSlot(target, KernelParam::Kind::Tensor);
      slot.param.written = true;
      stores.push_back({slotOf.lookup(target), yielded, std::nullopt});
    }
    if (temporaryOf.count(result)) {
      Slot &slot = getSlot(result, KernelParam::Kind::Temporary);
      slot.param.written = true;
      stores.push_back({slotOf.lookup(result), yielded, std::nullopt});
    }
  }
  for (auto [result, target] : deferredCopies[index]) {
    getSlot(result, KernelParam::Kind::Temporary).param.read = true;
    getSlot(target, KernelParam::Kind::Tensor).param.written = true;
    stores.push_back({slotOf.lookup(target), Value(), slotOf.lookup(result)});
  }
  for (Slot &slot : slots) {
    if (slot.param.kind == KernelParam::Kind::Scalar)
      continue;
    if (slot.param.read)
      slot.in = names.unique(slot.name + "_in");
    if (slot.param.written)
      slot.out = names.unique(slot.name + "_out");
  }
  for (auto [element, slot] : elementInputs)
    varyingNames[element] = slots[slot].in;

  // Body ops: uniform ones to the prologue, the others to the element
  // function.
  std::string prologue, elementBody;
  unsigned nextValue = 0;
  // Row-local reductions a body value depends on (isRowLocalReduce).
  DenseMap<Value, unsigned> rowDepth;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0 || op.getNumResults() != 1)
      return op.emitOpError()
             << "is not supported in a fused body by the CUDA code generator";
    unsigned depth = 0;
    for (Value operand : op.getOperands())
      depth = std::max(depth, rowDepth.lookup(operand));
    if (auto reduce = dyn_cast<ReduceOp>(op)) {
      // The element's row, held in registers: the element function adds the
      // element to the thread's part and takes the row's total, which the
      // loop combines over the row's lanes between calls.
      if (!matrix)
        return reduce.emitOpError()
               << "reduces the element's row in a kernel without rows";
      unsigned position = kernel.rowLocals.size();
      KernelBody::RowLocal row{
          reduce.getKind(), names.unique(fmt::format("row_part{}", position)),
          names.unique(fmt::format("row_total{}", position)), depth + 1};
      std::string value = bodyExpr(reduce.getInput());
      if (isUniform(reduce.getInput()))
        value = "(float)" + prologueExpr(reduce.getInput());
      elementBody += accumulateElement(row.kind, row.accumulator, value);
      usesMoments |= row.kind == ReduceKind::variance;
      varyingNames[reduce.getResult()] = row.total;
      rowDepth[reduce.getResult()] = row.depth;
      kernel.rowLocals.push_back(std::move(row));
      continue;
    }
    if (depth)
      rowDepth[op.getResult(0)] = depth;
    bool uniform = llvm::all_of(op.getOperands(), isUniform);
    SmallVector<std::string> operands;
    for (Value operand : op.getOperands())
      operands.push_back(uniform ? prologueExpr(operand) : bodyExpr(operand));
    FailureOr<std::string> expr = emitOpExpression(&op, operands, uniform);
    if (failed(expr))
      return failure();
    // A division of elements by a uniform value: its reciprocal is a field
    // of `u`, computed once per chunk rather than for every element (the
    // same quotient, bit for bit). Uniforms a multi-tensor kernel computes
    // on the device only: the host's uniforms are f32 fields.
    if (!uniform && plan.multiTensor && isa<arith::DivFOp>(op) &&
        op.getResult(0).getType().isF32() &&
        uniformNames.count(op.getOperand(1))) {
      reciprocalFields.insert(op.getOperand(1));
      expr = fmt::format("kfuse_div_rn_by({}, u.{}_rcp)", operands[0],
                         uniformNames.lookup(op.getOperand(1)));
    }
    Value result = op.getResult(0);
    if (isa<arith::ConstantOp>(op)) {
      literals[result] = *expr;
      continue;
    }
    if (uniform && hostEvaluable)
      addHostInstr(&op, host, hostValue, hostConstant, hostEvaluable);
    bool perEntry = uniform && llvm::any_of(op.getOperands(), [&](Value v) {
                      return entryValues.contains(v);
                    });
    if (perEntry)
      entryValues.insert(result);
    std::string name = names.unique(fmt::format("v{}", nextValue++));
    std::string line =
        fmt::format("  const {} {} = {};\n",
                    uniform ? getUniformType(result.getType())
                            : getCudaScalarType(result.getType())->str(),
                    name, *expr);
    if (uniform) {
      uniformNames[result] = name;
      (perEntry ? kernel.entryPrologue : prologue) += line;
    } else {
      varyingNames[result] = name;
      elementBody += line;
    }
  }
  for (const Store &store : stores) {
    std::string value =
        store.copyFrom ? slots[*store.copyFrom].in : bodyExpr(store.value);
    elementBody += fmt::format("  {} = {};\n", slots[store.slot].out, value);
  }
  // Results that feed per-tensor reductions accumulate into the thread's
  // value for the chunk.
  // In a 2-D update a reduction may be over rows, over columns or over the
  // tensor (of the elements, or of the values per row or per column); one
  // over the whole tensor of a row or column reduction accumulates the
  // inner one's input.
  for (auto [position, result] : llvm::enumerate(fused.getResults()))
    for (Operation *user : result.getUsers()) {
      auto inner = dyn_cast<ReduceOp>(user);
      if (!inner)
        continue;
      SmallVector<ReduceOp> targets;
      if (reductionOf.count(inner.getResult()))
        targets.push_back(inner);
      for (Operation *outer : inner->getUsers())
        if (auto reduce = dyn_cast<ReduceOp>(outer);
            reduce && getWholeTensorReduceInput(reduce))
          targets.push_back(reduce);
      for (ReduceOp reduce : targets) {
        unsigned index = reductionOf.lookup(reduce.getResult());
        ArgLevel level = getValueLevel(reduce.getType());
        std::string accumulator =
            names.unique(fmt::format("{}{}",
                                     level == ArgLevel::row      ? "row_acc"
                                     : level == ArgLevel::column ? "col_acc"
                                                                 : "acc",
                                     index));
        std::string value = bodyExpr(yield.getValues()[position]);
        elementBody += accumulateElement(reduce.getKind(), accumulator, value);
        kernel.reductions.push_back({index, reduce.getKind(), reduce.getList(),
                                     accumulator, level,
                                     getValueLevel(result.getType())});
      }
    }
  if (kernel.scansGrads)
    for (const Slot &slot : slots)
      if (slot.param.kind == KernelParam::Kind::Tensor && slot.param.read &&
          plan.args[slot.param.index].role == ArgRole::grad)
        elementBody +=
            fmt::format("  kfuse_nonfinite |= !kfuse_finite_{}({});\n",
                        dtypeName(slot.param.dtype), slot.in);

  // States at the tensor level this kernel stores: each chunk computes the
  // new value from its tensor's totals, the last one to finish stores it.
  DenseMap<Value, std::string> entryDone;
  for (WriteOp write : tensorStateWrites.lookup(index)) {
    FailureOr<std::string> value =
        emitEntryValue(write.getValue(), kernel, entryDone);
    if (failed(value))
      return failure();
    unsigned pointer =
        llvm::find(plan.tensorArgs, getWriteTarget(write).getArgNumber()) -
        plan.tensorArgs.begin();
    kernel.entryStores.push_back({pointer, *value});
  }

  // The uniform struct and the element function.
  KernelInfo &info = kernel.info;
  info.name = kernelName;
  info.location = formatLocation(fused.getLoc());
  info.vectorWidth = vectorWidth;
  info.indexBits = plan.multiTensor ? 64 : indexBits;
  info.blockSize = kBlockSize;
  info.numBodyOps = fused.getNumBodyOps();
  for (const Slot &slot : slots)
    info.params.push_back(slot.param);
  for (auto [pointer, name] : kernel.stateInputs)
    info.params.push_back({KernelParam::Kind::TensorValue,
                           plan.tensorArgs[pointer], DType::f32,
                           /*read=*/true, /*written=*/false});
  for (auto [pointer, name] : kernel.entryStores)
    info.params.push_back({KernelParam::Kind::TensorValue,
                           plan.tensorArgs[pointer], DType::f32,
                           /*read=*/false, /*written=*/true});

  // The host's fields are floats; a multi-tensor kernel's device program
  // also gives i1 fields (flags such as SGD's first step).
  for (Value field : uniformFields)
    if (!(field.getType().isF32() ||
          (plan.multiTensor && field.getType().isInteger(1))) ||
        !hostValue.count(field))
      hostEvaluable = false;
  if (hostEvaluable)
    for (Value field : uniformFields)
      host.fields.push_back(hostValue.lookup(field));
  // A multi-tensor kernel computes its uniforms on the device (its hypers
  // and step live there); the program is what the direct PTX spells.
  if (hostEvaluable && plan.multiTensor)
    kernel.deviceUniforms = std::move(host);
  else if (hostEvaluable) {
    info.hostUniforms = std::move(host);
    info.params.erase(llvm::remove_if(info.params,
                                      [](const KernelParam &param) {
                                        return param.kind ==
                                               KernelParam::Kind::Scalar;
                                      }),
                      info.params.end());
  }

  std::string uniformsType = names.unique(kernelName + "_uniforms");
  std::string elementFunction = names.unique(kernelName + "_element");
  if (rowsCall)
    out +=
        fmt::format("// The element function of @{}'s rows, from {}: {} "
                    "body ops.\n",
                    update.getSymName().str(), info.location, info.numBodyOps);
  else if (plan.multiTensor && fusedOps.size() == 1)
    out +=
        fmt::format("// The multi-tensor kernel of @{}, from {}: {} body "
                    "ops.\n",
                    update.getSymName().str(), info.location, info.numBodyOps);
  else if (plan.multiTensor)
    out += fmt::format("// Reduction phase {} of the multi-tensor kernels of "
                       "@{}, from {}: {} body ops.\n",
                       index, update.getSymName().str(), info.location,
                       info.numBodyOps);
  else
    out +=
        fmt::format("// Kernel {} of @{}, from {}: {} body ops.\n", index,
                    update.getSymName().str(), info.location, info.numBodyOps);
  if (info.hostUniforms && !prologue.empty()) {
    // What the runtime computes (KernelInfo::hostUniforms), for the reader.
    out += "// Uniform values, computed on the host at each launch:\n";
    for (StringRef line : llvm::split(StringRef(prologue).rtrim(), '\n'))
      out += "//" + line.str() + "\n";
  }
  out += fmt::format("struct {} {{\n", uniformsType);
  for (Value field : uniformFields)
    out += fmt::format("  {} {};\n", getCudaScalarType(field.getType())->str(),
                       uniformNames.lookup(field));
  for (Value field : reciprocalFields)
    out += fmt::format("  kfuse_recip {}_rcp;\n", uniformNames.lookup(field));
  out += "};\n\n";

  SmallVector<std::string> elementParams{
      fmt::format("const {} &u", uniformsType)};
  for (const Slot &slot : slots)
    if (slot.param.kind != KernelParam::Kind::Scalar && slot.param.read)
      elementParams.push_back(fmt::format(
          "{} {}", getCudaScalarType(slot.elementType)->str(), slot.in));
  for (const KernelBody::LineInput &input : kernel.lineInputs)
    elementParams.push_back("float " + input.name);
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    elementParams.push_back("float " + row.total);
  for (const Slot &slot : slots)
    if (slot.param.written)
      elementParams.push_back(fmt::format(
          "{} &{}", getCudaStorageType(slot.param.dtype), slot.out));
  for (const ChunkReduction &reduction : kernel.reductions)
    elementParams.push_back("float &" + reduction.accumulator);
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    elementParams.push_back(
        (row.kind == ReduceKind::variance ? "kfuse_moments &" : "float &") +
        row.accumulator);
  if (kernel.scansGrads)
    elementParams.push_back("bool &kfuse_nonfinite");
  out += fmt::format("static __device__ __forceinline__ void\n{}({}) {{\n{}}}"
                     "\n\n",
                     elementFunction, llvm::join(elementParams, ", "),
                     elementBody);

  SmallVector<std::string> fieldInits;
  for (Value field : uniformFields)
    fieldInits.push_back(fmt::format("({}){}",
                                     getCudaScalarType(field.getType())->str(),
                                     uniformNames.lookup(field)));
  for (Value field : reciprocalFields)
    fieldInits.push_back(
        fmt::format("kfuse_recip_of((float){})", uniformNames.lookup(field)));
  kernel.name = kernelName;
  kernel.fused = fused;
  kernel.elementInputs = std::move(elementInputs);
  kernel.stores = std::move(stores);
  kernel.uniformFields.assign(uniformFields.begin(), uniformFields.end());
  kernel.elementFunction = elementFunction;
  kernel.uniformsType = uniformsType;
  if (info.hostUniforms) {
    // `u` is the kernel's parameter, or empty.
    if (uniformFields.empty())
      kernel.uniformInit = fmt::format("  const {} u = {{}};\n", uniformsType);
    return success();
  }
  kernel.prologue = std::move(prologue);
  kernel.uniformInit = fmt::format("  const {} u = {{{}}};\n", uniformsType,
                                   llvm::join(fieldInits, ", "));
  return success();
}

std::string UpdateEmitter::callElement(
    KernelBody &kernel, function_ref<std::string(unsigned)> input,
    function_ref<std::string(unsigned)> output,
    function_ref<std::string(const KernelBody::LineInput &)> lineInput,
    function_ref<std::string(const ChunkReduction &)> accumulator,
    function_ref<std::string(const KernelBody::RowLocal &)> rowTotal,
    function_ref<std::string(const KernelBody::RowLocal &)> rowAccumulator) {
  SmallVector<std::string> args{"u"};
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.kind != KernelParam::Kind::Scalar && slot.param.read)
      args.push_back(input(position));
  for (const KernelBody::LineInput &line : kernel.lineInputs)
    args.push_back(lineInput(line));
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    args.push_back(rowTotal(row));
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.written)
      args.push_back(output(position));
  for (const ChunkReduction &reduction : kernel.reductions)
    args.push_back(accumulator ? accumulator(reduction)
                               : reduction.accumulator);
  for (const KernelBody::RowLocal &row : kernel.rowLocals)
    args.push_back(rowAccumulator(row));
  if (kernel.scansGrads)
    args.push_back("kfuse_nonfinite");
  return fmt::format("{}({})", kernel.elementFunction, llvm::join(args, ", "));
}

/// The body of a vector loop over vector index `i`: whole-vector loads of
/// every input, the element function on each lane, whole-vector stores.
/// `fullyAligned`: every tensor pointer is 16-byte aligned.
std::string UpdateEmitter::emitVectorStep(KernelBody &kernel, StringRef indent,
                                          bool fullyAligned) {
  std::string out;
  auto local = [&](DenseMap<unsigned, std::string> &map, unsigned position,
                   StringRef suffix) -> const std::string & {
    std::string &name = map[position];
    if (name.empty())
      name = kernel.names.unique(kernel.slots[position].name + suffix.str());
    return name;
  };
  DenseMap<unsigned, std::string> vectorType;
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind == KernelParam::Kind::Scalar)
      continue;
    // Temporaries are allocated by the runtime with full alignment.
    unsigned alignment =
        fullyAligned || slot.param.kind == KernelParam::Kind::Temporary
            ? kMaxVectorBytes
            : std::max(plan.alignment, dtypeSize(slot.param.dtype));
    vectorType[position] = getVectorType(slot.param.dtype, alignment);
    if (slot.param.read)
      out += fmt::format(
          "{0}const {1} {2} = reinterpret_cast<const {1} *>({3})[i];\n",
          indent.str(), vectorType[position],
          local(kernel.vectorIn, position, "_v"), slot.name);
  }
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.written)
      out += fmt::format("{}{} {};\n", indent.str(), vectorType[position],
                         local(kernel.vectorOut, position, "_w"));
  out += fmt::format("#pragma unroll\n"
                     "{0}for (int j = 0; j < {1}; ++j)\n{0}  {2};\n",
                     indent.str(), vectorWidth,
                     callElement(
                         kernel,
                         [&](unsigned position) {
                           return kernel.vectorIn.lookup(position) + ".v[j]";
                         },
                         [&](unsigned position) {
                           return kernel.vectorOut.lookup(position) + ".v[j]";
                         }));
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.written)
      out += fmt::format("{}reinterpret_cast<{} *>({})[i] = {};\n",
                         indent.str(), vectorType.lookup(position), slot.name,
                         kernel.vectorOut.lookup(position));
  return out;
}

/// The body of a scalar loop over element index `i`.
std::string UpdateEmitter::emitScalarStep(KernelBody &kernel,
                                          StringRef indent) {
  std::string out;
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.written) {
      std::string &name = kernel.scalarOut[position];
      if (name.empty())
        name = kernel.names.unique(slot.name + "_o");
      out += fmt::format("{}{} {};\n", indent.str(),
                         getCudaStorageType(slot.param.dtype), name);
    }
  out += fmt::format("{}{};\n", indent.str(),
                     callElement(
                         kernel,
                         [&](unsigned position) {
                           return kernel.slots[position].name + "[i]";
                         },
                         [&](unsigned position) {
                           return kernel.scalarOut.lookup(position);
                         }));
  for (auto [position, slot] : llvm::enumerate(kernel.slots))
    if (slot.param.written)
      out += fmt::format("{}{}[i] = {};\n", indent.str(), slot.name,
                         kernel.scalarOut.lookup(position));
  return out;
}

void UpdateEmitter::emitGridStrideKernel(KernelBody &kernel, std::string &out) {
  bool dynamic = plan.numel < 0;
  SmallVector<std::string> kernelParams;
  const std::optional<HostUniforms> &host = kernel.info.hostUniforms;
  if (host && !host->fields.empty())
    kernelParams.push_back(fmt::format("const {} u", kernel.uniformsType));
  for (const Slot &slot : kernel.slots) {
    if (slot.param.kind == KernelParam::Kind::Scalar) {
      if (!host)
        kernelParams.push_back("double " + slot.name);
      continue;
    }
    kernelParams.push_back(
        fmt::format("{}{} *__restrict__ {}", slot.param.written ? "" : "const ",
                    getCudaStorageType(slot.param.dtype), slot.name));
  }
  if (dynamic)
    kernelParams.push_back("long long n");
  out += fmt::format("extern \"C\" __global__ void __launch_bounds__({})\n"
                     "{}({}) {{\n"
                     "  kfuse_grid_dependency_sync();\n",
                     kBlockSize, kernel.name, llvm::join(kernelParams, ", "));
  if (!kernel.prologue.empty())
    out += "  // Uniform values, once per thread.\n" + kernel.prologue;
  out += kernel.uniformInit;

  const char *indexType =
      indexBits == 32 ? "unsigned int" : "unsigned long long";
  const char *suffix = indexBits == 32 ? "u" : "ull";
  if (dynamic)
    out += fmt::format("  const {0} count = ({0})n;\n", indexType);
  else
    out += fmt::format("  const {} count = {}{};\n", indexType, plan.numel,
                       suffix);
  out += fmt::format("  const {0} tid = ({0})blockIdx.x * blockDim.x + "
                     "threadIdx.x;\n"
                     "  const {0} stride = ({0})gridDim.x * blockDim.x;\n",
                     indexType);

  bool hasVectorLoop =
      vectorWidth > 1 && (dynamic || plan.numel >= vectorWidth);
  // A dynamic count known to be a multiple of the vector width needs no
  // tail: a fifth copy of the body, about 10 % of a cold compile.
  bool hasTail =
      vectorWidth == 1 || (dynamic ? plan.numelMultiple % vectorWidth != 0
                                   : plan.numel % vectorWidth != 0);
  std::string tailStart = "tid";
  if (hasVectorLoop) {
    out += fmt::format("  const {} vectors = count / {}{};\n", indexType,
                       vectorWidth, suffix);
    out += fmt::format("  for ({} i = tid; i < vectors; i += stride) {{\n",
                       indexType);
    out += emitVectorStep(kernel, "    ", /*fullyAligned=*/false);
    out += "  }\n";
    tailStart = fmt::format("vectors * {}{} + tid", vectorWidth, suffix);
  }
  if (hasTail) {
    if (hasVectorLoop)
      out += fmt::format("  // The last count % {} elements.\n", vectorWidth);
    out += fmt::format("  for ({} i = {}; i < count; i += stride) {{\n",
                       indexType, tailStart);
    out += emitScalarStep(kernel, "    ");
    out += "  }\n";
  }
  out += "}\n";
  if (ptxTarget)
    ptxKernels.push_back(getPtxSpec(kernel));
  plan.kernels.push_back(std::move(kernel.info));
}

PtxKernelSpec UpdateEmitter::getPtxSpec(const KernelBody &kernel) const {
  PtxKernelSpec spec;
  spec.name = kernel.name;
  spec.location = kernel.info.location;
  spec.fused = kernel.fused;
  spec.numel = plan.numel;
  spec.numelMultiple = plan.numelMultiple;
  spec.vectorWidth = vectorWidth;
  spec.indexBits = indexBits;
  spec.alignment = plan.alignment;
  // Tensors in signature order: the slots that are not scalars.
  DenseMap<unsigned, unsigned> tensorOfSlot;
  for (auto [position, slot] : llvm::enumerate(kernel.slots)) {
    if (slot.param.kind == KernelParam::Kind::Scalar)
      continue;
    tensorOfSlot[position] = spec.tensors.size();
    spec.tensors.push_back({slot.param.dtype, slot.param.read,
                            slot.param.written,
                            slot.param.kind == KernelParam::Kind::Temporary});
  }
  for (auto [element, slot] : kernel.elementInputs)
    spec.inputTensor[element] = tensorOfSlot.lookup(slot);
  for (const Store &store : kernel.stores) {
    if (store.copyFrom) {
      spec.copies = true;
      continue;
    }
    spec.stores.push_back({tensorOfSlot.lookup(store.slot), store.value});
  }
  if (kernel.info.hostUniforms) {
    spec.hostUniforms = true;
    for (auto [field, value] : llvm::enumerate(kernel.uniformFields))
      spec.uniformField[value] = field;
    spec.numUniformFields = kernel.uniformFields.size();
  }
  if (!plan.multiTensor)
    return spec;
  spec.multiTensor = true;
  spec.indexBits = 64;
  spec.alignment = kMaxVectorBytes; // the vector loop's entries are aligned
  spec.stepArg = plan.stepArg;
  for (const Slot &slot : kernel.slots)
    if (slot.param.kind != KernelParam::Kind::Scalar)
      spec.tensorPointers.push_back(
          llvm::find(plan.tensorArgs, slot.param.index) -
          plan.tensorArgs.begin());
  if (kernel.deviceUniforms) {
    spec.deviceUniforms = kernel.deviceUniforms;
    for (auto [field, value] : llvm::enumerate(kernel.uniformFields))
      spec.uniformField[value] = field;
    spec.numUniformFields = kernel.uniformFields.size();
  }
  if (!kernel.reductions.empty() || !kernel.entryStores.empty() ||
      !kernel.reducedInputs.empty() || !kernel.listInputs.empty() ||
      !kernel.stateInputs.empty() || kernel.scansGrads)
    spec.unsupported = "a reduction or a state at the tensor level";
  else if (!kernel.deviceUniforms)
    spec.unsupported = "uniform values without a host form (per-tensor "
                       "extents, comparisons or selects on hyperparameters)";
  return spec;
}

/// The direct PTX of every kernel into plan.ptx, or why there is none into
/// plan.ptxUnsupported.
void UpdateEmitter::emitPtx() {
  std::string reason;
  FailureOr<std::string> module = emitPtxModule(ptxKernels, *ptxTarget, reason);
  if (failed(module))
    plan.ptxUnsupported = std::move(reason);
  else
    plan.ptx = std::move(*module);
}

FailureOr<KernelPlan> UpdateEmitter::emit() {
  plan.name = update.getSymName().str();
  if (failed(readAttributes()) || failed(collectArgs()) ||
      failed(collectOps()) || failed(planStores()))
    return failure();
  std::string kernels;
  if (rowsCall) {
    // A norm's call-shaped row kernel: the one phase's rows, by the
    // register-row loop, under the norm's launch ABI (codegen/KernelPlan.h).
    if (!matrix || plan.cols <= 1)
      return update.emitOpError()
             << "has rows of " << plan.cols
             << " column(s); the update emitter's row kernel "
                "(KFUSE_NORM_EMITTER=update) generates rows of a static "
                "length of 2 or more";
    if (fusedOps.size() > 2)
      return update.emitOpError()
             << "has " << fusedOps.size()
             << " phase(s); the update emitter's row kernel "
                "(KFUSE_NORM_EMITTER=update) generates one over rows it "
                "holds in registers, and a second that stores its column "
                "sums";
    KernelBody kernel(/*multiTensor=*/true);
    if (failed(emitElementFunction(0, kernel, kernels)) ||
        failed(emitRowsCallKernel(kernel, kernels)))
      return failure();
    if (fusedOps.size() == 2) {
      kernels += "\n";
      if (failed(emitRowsCallFinish(kernels)))
        return failure();
    }
    plan.kind = KernelKind::norm;
    plan.multiTensor = plan.matrix = false;
  } else if (plan.multiTensor) {
    if (failed(checkMultiTensor()))
      return failure();
    gridBarrier = fusedOps.size() > 1 &&
                  update->hasAttr(KFuseDialect::kGridBarrierAttrName);
    // The first phase scans the grads itself where it reads them all and
    // writes nothing (the global norm of kfuse-clip-grad-norm): a whole
    // step then reads the grads twice, not three times. The scan kernel
    // stays for a step in parts: plans sharing one flag each scan before
    // any of them updates (MultiTensorPlan::step).
    bool foldScan =
        plan.checksFoundInf && fusedOps.size() > 1 && phaseCanScanGrads(0);
    if (plan.checksFoundInf) {
      kernels += emitFoundInfScan();
      kernels += "\n";
    }
    size_t firstPhase = plan.kernels.size();
    for (unsigned index = 0; index < fusedOps.size(); ++index) {
      if (index)
        kernels += "\n";
      KernelBody kernel(/*multiTensor=*/true);
      kernel.scansGrads = foldScan && index == 0;
      if (failed(emitElementFunction(index, kernel, kernels)))
        return failure();
      SignatureForm form =
          gridBarrier ? SignatureForm::PhaseFunction : SignatureForm::Kernel;
      if (matrix) {
        if (failed(emitMatrixKernel(kernel, index + 1 == fusedOps.size(), form,
                                    kernels)))
          return failure();
      } else
        emitMultiTensorKernel(kernel, index + 1 == fusedOps.size(), form,
                              kernels);
    }
    if (gridBarrier) {
      std::vector<KernelInfo> phases(plan.kernels.begin() + firstPhase,
                                     plan.kernels.end());
      plan.kernels.resize(firstPhase);
      emitBarrierKernel(phases, kernels);
    }
  } else {
    for (unsigned index = 0; index < fusedOps.size(); ++index) {
      if (index)
        kernels += "\n";
      KernelBody kernel(/*multiTensor=*/false);
      if (failed(emitElementFunction(index, kernel, kernels)))
        return failure();
      emitGridStrideKernel(kernel, kernels);
    }
    if (ptxTarget)
      emitPtx();
  }
  if (ptxTarget && plan.multiTensor) {
    if (matrix)
      plan.ptxUnsupported = "2-D updates have no direct PTX form";
    else if (plan.checksFoundInf)
      plan.ptxUnsupported = "the found-inf scan of grad scaling has no "
                            "direct PTX form";
    else if (gridBarrier)
      plan.ptxUnsupported = "a cooperative kernel of reduction phases has no "
                            "direct PTX form";
    else
      emitPtx();
  }
  plan.source = fmt::format(
      "// Generated by kfuse from @{}: {} kernel(s), vector width {}, "
      "{}-bit indexing, {}.\n"
      "// Self-contained: compiles with NVRTC without headers.\n\n"
      "{}\n{}{}{}{}",
      plan.name, plan.kernels.size(), vectorWidth,
      plan.multiTensor ? 64 : indexBits,
      plan.multiTensor ? std::string("multi-tensor")
      : plan.numel < 0 && plan.numelMultiple > 1
          ? fmt::format("dynamic numel, a multiple of {}", plan.numelMultiple)
      : plan.numel < 0 ? std::string("dynamic numel")
                       : fmt::format("numel {}", plan.numel),
      getCudaPrelude().str(),
      rowsCall ? getMatrixPrelude().str() + "\n" +
                     (plan.columnOutputs.empty()
                          ? ""
                          : getMultiTensorReducePrelude().str() + "\n") +
                     (usesMoments ? getMomentsPrelude().str() + "\n" : "") +
                     (usesStaging ? getStagingPrelude().str() + "\n" : "")
      : plan.multiTensor
          ? getMultiTensorPrelude().str() + "\n" +
                (plan.numReductions || plan.matrix
                     ? getMultiTensorReducePrelude().str() + "\n"
                     : "") +
                (gridBarrier ? getGridBarrierPrelude().str() + "\n" : "") +
                (plan.matrix ? getMatrixPrelude().str() + "\n" : "") +
                (usesMoments ? getMomentsPrelude().str() + "\n" : "") +
                (usesStaging ? getStagingPrelude().str() + "\n" : "")
          : "",
      vectorTypeDefs, vectorTypeDefs.empty() ? "" : "\n",
      getCudaUniformMathFunctions(kernels) + kernels);
  return std::move(plan);
}

} // namespace kfuse::update

namespace kfuse {

FailureOr<KernelPlan> emitCuda(func::FuncOp update,
                               const PtxTarget *ptxTarget) {
  return update::UpdateEmitter(update, ptxTarget).emit();
}

FailureOr<KernelPlan> emitRowsCuda(func::FuncOp update,
                                   const NormEmitOptions &options) {
  return update::UpdateEmitter(update, nullptr, &options).emit();
}

} // namespace kfuse
