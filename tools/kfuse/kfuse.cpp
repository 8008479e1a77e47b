//===- kfuse.cpp - the kfuse command-line driver -------------------------===//
//
//   kfuse compile FILE [--param-dtype= --grad-dtype= --state-dtype=]
//                 [--dtype NAME=DTYPE ...]
//                 [--arch=sm_90] [--emit=mlir|cuda|ptx|cubin] [-o OUT]
//                 [--no-fusion] [--stats]
//   kfuse compile NORM --cols=N [--input-dtype= --weight-dtype=] [...]
//   kfuse check FILE   interpreter (and GPU, where present) vs float64
//   kfuse bench FILE   time the kernels on the GPU
//   kfuse cache stats [--json] | clear | path
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Cache.h"
#include "tools/kfuse/Commands.h"

#include "interpreter/Check.h"
#include "runtime/NvJitLink.h"
#include "runtime/Nvrtc.h"
#include "runtime/kfuse.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace llvm;
using namespace kfuse;

static cl::SubCommand compileCommand("compile",
                                     "compile an update to CUDA, PTX or cubin");
static cl::SubCommand
    checkCommand("check",
                 "compare the unfused and fused update against float64");
static cl::SubCommand benchCommand("bench", "time the update on the GPU");
static cl::SubCommand
    cacheCommand("cache", "the on-disk kernel cache: stats [--json], clear, "
                          "path");

static cl::OptionCategory category("kfuse options");

#define KFUSE_ALL_COMMANDS                                                     \
  cl::sub(compileCommand), cl::sub(checkCommand), cl::sub(benchCommand)

static cl::opt<std::string> input(cl::Positional, cl::desc("<update.mlir>"),
                                  cl::Required, KFUSE_ALL_COMMANDS,
                                  cl::cat(category));
