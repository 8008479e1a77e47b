//===- Interpreter.cpp - CPU reference interpreter of updates ------------===//
//
// Walks the update's single block once. Whole-tensor values are vectors of
// doubles; kfuse.fused bodies are compiled to a flat program of element ops
// and run once per element. Writes are staged and applied when the update
// returns, so every read sees the pre-step values and a failed run leaves
// the caller's buffers untouched.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Interpreter.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/ElementOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>

using namespace mlir;

namespace kfuse {

namespace {

/// The value of one SSA value: a scalar or the elements of a tensor.
struct RuntimeValue {
  bool isTensor = false;
  double scalar = 0.0;
  std::vector<double> elements;

  double at(size_t index) const { return isTensor ? elements[index] : scalar; }
};

/// One op of a compiled kfuse.fused body, reading and writing slots.
struct FusedInstruction {
  ElementOp op;
  SmallVector<unsigned, 3> operands;
  unsigned result;
};

class UpdateInterpreter {
public:
  UpdateInterpreter(func::FuncOp update, Precision precision)
      : update(update), precision(precision) {}

  LogicalResult run(UpdateValues &values);

private:
  LogicalResult bindArguments(const UpdateValues &values);
  LogicalResult execute(Operation *op);
  LogicalResult executeElementwise(Operation *op);
  LogicalResult executeBroadcast(BroadcastOp op);
  LogicalResult executeFused(FusedOp op);
  LogicalResult executeWrite(WriteOp op);

  /// The element count of a tensor of `type` produced by `op`.
  FailureOr<size_t> getTensorSize(Type type, Operation *op);
  /// The bound value of `value`, read by `user`.
  FailureOr<const RuntimeValue *> lookup(Value value, Operation *user);
  /// Whether a load or store of `kind` rounds in this precision.
  bool roundsStorage(ElementKind kind) const {
    return precision == Precision::F32 || kind == ElementKind::BF16 ||
           kind == ElementKind::F16;
  }

  func::FuncOp update;
  Precision precision;
  /// The element count of every tensor, fixed by the argument buffers.
  std::optional<size_t> numElements;
  DenseMap<Value, RuntimeValue> env;
  std::map<unsigned, std::vector<double>> pendingWrites;
};

} // namespace

FailureOr<size_t> UpdateInterpreter::getTensorSize(Type type, Operation *op) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitOpError() << "has a value of type " << type
                             << "; the interpreter supports scalars and "
                                "ranked tensors only";
  if (tensor.hasStaticShape()) {
    auto size = static_cast<size_t>(tensor.getNumElements());
    if (numElements && *numElements != size)
      return op->emitOpError()
             << "has a value of type " << type << " with " << size
             << " elements but the update's tensors have " << *numElements;
    return size;
  }
  if (!numElements)
    return op->emitOpError() << "has a dynamically shaped value of type "
                             << type << " but no tensor argument gives its "
                             << "size";
  return *numElements;
}

FailureOr<const RuntimeValue *> UpdateInterpreter::lookup(Value value,
                                                          Operation *user) {
  auto it = env.find(value);
  if (it == env.end())
    return user->emitOpError()
           << "reads a value the interpreter has not computed (defined "
              "outside the update's block?)";
  return &it->second;
}

