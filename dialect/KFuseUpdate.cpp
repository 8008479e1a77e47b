//===- KFuseUpdate.cpp - queries on update functions ---------------------===//

#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kfuse {

bool isUpdate(func::FuncOp func) {
  return func->hasAttr(KFuseDialect::kUpdateAttrName);
}

bool isElementForm(func::FuncOp func) {
  if (!isUpdate(func))
    return false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    std::optional<Role> role = getArgRole(func, i);
    if (role && *role != Role::hyper && !isPerTensorArg(func, i) &&
        isa<FloatType>(func.getArgumentTypes()[i]))
      return true;
  }
  return false;
}

bool isMatrixUpdate(func::FuncOp func) {
  return isUpdate(func) && llvm::any_of(func.getArgumentTypes(), [](Type type) {
           auto tensor = dyn_cast<RankedTensorType>(type);
           return tensor && tensor.getRank() == 2;
         });
}

Value getWholeTensorReduceInput(ReduceOp reduce) {
  auto inner = reduce.getInput().getDefiningOp<ReduceOp>();
  if (!inner || inner.getKind() != reduce.getKind() ||
      (reduce.getKind() != ReduceKind::sum &&
       reduce.getKind() != ReduceKind::max))
    return {};
  auto input = dyn_cast<RankedTensorType>(inner.getInput().getType());
  if (!input || input.getRank() != 2 || inner.getDim() == reduce.getDim())
    return {};
  return inner.getInput();
}

/// Whether rows of `extent` elements of 2-D update `func` fit the register
/// rows of its schedule (see isRowLocalReduce).
static bool fitsRegisterRows(func::FuncOp func, int64_t extent) {
  if (func && func->hasAttr(KFuseDialect::kRowKernelAttrName))
    return true;
  if (extent < 32 || extent % 32 != 0 || extent > kMaxRegisterRowElements)
    return false;
  // What a thread holds of a row: every tensor of whole rows (neither extent
  // a static 1), and half as much again of each value per column (1 x N),
  // as the code generator's register estimate counts them.
  int64_t halves = 2;
  if (func) {
    halves = 0;
    for (Type type : func.getArgumentTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor || tensor.getRank() != 2 || tensor.getDimSize(1) == 1)
        continue;
      halves += tensor.getDimSize(0) == 1 ? 1 : 2;
    }
  }
  return extent * halves <= 2 * kMaxRegisterRowArrayElements;
}

bool isRowLocalReduce(ReduceOp reduce) {
  if (reduce.getDim() != 1 || reduce.getKind() == ReduceKind::mean)
    return false;
  if (reduce->getParentOfType<FusedOp>())
    return true;
  auto input = dyn_cast<RankedTensorType>(reduce.getInput().getType());
  if (!input || input.getRank() != 2 || input.isDynamicDim(1) ||
      !fitsRegisterRows(reduce->getParentOfType<func::FuncOp>(),
                        input.getDimSize(1)))
    return false;
  // The inner half of a reduction over the whole tensor accumulates with it.
  return llvm::none_of(reduce->getUsers(), [](Operation *user) {
    auto outer = dyn_cast<ReduceOp>(user);
    return outer && getWholeTensorReduceInput(outer);
  });
}

std::optional<unsigned> getWholeRowsArg(func::FuncOp func) {
  for (auto [index, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getRank() == 2 &&
        !llvm::is_contained(tensor.getShape(), 1))
      return index;
  }
  return std::nullopt;
}

int64_t getStaticRowLength(func::FuncOp func) {
  std::optional<unsigned> index = getWholeRowsArg(func);
  if (!index)
    return 0;
  auto tensor = cast<RankedTensorType>(func.getArgumentTypes()[*index]);
  return tensor.isDynamicDim(1) ? 0 : tensor.getDimSize(1);
}

bool isColumnOfStaticRows(func::FuncOp func, RankedTensorType type) {
  int64_t length = getStaticRowLength(func);
  return length > 0 && type.getRank() == 2 && type.getDimSize(0) == 1 &&
         type.getDimSize(1) == length;
}

LogicalResult refuseMatrixUpdate(func::FuncOp func, StringRef who) {
  if (!isMatrixUpdate(func))
    return success();
  return func.emitError() << who << ": '" << func.getSymName()
                          << "' is a 2-D update (params as matrices, states "
                             "per row or per column), which "
                          << who << " does not transform yet";
}

