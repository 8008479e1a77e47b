//===- Specialize.cpp - bind storage dtypes and shape facts --------------===//
//
// One compiled kernel serves one specialization: a storage dtype per tensor
// argument, the pointer alignment, and the shape facts of its kind (a 1-D
// update's element count, a norm's row length). Binding them in the IR lets
// the folders and the code generator use them as constants.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "codegen/KernelPlan.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace kfuse {
#define GEN_PASS_DEF_SPECIALIZEPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

unsigned kfuse::bindStorageType(OpBuilder &builder, BlockArgument arg,
                                RankedTensorType computeType,
                                RankedTensorType storageType) {
  arg.setType(storageType);
  if (storageType.getElementType() == computeType.getElementType())
    return 0;
  unsigned converts = 0;
  auto isRead = [](OpOperand &use) {
    auto write = dyn_cast<WriteOp>(use.getOwner());
    return !write || use.getOperandNumber() != 1;
  };
  if (llvm::any_of(arg.getUses(), isRead)) {
    auto toCompute = ConvertOp::create(builder, arg.getLoc(), computeType, arg);
    ++converts;
    arg.replaceUsesWithIf(toCompute.getResult(), [&](OpOperand &use) {
      return use.getOwner() != toCompute && isRead(use);
    });
  }
  for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
    auto write = dyn_cast<WriteOp>(user);
    if (!write || write.getTarget() != arg)
      continue;
    OpBuilder writeBuilder(write);
    auto toStorage = ConvertOp::create(writeBuilder, write.getLoc(),
                                       storageType, write.getValue());
    ++converts;
    write.getValueMutable().assign(toStorage);
  }
  return converts;
}

Type kfuse::parseStorageType(MLIRContext *context, StringRef name) {
  std::optional<DType> dtype = parseDType(name.str());
  if (!dtype)
    return nullptr;
  switch (*dtype) {
  case DType::f32:
    return Float32Type::get(context);
  case DType::bf16:
    return BFloat16Type::get(context);
  case DType::f16:
    return Float16Type::get(context);
  case DType::pred:
    return nullptr;
  }
  return nullptr;
}

namespace {

/// Elements one thread handles per iteration so that every tensor is
/// accessed with aligned vectors of at most 16 bytes: the widest width when
/// pointers are 16-byte aligned, otherwise what the widest element allows.
static unsigned computeVectorWidth(unsigned alignment, unsigned minElementSize,
                                   unsigned maxElementSize) {
  if (alignment >= 16)
    return 16 / minElementSize;
  return std::max(1u, alignment / maxElementSize);
}

/// Whether a norm tensor of `type` (as written, before specialization) holds
/// one element per row and column: neither dimension is 1.
static bool isFullShape(RankedTensorType type) {
  return type.getDimSize(0) != 1 && type.getDimSize(1) != 1;
}

/// `type` with a dynamic column extent replaced by `cols` (which may be
/// dynamic itself).
static Type bindCols(Type type, int64_t cols) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.getRank() != 2 || !tensor.isDynamicDim(1) ||
      ShapedType::isDynamic(cols))
    return type;
  return RankedTensorType::get({tensor.getDimSize(0), cols},
                               tensor.getElementType());
}

/// A tensor argument and the storage element type it takes.
struct StorageBinding {
  BlockArgument arg;
  Type storage;
};

