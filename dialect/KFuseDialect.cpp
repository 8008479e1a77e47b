//===- KFuseDialect.cpp - kfuse dialect and attribute verification -------===//

#include "dialect/KFuseDialect.h"
#include "dialect/KFuseOps.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kfuse;

#include "dialect/KFuseDialect.cpp.inc"
#include "dialect/KFuseEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/KFuseAttrs.cpp.inc"

void KFuseDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/KFuseOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/KFuseAttrs.cpp.inc"
      >();
}

/// Whether `type` is a 1-D ranked tensor of floats, the type of update
/// tensor roles.
static bool isElementTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 1 &&
         isa<FloatType>(tensor.getElementType());
}

/// Whether `type` is a 2-D ranked tensor of floats, the type of norm tensor
/// roles.
static bool isNormTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 2 &&
         isa<FloatType>(tensor.getElementType());
}

/// Checks that argument `index` of `func` has the type its role `role`
/// needs. MLIR verifies an op's dialect attributes (kfuse.update,
/// kfuse.norm) before its argument attributes, so the whole-function rules
/// call this too before they look into a type.
static LogicalResult verifyArgType(func::FuncOp func, unsigned index,
                                   Role role) {
  Type type = func.getArgumentTypes()[index];
  if (isPerTensorArg(func, index)) {
    if (!isUpdate(func) || role != Role::state || !type.isF32())
      return func.emitOpError()
             << "argument #" << index
             << " at the tensor level must be an f32 'state' of an update, "
                "got role '"
             << stringifyRole(role) << "' and type " << type;
    return success();
  }
  if (role == Role::hyper) {
    if (!isa<FloatType>(type))
      return func.emitOpError()
             << "argument #" << index
             << " with role 'hyper' must be a float scalar, got " << type;
    return success();
  }
  // A norm's inputs and outputs are 2-D; an update's tensors, its inputs and
  // outputs too, are 1-D, or 2-D for a param kept as a matrix with states
  // per row or per column; verifyUpdate checks that they agree.
  bool normRole =
      (role == Role::input || role == Role::output) && !isUpdate(func);
  if (normRole ? isNormTensor(type)
               : isElementTensor(type) || isNormTensor(type))
    return success();
  // An update's tensors may all be written as one element each (element
  // form); verifyUpdate checks that they agree.
  bool update = isUpdate(func);
  if (!normRole && update && isa<FloatType>(type))
    return success();
  return func.emitOpError()
         << "argument #" << index << " with role '" << stringifyRole(role)
         << "' must be a " << (normRole ? "2-D" : "1-D or 2-D")
         << " tensor of floats"
         << (!normRole && update ? ", or a float scalar in element form" : "")
         << ", got " << type;
}

Operation *KFuseDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  if (auto typed = dyn_cast<TypedAttr>(value))
    if (arith::ConstantOp::isBuildableWith(typed, type))
      return arith::ConstantOp::create(builder, loc, type, typed);
  return nullptr;
}

LogicalResult KFuseDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitOpError()
           << "'" << attr.getName() << "' is only valid on func.func arguments";
  StringRef name = attr.getName().getValue();

  if (name == kRoleAttrName) {
    auto role = dyn_cast<RoleAttr>(attr.getValue());
    if (!role)
      return op->emitOpError()
             << "argument #" << argIndex << " '" << name
             << "' must be a #kfuse.role attribute, got " << attr.getValue();
    return verifyArgType(func, argIndex, role.getValue());
  }
  if (name == kLevelAttrName) {
    if (!isa<LevelAttr>(attr.getValue()))
      return op->emitOpError()
             << "argument #" << argIndex << " '" << name
             << "' must be a #kfuse.level attribute, got " << attr.getValue();
    std::optional<Role> role = getArgRole(func, argIndex);
    return role ? verifyArgType(func, argIndex, *role) : success();
  }
  if (name == kNameAttrName) {
    auto str = dyn_cast<StringAttr>(attr.getValue());
    if (!str || str.getValue().empty())
      return op->emitOpError() << "argument #" << argIndex << " '" << name
                               << "' must be a non-empty string";
    return success();
  }
  if (name == kDefaultAttrName) {
    auto value = dyn_cast<FloatAttr>(attr.getValue());
    if (!value)
      return op->emitOpError() << "argument #" << argIndex << " '" << name
                               << "' must be a float attribute";
    std::optional<Role> role = getArgRole(func, argIndex);
    if (role && *role != Role::hyper)
      return op->emitOpError() << "argument #" << argIndex
                               << " has a default but only 'hyper' "
                                  "arguments take defaults";
    // A literal past the type's range parses as infinity.
    if (!value.getValue().isFinite())
      return op->emitOpError()
             << "argument #" << argIndex << " '" << name
             << "' must be finite, got " << value.getValueAsDouble() << " (a "
             << value.getType() << " literal past its range reads as infinity)";
    if (auto type = dyn_cast<FloatType>(func.getArgumentTypes()[argIndex])) {
      llvm::APFloat converted = value.getValue();
      bool losesInfo = false;
      converted.convert(type.getFloatSemantics(),
                        llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      if (!converted.isFinite())
        return op->emitOpError() << "argument #" << argIndex << " '" << name
                                 << "' " << value.getValueAsDouble()
                                 << " is out of the range of " << type;
    }
    return success();
  }
  return op->emitOpError() << "unknown kfuse argument attribute '" << name
                           << "'";
}

