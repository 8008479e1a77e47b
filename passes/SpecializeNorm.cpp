//===- SpecializeNorm.cpp - bind dtypes and the row length of a norm -----===//
//
// A compiled norm serves one specialization: a storage dtype per tensor
// argument, the row length and the pointer alignment. Binding the row length
// in the types makes `kfuse.dim_size ... dim 1` fold to a constant and gives
// the code generator a static row to lay out over a block's threads.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "codegen/KernelPlan.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

namespace kfuse {
#define GEN_PASS_DEF_SPECIALIZENORMPASS
#include "passes/Passes.h.inc"
} // namespace kfuse

using namespace mlir;
using namespace kfuse;

namespace {

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

struct SpecializeNormPass
    : public kfuse::impl::SpecializeNormPassBase<SpecializeNormPass> {
  using SpecializeNormPassBase::SpecializeNormPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!isNorm(func))
      return;
    if (failed(specialize(func)))
      signalPassFailure();
  }

  /// The storage type of each tensor argument, in argument order.
  FailureOr<SmallVector<Type>> parseArgDTypes(func::FuncOp func,
                                              unsigned numTensors) {
    MLIRContext *context = func.getContext();
    SmallVector<StringRef> names;
    if (!StringRef(argDTypes).trim().empty())
      StringRef(argDTypes).split(names, ',');
    if (names.empty())
      return SmallVector<Type>(numTensors, Float32Type::get(context));
    if (names.size() != numTensors)
      return func.emitError()
             << "expected " << numTensors
             << " dtypes, one per tensor argument, got " << names.size();
    SmallVector<Type> types;
    for (StringRef name : names) {
      Type type = parseStorageType(context, name.trim());
      if (!type)
        return func.emitError() << "unknown dtype '" << name.trim()
                                << "' in arg-dtypes; expected f32, bf16 or f16";
      types.push_back(type);
    }
    return types;
  }

  LogicalResult specialize(func::FuncOp func) {
    MLIRContext *context = func.getContext();
    if (cols <= 0)
      return func.emitError() << "cols must be set to the row length (> 0), "
                                 "got "
                              << cols.getValue();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment))
      return func.emitError() << "alignment must be a positive power of two, "
                                 "got "
                              << alignment.getValue();

    Block &entry = func.getBody().front();
    SmallVector<BlockArgument> tensorArgs;
    for (BlockArgument arg : entry.getArguments())
      if (isa<RankedTensorType>(arg.getType()))
        tensorArgs.push_back(arg);
    FailureOr<SmallVector<Type>> storageTypes =
        parseArgDTypes(func, tensorArgs.size());
    if (failed(storageTypes))
      return failure();

    // With one column a full tensor would read as a per-row one (`?x1`), and
    // the norm verifier needs a full-shape argument: the column extent stays
    // dynamic, and the code generator takes it from its options.
    int64_t boundCols = cols == 1 ? ShapedType::kDynamic : int64_t(cols);
    OpBuilder builder(context);
    builder.setInsertionPointToStart(&entry);
    unsigned maxFullSize = 0;
    for (auto [arg, storage] : llvm::zip_equal(tensorArgs, *storageTypes)) {
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