struct SpecializePass : public kfuse::impl::SpecializePassBase<SpecializePass> {
  using SpecializePassBase::SpecializePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    bool norm = isNorm(func);
    if (!norm && !isUpdate(func))
      return;
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      func.emitError() << "alignment must be a positive power of two, got "
                       << alignment.getValue();
      return signalPassFailure();
    }
    FailureOr<SmallVector<StorageBinding>> bindings = getStorageBindings(func);
    if (failed(bindings) || failed(norm ? specializeNorm(func, *bindings)
                                        : specializeUpdate(func, *bindings)))
      signalPassFailure();
  }

  /// The storage type of every tensor argument: arg-dtypes where given,
  /// else by role (an update) or f32 (a norm).
  FailureOr<SmallVector<StorageBinding>> getStorageBindings(func::FuncOp func) {
    MLIRContext *context = func.getContext();
    SmallVector<BlockArgument> tensorArgs;
    for (BlockArgument arg : func.getArguments())
      if (isa<RankedTensorType>(arg.getType()))
        tensorArgs.push_back(arg);
    SmallVector<StorageBinding> bindings;
    if (!argDTypes.empty()) {
      if (argDTypes.size() != tensorArgs.size())
        return func.emitError()
               << "expected " << tensorArgs.size()
               << " dtypes, one per tensor argument, got " << argDTypes.size();
      for (auto [arg, name] : llvm::zip_equal(tensorArgs, argDTypes)) {
        Type type = parseStorageType(context, name);
        if (!type)
          return func.emitError() << "unknown dtype '" << name
                                  << "' in arg-dtypes; expected f32, bf16 or "
                                     "f16";
        bindings.push_back({arg, type});
      }
      return bindings;
    }
    if (isNorm(func)) {
      for (BlockArgument arg : tensorArgs)
        bindings.push_back({arg, Float32Type::get(context)});
      return bindings;
    }
    StringRef gradName =
        gradDType.empty() ? StringRef(paramDType) : StringRef(gradDType);
    Type paramType = parseStorageType(context, paramDType);
    Type gradType = parseStorageType(context, gradName);
    Type stateType = parseStorageType(context, stateDType);
    Type modelType = parseStorageType(context, modelDType);
    for (auto [option, value, type] :
         {std::tuple<StringRef, StringRef, Type>{"param-dtype", paramDType,
                                                 paramType},
          {"grad-dtype", gradName, gradType},
          {"state-dtype", stateDType, stateType},
          {"model-dtype", modelDType, modelType}})
      if (!type)
        return func.emitError() << "unknown dtype '" << value << "' for "
                                << option << "; expected f32, bf16 or f16";
    for (BlockArgument arg : tensorArgs) {
      std::optional<Role> role = getArgRole(func, arg.getArgNumber());
      if (!role || *role == Role::hyper)
        continue;
      bindings.push_back({arg, *role == Role::param   ? paramType
                               : *role == Role::grad  ? gradType
                               : *role == Role::model ? modelType
                                                      : stateType});
    }
    return bindings;
  }

  LogicalResult specializeUpdate(func::FuncOp func,
                                 ArrayRef<StorageBinding> bindings) {
    MLIRContext *context = func.getContext();
    if (cols != 0)
      return func.emitError() << "cols applies to norms; an update's shapes "
                                 "come from its tensors";
    if (numel < -1)
      return func.emitError() << "numel must be -1 (dynamic) or at least 0, "
                                 "got "
                              << numel.getValue();
    if (numelMultiple <= 0 || !llvm::isPowerOf2_64(numelMultiple))
      return func.emitError() << "numel-multiple must be a positive power of "
                                 "two, got "
                              << numelMultiple.getValue();
    if (isMatrixUpdate(func) && (numel >= 0 || numelMultiple > 1))
      return func.emitError()
             << "numel and numel-multiple apply to 1-D updates; a 2-D "
                "update's shapes come from its plan's table";
    if (numel >= 0 && numel % numelMultiple != 0)
      return func.emitError()
             << "numel " << numel.getValue() << " is not a multiple of "
             << "numel-multiple " << numelMultiple.getValue();

    Block &entry = func.getBody().front();
    OpBuilder builder(context);
    builder.setInsertionPointToStart(&entry);
    unsigned minSize = 16, maxSize = 1;
    for (auto [arg, storage] : bindings) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (numel >= 0 && type.hasStaticShape() && type.getDimSize(0) != numel)
        return func.emitError()
               << "argument #" << arg.getArgNumber() << " has static shape "
               << type << " but numel is " << numel.getValue();
      SmallVector<int64_t> shape(type.getShape());
      if (numel >= 0)
        shape = {numel};
      unsigned size = storage.getIntOrFloatBitWidth() / 8;
      minSize = std::min(minSize, size);
      maxSize = std::max(maxSize, size);
      numConverts += bindStorageType(
          builder, arg, RankedTensorType::get(shape, type.getElementType()),
          RankedTensorType::get(shape, storage));
    }
    // A known element count makes every tensor in the body static.
    if (numel >= 0)
      func.walk([&](Operation *op) {
        for (OpResult result : op->getResults())
          if (auto tensor = dyn_cast<RankedTensorType>(result.getType()))
            result.setType(
                RankedTensorType::get({numel}, tensor.getElementType()));
      });
    func.setFunctionType(FunctionType::get(context, entry.getArgumentTypes(),
                                           func.getResultTypes()));

    unsigned vectorWidth = computeVectorWidth(alignment, minSize, maxSize);
    // Unsigned 32-bit indices leave 2^31 of headroom for the grid stride.
    unsigned indexBits = numel >= 0 && numel < (int64_t(1) << 31) ? 32 : 64;
    Builder attrs(context);
    func->setAttr(KFuseDialect::kVectorWidthAttrName,
                  attrs.getI64IntegerAttr(vectorWidth));
    func->setAttr(KFuseDialect::kIndexBitsAttrName,
                  attrs.getI64IntegerAttr(indexBits));
    func->setAttr(KFuseDialect::kAlignmentAttrName,
                  attrs.getI64IntegerAttr(alignment));
    // A known count says all; a dynamic one keeps what it is a multiple of.
    if (numel < 0 && numelMultiple > 1)
      func->setAttr(KFuseDialect::kNumelMultipleAttrName,
                    attrs.getI64IntegerAttr(numelMultiple));
    return success();
  }

  LogicalResult specializeNorm(func::FuncOp func,
                               ArrayRef<StorageBinding> bindings) {
    MLIRContext *context = func.getContext();
    if (cols <= 0)
      return func.emitError() << "cols must be set to the row length (> 0), "
                                 "got "
                              << cols.getValue();
    if (numel != -1 || numelMultiple != 1)
      return func.emitError() << "numel and numel-multiple apply to 1-D "
                                 "updates; a norm takes cols";

    // With one column a full tensor would read as a per-row one (`?x1`), and
    // the norm verifier needs a full-shape argument: the column extent stays
    // dynamic, and the code generator takes it from its options.
    int64_t boundCols = cols == 1 ? ShapedType::kDynamic : int64_t(cols);
    Block &entry = func.getBody().front();
    OpBuilder builder(context);
    builder.setInsertionPointToStart(&entry);
    unsigned maxFullSize = 0;
    for (auto [arg, storage] : bindings) {
      auto type = cast<RankedTensorType>(arg.getType());
      int64_t extent = type.getDimSize(1);
      if (!ShapedType::isDynamic(extent) && extent != 1 && extent != cols)
        return func.emitError()
               << "argument #" << arg.getArgNumber() << " has static shape "
               << type << " but cols is " << cols.getValue();
      if (isFullShape(type))
        maxFullSize =
            std::max(maxFullSize, storage.getIntOrFloatBitWidth() / 8);
      auto computeType = cast<RankedTensorType>(bindCols(type, boundCols));
      numConverts += bindStorageType(builder, arg, computeType,
                                     computeType.clone(storage));
    }
    // Every value of the body takes the static row length.
    func.walk([&](Operation *op) {
      for (OpResult result : op->getResults())
        result.setType(bindCols(result.getType(), boundCols));
    });
    func.setFunctionType(FunctionType::get(context, entry.getArgumentTypes(),
                                           func.getResultTypes()));

    // Whole 16-byte vectors need every row of every full tensor to start on
    // 16 bytes.
    unsigned vectorWidth = 1;
    if (maxFullSize > 0 && alignment >= 16 && (cols * maxFullSize) % 16 == 0)
      vectorWidth = 16 / maxFullSize;
    Builder attrs(context);
    func->setAttr(KFuseDialect::kVectorWidthAttrName,
                  attrs.getI64IntegerAttr(vectorWidth));
    func->setAttr(KFuseDialect::kAlignmentAttrName,
                  attrs.getI64IntegerAttr(alignment));
    return success();
  }
};

} // namespace