/// The kfuse.write of each argument of `func` (null where none), failing on
/// an argument written twice.
static LogicalResult
collectWriters(func::FuncOp func, llvm::SmallVectorImpl<Operation *> &writers) {
  writers.assign(func.getNumArguments(), nullptr);
  WalkResult walk = func.walk([&](WriteOp write) {
    auto target = dyn_cast<BlockArgument>(write.getTarget());
    if (!target || target.getOwner()->getParentOp() != func)
      return WalkResult::advance(); // reported by the write's own verifier
    unsigned index = target.getArgNumber();
    if (writers[index]) {
      InFlightDiagnostic diag = write.emitOpError()
                                << "writes argument #" << index
                                << " a second time";
      diag.attachNote(writers[index]->getLoc()) << "first written here";
      return WalkResult::interrupt();
    }
    writers[index] = write;
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// Fails at the first op that reads argument `index` of `func` other than as
/// a kfuse.write target: `kind` arguments are written only.
static LogicalResult verifyWrittenOnly(func::FuncOp func, unsigned index,
                                       StringRef kind) {
  for (OpOperand &use : func.getArgument(index).getUses())
    if (!isa<WriteOp>(use.getOwner()) || use.getOperandNumber() != 1)
      return use.getOwner()->emitOpError()
             << "reads " << kind << " argument #" << index
             << ", which is written only";
  return success();
}

/// Whether an argument of `role` in a 2-D update may hold a value per
/// element, per row or per column: a state, an input or an output.
static bool hasMatrixLevels(Role role) {
  return role == Role::state || role == Role::input || role == Role::output;
}

/// Checks the states of a 2-D update against `full`, the shape of its
/// params, grads and models (argument `fullArg`): a state has that shape or
/// is one value per row (rows x 1) or per column (1 x columns).
static LogicalResult verifyMatrixUpdateShapes(func::FuncOp func,
                                              RankedTensorType full,
                                              unsigned fullArg) {
  if (full.getDimSize(0) == 1 || full.getDimSize(1) == 1)
    return func.emitOpError()
           << "argument #" << fullArg << " of type " << full
           << " has an extent of 1; a 2-D update's params are rows x columns "
              "with neither fixed to 1";
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = getArgRole(func, i);
    if (!role || !hasMatrixLevels(*role) || isPerTensorArg(func, i))
      continue;
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!type)
      continue; // a scalar: refused above as a mix of forms
    ArrayRef<int64_t> dims = type.getShape(), fullDims = full.getShape();
    bool perElement = dims == fullDims;
    bool perRow = dims[0] == fullDims[0] && dims[1] == 1;
    bool perColumn = dims[0] == 1 && dims[1] == fullDims[1];
    if (!perElement && !perRow && !perColumn)
      return func.emitOpError()
             << stringifyRole(*role) << " argument #" << i << " ('"
             << getArgName(func, i) << "') of type " << type
             << " fits no level of the params' " << full << ": "
             << (*role == Role::state ? "a state" : "an ")
             << (*role == Role::state ? "" : stringifyRole(*role))
             << " is per element (the same shape), per row "
             << "(rows x 1) or per column (1 x columns)";
  }
  return success();
}

/// Checks the whole-function rules of an update: roles on every argument,
/// one shape for every tensor, and each param written exactly once.
static LogicalResult verifyUpdate(func::FuncOp func) {
  if (func.getNumResults() != 0)
    return func.emitOpError()
           << "an update returns no values; write params and states with "
              "kfuse.write";
  if (func.isExternal())
    return func.emitOpError() << "an update must have a body";

  RankedTensorType shape, firstTensor;
  unsigned shapeArg = 0, firstTensorArg = 0;
  std::optional<unsigned> scalarArg;
  bool hasParam = false, hasOutput = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = getArgRole(func, i);
    if (!role)
      return func.emitOpError() << "argument #" << i << " has no kfuse.role";
    if (failed(verifyArgType(func, i, *role)))
      return failure();
    if (*role == Role::hyper)
      continue;
    hasParam |= *role == Role::param;
    hasOutput |= *role == Role::output;
    if (isPerTensorArg(func, i))
      continue; // a scalar in both forms
    if (isa<FloatType>(func.getArgumentTypes()[i])) {
      if (!scalarArg)
        scalarArg = i;
      continue;
    }
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!firstTensor) {
      firstTensor = type;
      firstTensorArg = i;
    } else if (firstTensor.getRank() != type.getRank()) {
      return func.emitOpError()
             << "argument #" << i << " of type " << type << " and argument #"
             << firstTensorArg << " of type " << firstTensor
             << " differ in rank; an update's tensors are all 1-D or all 2-D";
    }
    if (type.getRank() == 2 && hasMatrixLevels(*role))
      continue; // per element, row or column: verifyMatrixUpdateShapes
    if (!shape) {
      shape = type;
      shapeArg = i;
    } else if (shape.getShape() != type.getShape()) {
      return func.emitOpError()
             << "argument #" << i << " of type " << type
             << " does not have the shape of argument #" << shapeArg << " ("
             << shape << "); every tensor of an update has one shape"
             << (type.getRank() == 2
                     ? ", but for a 2-D update's states per row or column"
                     : "");
    }
  }
  if (scalarArg && firstTensor)
    return func.emitOpError()
           << "argument #" << *scalarArg << " is a scalar and argument #"
           << firstTensorArg
           << " a tensor; an update's params, grads, states and "
           << "models are all tensors, or all scalars (element form)";
  // Without params, grads or models (a norm written as an update), the
  // first tensor of whole rows has the shape.
  if (!shape && firstTensor && firstTensor.getRank() == 2)
    if (std::optional<unsigned> index = getWholeRowsArg(func)) {
      shapeArg = *index;
      shape = cast<RankedTensorType>(func.getArgumentTypes()[shapeArg]);
    }
  if (shape && shape.getRank() == 2 &&
      failed(verifyMatrixUpdateShapes(func, shape, shapeArg)))
    return failure();
  if (!hasParam && !hasOutput)
    return func.emitOpError()
           << "an update needs at least one 'param' or 'output' argument";

  llvm::SmallVector<Operation *> writers;
  if (failed(collectWriters(func, writers)))
    return failure();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = getArgRole(func, i);
    if ((role == Role::param || role == Role::model) && !writers[i])
      return func.emitOpError()
             << stringifyRole(*role) << " argument #" << i << " ('"
             << getArgName(func, i) << "') is never written";
    if ((role == Role::model || role == Role::output) &&
        failed(verifyWrittenOnly(func, i, stringifyRole(*role))))
      return failure();
    if (role == Role::input && writers[i])
      return writers[i]->emitOpError()
             << "writes input argument #" << i << " ('" << getArgName(func, i)
             << "'), which is read only";
  }
  return success();
}

