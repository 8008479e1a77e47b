//===- KFuseOps.cpp - kfuse operation verifiers and folders --------------===//

#include "dialect/KFuseOps.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace kfuse;

#define GET_OP_CLASSES
#include "dialect/KFuseOps.cpp.inc"

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location,
    BroadcastOp::Adaptor adaptor, SmallVectorImpl<Type> &inferredReturnTypes) {
  auto like = cast<RankedTensorType>(adaptor.getLike().getType());
  Type element = getElementTypeOrSelf(adaptor.getValue().getType());
  inferredReturnTypes.push_back(
      RankedTensorType::get(like.getShape(), element));
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto value = dyn_cast<RankedTensorType>(getValue().getType());
  if (!value)
    return success();
  auto like = cast<RankedTensorType>(getLike().getType());
  if (value.getRank() != like.getRank())
    return emitOpError() << "value of rank " << value.getRank()
                         << " cannot be broadcast like a tensor of rank "
                         << like.getRank();
  for (int64_t d = 0, e = value.getRank(); d < e; ++d) {
    int64_t from = value.getDimSize(d), to = like.getDimSize(d);
    if (from == 1 || from == to)
      continue;
    return emitOpError() << "dimension " << d << " of the value has extent "
                         << (ShapedType::isDynamic(from) ? std::string("?")
                                                         : std::to_string(from))
                         << "; a broadcast dimension must be 1 or match the "
                            "target's ("
                         << (ShapedType::isDynamic(to) ? std::string("?")
                                                       : std::to_string(to))
                         << ")";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::verify() {
  auto func = (*this)->getParentOfType<func::FuncOp>();
  bool inUpdate = func && isUpdate(func);
  Type inputType = getInput().getType(), resultType = getResult().getType();
  auto input = dyn_cast<RankedTensorType>(inputType);
  if (!input && (*this)->getParentOfType<FusedOp>()) {
    // In a region, the element's row, which the generated code holds in
    // registers (isRowLocalReduce).
    if (getDim() != 1 || getList() || getKind() == ReduceKind::mean)
      return emitOpError() << "in a kfuse.fused body reduces the element's "
                              "row: dim 1, sum, max or variance, not over the "
                              "list";
    if (resultType != inputType)
      return emitOpError() << "result type " << resultType
                           << " must be the element's type " << inputType;
    return success();
  }
  if (!input || input.getRank() == 1) {
    // A whole tensor, or in element form the element's tensor, to a scalar.
    if (!inUpdate)
      return emitOpError() << "reduces a " << inputType
                           << " to a scalar, which only an update does";
    if (!input && !isElementForm(func))
      return emitOpError() << "reduces a scalar outside an element-form "
                              "update";
    if (getDim() != 0)
      return emitOpError() << "dim must be 0 for a 1-D tensor or an "
                              "element, got "
                           << getDim();
    if (getKind() == ReduceKind::mean && getList())
      return emitOpError() << "takes the mean over the list, which is not "
                              "generated; reduce the sum over the list";
    Type element = getElementTypeOrSelf(inputType);
    if (resultType != element)
      return emitOpError() << "result type " << resultType
                           << " must be the input's element type " << element;
    return success();
  }
  if (getKind() == ReduceKind::mean)
    return emitOpError() << "takes a mean over the rows or columns of a "
                         << inputType
                         << "; divide the sum by kfuse.dim_size instead";
  if (getList())
    return emitOpError() << "reduces a " << inputType
                         << " over the list; only a 1-D tensor or an element "
                            "reduces over a parameter list";
  auto result = dyn_cast<RankedTensorType>(resultType);
  if (!result)
    return emitOpError() << "result type " << resultType
                         << " must be a tensor for a " << inputType << " input";
  if (input.getRank() != 2)
    return emitOpError() << "input must be a 2-D tensor, got rank "
                         << input.getRank();
  int64_t dim = getDim();
  if (dim > 1)
    return emitOpError() << "dim must be 0 (over rows) or 1 (over columns), "
                            "got "
                         << dim;
  if (result.getElementType() != input.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " differs from the input's "
                         << input.getElementType();
  SmallVector<int64_t> expected(input.getShape());
  expected[dim] = 1;
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result type " << result
                         << " must keep the input's shape with dimension "
                         << dim << " of extent 1: expected "
                         << RankedTensorType::get(expected,
                                                  input.getElementType());
  return success();
}

//===----------------------------------------------------------------------===//
// DimSizeOp
//===----------------------------------------------------------------------===//

LogicalResult DimSizeOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (getDim() >= static_cast<uint64_t>(input.getRank()))
    return emitOpError() << "dim " << getDim() << " is out of range for a "
                         << "tensor of rank " << input.getRank();
  return success();
}

OpFoldResult DimSizeOp::fold(FoldAdaptor) {
  auto input = cast<RankedTensorType>(getInput().getType());
  int64_t extent = input.getDimSize(getDim());
  if (ShapedType::isDynamic(extent))
    return {};
  return FloatAttr::get(getType(), static_cast<double>(extent));
}

//===----------------------------------------------------------------------===//
// ConvertOp
//===----------------------------------------------------------------------===//

/// Whether every value of `narrow` is exactly representable in `wide`.
static bool isExactlyRepresentable(FloatType narrow, FloatType wide) {
  if (narrow == wide)
    return true;
  return wide.getWidth() > narrow.getWidth() &&
         wide.getFPMantissaWidth() >= narrow.getFPMantissaWidth();
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  // A widening followed by the narrowing back is the identity.
  if (auto inner = getInput().getDefiningOp<ConvertOp>()) {
    Type source = inner.getInput().getType();
    if (source == getResult().getType() &&
        isExactlyRepresentable(
            cast<FloatType>(getElementTypeOrSelf(source)),
            cast<FloatType>(getElementTypeOrSelf(inner.getResult().getType()))))
      return inner.getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// WriteOp
//===----------------------------------------------------------------------===//

LogicalResult WriteOp::verify() {
  auto target = dyn_cast<BlockArgument>(getTarget());
  auto func = (*this)->getParentOfType<func::FuncOp>();
  if (!target || !func || target.getOwner()->getParentOp() != func)
    return emitOpError()
           << "target must be an argument of the enclosing function";
  std::optional<Role> role = getArgRole(func, target.getArgNumber());
  if (!role)
    return emitOpError() << "target argument #" << target.getArgNumber()
                         << " has no kfuse.role; declare it as a 'state' to "
                            "write it";
  if (isNorm(func)) {
    if (*role != Role::output)
      return emitOpError() << "target argument #" << target.getArgNumber()
                           << " has role '" << stringifyRole(*role)
                           << "'; a norm writes only 'output' arguments";
  } else if (*role != Role::param && *role != Role::state &&
             *role != Role::model && *role != Role::output) {
    return emitOpError() << "target argument #" << target.getArgNumber()
                         << " has role '" << stringifyRole(*role)
                         << "'; only 'param', 'state', 'model' and 'output' "
                            "arguments "
                            "are written";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

YieldOp FusedOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

unsigned FusedOp::getNumBodyOps() {
  return getBody().front().getOperations().size() - 1;
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments but the op has " << getInputs().size()
                         << " inputs";
  // One shape, where an extent of 1 in a 2-D tensor repeats along that
  // dimension (a value per row or per column).
  std::optional<SmallVector<int64_t>> shape;
  auto checkShape = [&](RankedTensorType type, StringRef what,
                        unsigned index) -> LogicalResult {
    if (!shape) {
      shape.emplace(type.getShape());
      return success();
    }
    bool compatible = shape->size() == size_t(type.getRank());
    for (unsigned dim = 0; compatible && dim < shape->size(); ++dim) {
      int64_t extent = type.getDimSize(dim);
      if (shape->size() == 2 && extent == 1)
        continue;
      if (shape->size() == 2 && (*shape)[dim] == 1)
        (*shape)[dim] = extent;
      else
        compatible = (*shape)[dim] == extent;
    }
    if (!compatible)
      return emitOpError() << what << " #" << index << " of type " << type
                           << " does not have the shape of the first tensor";
    return success();
  };
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    Type argType = body.getArgument(index).getType();
    Type expected = input.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(input.getType())) {
      if (failed(checkShape(tensor, "input", index)))
        return failure();
      expected = tensor.getElementType();
    }
    if (argType != expected)
      return emitOpError() << "body argument #" << index << " has type "
                           << argType << " but input #" << index << " needs "
                           << expected;
  }
  for (auto [index, result] : llvm::enumerate(getResults()))
    if (failed(checkShape(cast<RankedTensorType>(result.getType()), "result",
                          index)))
      return failure();
  if (!shape)
    return emitOpError() << "needs at least one tensor input or result to "
                            "define its elements";
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with kfuse.yield";
  if (yield.getValues().size() != getNumResults())
    return yield.emitOpError()
           << "yields " << yield.getValues().size() << " values but the "
           << "fused op has " << getNumResults() << " results";
  for (auto [index, value] : llvm::enumerate(yield.getValues())) {
    Type element =
        cast<RankedTensorType>(getResult(index).getType()).getElementType();
    if (value.getType() != element)
      return yield.emitOpError()
             << "operand #" << index << " has type " << value.getType()
             << " but result #" << index << " has element type " << element;
  }
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitOpError() << "is not allowed in a kfuse.fused body: only "
                                 "scalar elementwise operations are";
    for (Type type : llvm::concat<const Type>(TypeRange(op.getOperandTypes()),
                                              TypeRange(op.getResultTypes())))
      if (isa<ShapedType>(type))
        return op.emitOpError() << "has a value of type " << type
                                << " in a kfuse.fused body, which is scalar";
  }
  return success();
}
