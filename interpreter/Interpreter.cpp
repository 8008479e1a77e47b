//===- Interpreter.cpp - CPU reference interpreter of kfuse functions ----===//
//
// Walks the function's single block once. A value is a scalar or a
// row-major buffer of doubles with its runtime extents (a 1-D tensor of n
// elements is n x 1); elementwise ops and kfuse.fused bodies run through
// ElementOps, and kfuse.broadcast, kfuse.reduce and kfuse.dim_size are
// handled here. Writes are collected and returned, so every read sees the
// values before the step and the caller's inputs are never touched. A value
// is dropped after its last use, which keeps a 64 x 12289 norm at a few live
// tensors. With a decision slack, a mask beside each value marks the
// elements that hang on a near-tie decision.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Interpreter.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/ElementOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace kfuse {

namespace {

/// The value of one SSA value: a scalar or a tensor.
struct RuntimeValue {
  bool isTensor = false;
  double scalar = 0.0;
  Extents extents;
  std::vector<double> elements;
  /// Near-tie decisions: per element (empty: none) or for the scalar.
  std::vector<uint8_t> ambiguous;
  bool scalarAmbiguous = false;
  /// Whether every precision computes the same value: an input the function
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

/// Where element `index` of a value of extents `to` reads an operand of
/// extents `from` that broadcasts to it (rows x 1 along rows, 1 x cols along
/// columns).
class BroadcastIndex {
public:
  BroadcastIndex(Extents from, Extents to)
      : from(from), to(to), same(from == to) {}
  size_t operator()(size_t index) const {
    if (same)
      return index;
    int64_t row = static_cast<int64_t>(index) / to.cols;
    int64_t col = static_cast<int64_t>(index) % to.cols;
    return static_cast<size_t>((from.rows == 1 ? 0 : row) * from.cols +
                               (from.cols == 1 ? 0 : col));
  }

private:
  Extents from, to;
  bool same;
};

class Interpreter {
public:
  Interpreter(func::FuncOp func, int64_t rows, Precision precision,
              double decisionSlack)
      : func(func), rows(rows), precision(precision),
        decisionSlack(decisionSlack) {}

  FailureOr<ArgValues> run(const ArgValues &inputs);

private:
  LogicalResult resolveCols(const ArgValues &inputs);
  LogicalResult bindArguments(const ArgValues &inputs);
  LogicalResult execute(Operation *op);
  LogicalResult executeElementwise(Operation *op);
  LogicalResult executeBroadcast(BroadcastOp op);
  LogicalResult executeReduce(ReduceOp op);
  LogicalResult executeDimSize(DimSizeOp op);
  LogicalResult executeFused(FusedOp op);
  LogicalResult executeWrite(WriteOp op);

  /// The runtime extents of a tensor of `type` produced or read by `op`.
  FailureOr<Extents> getExtents(Type type, Operation *op);
  /// The bound value of `value`, read by `user`.
  FailureOr<const RuntimeValue *> lookup(Value value, Operation *user);
  /// Whether argument `index` is a tensor written and never read.
  bool isWrittenOnly(unsigned index) const {
    std::optional<Role> role = getArgRole(func, index);
    return role == Role::output || role == Role::model;
  }
  /// "argument #i 'name'" for diagnostics.
  std::string describeArg(unsigned index) const {
    return "argument #" + std::to_string(index) + " '" +
           getArgName(func, index) + "'";
  }
  std::string describeShape() const {
    return std::to_string(rows) + " x " + std::to_string(cols);
  }
  bool tracked() const { return decisionSlack > 0; }

  func::FuncOp func;
  /// The common extents: a 1-D function's element count and 1 column.
  int64_t rows;
  int64_t cols = 1;
  bool isMatrix = false;
  Precision precision;
  /// Zero: no ambiguity tracking.
  double decisionSlack;
  DenseMap<Value, RuntimeValue> env;
  ArgValues outputs;
  /// The arguments some kfuse.write targets.
  llvm::DenseSet<unsigned> writtenArgs;
};

} // namespace

static bool isMatrixType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 2;
}