/// Checks the whole-function rules of a norm: input, output and hyper roles
/// only; 2-D tensors whose dimensions are each 1 or the common extent, at
/// least one of full shape; outputs written exactly once and never read,
/// inputs never written.
static LogicalResult verifyNorm(func::FuncOp func) {
  if (func.getNumResults() != 0)
    return func.emitOpError()
           << "a norm returns no values; write outputs with kfuse.write";
  if (func.isExternal())
    return func.emitOpError() << "a norm must have a body";
  std::optional<int64_t> extents[2];
  bool hasFull = false, hasOutput = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = getArgRole(func, i);
    if (!role)
      return func.emitOpError() << "argument #" << i << " has no kfuse.role";
    if (*role != Role::input && *role != Role::output && *role != Role::hyper)
      return func.emitOpError()
             << "argument #" << i << " has role '" << stringifyRole(*role)
             << "'; a norm takes 'input', 'output' and 'hyper' arguments";
    if (failed(verifyArgType(func, i, *role)))
      return failure();
    if (*role == Role::hyper)
      continue;
    hasOutput |= *role == Role::output;
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    bool full = true;
    for (int64_t d = 0; d < 2; ++d) {
      int64_t extent = type.getDimSize(d);
      if (extent == 1) {
        full = false;
        continue;
      }
      if (!extents[d]) {
        extents[d] = extent;
      } else if (*extents[d] != extent) {
        return func.emitOpError()
               << "argument #" << i << " of type " << type
               << " disagrees with the other arguments on dimension " << d
               << "; each dimension is 1 or the common extent";
      }
    }
    hasFull |= full;
  }
  if (!hasFull)
    return func.emitOpError() << "a norm needs a tensor argument with a full "
                                 "(rows x columns) shape";
  if (!hasOutput)
    return func.emitOpError() << "a norm needs at least one 'output' argument";

  llvm::SmallVector<Operation *> writers;
  if (failed(collectWriters(func, writers)))
    return failure();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (getArgRole(func, i) != Role::output)
      continue;
    if (!writers[i])
      return func.emitOpError() << "output argument #" << i << " ('"
                                << getArgName(func, i) << "') is never written";
    if (failed(verifyWrittenOnly(func, i, "output")))
      return failure();
  }
  return success();
}