LogicalResult UpdateInterpreter::bindArguments(const UpdateValues &values) {
  std::optional<unsigned> firstTensor;
  for (BlockArgument arg : update.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::string name = getArgName(update, index);
    FailureOr<ElementKind> kind = getElementKind(
        arg.getType(), update.getLoc(),
        "argument #" + std::to_string(index) + " '" + name + "'");
    if (failed(kind))
      return failure();
    bool round = roundsStorage(*kind);
    RuntimeValue bound;
    if (auto tensor = dyn_cast<RankedTensorType>(arg.getType())) {
      if (index >= values.tensors.size())
        return update.emitError()
               << "no buffer for tensor argument #" << index << " '" << name
               << "': " << values.tensors.size() << " tensors given";
      const std::vector<double> &buffer = values.tensors[index];
      if (tensor.hasStaticShape() &&
          buffer.size() != static_cast<size_t>(tensor.getNumElements()))
        return update.emitError()
               << "buffer of argument #" << index << " '" << name << "' has "
               << buffer.size() << " elements but its type " << tensor
               << " needs " << tensor.getNumElements();
      if (numElements && buffer.size() != *numElements)
        return update.emitError()
               << "buffer of argument #" << index << " '" << name << "' has "
               << buffer.size() << " elements but argument #" << *firstTensor
               << " '" << getArgName(update, *firstTensor) << "' has "
               << *numElements;
      if (!numElements) {
        numElements = buffer.size();
        firstTensor = index;
      }
      bound.isTensor = true;
      bound.elements = buffer;
      if (round)
        for (double &element : bound.elements)
          element = roundToKind(element, *kind);
    } else if (isa<ShapedType>(arg.getType())) {
      return update.emitError()
             << "argument #" << index << " '" << name << "' has type "
             << arg.getType() << "; updates take ranked tensors and scalars";
    } else {
      if (index >= values.scalars.size())
        return update.emitError()
               << "no value for scalar argument #" << index << " '" << name
               << "': " << values.scalars.size() << " scalars given";
      bound.scalar = values.scalars[index];
      if (round)
        bound.scalar = roundToKind(bound.scalar, *kind);
    }
    env[arg] = std::move(bound);
  }
  return success();
}

LogicalResult UpdateInterpreter::executeElementwise(Operation *op) {
  FailureOr<ElementOp> element = compileElementOp(op, precision);
  if (failed(element))
    return failure();
  SmallVector<const RuntimeValue *, 3> operands;
  for (Value operand : op->getOperands()) {
    FailureOr<const RuntimeValue *> bound = lookup(operand, op);
    if (failed(bound))
      return failure();
    operands.push_back(*bound);
  }
  Type resultType = op->getResult(0).getType();
  RuntimeValue result;
  SmallVector<double, 3> arguments(operands.size());
  if (!isa<ShapedType>(resultType)) {
    for (auto [index, operand] : llvm::enumerate(operands)) {
      if (operand->isTensor)
        return op->emitOpError()
               << "has a tensor operand #" << index << " but a scalar result";
      arguments[index] = operand->scalar;
    }
    result.scalar = evaluateElement(*element, arguments);
  } else {
    FailureOr<size_t> size = getTensorSize(resultType, op);
    if (failed(size))
      return failure();
    for (auto [index, operand] : llvm::enumerate(operands))
      if (operand->isTensor && operand->elements.size() != *size)
        return op->emitOpError()
               << "operand #" << index << " has " << operand->elements.size()
               << " elements but the result has " << *size;
    result.isTensor = true;
    result.elements.resize(*size);
    for (size_t i = 0; i < *size; ++i) {
      for (auto [index, operand] : llvm::enumerate(operands))
        arguments[index] = operand->at(i);
      result.elements[i] = evaluateElement(*element, arguments);
    }
  }
  env[op->getResult(0)] = std::move(result);
  return success();
}