std::optional<Extents> resolveExtents(RankedTensorType type, int64_t rows,
                                      int64_t cols) {
  if (!type)
    return std::nullopt;
  if (type.getRank() == 1) {
    int64_t extent = type.getDimSize(0);
    if (!ShapedType::isDynamic(extent) && extent != rows)
      return std::nullopt;
    return Extents{rows, 1};
  }
  if (type.getRank() != 2)
    return std::nullopt;
  int64_t common[2] = {rows, cols};
  int64_t resolved[2];
  for (int d = 0; d < 2; ++d) {
    int64_t extent = type.getDimSize(d);
    if (extent == 1) {
      resolved[d] = 1;
      continue;
    }
    if (!ShapedType::isDynamic(extent) && extent != common[d])
      return std::nullopt;
    resolved[d] = common[d];
  }
  return Extents{resolved[0], resolved[1]};
}

std::optional<int64_t> getStaticCols(func::FuncOp func) {
  for (Type type : func.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.getRank() == 2 && !tensor.isDynamicDim(1) &&
        tensor.getDimSize(1) != 1)
      return tensor.getDimSize(1);
  return std::nullopt;
}

static std::string formatExtents(Extents extents) {
  return std::to_string(extents.rows) + " x " + std::to_string(extents.cols);
}

/// `kind` over `count` elements, in double (sums compensated, the variance
/// in two passes): the value every rounding of the reduction approaches.
static double reduceExactly(ReduceKind kind, int64_t count,
                            llvm::function_ref<double(int64_t)> element) {
  switch (kind) {
  case ReduceKind::max: {
    double value = -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < count; ++k)
      value = ieeeMaximum(value, element(k));
    return value;
  }
  case ReduceKind::sum:
  case ReduceKind::mean: {
    CompensatedSum sum;
    for (int64_t k = 0; k < count; ++k)
      sum.add(element(k));
    if (kind == ReduceKind::sum)
      return sum.get();
    return count == 0 ? 0.0 : sum.get() / double(count);
  }
  case ReduceKind::variance: {
    if (count == 0)
      return 0.0;
    CompensatedSum sum, squares;
    for (int64_t k = 0; k < count; ++k)
      sum.add(element(k));
    double mean = sum.get() / double(count);
    for (int64_t k = 0; k < count; ++k) {
      double deviation = element(k) - mean;
      squares.add(deviation * deviation);
    }
    return squares.get() / double(count);
  }
  }
  llvm_unreachable("unknown reduce kind");
}

FailureOr<Extents> Interpreter::getExtents(Type type, Operation *op) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() > 2 || tensor.getRank() == 0 ||
      (isMatrix && tensor.getRank() != 2))
    return op->emitOpError()
           << "has a value of type " << type << "; the interpreter supports "
           << "scalars and " << (isMatrix ? "2-D" : "1-D or 2-D")
           << " tensors only";
  std::optional<Extents> extents = resolveExtents(tensor, rows, cols);
  if (!extents)
    return op->emitOpError()
           << "has a value of type " << type
           << ", which does not fit a function over " << describeShape();
  return *extents;
}

FailureOr<const RuntimeValue *> Interpreter::lookup(Value value,
                                                    Operation *user) {
  auto it = env.find(value);
  if (it == env.end())
    return user->emitOpError()
           << "reads a value the interpreter has not computed (an output "
              "argument, or one defined outside the function's block)";
  return &it->second;
}

LogicalResult Interpreter::resolveCols(const ArgValues &inputs) {
  if (!isMatrix)
    return success();
  if (std::optional<int64_t> staticCols = getStaticCols(func)) {
    cols = *staticCols;
    return success();
  }
  // The first given input with a column dimension fixes the row length;
  // bindArguments checks the others against it.
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    auto tensor = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (isWrittenOnly(i) || !tensor || tensor.getRank() != 2 ||
        tensor.getDimSize(1) == 1 || i >= inputs.tensors.size() ||
        !inputs.tensors[i])
      continue;
    cols = inputs.tensors[i]->cols;
    if (cols <= 0)
      return func.emitError() << "input " << describeArg(i) << " has " << cols
                              << " columns; a function over rows needs at "
                                 "least one";
    return success();
  }
  return func.emitError()
         << "cannot tell the row length of '" << func.getSymName()
         << "': no static column extent and no input tensor with columns "
            "given";
}

