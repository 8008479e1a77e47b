//===- FuzzFrontEnd.cpp - one fuzz input through the whole front end -----===//
//
// A libFuzzer target: the input is IR text, run through what `kfuse compile`,
// `kfuse check`, `kfuse-opt` and the runtime's `kfuse.Update`/`kfuse.Norm`
// do with it: parse and verify (parseKernel, the front-end limits
// included), describe, the compile pipeline of its kind under the default
// specialization and under one more picked by a hash of the input, the CUDA
// and PTX emitters, the interpreter's check with a small element budget, and
// a short sequence of passes as kfuse-opt would run them. Any crash, hang,
// sanitizer report or unbounded allocation is a bug; a diagnostic is the
// expected answer to a bad input.
//
// KFUSE_FUZZ_VERBOSE=1 prints every diagnostic, to see why an input stops
// where it does.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitter.h"
#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "interpreter/Check.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <array>
#include <cstdlib>

using namespace mlir;
using namespace kfuse;

namespace {

/// Bits of the input's hash, consumed a field at a time to pick options.
class Choices {
public:
  explicit Choices(uint64_t bits) : bits(bits) {}
  /// One of `n` (n <= 256).
  unsigned pick(unsigned n) {
    unsigned value = static_cast<unsigned>(bits & 0xff) % n;
    bits = (bits >> 8) | (bits << 56);
    return value;
  }
  bool flip() { return pick(2) == 1; }
  template <typename T, size_t N> T pick(const std::array<T, N> &values) {
    return values[pick(N)];
  }

private:
  uint64_t bits;
};

bool verbose() {
  static const bool value = [] {
    const char *text = std::getenv("KFUSE_FUZZ_VERBOSE");
    return text && text[0] == '1';
  }();
  return value;
}

/// Drops an expected failure (printing it when verbose).
template <typename T> bool ok(llvm::Expected<T> &value) {
  if (value)
    return true;
  std::string message = llvm::toString(value.takeError());
  if (verbose())
    llvm::errs() << "kfuse-fuzz: " << message << "\n";
  return false;
}
bool ok(llvm::Error error) {
  if (!error)
    return true;
  std::string message = llvm::toString(std::move(error));
  if (verbose())
    llvm::errs() << "kfuse-fuzz: " << message << "\n";
  return false;
}

/// Prints `module` as `kfuse compile --emit=mlir` and kfuse-opt would, in
/// both forms, into a sink.
void print(ModuleOp module) {
  std::string sink;
  llvm::raw_string_ostream stream(sink);
  module.print(stream);
  module.print(stream, OpPrintingFlags().printGenericOpForm());
}

constexpr std::array<DType, 3> kDTypes = {DType::f32, DType::bf16, DType::f16};

/// The elements the interpreter may run per tensor here: small, so that an
/// input runs in milliseconds; larger static shapes must be refused.
constexpr int64_t kCheckElements = 1 << 14;

/// `kfuse compile` and `kfuse check` of an update under one specialization.
void compileUpdate(MLIRContext &context, StringRef text,
                   const Specialization &spec, const PipelineOptions &options) {
  auto fused =
      parseKernelModule(context, text, "fuzz.mlir", KernelKind::update);
  if (!ok(fused) || !ok(runPipeline(**fused, spec, options)))
    return;
  print(**fused);
  PtxTarget ptx{90};
  (void)emitCuda(findUpdate(**fused), &ptx);

  PipelineOptions unfusedOptions = options;
  unfusedOptions.fuse = false;
  auto unfused =
      parseKernelModule(context, text, "fuzz.mlir", KernelKind::update);
  if (!ok(unfused) || !ok(runPipeline(**unfused, spec, unfusedOptions)))
    return;
  (void)emitCuda(findUpdate(**unfused), nullptr);
  if (isMatrixUpdate(findUpdate(**unfused)))
    return; // checked over its own shapes in fuzzUpdate
  CheckOptions check;
  check.numel = spec.numel > 0 ? spec.numel : 67;
  check.steps = 2;
  check.maxElements = kCheckElements;
  func::FuncOp reference = findUpdate(**unfused);
  (void)kfuse::runCheck(reference, reference, findUpdate(**fused), check);
}

void fuzzUpdate(MLIRContext &context, StringRef text, Choices &choices) {
  auto parsed =
      parseKernelModule(context, text, "fuzz.mlir", KernelKind::update);
  if (!ok(parsed))
    return;
  func::FuncOp update = findUpdate(**parsed);
  (void)describeArgs(update);
  if (isMatrixUpdate(update)) {
    // kfuse check of a 2-D update: over fixed shapes, not one numel.
    CheckOptions check;
    check.updateShapes = {{1, 3}, {3, 33}};
    check.steps = 2;
    check.maxElements = kCheckElements;
    (void)runMatrixUpdateCheck(update, check);
  }

  compileUpdate(context, text, Specialization(), PipelineOptions());

  Specialization spec;
  spec.paramDType = choices.pick(kDTypes);
  spec.gradDType = choices.pick(kDTypes);
  spec.stateDType = choices.pick(kDTypes);
  spec.modelDType = choices.flip() ? DType::bf16 : DType::f16;
  spec.numel = choices.pick(std::array<int64_t, 5>{-1, 1, 3, 37, 4096});
  spec.alignment = choices.pick(std::array<unsigned, 4>{16, 8, 4, 2});
  spec.numelMultiple = choices.pick(std::array<unsigned, 4>{1, 2, 4, 8});
  PipelineOptions options;
  options.fuse = choices.pick(4) != 0;
  options.maxGroupSize = choices.pick(std::array<unsigned, 4>{0, 0, 2, 3});
  options.multiTensor = choices.flip();
  options.gradScaling = choices.flip();
  options.masterWeights = choices.flip();
  options.clipGradNorm = choices.flip();
  options.clipNormExternal = options.clipGradNorm && choices.flip();
  options.gridBarrier = choices.flip();
  compileUpdate(context, text, spec, options);
}

void fuzzNorm(MLIRContext &context, StringRef text, Choices &choices) {
  auto parsed = parseKernelModule(context, text, "fuzz.mlir", KernelKind::norm);
  if (!ok(parsed))
    return;
  func::FuncOp norm = findNorm(**parsed);
  (void)describeArgs(norm);

  // kfuse check of a norm: the generic form in the interpreter.
  CheckOptions check;
  check.rowCounts = {1, 3};
  check.colCounts = {1, 33};
  check.maxElements = kCheckElements;
  (void)runNormCheck(norm, check);

  // kfuse compile of a norm, as the runtime specializes it.
  Specialization spec;
  spec.cols = choices.pick(std::array<int64_t, 6>{1, 2, 7, 64, 1000, 4096});
  spec.alignment = choices.pick(std::array<unsigned, 3>{16, 8, 4});
  if (choices.flip())
    for (unsigned i = 0, e = norm.getNumArguments(); i < e; ++i)
      spec.argDTypes.push_back(choices.pick(kDTypes));
  NormEmitOptions emitOptions = getNormEmitOptions(norm, spec.cols);
  if (!ok(runPipeline(**parsed, spec, PipelineOptions())))
    return;
  print(**parsed);
  auto plan = emitNormPlan(**parsed, emitOptions);
  (void)ok(plan);
}

/// A few passes in a row, as `kfuse-opt --pass-pipeline=...` may run them.
void fuzzPassSequence(MLIRContext &context, StringRef text, Choices &choices) {
  static const std::array<const char *, 11> kPasses = {
      "kfuse-specialize",
      "kfuse-specialize{param-dtype=bf16 state-dtype=bf16 numel=64}",
      "kfuse-specialize{cols=64}",
      "kfuse-specialize{cols=1 arg-dtypes=bf16,bf16,bf16,bf16}",
      "kfuse-fuse-elementwise",
      "kfuse-schedule-phases",
      "kfuse-horizontal",
      "kfuse-grad-scaling",
      "kfuse-master-weights",
      "canonicalize",
      "cse"};
  std::string pipeline;
  for (unsigned i = 0, n = 1 + choices.pick(4); i < n; ++i)
    pipeline += std::string(pipeline.empty() ? "" : ",") +
                kPasses[choices.pick(kPasses.size())];
  auto parsed = parseKernel(context, text, "fuzz.mlir");
  if (!ok(parsed))
    return;
  PassManager pm(&context);
  if (failed(
          parsePassPipeline("builtin.module(func.func(" + pipeline + "))", pm)))
    abort(); // the sequence above is always valid
  if (failed(pm.run(*parsed->module)))
    return;
  print(*parsed->module);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerKFusePasses();
  registerCanonicalizerPass();
  registerCSEPass();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef text(reinterpret_cast<const char *>(data), size);
  // A context per input: uniqued types, attributes and locations would
  // otherwise grow without bound over a long run.
  std::unique_ptr<MLIRContext> context = createContext();
  ScopedDiagnosticHandler quiet(context.get(), [](Diagnostic &diag) {
    if (verbose())
      llvm::errs() << "kfuse-fuzz: diagnostic: " << diag << "\n";
    return success();
  });
  Choices choices(llvm::xxh3_64bits(text));
  auto parsed = parseKernel(*context, text, "fuzz.mlir");
  if (!ok(parsed))
    return 0;
  bool isNorm = parsed->kind == KernelKind::norm;
  parsed->module = nullptr;
  if (isNorm)
    fuzzNorm(*context, text, choices);
  else
    fuzzUpdate(*context, text, choices);
  fuzzPassSequence(*context, text, choices);
  return 0;
}
