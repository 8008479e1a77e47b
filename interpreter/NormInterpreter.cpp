//===- NormInterpreter.cpp - CPU reference interpreter of norms ----------===//
//
// Walks the function's single block once: a norm, or an update whose params
// are matrices (isMatrixUpdate), whose reads are its params, grads and
// states, and whose writes replace them. A value is a scalar or a row-major
// 2-D buffer with its runtime extents; elementwise ops (also inside
// kfuse.fused) reuse ElementOps, and kfuse.broadcast, kfuse.reduce and
// kfuse.dim_size are handled here. Writes are collected and returned, so
// the caller's inputs are never touched. A value is dropped after its last
// use, which keeps a 64 x 12289 run at a few live tensors.
//
//===----------------------------------------------------------------------===//

#include "interpreter/NormInterpreter.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/ElementOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>

using namespace mlir;

namespace kfuse {

namespace {

/// The value of one SSA value: a scalar or a 2-D tensor.
struct NormValue {
  bool isTensor = false;
  double scalar = 0.0;
  NormExtents extents;
  std::vector<double> elements;

  double at(size_t index) const { return isTensor ? elements[index] : scalar; }
};

/// One op of a compiled kfuse.fused body, reading and writing slots.
class NormInterpreter {
public:
  NormInterpreter(func::FuncOp norm, int64_t rows, NormMode mode)
      : norm(norm), rows(rows), mode(mode) {}

  FailureOr<NormValues> run(const NormValues &inputs);

private:
  LogicalResult resolveCols(const NormValues &inputs);
  LogicalResult bindArguments(const NormValues &inputs);
  LogicalResult execute(Operation *op);
  LogicalResult executeElementwise(Operation *op);
  LogicalResult executeBroadcast(BroadcastOp op);
  LogicalResult executeReduce(ReduceOp op);
  LogicalResult executeDimSize(DimSizeOp op);
  LogicalResult executeFused(FusedOp op);
  LogicalResult executeWrite(WriteOp op);

  /// `op` as an ElementOp rounded as the mode asks.
  FailureOr<ElementOp> compile(Operation *op);
  /// The runtime extents of a tensor of `type` produced or read by `op`.
  FailureOr<NormExtents> getExtents(Type type, Operation *op);
  /// The bound value of `value`, read by `user`.
  FailureOr<const NormValue *> lookup(Value value, Operation *user);
  /// Whether argument `index` is a tensor the function reads.
  bool isReadTensor(unsigned index) const {
    std::optional<Role> role = getArgRole(norm, index);
    return role == Role::input || role == Role::param || role == Role::grad ||
           (role == Role::state && !isPerTensorArg(norm, index));
  }
  /// "argument #i 'name'" for diagnostics.
  std::string describeArg(unsigned index) const {
    return "argument #" + std::to_string(index) + " '" +
           getArgName(norm, index) + "'";
  }

  func::FuncOp norm;
  int64_t rows;
  int64_t cols = 0;
  NormMode mode;
  DenseMap<Value, NormValue> env;
  NormValues outputs;
};

} // namespace

std::optional<NormExtents> resolveNormExtents(RankedTensorType type,
                                              int64_t rows, int64_t cols) {
  if (!type || type.getRank() != 2)
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
  return NormExtents{resolved[0], resolved[1]};
}

std::optional<int64_t> getStaticNormCols(func::FuncOp norm) {
  for (Type type : norm.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.getRank() == 2 && !tensor.isDynamicDim(1) &&
        tensor.getDimSize(1) != 1)
      return tensor.getDimSize(1);
  return std::nullopt;
}

static std::string formatExtents(NormExtents extents) {
  return std::to_string(extents.rows) + " x " + std::to_string(extents.cols);
}

FailureOr<ElementOp> NormInterpreter::compile(Operation *op) {
  FailureOr<ElementOp> element = compileElementOp(
      op, mode == NormMode::Device ? Precision::F32 : Precision::F64);
  // ElementOps' F64 still rounds narrowing converts to bf16/f16; the exact
  // oracle keeps those values too.
  if (succeeded(element) && mode == NormMode::Exact)
    element->roundResult = false;
  return element;
}

FailureOr<NormExtents> NormInterpreter::getExtents(Type type, Operation *op) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 2)
    return op->emitOpError() << "has a value of type " << type
                             << "; the norm interpreter supports scalars and "
                                "2-D tensors only";
  std::optional<NormExtents> extents = resolveNormExtents(tensor, rows, cols);
  if (!extents)
    return op->emitOpError()
           << "has a value of type " << type << ", which does not fit a norm "
           << "over " << rows << " x " << cols;
  return *extents;
}