LogicalResult Interpreter::bindArguments(const ArgValues &inputs) {
  for (BlockArgument arg : func.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::optional<Role> role = getArgRole(func, index);
    FailureOr<ElementKind> kind =
        getElementKind(arg.getType(), func.getLoc(), describeArg(index));
    if (failed(kind))
      return failure();
    // A 16-bit buffer holds 16-bit values in either precision.
    bool roundOnLoad = precision == Precision::F32 ||
                       *kind == ElementKind::BF16 || *kind == ElementKind::F16;
    RuntimeValue bound;
    // A written argument carries the previous step's rounding.
    bound.exact = !writtenArgs.contains(index);

    if (!isa<ShapedType>(arg.getType())) {
      // A hyperparameter, or a state of one value per tensor.
      std::optional<double> value;
      if (index < inputs.scalars.size())
        value = inputs.scalars[index];
      if (!value && role == Role::hyper)
        value = getArgDefault(func, index);
      if (!value) {
        if (role == Role::hyper)
          return func.emitError() << "no value for hyper " << describeArg(index)
                                  << ", which has no kfuse.default";
        return func.emitError()
               << "no value for the scalar " << describeArg(index);
      }
      bound.scalar = roundOnLoad ? roundToKind(*value, *kind) : *value;
      env[arg] = std::move(bound);
      continue;
    }
    if (role == Role::hyper)
      return func.emitError()
             << "hyper " << describeArg(index) << " has type " << arg.getType()
             << "; hyperparameters are scalars";
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    std::optional<Extents> extents =
        tensor ? resolveExtents(tensor, rows, cols) : std::nullopt;
    if (!tensor || tensor.getRank() == 0 || (isMatrix && tensor.getRank() != 2))
      return func.emitError()
             << describeArg(index) << " has type " << arg.getType()
             << "; a function's tensors are all 1-D or all 2-D";
    if (!extents)
      return func.emitError()
             << describeArg(index) << " of type " << tensor
             << " does not fit a function over " << describeShape();

    const HostTensor *given = nullptr;
    if (index < inputs.tensors.size() && inputs.tensors[index])
      given = &*inputs.tensors[index];
    if (!given) {
      if (isWrittenOnly(index))
        continue; // written, never read
      return func.emitError() << "no tensor for " << describeArg(index);
    }
    Extents givenExtents{given->rows, given->cols};
    if (!(givenExtents == *extents))
      return func.emitError() << "input " << describeArg(index) << " is "
                              << formatExtents(givenExtents) << " but its type "
                              << tensor << " needs " << formatExtents(*extents)
                              << " in a function over " << describeShape();
    auto size = static_cast<size_t>(extents->rows * extents->cols);
    if (given->elements.size() != size)
      return func.emitError()
             << "input " << describeArg(index) << " holds "
             << given->elements.size() << " elements but its extents "
             << formatExtents(*extents) << " need " << size;
    bound.isTensor = true;
    bound.extents = *extents;
    bound.elements = given->elements;
    if (tracked() && index < inputs.ambiguous.size() &&
        inputs.ambiguous[index].size() == size)
      bound.ambiguous = inputs.ambiguous[index];
    if (roundOnLoad)
      for (double &element : bound.elements)
        element = roundToKind(element, *kind);
    env[arg] = std::move(bound);
  }
  return success();
}

