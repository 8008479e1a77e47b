//===- CudaOps.h - CUDA C++ expressions for scalar body ops -----*- C++ -*-===//

#ifndef KFUSE_CODEGEN_CUDAOPS_H
#define KFUSE_CODEGEN_CUDAOPS_H

#include "codegen/KernelPlan.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/APFloat.h"

#include <optional>
#include <string>

namespace kfuse {

/// The storage dtype of a tensor element type (f32, bf16, f16, i1), if it
/// has one.
std::optional<DType> getStorageDType(mlir::Type type);

/// The level of a value by its type: per element (any 1-D tensor, or rows
/// x columns), per row (rows x 1), per column (1 x columns), per tensor
/// (1 x 1, or a scalar). Kernel arguments (ArgInfo::level) and the 2-D
/// kernels' loops, updates and norms, take it from here.
ArgLevel getValueLevel(mlir::Type type);

/// The C++ type a scalar of `type` has in generated code: `float` for f32,
/// the 16-bit pattern for bf16 and f16, `bool` for i1; none otherwise.
std::optional<llvm::StringRef> getCudaScalarType(mlir::Type type);

/// The C++ type elements of storage `dtype` are kept as: `float` for f32,
/// the 16-bit pattern for bf16 and f16, a byte for pred.
const char *getCudaStorageType(DType dtype);

/// A C++ literal that denotes exactly `value` (an f32, bf16 or f16 value);
/// f32 infinities and NaNs are spelled through their bits.
std::string formatFloatLiteral(const llvm::APFloat &value);

/// The C++ expression computing the single result of the scalar body op
/// `op` from the expressions of its operands. `wide` spells f32 math for
/// double operands (uniform code, computed in double like the host-side
/// hyperparameter math of the peers). f32 division and roots call the
/// prelude's kfuse_div_rn and kfuse_sqrt_rn unless `plainDivision` asks for
/// the operators (equally exact; code where the helpers' f64 registers would
/// spill). Fails with a diagnostic at `op` for an op or a type the code
/// generator cannot emit.
mlir::FailureOr<std::string>
emitOpExpression(mlir::Operation *op, llvm::ArrayRef<std::string> operands,
                 bool wide = false, bool plainDivision = false);

/// The host uniform program's instruction for the f32 body op `op`, the
/// same op list emitOpExpression spells; none for other ops (comparisons,
/// selects, conversions), whose uniforms the device then computes.
std::optional<UniformInstr::Op> getHostUniformOp(mlir::Operation *op);

} // namespace kfuse

#endif // KFUSE_CODEGEN_CUDAOPS_H