FailureOr<const NormValue *> NormInterpreter::lookup(Value value,
                                                     Operation *user) {
  auto it = env.find(value);
  if (it == env.end())
    return user->emitOpError()
           << "reads a value the interpreter has not computed (an output "
              "argument, or one defined outside the norm's block)";
  return &it->second;
}

LogicalResult NormInterpreter::resolveCols(const NormValues &inputs) {
  if (std::optional<int64_t> staticCols = getStaticNormCols(norm)) {
    cols = *staticCols;
    return success();
  }
  // The first given input with a column dimension fixes the row length;
  // bindArguments checks the others against it.
  for (unsigned i = 0, e = norm.getNumArguments(); i < e; ++i) {
    auto tensor = dyn_cast<RankedTensorType>(norm.getArgumentTypes()[i]);
    if (!isReadTensor(i) || !tensor || tensor.getRank() != 2 ||
        tensor.getDimSize(1) == 1 || i >= inputs.tensors.size() ||
        !inputs.tensors[i])
      continue;
    cols = inputs.tensors[i]->cols;
    if (cols <= 0)
      return norm.emitError() << "input " << describeArg(i) << " has " << cols
                              << " columns; a norm needs at least one";
    return success();
  }
  return norm.emitError()
         << "cannot tell the row length of norm '" << norm.getSymName()
         << "': no static column extent and no input tensor with columns "
            "given";
}