bool isNorm(func::FuncOp func) {
  return func->hasAttr(KFuseDialect::kNormAttrName);
}

std::optional<Role> getArgRole(func::FuncOp func, unsigned index) {
  if (auto role =
          func.getArgAttrOfType<RoleAttr>(index, KFuseDialect::kRoleAttrName))
    return role.getValue();
  return std::nullopt;
}

bool isPerTensorArg(func::FuncOp func, unsigned index) {
  auto level =
      func.getArgAttrOfType<LevelAttr>(index, KFuseDialect::kLevelAttrName);
  return level && level.getValue() == Level::tensor;
}

std::string getArgName(func::FuncOp func, unsigned index) {
  if (auto name =
          func.getArgAttrOfType<StringAttr>(index, KFuseDialect::kNameAttrName))
    return name.str();
  return "arg" + std::to_string(index);
}

std::optional<double> getArgDefault(func::FuncOp func, unsigned index) {
  if (auto value = func.getArgAttrOfType<FloatAttr>(
          index, KFuseDialect::kDefaultAttrName))
    return value.getValueAsDouble();
  return std::nullopt;
}

FailureOr<BlockArgument> appendHyperArgument(func::FuncOp func, StringRef name,
                                             float defaultValue) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgName(func, i) == name)
      return func.emitError()
             << "argument #" << i << " is already named '" << name << "'";
  MLIRContext *context = func.getContext();
  Builder attrs(context);
  DictionaryAttr argAttrs = attrs.getDictionaryAttr({
      attrs.getNamedAttr(KFuseDialect::kRoleAttrName,
                         RoleAttr::get(context, Role::hyper)),
      attrs.getNamedAttr(KFuseDialect::kNameAttrName,
                         attrs.getStringAttr(name)),
      attrs.getNamedAttr(KFuseDialect::kDefaultAttrName,
                         attrs.getF32FloatAttr(defaultValue)),
  });
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, Float32Type::get(context), argAttrs,
                                 func.getLoc())))
    return failure();
  return func.getArgument(index);
}

bool isTensorLevelValue(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  return tensor && tensor.getRank() == 2 && tensor.getDimSize(0) == 1 &&
         tensor.getDimSize(1) == 1;
}

bool isUniformTensor(Value value) {
  if (isTensorLevelValue(value))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (auto broadcast = dyn_cast<BroadcastOp>(def))
    return !isa<RankedTensorType>(broadcast.getValue().getType()) ||
           isTensorLevelValue(broadcast.getValue());
  DenseElementsAttr splat;
  return matchPattern(value, m_Constant(&splat)) && splat.isSplat();
}

void anchorShapeOperands(func::FuncOp func) {
  auto anchor = [&](OpOperand &operand, ArrayRef<int64_t> shape) {
    for (BlockArgument arg : func.getArguments()) {
      // Models and outputs are written only, never read, not even for
      // their shape.
      std::optional<Role> role = getArgRole(func, arg.getArgNumber());
      if (role == Role::model || role == Role::output)
        continue;
      if (auto tensor = dyn_cast<RankedTensorType>(arg.getType());
          tensor && tensor.getShape() == shape) {
        operand.set(arg);
        return;
      }
    }
  };
  func.walk([&](Operation *op) {
    if (auto broadcast = dyn_cast<BroadcastOp>(op))
      anchor(broadcast.getLikeMutable(),
             cast<RankedTensorType>(broadcast.getType()).getShape());
    else if (auto dim = dyn_cast<DimSizeOp>(op))
      anchor(dim.getInputMutable(),
             cast<RankedTensorType>(dim.getInput().getType()).getShape());
  });
}

BlockArgument getWriteTarget(WriteOp write) {
  return cast<BlockArgument>(write.getTarget());
}

std::string formatLocation(Location loc) {
  std::string text;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = (file.getFilename().getValue() + ":" + Twine(file.getLine()) +
              ":" + Twine(file.getColumn()))
                 .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (text.empty()) {
    llvm::raw_string_ostream stream(text);
    stream << loc;
  }
  return text;
}

func::FuncOp findUpdate(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (isUpdate(func))
      return func;
  return nullptr;
}

func::FuncOp findNorm(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    if (isNorm(func))
      return func;
  return nullptr;
}

} // namespace kfuse
