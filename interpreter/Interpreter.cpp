//===- Interpreter.cpp - CPU reference interpreter of updates ------------===//
//
// Walks the update's single block once. Whole-tensor values are vectors of
// doubles; kfuse.fused bodies are compiled to a flat program of element ops
// and run once per element. Writes are staged and applied when the update
// returns, so every read sees the pre-step values and a failed run leaves
// the caller's buffers untouched. With a decision slack, a mask beside each
// value marks the elements that hang on a near-tie decision.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Interpreter.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/ElementOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace mlir;

namespace kfuse {

namespace {

/// The value of one SSA value: a scalar or the elements of a tensor.
struct RuntimeValue {
  bool isTensor = false;
  double scalar = 0.0;
  std::vector<double> elements;
  /// Near-tie decisions: per element (empty: none) or for the scalar.
  std::vector<uint8_t> ambiguous;
  bool scalarAmbiguous = false;
  /// Whether every precision computes the same value: an input the update
  /// does not write, a constant, or what picks or compares exact values. A
  /// decision on exact values is not ambiguous, however close the tie.
  bool exact = false;

  double at(size_t index) const { return isTensor ? elements[index] : scalar; }
  bool ambiguousAt(size_t index) const {
    return isTensor ? !ambiguous.empty() && ambiguous[index] : scalarAmbiguous;
  }
  /// The largest finite magnitude: the scale a decision's slack is relative
  /// to.
  double magnitude() const {
    if (!isTensor)
      return std::isfinite(scalar) ? std::fabs(scalar) : 0.0;
    double largest = 0.0;
    for (double element : elements)
      if (std::isfinite(element))
        largest = std::max(largest, std::fabs(element));
    return largest;
  }
  void markAmbiguous(size_t index) {
    if (ambiguous.empty())
      ambiguous.assign(elements.size(), 0);
    ambiguous[index] = 1;
  }
};

/// One op of a compiled kfuse.fused body, reading and writing slots.
class UpdateInterpreter {
public:
  UpdateInterpreter(func::FuncOp update, Precision precision,
                    double decisionSlack)
      : update(update), precision(precision), decisionSlack(decisionSlack) {}