LogicalResult NormInterpreter::bindArguments(const NormValues &inputs) {
  for (BlockArgument arg : norm.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::optional<Role> role = getArgRole(norm, index);
    if (!role)
      return norm.emitError() << describeArg(index) << " has no kfuse.role";
    FailureOr<ElementKind> kind =
        getElementKind(arg.getType(), norm.getLoc(), describeArg(index));
    if (failed(kind))
      return failure();
    // A 16-bit buffer holds 16-bit values in either mode.
    bool roundOnLoad = mode == NormMode::Device || *kind == ElementKind::BF16 ||
                       *kind == ElementKind::F16;
    NormValue bound;

    if (*role == Role::hyper) {
      if (isa<ShapedType>(arg.getType()))
        return norm.emitError()
               << "hyper " << describeArg(index) << " has type "
               << arg.getType() << "; hyperparameters are scalars";
      std::optional<double> value;
      if (index < inputs.scalars.size())
        value = inputs.scalars[index];
      if (!value)
        value = getArgDefault(norm, index);
      if (!value)
        return norm.emitError() << "no value for hyper " << describeArg(index)
                                << ", which has no kfuse.default";
      bound.scalar = roundOnLoad ? roundToKind(*value, *kind) : *value;
      env[arg] = std::move(bound);
      continue;
    }

    if (isPerTensorArg(norm, index)) {
      // A state of one value per tensor: a scalar, as a hyper.
      if (index >= inputs.scalars.size() || !inputs.scalars[index])
        return norm.emitError() << "no value for the state at the tensor "
                                << "level " << describeArg(index);
      bound.scalar = roundOnLoad ? roundToKind(*inputs.scalars[index], *kind)
                                 : *inputs.scalars[index];
      env[arg] = std::move(bound);
      continue;
    }
    bool readOnly = *role == Role::input || *role == Role::grad;
    bool writtenOnly = *role == Role::output || *role == Role::model;
    if (!readOnly && !writtenOnly && *role != Role::param &&
        *role != Role::state)
      return norm.emitError()
             << describeArg(index) << " has role '" << stringifyRole(*role)
             << "'; the norm interpreter takes a norm's 'input', 'output' and "
                "'hyper' arguments, or a 2-D update's";
    auto tensor = dyn_cast<RankedTensorType>(arg.getType());
    if (!tensor || tensor.getRank() != 2)
      return norm.emitError() << describeArg(index) << " has type "
                              << arg.getType() << "; a norm's tensors are 2-D";
    std::optional<NormExtents> extents = resolveNormExtents(tensor, rows, cols);
    if (!extents)
      return norm.emitError()
             << describeArg(index) << " of type " << tensor
             << " does not fit a norm over " << rows << " x " << cols;
    if (writtenOnly)
      continue; // written, never read

    const NormTensor *given = nullptr;
    if (index < inputs.tensors.size() && inputs.tensors[index])
      given = &*inputs.tensors[index];
    if (!given)
      return norm.emitError() << "no tensor for " << describeArg(index);
    NormExtents givenExtents{given->rows, given->cols};
    if (!(givenExtents == *extents))
      return norm.emitError() << "input " << describeArg(index) << " is "
                              << formatExtents(givenExtents) << " but its type "
                              << tensor << " needs " << formatExtents(*extents)
                              << " in a norm over " << rows << " x " << cols;
    auto size = static_cast<size_t>(extents->rows * extents->cols);
    if (given->elements.size() != size)
      return norm.emitError()
             << "input " << describeArg(index) << " holds "
             << given->elements.size() << " elements but its extents "
             << formatExtents(*extents) << " need " << size;
    bound.isTensor = true;
    bound.extents = *extents;
    bound.elements = given->elements;
    if (roundOnLoad)
      for (double &element : bound.elements)
        element = roundToKind(element, *kind);
    env[arg] = std::move(bound);
  }
  return success();
}

LogicalResult NormInterpreter::executeElementwise(Operation *op) {
  FailureOr<ElementOp> element = compile(op);
  if (failed(element))
    return failure();
  SmallVector<const NormValue *, 3> operands;
  for (Value operand : op->getOperands()) {
    FailureOr<const NormValue *> bound = lookup(operand, op);
    if (failed(bound))
      return failure();
    operands.push_back(*bound);
  }
  Type resultType = op->getResult(0).getType();
  NormValue result;
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
    FailureOr<NormExtents> extents = getExtents(resultType, op);
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
    size_t size = static_cast<size_t>(extents->rows * extents->cols);
    result.elements.resize(size);
    for (size_t i = 0; i < size; ++i) {
      for (auto [index, operand] : llvm::enumerate(operands))
        arguments[index] = operand->at(i);
      result.elements[i] = evaluateElement(*element, arguments);
    }
  }
  env[op->getResult(0)] = std::move(result);
  return success();
}