LogicalResult KFuseDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kUpdateAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return op->emitOpError()
             << "'" << name << "' may only be attached to a func.func";
    if (func->hasAttr(kNormAttrName))
      return op->emitOpError() << "a function is an update or a norm, not both";
    return verifyUpdate(func);
  }
  if (name == kNormAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func)
      return op->emitOpError()
             << "'" << name << "' may only be attached to a func.func";
    if (func->hasAttr(kUpdateAttrName))
      return op->emitOpError() << "a function is an update or a norm, not both";
    return verifyNorm(func);
  }
  if (name == kMultiTensorAttrName || name == kFoundInfAttrName ||
      name == kGridBarrierAttrName || name == kRowKernelAttrName) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!isa<UnitAttr>(attr.getValue()) || !func || !isUpdate(func))
      return op->emitOpError()
             << "'" << name << "' must be a unit attribute on an update";
    if (name == kFoundInfAttrName &&
        !llvm::any_of(llvm::seq(func.getNumArguments()), [&](unsigned i) {
          return getArgRole(func, i) == Role::hyper &&
                 getArgName(func, i) == "inv_scale";
        }))
      return op->emitOpError()
             << "'" << name << "' needs a hyper argument named 'inv_scale'";
    return success();
  }
  if (name == kVectorWidthAttrName || name == kIndexBitsAttrName ||
      name == kAlignmentAttrName || name == kNumelMultipleAttrName) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || value.getInt() <= 0 || !llvm::isPowerOf2_64(value.getInt()))
      return op->emitOpError()
             << "'" << name << "' must be a positive power of two";
    if (name == kIndexBitsAttrName && value.getInt() != 32 &&
        value.getInt() != 64)
      return op->emitOpError()
             << "'" << name << "' must be 32 or 64, got " << value.getInt();
    if (name == kVectorWidthAttrName && value.getInt() > 16)
      return op->emitOpError()
             << "'" << name << "' must be at most 16, got " << value.getInt();
    return success();
  }
  if (name == kNameAttrName) {
    // A reduction over the list may be named: its total is a value the
    // runtime exposes (the grad norm of kfuse-clip-grad-norm).
    auto reduce = dyn_cast<ReduceOp>(op);
    if (!reduce || !reduce.getList() || !isa<StringAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name
                               << "' names an argument, or a kfuse.reduce "
                                  "over the list with a string";
    return success();
  }
  return op->emitOpError() << "unknown kfuse attribute '" << name << "'";
}
