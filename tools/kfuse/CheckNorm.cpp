//===- CheckNorm.cpp - kfuse check on norm functions ---------------------===//
//
// `kfuse check FILE` on a module whose function is marked kfuse.norm runs
// the norm in the interpreter, rounding as the GPU does, against float64
// over a fixed matrix: rows 1, 3 and 64 times columns 1, 1000, 1024, 5128
// and 12289 (a static row length replaces the columns), with the declared
// storage dtypes and, for an f32 norm, with emulated bf16 storage of the
// full-shape tensors (see NormCheckOptions). --seed and --tolerance apply;
// the update options (--numel, --steps, the dtypes, the pipeline flags) are
// refused.
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Commands.h"

#include "dialect/KFuseUpdate.h"
#include "interpreter/NormCheck.h"

#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace mlir;

namespace kfuse {

int runNormCheckCommand(const CommonOptions &options, ModuleOp module,
                        double tolerance, uint64_t seed) {
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
  outs() << "gpu: skipped (norms are checked in the interpreter only)\n";
  return result->passed() ? 0 : 1;
}

} // namespace kfuse