LogicalResult NormInterpreter::executeBroadcast(BroadcastOp op) {
  FailureOr<const NormValue *> value = lookup(op.getValue(), op);
  FailureOr<const NormValue *> like = lookup(op.getLike(), op);
  if (failed(value) || failed(like))
    return failure();
  FailureOr<NormExtents> extents = getExtents(op.getType(), op);
  if (failed(extents))
    return failure();
  if (!(*like)->isTensor || !((*like)->extents == *extents))
    return op.emitOpError() << "broadcasts like a value that is not a "
                            << formatExtents(*extents) << " tensor";
  NormValue result;
  result.isTensor = true;
  result.extents = *extents;
  if (!(*value)->isTensor) {
    result.elements.assign(static_cast<size_t>(extents->rows * extents->cols),
                           (*value)->scalar);
  } else {
    NormExtents from = (*value)->extents;
    if ((from.rows != 1 && from.rows != extents->rows) ||
        (from.cols != 1 && from.cols != extents->cols))
      return op.emitOpError()
             << "value is " << formatExtents(from)
             << ", which does not broadcast to " << formatExtents(*extents);
    const std::vector<double> &source = (*value)->elements;
    result.elements.resize(static_cast<size_t>(extents->rows * extents->cols));
    for (int64_t r = 0; r < extents->rows; ++r)
      for (int64_t c = 0; c < extents->cols; ++c)
        result.elements[r * extents->cols + c] =
            source[(from.rows == 1 ? 0 : r) * from.cols +
                   (from.cols == 1 ? 0 : c)];
  }
  env[op.getResult()] = std::move(result);
  return success();
}

/// arith.maximumf: NaN if either is NaN, +0 above -0.
static double maximumF(double lhs, double rhs) {
  if (std::isnan(lhs) || std::isnan(rhs))
    return NAN;
  if (lhs == rhs)
    return std::signbit(lhs) ? rhs : lhs;
  return lhs > rhs ? lhs : rhs;
}