  LogicalResult run(UpdateValues &values);

private:
  LogicalResult bindArguments(const UpdateValues &values);
  LogicalResult execute(Operation *op);
  LogicalResult executeElementwise(Operation *op);
  LogicalResult executeBroadcast(BroadcastOp op);
  LogicalResult executeFused(FusedOp op);
  LogicalResult executeReduce(ReduceOp op);
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
  /// Zero: no ambiguity tracking.
  double decisionSlack;
  /// The element count of every tensor, fixed by the argument buffers.
  std::optional<size_t> numElements;
  DenseMap<Value, RuntimeValue> env;
  std::map<unsigned, std::vector<double>> pendingWrites;
  std::map<unsigned, double> pendingScalarWrites;
  std::map<unsigned, std::vector<uint8_t>> pendingAmbiguous;
  /// The arguments some kfuse.write targets.
  llvm::DenseSet<unsigned> writtenArgs;
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
    // A written argument carries the previous step's rounding.
    bound.exact = !writtenArgs.contains(index);
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
      if (decisionSlack > 0 && index < values.ambiguous.size() &&
          values.ambiguous[index].size() == buffer.size())
        bound.ambiguous = values.ambiguous[index];
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
  bool tracked = decisionSlack > 0;
  bool exactOperands = llvm::all_of(
      operands, [](const RuntimeValue *operand) { return operand->exact; });
  bool decides = tracked && isDecision(*element) && !exactOperands;
  result.exact = exactOperands && preservesExactness(*element);
  SmallVector<double, 3> scales;
  if (decides)
    for (const RuntimeValue *operand : operands)
      scales.push_back(operand->magnitude());
  if (!isa<ShapedType>(resultType)) {
    for (auto [index, operand] : llvm::enumerate(operands)) {
      if (operand->isTensor)
        return op->emitOpError()
               << "has a tensor operand #" << index << " but a scalar result";
      arguments[index] = operand->scalar;
      result.scalarAmbiguous |= operand->scalarAmbiguous;
    }
    result.scalar = evaluateElement(*element, arguments);
    if (decides && isNearDecision(*element, arguments, scales, decisionSlack))
      result.scalarAmbiguous = true;
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
      bool ambiguous = false;
      for (auto [index, operand] : llvm::enumerate(operands)) {
        arguments[index] = operand->at(i);
        ambiguous |= tracked && operand->ambiguousAt(i);
      }
      result.elements[i] = evaluateElement(*element, arguments);
      if (ambiguous || (decides && isNearDecision(*element, arguments, scales,
                                                  decisionSlack)))
        result.markAmbiguous(i);
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
  result.exact = (*scalar)->exact;
  if (decisionSlack > 0 && (*scalar)->scalarAmbiguous)
    result.ambiguous.assign(result.elements.size(), 1);
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult UpdateInterpreter::executeFused(FusedOp op) {
  FailureOr<FusedProgram> compiled =
      compileFusedBody(op, [&](Operation *bodyOp) {
        return compileElementOp(bodyOp, precision);
      });
  if (failed(compiled))
    return failure();
  const std::vector<FusedInstruction> &program = compiled->instructions;
  const SmallVector<unsigned> &yielded = compiled->yielded;
  unsigned numSlots = compiled->numSlots;

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
  auto evaluateBody = [&](size_t i) {
    for (auto [index, input] : llvm::enumerate(inputs))
      slotValues[index] = input->at(i);
    compiled->run(slotValues, arguments);
  };
  bool tracked = decisionSlack > 0;
  // A decision's slack is relative to its operands' magnitudes over all
  // elements, so a first pass measures them.
  std::vector<uint8_t> slotExact(numSlots, 0);
  for (auto [index, input] : llvm::enumerate(inputs))
    slotExact[index] = input->exact;
  std::vector<SmallVector<double, 3>> scales(program.size());
  bool decides = false;
  for (auto [index, instruction] : llvm::enumerate(program)) {
    bool exactOperands = llvm::all_of(
        instruction.operands, [&](unsigned slot) { return slotExact[slot]; });
    slotExact[instruction.result] =
        exactOperands && preservesExactness(instruction.op);
    if (tracked && isDecision(instruction.op) && !exactOperands) {
      decides = true;
      scales[index].assign(instruction.operands.size(), 0.0);
    }
  }
  if (decides)
    for (size_t i = 0; i < *size; ++i) {
      evaluateBody(i);
      for (auto [index, instruction] : llvm::enumerate(program))
        for (auto [position, operand] : llvm::enumerate(instruction.operands))
          if (!scales[index].empty() && std::isfinite(slotValues[operand]))
            scales[index][position] = std::max(scales[index][position],
                                               std::fabs(slotValues[operand]));
    }
  std::vector<uint8_t> slotAmbiguous(tracked ? numSlots : 0);
  for (size_t i = 0; i < *size; ++i) {
    if (!tracked) {
      evaluateBody(i);
    } else {
      for (auto [index, input] : llvm::enumerate(inputs)) {
        slotValues[index] = input->at(i);
        slotAmbiguous[index] = input->ambiguousAt(i);
      }
      for (auto [index, instruction] : llvm::enumerate(program)) {
        arguments.clear();
        bool ambiguous = false;
        for (unsigned operand : instruction.operands) {
          arguments.push_back(slotValues[operand]);
          ambiguous |= slotAmbiguous[operand] != 0;
        }
        slotValues[instruction.result] =
            evaluateElement(instruction.op, arguments);
        slotAmbiguous[instruction.result] =
            ambiguous || (!scales[index].empty() &&
                          isNearDecision(instruction.op, arguments,
                                         scales[index], decisionSlack));
      }
    }
    for (auto [index, slot] : llvm::enumerate(yielded)) {
      results[index].elements[i] = slotValues[slot];
      if (tracked && slotAmbiguous[slot])
        results[index].markAmbiguous(i);
    }
  }
  for (auto [index, slot] : llvm::enumerate(yielded))
    results[index].exact = slotExact[slot];
  for (auto [result, value] : llvm::zip(op.getResults(), results))
    env[result] = std::move(value);
  return success();
}

LogicalResult UpdateInterpreter::executeReduce(ReduceOp op) {
  FailureOr<const RuntimeValue *> input = lookup(op.getInput(), op);
  if (failed(input))
    return failure();
  if (!(*input)->isTensor || isa<ShapedType>(op.getType()))
    return op.emitOpError() << "reduces to a tensor; an update reduces a "
                               "whole tensor to a scalar";
  FailureOr<ElementKind> kind =
      getElementKind(op.getType(), op.getLoc(), "result");
  if (failed(kind))
    return failure();
  const std::vector<double> &elements = (*input)->elements;
  double value = 0.0;
  switch (op.getKind()) {
  case ReduceKind::sum:
  case ReduceKind::mean: {
    CompensatedSum sum;
    for (double element : elements)
      sum.add(element);
    value = sum.get();
    if (op.getKind() == ReduceKind::mean)
      value = elements.empty() ? 0.0 : value / double(elements.size());
    break;
  }
  case ReduceKind::max:
    value = -std::numeric_limits<double>::infinity();
    for (double element : elements)
      value = std::isnan(element) || std::isnan(value)
                  ? std::numeric_limits<double>::quiet_NaN()
                  : std::max(value, element);
    break;
  case ReduceKind::variance: {
    CompensatedSum sum, squares;
    for (double element : elements)
      sum.add(element);
    double mean = elements.empty() ? 0.0 : sum.get() / double(elements.size());
    for (double element : elements)
      squares.add((element - mean) * (element - mean));
    value = elements.empty() ? 0.0 : squares.get() / double(elements.size());
    break;
  }
  }
  // The correctly rounded result: what a GPU's reduction approaches, in
  // whatever order it adds.
  RuntimeValue result;
  result.scalar =
      precision == Precision::F32 ? roundToKind(value, *kind) : value;
  env[op.getResult()] = std::move(result);
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
  if (!(*value)->isTensor) {
    // A state at the tensor level: one value.
    if (!isPerTensorArg(update, index))
      return op.emitOpError() << "writes a scalar";
    if (!pendingScalarWrites.emplace(index, (*value)->scalar).second)
      return op.emitOpError()
             << "writes argument #" << index << " '"
             << getArgName(update, index) << "' a second time in one step";
    return success();
  }
  if (!pendingWrites.emplace(index, (*value)->elements).second)
    return op.emitOpError()
           << "writes argument #" << index << " '" << getArgName(update, index)
           << "' a second time in one step";
  if (decisionSlack > 0)
    pendingAmbiguous[index] = (*value)->ambiguous;
  return success();
}

LogicalResult UpdateInterpreter::execute(Operation *op) {
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return executeBroadcast(broadcast);
  if (auto fused = dyn_cast<FusedOp>(op))
    return executeFused(fused);
  if (auto write = dyn_cast<WriteOp>(op))
    return executeWrite(write);
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return executeReduce(reduce);
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
  update.walk([&](WriteOp write) {
    if (auto target = dyn_cast<BlockArgument>(write.getTarget()))
      writtenArgs.insert(target.getArgNumber());
  });
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
  for (auto [index, scalar] : pendingScalarWrites)
    values.scalars[index] = scalar;
  if (decisionSlack > 0) {
    values.ambiguous.resize(values.tensors.size());
    for (auto &[index, ambiguous] : pendingAmbiguous)
      values.ambiguous[index] = std::move(ambiguous);
  }
  return success();
}

LogicalResult interpretUpdate(func::FuncOp update, UpdateValues &values,
                              Precision precision, double decisionSlack) {
  UpdateInterpreter interpreter(update, precision, decisionSlack);
  return interpreter.run(values);
}

} // namespace kfuse