LogicalResult Interpreter::executeElementwise(Operation *op) {
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
  bool exactOperands = llvm::all_of(
      operands, [](const RuntimeValue *operand) { return operand->exact; });
  bool decides = tracked() && isDecision(*element) && !exactOperands;
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
    env[op->getResult(0)] = std::move(result);
    return success();
  }
  FailureOr<Extents> extents = getExtents(resultType, op);
  if (failed(extents))
    return failure();
  for (auto [index, operand] : llvm::enumerate(operands))
    if (operand->isTensor && !(operand->extents == *extents))
      return op->emitOpError()
             << "operand #" << index << " is "
             << formatExtents(operand->extents) << " but the result is "
             << formatExtents(*extents);
  result.isTensor = true;
  result.extents = *extents;
  auto size = static_cast<size_t>(extents->rows * extents->cols);
  result.elements.resize(size);
  for (size_t i = 0; i < size; ++i) {
    bool ambiguous = false;
    for (auto [index, operand] : llvm::enumerate(operands)) {
      arguments[index] = operand->at(i);
      ambiguous |= tracked() && operand->ambiguousAt(i);
    }
    result.elements[i] = evaluateElement(*element, arguments);
    if (ambiguous ||
        (decides && isNearDecision(*element, arguments, scales, decisionSlack)))
      result.markAmbiguous(i);
  }
  env[op->getResult(0)] = std::move(result);
  return success();
}