LogicalResult UpdateInterpreter::executeBroadcast(BroadcastOp op) {
  FailureOr<const RuntimeValue *> scalar = lookup(op.getValue(), op);
  FailureOr<const RuntimeValue *> like = lookup(op.getLike(), op);
  if (failed(scalar) || failed(like))
    return failure();
  if ((*scalar)->isTensor || !(*like)->isTensor)
    return op.emitOpError() << "needs a scalar and a tensor to broadcast";
  RuntimeValue result;
  result.isTensor = true;
  result.elements.assign((*like)->elements.size(), (*scalar)->scalar);
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult UpdateInterpreter::executeFused(FusedOp op) {
  // Compile the body: slots 0..inputs-1 are the body arguments, then one
  // slot per body op result.
  Block &body = op.getBody().front();
  DenseMap<Value, unsigned> slots;
  for (BlockArgument arg : body.getArguments())
    slots[arg] = arg.getArgNumber();
  unsigned numSlots = body.getNumArguments();
  std::vector<FusedInstruction> program;
  for (Operation &bodyOp : body.without_terminator()) {
    FailureOr<ElementOp> element = compileElementOp(&bodyOp, precision);
    if (failed(element))
      return failure();
    FusedInstruction instruction{*element, {}, numSlots++};
    for (Value operand : bodyOp.getOperands()) {
      auto it = slots.find(operand);
      if (it == slots.end())
        return bodyOp.emitOpError()
               << "reads a value not defined in its kfuse.fused body";
      instruction.operands.push_back(it->second);
    }
    slots[bodyOp.getResult(0)] = instruction.result;
    program.push_back(std::move(instruction));
  }
  SmallVector<unsigned> yielded;
  for (Value value : op.getYield().getValues())
    yielded.push_back(slots.lookup(value));

  SmallVector<const RuntimeValue *> inputs;
  for (Value input : op.getInputs()) {
    FailureOr<const RuntimeValue *> bound = lookup(input, op);
    if (failed(bound))
      return failure();
    inputs.push_back(*bound);
  }
  std::optional<size_t> size;
  for (Type type : op.getResultTypes()) {
    FailureOr<size_t> resultSize = getTensorSize(type, op);
    if (failed(resultSize))
      return failure();
    size = *resultSize;
  }
  for (auto [index, input] : llvm::enumerate(inputs)) {
    if (!input->isTensor)
      continue;
    if (!size)
      size = input->elements.size();
    if (input->elements.size() != *size)
      return op.emitOpError()
             << "input #" << index << " has " << input->elements.size()
             << " elements but the fused op computes " << *size;
  }
  if (!size)
    return op.emitOpError() << "has no tensor input or result to size it";

  std::vector<RuntimeValue> results(op.getNumResults());
  for (RuntimeValue &result : results) {
    result.isTensor = true;
    result.elements.resize(*size);
  }
  std::vector<double> slotValues(numSlots);
  SmallVector<double, 3> arguments;
  for (size_t i = 0; i < *size; ++i) {
    for (auto [index, input] : llvm::enumerate(inputs))
      slotValues[index] = input->at(i);
    for (const FusedInstruction &instruction : program) {
      arguments.clear();
      for (unsigned operand : instruction.operands)
        arguments.push_back(slotValues[operand]);
      slotValues[instruction.result] =
          evaluateElement(instruction.op, arguments);
    }
    for (auto [index, slot] : llvm::enumerate(yielded))
      results[index].elements[i] = slotValues[slot];
  }
  for (auto [result, value] : llvm::zip(op.getResults(), results))
    env[result] = std::move(value);
  return success();
}

LogicalResult UpdateInterpreter::executeWrite(WriteOp op) {
  auto target = dyn_cast<BlockArgument>(op.getTarget());
  if (!target || target.getOwner() != &update.getBody().front())
    return op.emitOpError() << "target is not an argument of the update";
  unsigned index = target.getArgNumber();
  FailureOr<const RuntimeValue *> value = lookup(op.getValue(), op);
  if (failed(value))
    return failure();
  if (!(*value)->isTensor)
    return op.emitOpError() << "writes a scalar";
  if (!pendingWrites.emplace(index, (*value)->elements).second)
    return op.emitOpError()
           << "writes argument #" << index << " '" << getArgName(update, index)
           << "' a second time in one step";
  return success();
}

LogicalResult UpdateInterpreter::execute(Operation *op) {
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return executeBroadcast(broadcast);
  if (auto fused = dyn_cast<FusedOp>(op))
    return executeFused(fused);
  if (auto write = dyn_cast<WriteOp>(op))
    return executeWrite(write);
  if (op->getNumRegions() != 0)
    return op->emitOpError() << "has regions; the interpreter runs only "
                                "kfuse.fused regions";
  return executeElementwise(op);
}

LogicalResult UpdateInterpreter::run(UpdateValues &values) {
  if (update.isExternal())
    return update.emitError()
           << "update '" << update.getSymName() << "' has no body to interpret";
  if (!update.getBody().hasOneBlock())
    return update.emitError() << "update '" << update.getSymName()
                              << "' has several blocks; the interpreter runs "
                                 "single-block updates";
  if (failed(bindArguments(values)))
    return failure();
  for (Operation &op : update.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError() << "returns values; an update's only "
                                    "outputs are its kfuse.write ops";
      break;
    }
    if (failed(execute(&op)))
      return failure();
  }
  for (auto &[index, elements] : pendingWrites)
    values.tensors[index] = std::move(elements);
  return success();
}

LogicalResult interpretUpdate(func::FuncOp update, UpdateValues &values,
                              Precision precision) {
  UpdateInterpreter interpreter(update, precision);
  return interpreter.run(values);
}

} // namespace kfuse
