//===- CheckNorm.cpp - kfuse check on norm functions ---------------------===//
//
// `kfuse check FILE` on a module whose function is marked kfuse.norm runs
// the norm in the interpreter, rounding as the GPU does, against float64
// over a fixed matrix: rows 1, 3 and 64 times columns 1, 1000, 1024, 5128
// and 12289 (a static row length replaces the columns), with the declared
// storage dtypes and, for an f32 norm, with emulated bf16 storage of the
// full-shape tensors (see NormCheckOptions). --seed and --tolerance apply;
// the update options (--numel, --steps, the dtypes, the pipeline flags) are
// refused. A check that passes must mean the file compiles: the CUDA plan is
// then emitted for every row length checked, and an emitter error fails the
// check.
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Commands.h"

#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/NormCheck.h"

#include "llvm/ADT/SetVector.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir;

namespace kfuse {

/// Emits the CUDA plan of `text` for each row length in `report`: true when
/// every one emits, after printing the line that says so or the error.
static bool emitsForCheckedShapes(const CommonOptions &options, StringRef text,
                                  const NormCheckReport &report) {
  llvm::SetVector<int64_t> columns;
  for (const NormCheckCase &checked : report.cases)
    columns.insert(checked.cols);
  unsigned kernels = 0;
  for (int64_t cols : columns) {
    Specialization spec;
    spec.cols = cols;
    Expected<KernelPlan> plan = compileToPlan(text, options.input, spec);
    if (!plan) {
      outs() << "emit: FAIL for " << cols
             << " columns: " << toString(plan.takeError()) << "\n";
      return false;
    }
    kernels = !plan->finishKernel() ? 1 : 2;
  }
  outs() << "emit: " << columns.size()
         << (columns.size() == 1 ? " row length, " : " row lengths, ")
         << kernels << (kernels == 1 ? " kernel" : " kernels") << " each\n";
  return true;
}

int runNormCheckCommand(const CommonOptions &options, StringRef text,
                        ModuleOp module, double tolerance, uint64_t seed) {
  func::FuncOp norm = findNorm(module);

  NormCheckOptions checkOptions;
  checkOptions.seed = seed;
  checkOptions.toleranceOverride = tolerance;
  FailureOr<NormCheckReport> result = runNormCheck(norm, checkOptions);
  if (failed(result))
    return 1;
  outs() << "kfuse check: " << options.input << " (norm '" << norm.getSymName()
         << "', device rounding vs float64, seed " << seed << ")\n";
  printNormCheckReport(*result, outs());
  bool emits = emitsForCheckedShapes(options, text, *result);
  outs() << "gpu: skipped (norms are checked in the interpreter only)\n";
  return result->passed() && emits ? 0 : 1;
}

int runMatrixUpdateCheckCommand(const CommonOptions &options, StringRef text,
                                ModuleOp module, int steps, double tolerance,
                                uint64_t seed) {
  func::FuncOp update = findUpdate(module);
  NormCheckOptions checkOptions;
  checkOptions.seed = seed;
  checkOptions.toleranceOverride = tolerance;
  FailureOr<NormCheckReport> result =
      runMatrixUpdateCheck(update, steps, checkOptions);
  if (failed(result))
    return 1;
  outs() << "kfuse check: " << options.input << " (2-D update '"
         << update.getSymName() << "', " << steps
         << (steps == 1 ? " step" : " steps")
         << ", device rounding vs float64, seed " << seed << ")\n";
  printNormCheckReport(*result, outs());
  // A check that passes must mean the file compiles.
  std::unique_ptr<MLIRContext> context = createContext();
  Expected<OwningOpRef<ModuleOp>> parsed =
      parseKernelModule(*context, text, options.input, KernelKind::update);
  if (!parsed)
    return reportError(parsed.takeError());
  if (Error error = runPipeline(**parsed, options.spec, options.pipeline)) {
    outs() << "emit: FAIL: " << toString(std::move(error)) << "\n";
    return 1;
  }
  outs() << "emit: OK\n";
  return result->passed() ? 0 : 1;
}

} // namespace kfuse
