//===- Pipeline.h - from kernel IR text to a plan ---------------*- C++ -*-===//

#ifndef KFUSE_CODEGEN_PIPELINE_H
#define KFUSE_CODEGEN_PIPELINE_H

#include "codegen/CudaNorm.h"
#include "codegen/KernelPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace kfuse {

/// The most elementwise ops in one fused kernel by default: far above any
/// optimizer (AdamW fuses about 30), and the bound on one kernel's compile
/// (ptxas takes 0.36 s over a 1,000-op chain and a minute over 20,000).
constexpr unsigned kDefaultMaxGroupSize = 1024;

struct PipelineOptions {
  bool fuse = true; // false: one kernel per elementwise op
  /// The most elementwise ops in one kernel; 0: unbounded.
  unsigned maxGroupSize = kDefaultMaxGroupSize;
  /// kfuse-horizontal: one kernel over a table of tensor groups (the
  /// element count stays dynamic).
  bool multiTensor = false;
  /// kfuse-grad-scaling: an `inv_scale` hyper multiplies every grad, and the
  /// step is skipped on the device when a grad is not finite.
  bool gradScaling = false;
  /// kfuse-clip-grad-norm: the grads are scaled by
  /// min(max_grad_norm / (their global norm + 1e-6), 1) inside the update.
  bool clipGradNorm = false;
  /// With clipGradNorm: kfuse-clip-grad-norm{external-norm}, the norm is a
  /// hyper "global_grad_norm" the caller computes (several plans, one norm).
  bool clipNormExternal = false;
  /// kfuse-schedule-phases{grid-barrier}: the reduction phases of a
  /// multi-tensor plan run in one cooperative launch, a grid-wide barrier
  /// between phases; false: one launch per phase.
  bool gridBarrier = true;
  /// kfuse-master-weights: params are f32 masters and every one gets a
  /// `<param>_model` copy in the model dtype, written in the same pass.
  bool masterWeights = false;
  bool operator==(const PipelineOptions &other) const {
    return fuse == other.fuse && maxGroupSize == other.maxGroupSize &&
           multiTensor == other.multiTensor &&
           gradScaling == other.gradScaling &&
           clipGradNorm == other.clipGradNorm &&
           clipNormExternal == other.clipNormExternal &&
           gridBarrier == other.gridBarrier &&
           masterWeights == other.masterWeights;
  }
};

/// A single-threaded context with every dialect an update may use loaded.
std::unique_ptr<mlir::MLIRContext> createContext();

/// The calling thread's context for the runtime's compiles (describe, plan),
/// made on first use and kept: modules parsed into it are dropped after each
/// compile, what they uniqued (types, attributes, locations) stays.
mlir::MLIRContext &threadContext();

/// A parsed kernel source and what it holds.
struct ParsedKernel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  KernelKind kind;
};

/// Parses and verifies `text` once. Without `required`, the kind is found
/// (a norm where a func carries 'kfuse.norm', else an update); with it, a
/// source without that kind is an error. Diagnostics, as
/// FILE:LINE:COL: error: ... with the source line, become the error's
/// message.
llvm::Expected<ParsedKernel>
parseKernel(mlir::MLIRContext &context, llvm::StringRef text,
            llvm::StringRef bufferName,
            std::optional<KernelKind> required = std::nullopt);

/// parseKernel of a `kind` kernel: its module.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseKernelModule(mlir::MLIRContext &context, llvm::StringRef text,
                  llvm::StringRef bufferName, KernelKind kind);

/// Runs the pipeline on the kernel of `module`. An update:
/// kfuse-master-weights, kfuse-clip-grad-norm and kfuse-grad-scaling (when
/// asked), kfuse-specialize, canonicalize, kfuse-horizontal (when asked),
/// kfuse-schedule-phases and kfuse-fuse-elementwise. A norm: kfuse-specialize
/// (the dtypes, `cols` and alignment of `spec`), canonicalize and CSE.
llvm::Error runPipeline(mlir::ModuleOp module, const Specialization &spec,
                        const PipelineOptions &options);

/// The arguments of the verified kernel (an update or a norm) `kernel`:
/// names, roles, defaults, levels, and storage dtypes as written.
std::vector<ArgInfo> describeArgs(mlir::func::FuncOp kernel);

/// describeArgs of the `kind` kernel in `text`, parsed in threadContext().
llvm::Expected<std::vector<ArgInfo>> describeKernel(llvm::StringRef text,
                                                    llvm::StringRef bufferName,
                                                    KernelKind kind);

/// parseKernel + runPipeline + the emitter of the kernel's kind (emitCuda or
/// emitNormPlan), in the thread's context; with `ptxSm` (non-zero), also the
/// direct PTX of an update for sm_`ptxSm` (KernelPlan::ptx). A norm's
/// specialization needs `cols`; the update options do not apply to it.
llvm::Expected<KernelPlan>
compileToPlan(llvm::StringRef text, llvm::StringRef bufferName,
              const Specialization &spec,
              const PipelineOptions &options = PipelineOptions(),
              int ptxSm = 0);

/// Runs the norm code generator on the specialized norm of `module`.
llvm::Expected<KernelPlan> emitNormPlan(mlir::ModuleOp module,
                                        const NormEmitOptions &options);

} // namespace kfuse

#endif // KFUSE_CODEGEN_PIPELINE_H