LogicalResult NormInterpreter::executeReduce(ReduceOp op) {
  FailureOr<const NormValue *> input = lookup(op.getInput(), op);
  if (failed(input))
    return failure();
  if (!(*input)->isTensor)
    return op.emitOpError() << "reduces a scalar";
  FailureOr<NormExtents> extents = getExtents(op.getType(), op);
  if (failed(extents))
    return failure();
  FailureOr<ElementKind> resultKind =
      getElementKind(op.getType(), op.getLoc(), "result");
  if (failed(resultKind))
    return failure();
  int64_t dim = op.getDim();
  if (dim > 1)
    return op.emitOpError() << "reduces dimension " << dim
                            << "; norm tensors have dimensions 0 and 1";
  NormExtents from = (*input)->extents;
  NormExtents expected = from;
  (dim == 0 ? expected.rows : expected.cols) = 1;
  if (!(expected == *extents))
    return op.emitOpError()
           << "reduces a " << formatExtents(from) << " tensor over dimension "
           << dim << " to " << formatExtents(*extents) << "; expected "
           << formatExtents(expected);

  bool device = mode == NormMode::Device;
  // The GPU accumulates in f32 registers whatever the storage type.
  ElementKind accumulatorKind =
      *resultKind == ElementKind::F64 ? ElementKind::F64 : ElementKind::F32;
  size_t numResults = static_cast<size_t>(extents->rows * extents->cols);
  const std::vector<double> &elements = (*input)->elements;
  auto elementAt = [&](size_t target, int64_t k) {
    return dim == 0 ? elements[k * from.cols + target]
                    : elements[target * from.cols + k];
  };
  if (op.getKind() == ReduceKind::variance) {
    // Two passes in double (compensated): the oracle the GPU's one-pass
    // merge is measured against.
    int64_t count = dim == 0 ? from.rows : from.cols;
    NormValue result;
    result.isTensor = true;
    result.extents = *extents;
    result.elements.resize(numResults);
    for (size_t target = 0; target < numResults; ++target) {
      CompensatedSum sum, squares;
      for (int64_t k = 0; k < count; ++k)
        sum.add(elementAt(target, k));
      double mean = sum.get() / double(count);
      for (int64_t k = 0; k < count; ++k) {
        double deviation = elementAt(target, k) - mean;
        squares.add(deviation * deviation);
      }
      double variance = squares.get() / double(count);
      result.elements[target] =
          device ? roundToKind(variance, *resultKind) : variance;
    }
    env[op.getResult()] = std::move(result);
    return success();
  }
  bool isSum = op.getKind() == ReduceKind::sum;
  // Results are accumulated in input order (row-major), each in sequence
  // over the reduced dimension.
  std::vector<double> accumulators(numResults, isSum ? 0.0 : -INFINITY);
  std::vector<CompensatedSum> exactSums(isSum && !device ? numResults : 0);
  for (int64_t r = 0; r < from.rows; ++r) {
    for (int64_t c = 0; c < from.cols; ++c) {
      size_t target = static_cast<size_t>(dim == 0 ? c : r);
      double x = elements[r * from.cols + c];
      if (!isSum)
        accumulators[target] = maximumF(accumulators[target], x);
      else if (device)
        accumulators[target] =
            roundToKind(accumulators[target] + x, accumulatorKind);
      else
        exactSums[target].add(x);
    }
  }
  NormValue result;
  result.isTensor = true;
  result.extents = *extents;
  result.elements = std::move(accumulators);
  for (size_t i = 0; i < numResults; ++i) {
    if (isSum && !device)
      result.elements[i] = exactSums[i].get();
    if (device)
      result.elements[i] = roundToKind(result.elements[i], *resultKind);
  }
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult NormInterpreter::executeDimSize(DimSizeOp op) {
  FailureOr<const NormValue *> input = lookup(op.getInput(), op);
  if (failed(input))
    return failure();
  if (!(*input)->isTensor)
    return op.emitOpError() << "takes the size of a scalar";
  FailureOr<ElementKind> resultKind =
      getElementKind(op.getType(), op.getLoc(), "result");
  if (failed(resultKind))
    return failure();
  uint64_t dim = op.getDim();
  if (dim > 1)
    return op.emitOpError() << "asks for dimension " << dim
                            << "; norm tensors have dimensions 0 and 1";
  auto extent = static_cast<double>(dim == 0 ? (*input)->extents.rows
                                             : (*input)->extents.cols);
  NormValue result;
  result.scalar =
      mode == NormMode::Device ? roundToKind(extent, *resultKind) : extent;
  env[op.getResult()] = std::move(result);
  return success();
}

LogicalResult NormInterpreter::executeFused(FusedOp op) {
  FailureOr<FusedProgram> program =
      compileFusedBody(op, [&](Operation *bodyOp) { return compile(bodyOp); });
  if (failed(program))
    return failure();

  SmallVector<const NormValue *> inputs;
  for (Value input : op.getInputs()) {
    FailureOr<const NormValue *> bound = lookup(input, op);
    if (failed(bound))
      return failure();
    inputs.push_back(*bound);
  }
  std::optional<NormExtents> extents;
  for (Type type : op.getResultTypes()) {
    FailureOr<NormExtents> resultExtents = getExtents(type, op);
    if (failed(resultExtents))
      return failure();
    extents = *resultExtents;
  }
  for (auto [index, input] : llvm::enumerate(inputs)) {
    if (!input->isTensor)
      continue;
    if (!extents)
      extents = input->extents;
    if (!(input->extents == *extents))
      return op.emitOpError()
             << "input #" << index << " is " << formatExtents(input->extents)
             << " but the fused op computes " << formatExtents(*extents);
  }
  if (!extents)
    return op.emitOpError() << "has no tensor input or result to size it";

  size_t size = static_cast<size_t>(extents->rows * extents->cols);
  std::vector<NormValue> results(op.getNumResults());
  for (NormValue &result : results) {
    result.isTensor = true;
    result.extents = *extents;
    result.elements.resize(size);
  }
  std::vector<double> slotValues(program->numSlots);
  SmallVector<double, 3> arguments;
  for (size_t i = 0; i < size; ++i) {
    for (auto [index, input] : llvm::enumerate(inputs))
      slotValues[index] = input->at(i);
    program->run(slotValues, arguments);
    for (auto [index, slot] : llvm::enumerate(program->yielded))
      results[index].elements[i] = slotValues[slot];
  }
  for (auto [result, value] : llvm::zip(op.getResults(), results))
    env[result] = std::move(value);
  return success();
}

LogicalResult NormInterpreter::executeWrite(WriteOp op) {
  auto target = dyn_cast<BlockArgument>(op.getTarget());
  if (!target || target.getOwner() != &norm.getBody().front())
    return op.emitOpError() << "target is not an argument of the norm";
  unsigned index = target.getArgNumber();
  std::optional<Role> role = getArgRole(norm, index);
  if (role != Role::output && role != Role::param && role != Role::state &&
      role != Role::model)
    return op.emitOpError() << "writes " << describeArg(index)
                            << ", which is not an output, param, state or "
                               "model";
  FailureOr<const NormValue *> value = lookup(op.getValue(), op);
  if (failed(value))
    return failure();
  if (isPerTensorArg(norm, index)) {
    if ((*value)->isTensor)
      return op.emitOpError() << "writes a tensor to " << describeArg(index)
                              << ", a state at the tensor level";
    if (outputs.scalars[index])
      return op.emitOpError()
             << "writes " << describeArg(index) << " a second time";
    outputs.scalars[index] = (*value)->scalar;
    return success();
  }
  if (!(*value)->isTensor)
    return op.emitOpError() << "writes a scalar";
  FailureOr<NormExtents> extents = getExtents(target.getType(), op);
  if (failed(extents))
    return failure();
  if (!((*value)->extents == *extents))
    return op.emitOpError()
           << "writes a " << formatExtents((*value)->extents) << " value to "
           << describeArg(index) << ", which is " << formatExtents(*extents);
  if (outputs.tensors[index])
    return op.emitOpError()
           << "writes " << describeArg(index) << " a second time";
  NormTensor written;
  written.rows = extents->rows;
  written.cols = extents->cols;
  written.elements = (*value)->elements;
  outputs.tensors[index] = std::move(written);
  return success();
}

LogicalResult NormInterpreter::execute(Operation *op) {
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
    return op->emitOpError() << "has regions; the norm interpreter runs only "
                                "kfuse.fused regions";
  return executeElementwise(op);
}

FailureOr<NormValues> NormInterpreter::run(const NormValues &inputs) {
  if (!isNorm(norm) && !isMatrixUpdate(norm))
    return norm.emitError() << "function '" << norm.getSymName()
                            << "' is neither a norm nor a 2-D update";
  if (norm.isExternal())
    return norm.emitError()
           << "norm '" << norm.getSymName() << "' has no body to interpret";
  if (!norm.getBody().hasOneBlock())
    return norm.emitError() << "norm '" << norm.getSymName()
                            << "' has several blocks; the interpreter runs "
                               "single-block norms";
  if (rows <= 0)
    return norm.emitError()
           << "a norm runs over at least one row, got " << rows;
  if (failed(resolveCols(inputs)) || failed(bindArguments(inputs)))
    return failure();
  outputs = NormValues(norm.getNumArguments());

  Block &block = norm.getBody().front();
  DenseMap<Value, Operation *> lastUser;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      lastUser[operand] = &op;
  for (Operation &op : block) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError() << "returns values; a norm's only outputs "
                                    "are its kfuse.write ops";
      break;
    }
    if (failed(execute(&op)))
      return failure();
    for (Value operand : op.getOperands())
      if (lastUser.lookup(operand) == &op)
        env.erase(operand);
  }
  for (unsigned i = 0, e = norm.getNumArguments(); i < e; ++i)
    if (getArgRole(norm, i) == Role::output && !outputs.tensors[i])
      return norm.emitError()
             << "output " << describeArg(i) << " is never written";
  return std::move(outputs);
}

FailureOr<NormValues> runNorm(func::FuncOp norm, int64_t rows,
                              const NormValues &inputs, NormMode mode) {
  if (!norm)
    return failure();
  NormInterpreter interpreter(norm, rows, mode);
  return interpreter.run(inputs);
}

} // namespace kfuse