static cl::opt<std::string>
    paramDType("param-dtype",
               cl::desc("storage dtype of params: f32, bf16, f16"),
               cl::init("f32"), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<std::string>
    gradDType("grad-dtype",
              cl::desc("storage dtype of grads (default: params')"),
              cl::init(""), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<std::string>
    stateDType("state-dtype", cl::desc("storage dtype of optimizer states"),
               cl::init("f32"), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<std::string>
    modelDType("model-dtype",
               cl::desc("storage dtype of model copies (--master-weights)"),
               cl::init("bf16"), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::list<std::string>
    argDType("dtype",
             cl::desc("storage dtype of one argument, NAME=DTYPE "
                      "(repeatable; over its role's --*-dtype)"),
             KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool> masterWeights(
    "master-weights",
    cl::desc("f32 master params with a model copy written in the same pass"),
    KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<unsigned>
    alignment("alignment", cl::desc("bytes every tensor pointer is aligned to"),
              cl::init(16), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<unsigned> numelMultiple(
    "numel-multiple",
    cl::desc("a power of two a dynamic element count is a multiple of (as "
             "the runtime specializes: up to 8)"),
    cl::init(1), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<std::string>
    arch("arch",
         cl::desc("GPU arch, e.g. sm_90 (default: the local GPU's, "
                  "else sm_90)"),
         cl::init(""), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<std::string> codegen(
    "codegen",
    cl::desc("auto (direct PTX linked by nvJitLink where it covers the "
             "kernels, else CUDA through NVRTC), ptx (or fail) or cuda; "
             "default: KFUSE_CODEGEN, else auto"),
    cl::init(""), KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool> noFusion("no-fusion",
                              cl::desc("one kernel per elementwise op"),
                              KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool>
    multiTensor("multi-tensor",
                cl::desc("one kernel over a table of tensor groups"),
                KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool>
    gradScaling("grad-scaling",
                cl::desc("unscale grads by inv_scale and skip steps with "
                         "non-finite grads"),
                KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool> clipGradNorm(
    "clip-grad-norm",
    cl::desc("scale grads by min(max_grad_norm / (global norm + 1e-6), 1) "
             "inside the update"),
    KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool>
    clipExternalNorm("clip-external-norm",
                     cl::desc("with --clip-grad-norm: take the norm as a hyper "
                              "global_grad_norm the caller computes"),
                     KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<bool> separatePhases(
    "separate-phases",
    cl::desc("one launch per reduction phase of a multi-tensor plan, not one "
             "cooperative launch with grid barriers"),
    KFUSE_ALL_COMMANDS, cl::cat(category));
static cl::opt<unsigned>
    maxGroupSize("max-group-size",
                 cl::desc("most elementwise ops in one kernel (0: no limit)"),
                 cl::init(kDefaultMaxGroupSize), KFUSE_ALL_COMMANDS,
                 cl::cat(category));

static cl::list<std::string>
    cacheArgs(cl::Positional, cl::ZeroOrMore,
              cl::desc("stats [--json] | clear | path"), cl::sub(cacheCommand),
              cl::cat(category));
static cl::opt<bool> cacheJson("json", cl::desc("stats as one JSON object"),
                               cl::sub(cacheCommand), cl::cat(category));

static cl::opt<int64_t>
    compileNumel("numel",
                 cl::desc("element count to specialize on (-1: dynamic)"),
                 cl::init(-1), cl::sub(compileCommand), cl::cat(category));
static cl::opt<std::string> emit("emit", cl::desc("mlir, cuda, ptx or cubin"),
                                 cl::init("cuda"), cl::sub(compileCommand),
                                 cl::cat(category));
static cl::opt<std::string> output("o",
                                   cl::desc("output file (default: stdout)"),
                                   cl::init("-"), cl::sub(compileCommand),
                                   cl::cat(category));
static cl::opt<bool>
    stats("stats", cl::desc("print one JSON line of kernel statistics, last"),
          cl::sub(compileCommand), cl::cat(category));

static cl::opt<bool> warmNvrtc(
    "warm-nvrtc",
    cl::desc("first compile a one-line kernel, untimed, so that --stats "
             "leaves out NVRTC's (and nvJitLink's) once-per-process start-up "
             "(as in a process that has compiled before; for benchmarks)"),
    cl::Hidden, cl::sub(compileCommand), cl::cat(category));

static cl::opt<int64_t>
    normCols("cols", cl::desc("row length of a norm (required for norms)"),
             cl::init(-1), cl::sub(compileCommand), cl::cat(category));
static cl::opt<std::string>
    inputDType("input-dtype",
               cl::desc("storage dtype of a norm's full-shape tensors"),
               cl::init("f32"), cl::sub(compileCommand), cl::cat(category));
static cl::opt<std::string> weightDType(
    "weight-dtype",
    cl::desc("storage dtype of a norm's per-column tensors (default: the "
             "input dtype); per-row tensors are f32"),
    cl::init(""), cl::sub(compileCommand), cl::cat(category));

static cl::opt<int64_t> checkNumel(
    "numel",
    cl::desc("elements per tensor (default: a static shape's, else 4099)"),
    cl::init(4099), cl::sub(checkCommand), cl::cat(category));
static cl::opt<int> steps("steps", cl::desc("update steps to run"), cl::init(3),
                          cl::sub(checkCommand), cl::cat(category));
static cl::opt<double>
    tolerance("tolerance",
              cl::desc("largest relative error that passes (default: 1e-6, "
                       "or 1e-2 with 16-bit storage)"),
              cl::init(0), cl::sub(checkCommand), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("random seed"), cl::init(42),
                              cl::sub(checkCommand), cl::cat(category));

static cl::opt<int64_t> benchNumel("numel", cl::desc("elements per tensor"),
                                   cl::init(int64_t(1) << 28),
                                   cl::sub(benchCommand), cl::cat(category));
static cl::opt<int> iterations("iterations", cl::desc("timed launches"),
                               cl::init(30), cl::sub(benchCommand),
                               cl::cat(category));
static cl::opt<int> warmup("warmup", cl::desc("untimed launches first"),
                           cl::init(5), cl::sub(benchCommand),
                           cl::cat(category));

/// The "--name" of each option in `candidates` that the command line gives.
static std::vector<std::string>
givenOptions(std::initializer_list<const cl::Option *> candidates) {
  std::vector<std::string> given;
  for (const cl::Option *option : candidates)
    if (option->getNumOccurrences() > 0)
      given.push_back(("--" + option->ArgStr).str());
  return given;
}

/// Fills the shared options, or reports what is wrong with them.
static Expected<CommonOptions> collectCommonOptions() {
  CommonOptions options;
  options.input = input;
  // compile, check and bench share the option objects of the shared flags;
  // --numel and --steps are each subcommand's own.
  options.updateOnly = givenOptions(
      {&paramDType, &gradDType, &stateDType, &modelDType,
       &static_cast<const cl::Option &>(argDType), &masterWeights,
       &numelMultiple, &codegen, &noFusion, &multiTensor, &gradScaling,
       &clipGradNorm, &clipExternalNorm, &separatePhases, &maxGroupSize,
       &compileNumel, &checkNumel, &steps});
  options.normOnly = givenOptions({&normCols, &inputDType, &weightDType});
  auto parse = [](StringRef option, StringRef value) -> Expected<DType> {
    if (std::optional<DType> dtype = parseDType(value.str());
        dtype && *dtype != DType::pred)
      return *dtype;
    return createStringError("unknown dtype '" + value + "' for --" + option +
                             "; expected f32, bf16 or f16");
  };
  Expected<DType> param = parse("param-dtype", paramDType);
  if (!param)
    return param.takeError();
  Expected<DType> grad =
      parse("grad-dtype", gradDType.empty() ? paramDType : gradDType);
  if (!grad)
    return grad.takeError();
  Expected<DType> state = parse("state-dtype", stateDType);
  if (!state)
    return state.takeError();
  Expected<DType> model = parse("model-dtype", modelDType);
  if (!model)
    return model.takeError();
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return createStringError("--alignment must be a power of two, got " +
                             Twine(alignment.getValue()));
  for (const std::string &given : argDType) {
    auto [name, value] = StringRef(given).split('=');
    if (name.empty() || value.empty())
      return createStringError("--dtype takes NAME=DTYPE, got '" + given + "'");
    Expected<DType> dtype = parse("dtype " + name.str(), value);
    if (!dtype)
      return dtype.takeError();
    options.namedDTypes.emplace_back(name.str(), *dtype);
  }
  options.spec.paramDType = *param;
  options.spec.gradDType = *grad;
  options.spec.stateDType = *state;
  options.spec.modelDType = *model;
  options.spec.alignment = alignment;
  if (numelMultiple == 0 || numelMultiple > 8 ||
      (numelMultiple & (numelMultiple - 1)) != 0)
    return createStringError(
        "--numel-multiple must be 1, 2, 4 or 8 (a power of two up to the "
        "widest vector), got " +
        Twine(numelMultiple.getValue()));
  options.spec.numelMultiple = numelMultiple;
  options.pipeline.fuse = !noFusion;
  options.pipeline.maxGroupSize = maxGroupSize;
  options.pipeline.multiTensor = multiTensor;
  options.pipeline.gradScaling = gradScaling;
  options.pipeline.clipGradNorm = clipGradNorm;
  options.pipeline.gridBarrier = !separatePhases;
  options.pipeline.clipNormExternal = clipExternalNorm;
  if (clipExternalNorm && !clipGradNorm)
    return createStringError("--clip-external-norm needs --clip-grad-norm");
  options.pipeline.masterWeights = masterWeights;
  options.arch = arch;
  // Checked whatever --emit asks for: the arch is part of what the compile
  // means, even where no image is made.
  if (!arch.empty())
    if (Expected<int> sm = validateArch(arch); !sm)
      return sm.takeError();
  if (!codegen.empty()) {
    std::optional<CodegenMode> mode = parseCodegenMode(codegen);
    if (!mode)
      return createStringError("unknown --codegen=" + codegen +
                               "; expected auto, ptx or cuda");
    setProcessCodegenMode(*mode);
  }
  return options;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << "kfuse " << KFUSE_VERSION_STRING << "\n  LLVM/MLIR "
       << LLVM_VERSION_STRING << "\n  NVRTC " << nvrtcVersion() << "\n";
  });
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "kfuse: fused kernels from IR\n");

  if (cacheCommand) {
    std::vector<std::string> words(cacheArgs.begin(), cacheArgs.end());
    if (cacheJson)
      words.insert(words.begin() + std::min<size_t>(1, words.size()), "--json");
    return runCacheCommand(words);
  }
  Expected<CommonOptions> options = collectCommonOptions();
  if (!options)
    return reportError(options.takeError());
  if (compileCommand && warmNvrtc) {
    NvrtcOptions warmOptions;
    warmOptions.arch = resolveArch(options->arch);
    Expected<NvrtcResult> warmed = compileWithNvrtc(
        "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }",
        "warm.cu", warmOptions);
    if (!warmed)
      return reportError(warmed.takeError());
    // The direct PTX path's compiler too, where it is in use and loads.
    Expected<int> sm = validateArch(warmOptions.arch);
    if (sm &&
        codegenModeFor(options->pipeline.multiTensor, PtxCompiler::nvJitLink) !=
            CodegenMode::cuda &&
        !errorToBool(loadNvJitLink())) {
      Expected<NvrtcResult> linked = compileWithNvJitLink(warmed->ptx, *sm);
      if (!linked)
        return reportError(linked.takeError());
    } else if (!sm) {
      consumeError(sm.takeError());
    }
  }
  if (compileCommand) {
    options->spec.numel = compileNumel;
    NormCompileOptions norm;
    norm.cols = normCols;
    norm.inputDType = inputDType;
    norm.weightDType = weightDType;
    return runCompile(*options, norm, emit, output, stats);
  }
  if (checkCommand) {
    if (!std::isfinite(tolerance) || tolerance < 0)
      return reportError(createStringError(
          "--tolerance must be a non-negative number (0: the default), got " +
          std::to_string(tolerance.getValue())));
    if (checkNumel <= 0 || checkNumel > kMaxCheckElements)
      return reportError(createStringError(
          "--numel must be from 1 to " + Twine(kMaxCheckElements) +
          " (the check's element budget), got " +
          Twine(checkNumel.getValue())));
    if (steps <= 0 || steps > kMaxCheckSteps)
      return reportError(createStringError("--steps must be from 1 to " +
                                           Twine(kMaxCheckSteps) + ", got " +
                                           Twine(steps.getValue())));
    std::optional<int64_t> numel;
    if (checkNumel.getNumOccurrences() > 0)
      numel = checkNumel;
    return runCheck(*options, numel, steps, tolerance, seed);
  }
  if (benchCommand)
    return runBench(*options, benchNumel, iterations, warmup);
  WithColor::error(errs(), "kfuse")
      << "expected a subcommand: compile, check, bench or cache (see --help)\n";
  return 1;
}