LogicalResult Interpreter::executeBroadcast(BroadcastOp op) {
  FailureOr<const RuntimeValue *> value = lookup(op.getValue(), op);
  FailureOr<const RuntimeValue *> like = lookup(op.getLike(), op);
  if (failed(value) || failed(like))
    return failure();
  FailureOr<Extents> extents = getExtents(op.getType(), op);
  if (failed(extents))
    return failure();
  if (!(*like)->isTensor || !((*like)->extents == *extents))
    return op.emitOpError() << "broadcasts like a value that is not a "
                            << formatExtents(*extents) << " tensor";
  RuntimeValue result;
  result.isTensor = true;
  result.extents = *extents;
  result.exact = (*value)->exact;
  auto size = static_cast<size_t>(extents->rows * extents->cols);
  if (!(*value)->isTensor) {
    result.elements.assign(size, (*value)->scalar);
    if (tracked() && (*value)->scalarAmbiguous)
      result.ambiguous.assign(size, 1);
  } else {
    Extents from = (*value)->extents;
    if ((from.rows != 1 && from.rows != extents->rows) ||
        (from.cols != 1 && from.cols != extents->cols))
      return op.emitOpError()
             << "value is " << formatExtents(from)
             << ", which does not broadcast to " << formatExtents(*extents);
    BroadcastIndex source(from, *extents);
    result.elements.resize(size);
    for (size_t i = 0; i < size; ++i) {
      result.elements[i] = (*value)->elements[source(i)];
      if (tracked() && (*value)->ambiguousAt(source(i)))
        result.markAmbiguous(i);
    }
  }
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Interpreter::executeReduce(ReduceOp op) {
  FailureOr<const RuntimeValue *> input = lookup(op.getInput(), op);
  if (failed(input))
    return failure();
  if (!(*input)->isTensor)
    return op.emitOpError() << "reduces a scalar";
  FailureOr<ElementKind> resultKind =
      getElementKind(op.getType(), op.getLoc(), "result");
  if (failed(resultKind))
    return failure();
  auto round = [&](double value) {
    return precision == Precision::F32 ? roundToKind(value, *resultKind)
                                       : value;
  };
  const std::vector<double> &elements = (*input)->elements;
  RuntimeValue result;
  if (!isa<ShapedType>(op.getType())) {
    // A 1-D tensor to one value per tensor (or per list: a multi-tensor
    // run interprets each tensor on its own).
    if (isMatrix)
      return op.emitOpError() << "reduces a 2-D tensor to a scalar; reduce "
                                 "its rows, then its columns";
    result.scalar =
        round(reduceExactly(op.getKind(), static_cast<int64_t>(elements.size()),
                            [&](int64_t k) { return elements[k]; }));
    env[op.getResult()] = std::move(result);
    return success();
  }
  FailureOr<Extents> extents = getExtents(op.getType(), op);
  if (failed(extents))
    return failure();
  int64_t dim = op.getDim();
  if (dim > 1)
    return op.emitOpError() << "reduces dimension " << dim
                            << "; tensors have dimensions 0 and 1";
  Extents from = (*input)->extents;
  Extents expected = from;
  (dim == 0 ? expected.rows : expected.cols) = 1;
  if (!(expected == *extents))
    return op.emitOpError()
           << "reduces a " << formatExtents(from) << " tensor over dimension "
           << dim << " to " << formatExtents(*extents) << "; expected "
           << formatExtents(expected);
  auto numResults = static_cast<size_t>(extents->rows * extents->cols);
  int64_t count = dim == 0 ? from.rows : from.cols;
  result.isTensor = true;
  result.extents = *extents;
  result.elements.resize(numResults);
  for (size_t target = 0; target < numResults; ++target)
    result.elements[target] =
        round(reduceExactly(op.getKind(), count, [&](int64_t k) {
          return dim == 0 ? elements[k * from.cols + target]
                          : elements[target * from.cols + k];
        }));
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Interpreter::executeDimSize(DimSizeOp op) {
  FailureOr<const RuntimeValue *> input = lookup(op.getInput(), op);
  if (failed(input))
    return failure();
  if (!(*input)->isTensor)
    return op.emitOpError() << "takes the size of a scalar";
  FailureOr<ElementKind> resultKind =
      getElementKind(op.getType(), op.getLoc(), "result");
  if (failed(resultKind))
    return failure();
  auto rank = cast<RankedTensorType>(op.getInput().getType()).getRank();
  uint64_t dim = op.getDim();
  if (dim >= static_cast<uint64_t>(rank))
    return op.emitOpError()
           << "asks for dimension " << dim << " of a " << rank << "-D tensor";
  auto extent = static_cast<double>(dim == 0 ? (*input)->extents.rows
                                             : (*input)->extents.cols);
  RuntimeValue result;
  result.scalar =
      precision == Precision::F32 ? roundToKind(extent, *resultKind) : extent;
  result.exact = true;
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Interpreter::executeFused(FusedOp op) {
  FailureOr<FusedProgram> compiled =
      compileFusedBody(op, [&](Operation *bodyOp) {
        return compileElementOp(bodyOp, precision);
      });
  if (failed(compiled))
    return failure();
  const std::vector<FusedInstruction> &program = compiled->instructions;
  unsigned numSlots = compiled->numSlots;

  SmallVector<const RuntimeValue *> inputs;
  for (Value input : op.getInputs()) {
    FailureOr<const RuntimeValue *> bound = lookup(input, op);
    if (failed(bound))
      return failure();
    inputs.push_back(*bound);
  }
  std::optional<Extents> extents;
  for (Type type : op.getResultTypes()) {
    FailureOr<Extents> resultExtents = getExtents(type, op);
    if (failed(resultExtents))
      return failure();
    extents = *resultExtents;
  }
  for (const RuntimeValue *input : inputs)
    if (input->isTensor && !extents)
      extents = input->extents;
  if (!extents)
    return op.emitOpError() << "has no tensor input or result to size it";
  // Inputs of one value per row or per column broadcast over the elements.
  SmallVector<BroadcastIndex> sources;
  for (auto [index, input] : llvm::enumerate(inputs)) {
    Extents from = input->isTensor ? input->extents : *extents;
    if ((from.rows != 1 && from.rows != extents->rows) ||
        (from.cols != 1 && from.cols != extents->cols))
      return op.emitOpError()
             << "input #" << index << " is " << formatExtents(from)
             << " but the fused op computes " << formatExtents(*extents);
    sources.emplace_back(from, *extents);
  }

  auto size = static_cast<size_t>(extents->rows * extents->cols);
  std::vector<RuntimeValue> results(op.getNumResults());
  for (RuntimeValue &result : results) {
    result.isTensor = true;
    result.extents = *extents;
    result.elements.resize(size);
  }
  std::vector<double> slotValues(numSlots);
  SmallVector<double, 3> arguments;
  auto loadInputs = [&](size_t i) {
    for (auto [index, input] : llvm::enumerate(inputs))
      slotValues[index] = input->at(sources[index](i));
  };
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
    if (tracked() && isDecision(instruction.op) && !exactOperands) {
      decides = true;
      scales[index].assign(instruction.operands.size(), 0.0);
    }
  }
  if (decides)
    for (size_t i = 0; i < size; ++i) {
      loadInputs(i);
      compiled->run(slotValues, arguments);
      for (auto [index, instruction] : llvm::enumerate(program))
        for (auto [position, operand] : llvm::enumerate(instruction.operands))
          if (!scales[index].empty() && std::isfinite(slotValues[operand]))
            scales[index][position] = std::max(scales[index][position],
                                               std::fabs(slotValues[operand]));
    }
  std::vector<uint8_t> slotAmbiguous(tracked() ? numSlots : 0);
  for (size_t i = 0; i < size; ++i) {
    loadInputs(i);
    if (!tracked()) {
      compiled->run(slotValues, arguments);
    } else {
      for (auto [index, input] : llvm::enumerate(inputs))
        slotAmbiguous[index] = input->ambiguousAt(sources[index](i));
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
    for (auto [index, slot] : llvm::enumerate(compiled->yielded)) {
      results[index].elements[i] = slotValues[slot];
      if (tracked() && slotAmbiguous[slot])
        results[index].markAmbiguous(i);
    }
  }
  for (auto [index, slot] : llvm::enumerate(compiled->yielded))
    results[index].exact = slotExact[slot];
  for (auto [result, value] : llvm::zip(op.getResults(), results))
    env[result] = std::move(value);
  return success();
}

LogicalResult Interpreter::executeWrite(WriteOp op) {
  auto target = dyn_cast<BlockArgument>(op.getTarget());
  if (!target || target.getOwner() != &func.getBody().front())
    return op.emitOpError() << "target is not an argument of the function";
  unsigned index = target.getArgNumber();
  std::optional<Role> role = getArgRole(func, index);
  if (role && role != Role::output && role != Role::param &&
      role != Role::state && role != Role::model)
    return op.emitOpError() << "writes " << describeArg(index)
                            << ", which is not an output, param, state or "
                               "model";
  FailureOr<const RuntimeValue *> value = lookup(op.getValue(), op);
  if (failed(value))
    return failure();
  if (!isa<ShapedType>(target.getType())) {
    if ((*value)->isTensor)
      return op.emitOpError() << "writes a tensor to " << describeArg(index)
                              << ", a state at the tensor level";
    if (outputs.scalars[index])
      return op.emitOpError()
             << "writes " << describeArg(index) << " a second time in one step";
    outputs.scalars[index] = (*value)->scalar;
    return success();
  }
  if (!(*value)->isTensor)
    return op.emitOpError() << "writes a scalar to " << describeArg(index);
  FailureOr<Extents> extents = getExtents(target.getType(), op);
  if (failed(extents))
    return failure();
  if (!((*value)->extents == *extents))
    return op.emitOpError()
           << "writes a " << formatExtents((*value)->extents) << " value to "
           << describeArg(index) << ", which is " << formatExtents(*extents);
  if (outputs.tensors[index])
    return op.emitOpError()
           << "writes " << describeArg(index) << " a second time in one step";
  HostTensor written;
  written.rows = extents->rows;
  written.cols = extents->cols;
  written.elements = (*value)->elements;
  outputs.tensors[index] = std::move(written);
  if (tracked())
    outputs.ambiguous[index] = (*value)->ambiguous;
  return success();
}

LogicalResult Interpreter::execute(Operation *op) {
  if (auto broadcast = dyn_cast<BroadcastOp>(op))
    return executeBroadcast(broadcast);
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return executeReduce(reduce);
  if (auto dimSize = dyn_cast<DimSizeOp>(op))
    return executeDimSize(dimSize);
  if (auto fused = dyn_cast<FusedOp>(op))
    return executeFused(fused);
  if (auto write = dyn_cast<WriteOp>(op))
    return executeWrite(write);
  if (op->getNumRegions() != 0)
    return op->emitOpError() << "has regions; the interpreter runs only "
                                "kfuse.fused regions";
  return executeElementwise(op);
}

FailureOr<ArgValues> Interpreter::run(const ArgValues &inputs) {
  if (func.isExternal())
    return func.emitError()
           << "'" << func.getSymName() << "' has no body to interpret";
  if (!func.getBody().hasOneBlock())
    return func.emitError() << "'" << func.getSymName()
                            << "' has several blocks; the interpreter runs "
                               "single-block functions";
  isMatrix = llvm::any_of(func.getArgumentTypes(), isMatrixType);
  if (isMatrix && rows <= 0)
    return func.emitError()
           << "a function over rows runs over at least one, got " << rows;
  if (rows < 0)
    return func.emitError() << "a tensor of " << rows << " elements";
  func.walk([&](WriteOp write) {
    if (auto target = dyn_cast<BlockArgument>(write.getTarget()))
      writtenArgs.insert(target.getArgNumber());
  });
  if (failed(resolveCols(inputs)) || failed(bindArguments(inputs)))
    return failure();
  outputs = ArgValues(func.getNumArguments());
  if (tracked())
    outputs.ambiguous.resize(func.getNumArguments());

  Block &block = func.getBody().front();
  DenseMap<Value, Operation *> lastUser;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      lastUser[operand] = &op;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError() << "returns values; a function's only "
                                    "outputs are its kfuse.write ops";
      break;
    }
    if (failed(execute(&op)))
      return failure();
    for (Value operand : op.getOperands())
      if (lastUser.lookup(operand) == &op)
        env.erase(operand);
  }
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgRole(func, i) == Role::output && !outputs.tensors[i])
      return func.emitError()
             << "output " << describeArg(i) << " is never written";
  return std::move(outputs);
}

