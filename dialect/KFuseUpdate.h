//===- KFuseUpdate.h - queries on update functions --------------*- C++ -*-===//
//
// An update is a func.func with the `kfuse.update` attribute. These helpers
// read its argument roles, names and defaults, shared by the passes, the
// code generator, the interpreter and the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_DIALECT_KFUSEUPDATE_H
#define KFUSE_DIALECT_KFUSEUPDATE_H

#include "dialect/KFuseOps.h"
#include <optional>
#include <string>

namespace kfuse {

/// Whether `func` is marked as an update.
bool isUpdate(mlir::func::FuncOp func);

/// Whether `func` is marked as a norm.
bool isNorm(mlir::func::FuncOp func);

/// Whether update `func` is written in element form: its param, grad, state
/// and model arguments are float scalars, one element of each tensor, and its
/// body is elementwise math on them (kfuse-lift-element-form makes it the
/// tensor form).
bool isElementForm(mlir::func::FuncOp func);

/// Whether update `func` keeps its params as matrices: its tensors are 2-D,
/// with states per element, per row (rows x 1) or per column (1 x columns),
/// as Adafactor's factored second moment. The norm interpreter runs it.
bool isMatrixUpdate(mlir::func::FuncOp func);

/// In a 2-D update, a reduction over the rows of a reduction over the
/// columns (or the reverse) of one kind, sum or max, is one reduction over
/// the whole tensor: this returns the inner reduction's input, which the
/// generated code accumulates directly in the inner one's phase. Null for
/// any other reduction.
mlir::Value getWholeTensorReduceInput(ReduceOp reduce);

/// Most elements of a row that a 2-D update holds in registers, and most
/// elements of the rows of all its element tensors together (a value per
/// column counting half): a block of 256 threads then holds at most 64
/// floats a thread.
constexpr int64_t kMaxRegisterRowElements = 8192;
constexpr int64_t kMaxRegisterRowArrayElements = 16384;

/// Whether `reduce` takes the sum, maximum or variance of each row of a 2-D
/// value whose rows are short enough to be held in registers (a static extent,
/// a multiple of 32, at most kMaxRegisterRowElements, and with the function's
/// other tensors of whole rows, and half its values per column, at most
/// kMaxRegisterRowArrayElements; in a 2-D update compiled as a row kernel,
/// the `kfuse.row_kernel` attribute a norm emitted by the update emitter
/// carries, any static extent: its blocks hold whole rows over up to 1024
/// threads, staged in shared memory, or loop over longer ones, so the code
/// generator's row layout decides how): its result is
/// then known in the same phase, as the per-block scale of a quantized state
/// or a norm's row statistics. In a kfuse.fused body it is the reduction of
/// the element over its row. Such reductions are fused with the math around
/// them.
bool isRowLocalReduce(ReduceOp reduce);

/// The first argument of `func` that is a 2-D tensor of whole rows (neither
/// extent a static 1), whose shape every such tensor of a 2-D update has.
std::optional<unsigned> getWholeRowsArg(mlir::func::FuncOp func);

/// The row length a 2-D update's argument types fix (its params' static
/// second extent, which the verifier makes every element tensor's), or 0
/// when they fix none: its kernels are for that length alone, and a tensor
/// of any shape whose size is a multiple of it runs as rows of it.
int64_t getStaticRowLength(mlir::func::FuncOp func);

/// Whether `type`, a static shape, is a value per column of the rows of a
/// static length `func` fixes (1 x N): the same shape for every group of a
/// multi-tensor plan, as every other static shape is not.
bool isColumnOfStaticRows(mlir::func::FuncOp func, mlir::RankedTensorType type);

/// Fails with an error at `func`, prefixed by `who` (a pass that does not
/// take them yet), when it is a 2-D update.
mlir::LogicalResult refuseMatrixUpdate(mlir::func::FuncOp func,
                                       llvm::StringRef who);

/// The role of argument `index`, if it has one.
std::optional<Role> getArgRole(mlir::func::FuncOp func, unsigned index);

/// Whether argument `index` is a state at the tensor level (`kfuse.level =
/// #kfuse.level<tensor>`): one f32 per tensor, a scalar in both forms.
bool isPerTensorArg(mlir::func::FuncOp func, unsigned index);

/// The user-facing name of argument `index`: `kfuse.name` or "arg<index>".
std::string getArgName(mlir::func::FuncOp func, unsigned index);

/// The `kfuse.default` value of a hyperparameter, if any.
std::optional<double> getArgDefault(mlir::func::FuncOp func, unsigned index);

/// The function argument a `kfuse.write` targets (always a block argument of
/// the enclosing function once verified).
mlir::BlockArgument getWriteTarget(WriteOp write);

/// Appends an f32 hyper argument `name` with a default to `func`, as the
/// passes that add one do (grad scaling's inv_scale); an error at the
/// function when an argument already has the name.
mlir::FailureOr<mlir::BlockArgument>
appendHyperArgument(mlir::func::FuncOp func, llvm::StringRef name,
                    float defaultValue);

/// Whether `value` is a 1 x 1 tensor: in a 2-D update, one value per
/// tensor (a reduction over a whole tensor and the math on it).
bool isTensorLevelValue(mlir::Value value);
/// Whether `value` is one scalar over all elements: a kfuse.broadcast of a
/// scalar or of a 1 x 1 tensor, a splat constant, or a 1 x 1 tensor. Such
/// tensors cost no memory traffic; regions take them as scalars. (A
/// broadcast of a row or column value is not uniform.)
bool isUniformTensor(mlir::Value value);

/// Points the operands that only give a shape (a kfuse.broadcast's `like`, a
/// kfuse.dim_size's input) at the first argument of that shape, where one
/// has it: the shape then comes from no value computed in the body.
void anchorShapeOperands(mlir::func::FuncOp func);

/// "file:line:col" of the first file location within `loc` (fused locations
/// included), or the printed location when there is none.
std::string formatLocation(mlir::Location loc);

/// The first function in `module` marked as an update, or null.
mlir::func::FuncOp findUpdate(mlir::ModuleOp module);

/// The first function in `module` marked as a norm, or null.
mlir::func::FuncOp findNorm(mlir::ModuleOp module);

} // namespace kfuse

#endif // KFUSE_DIALECT_KFUSEUPDATE_H
