//===- NormPipeline.h - from norm IR text to a norm plan --------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_NORMPIPELINE_H
#define KFUSE_CODEGEN_NORMPIPELINE_H

#include "codegen/CudaNorm.h"
#include "codegen/NormPlan.h"
#include "codegen/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace kfuse {

/// Runs kfuse-specialize (dtypes, cols and alignment of `spec`),
/// canonicalize and CSE on the norm of `module`.
llvm::Error runNormPipeline(mlir::ModuleOp module,
                            const NormSpecialization &spec);

/// The emitter's options for the norm of `module` (the argument shapes as
/// written): call before runNormPipeline.
NormEmitOptions getNormEmitOptions(mlir::ModuleOp module,
                                   const NormSpecialization &spec);

/// The layout overrides the environment sets for measuring
/// (KFUSE_NORM_STAGES, KFUSE_NORM_MIN_THREADS_PER_SM, KFUSE_NORM_LAUNCH_BLOCKS,
/// KFUSE_NORM_MAX_ELEMENTS,
/// KFUSE_NORM_BLOCK_SIZE, KFUSE_NORM_SUMS, KFUSE_NORM_COLUMNS), as a
/// cache-key fragment: kernels compiled under other overrides are other
/// kernels. Read once per process, at the first call; with
/// KFUSE_NORM_LIVE_KNOBS=1 at every call, for processes that change the
/// knobs between compiles (bench/ab_norm.py, bench/sweep_norm.py).
/// getNormEmitOptions always reads them afresh.
const std::string &normTuningKey();

/// Whether KFUSE_NORM_LIVE_KNOBS=1 asks for the norm knobs (the layout ones
/// above and the runtime's KFUSE_NORM_BLOCKS_PER_SM) to be read at every
/// use instead of once per process.
bool normLiveKnobs();

/// Runs the code generator on the specialized norm of `module`.
llvm::Expected<NormPlan> emitNormPlan(mlir::ModuleOp module,
                                      const NormEmitOptions &options);

/// The arguments of the verified norm `norm` as written (names, roles,
/// shapes, defaults; tensor dtypes f32, before specialization).
std::vector<NormArg> describeNorm(mlir::func::FuncOp norm);

/// The arguments of the norm in `text` as written (names, roles, shapes,
/// defaults; tensor dtypes f32, before specialization).
llvm::Expected<std::vector<NormArg>> describeNorm(llvm::StringRef text,
                                                  llvm::StringRef bufferName);

/// parseNorm + runNormPipeline + emitNormCuda, in a fresh context.
llvm::Expected<NormPlan> compileNormToPlan(llvm::StringRef text,
                                           llvm::StringRef bufferName,
                                           const NormSpecialization &spec);

} // namespace kfuse

#endif // KFUSE_CODEGEN_NORMPIPELINE_H