FailureOr<ArgValues> interpret(func::FuncOp func, int64_t rows,
                               const ArgValues &inputs, Precision precision,
                               double decisionSlack) {
  if (!func)
    return failure();
  Interpreter interpreter(func, rows, precision, decisionSlack);
  return interpreter.run(inputs);
}

LogicalResult interpretUpdate(func::FuncOp update, UpdateValues &values,
                              Precision precision, double decisionSlack) {
  // The flat buffers' checks, with their own messages; the rest is
  // interpret's.
  std::optional<unsigned> firstTensor;
  std::optional<size_t> numElements;
  ArgValues inputs(update.getNumArguments());
  for (BlockArgument arg : update.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::string name = getArgName(update, index);
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor) {
      if (isa<ShapedType>(arg.getType()))
        return update.emitError()
               << "argument #" << index << " '" << name << "' has type "
               << arg.getType() << "; updates take ranked tensors and scalars";
      if (index >= values.scalars.size())
        return update.emitError()
               << "no value for scalar argument #" << index << " '" << name
               << "': " << values.scalars.size() << " scalars given";
      inputs.scalars[index] = values.scalars[index];
      continue;
    }
    if (tensor.getRank() != 1)
      return update.emitError()
             << "argument #" << index << " '" << name << "' has type " << tensor
             << "; interpretUpdate runs 1-D updates";
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
    HostTensor bound(static_cast<int64_t>(buffer.size()), 1);
    bound.elements = buffer;
    inputs.tensors[index] = std::move(bound);
  }
  if (decisionSlack > 0)
    inputs.ambiguous = values.ambiguous;
  FailureOr<ArgValues> written =
      interpret(update, static_cast<int64_t>(numElements.value_or(0)), inputs,
                precision, decisionSlack);
  if (failed(written))
    return failure();
  for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i) {
    if (written->tensors[i])
      values.tensors[i] = std::move(written->tensors[i]->elements);
    if (written->scalars[i])
      values.scalars[i] = *written->scalars[i];
  }
  if (decisionSlack > 0) {
    values.ambiguous.resize(values.tensors.size());
    for (unsigned i = 0, e = update.getNumArguments(); i < e; ++i)
      if (written->tensors[i])
        values.ambiguous[i] = std::move(written->ambiguous[i]);
  }
  return success();
}

} // namespace kfuse
