//===- Bench.cpp - kfuse bench -------------------------------------------===//
//
// Times one update's launches with CUDA events on the data the check draws:
// warm-up
// launches, then the median of the timed ones, and the bandwidth of the
// bytes the plan must move. An update that runs as a multi-tensor plan
// (reductions, --multi-tensor, --grad-scaling, --clip-grad-norm) is timed
// as a plan over one tensor group.
//
//===----------------------------------------------------------------------===//

#include "tools/kfuse/Commands.h"
#include "tools/kfuse/DeviceRun.h"

#include "codegen/Pipeline.h"
#include "dialect/KFuseUpdate.h"
#include "runtime/MultiTensorPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace kfuse {

static Expected<json::Object> bench(const CommonOptions &options,
                                    StringRef text, int64_t numel,
                                    int iterations, int warmup) {
  Expected<std::unique_ptr<Update>> update =
      Update::create(text, options.input);
  if (!update)
    return update.takeError();
  CommonOptions named = options;
  if (Error error = applyNamedDTypes(named, (*update)->args()))
    return std::move(error);
  std::vector<ArgInfo> args = withStorageDTypes((*update)->args(), named.spec);

  // The values the check draws (plausible magnitudes per role and name).
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module = parseKernelModule(
      threadContext(), text, options.input, KernelKind::update);
  if (!module)
    return module.takeError();
  Expected<UpdateValues> drawn =
      drawCheckInputs(findUpdate(**module), args.size(), numel, /*seed=*/7);
  if (!drawn)
    return drawn.takeError();
  UpdateValues values = std::move(*drawn);
  Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  Expected<DeviceInfo> device = driver->currentDevice();
  if (!device)
    return device.takeError();
  Expected<DeviceTensors> tensors =
      DeviceTensors::upload(*driver, args, values, numel);
  if (!tensors)
    return tensors.takeError();
  values.tensors.clear();
  values.tensors.resize(args.size());
  std::vector<LaunchArg> launchArgs = tensors->launchArgs(values);
  // Steps advance as in training: a step-1 special case (SGD's momentum
  // buffer starts as the gradient) must not make the timed launches skip
  // reading a state.
  int step = 0;
  auto nextStep = [&] {
    ++step;
    for (auto [index, arg] : llvm::enumerate(args))
      if (arg.role == ArgRole::hyper && arg.name == "step")
        launchArgs[index].value = step;
  };

  Expected<Specialization> spec = (*update)->specialize(launchArgs);
  if (!spec)
    return spec.takeError();
  auto compiled = (*update)->compile(*spec, options.pipeline);
  if (!compiled)
    return compiled.takeError();
  const KernelPlan &kernelPlan = (*compiled)->plan;
  std::unique_ptr<MultiTensorPlan> plan;
  if (kernelPlan.multiTensor) {
    // The plan keeps its hypers on the device and counts the steps there.
    std::vector<double> hypers;
    for (const LaunchArg &arg : launchArgs)
      hypers.push_back(arg.value);
    MultiTensorPlanOptions planOptions;
    planOptions.gradScaling = options.pipeline.gradScaling;
    planOptions.masterWeights = options.pipeline.masterWeights;
    planOptions.clipGradNorm = options.pipeline.clipGradNorm;
    planOptions.clipNormExternal = options.pipeline.clipNormExternal;
    planOptions.gridBarrier = options.pipeline.gridBarrier;
    Expected<std::unique_ptr<MultiTensorPlan>> created =
        MultiTensorPlan::create(**update, launchArgs, 1, hypers, planOptions);
    if (!created)
      return created.takeError();
    plan = std::move(*created);
  }
  auto launch = [&]() -> Error {
    if (plan)
      return plan->step(nullptr);
    nextStep();
    return (*update)->launch(launchArgs, nullptr, options.pipeline);
  };

  for (int i = 0; i < warmup; ++i)
    if (Error error = launch())
      return std::move(error);
  CUevent begin, end;
  if (Error error =
          driver->check(driver->cuEventCreate(&begin, 0), "cuEventCreate"))
    return std::move(error);
  if (Error error =
          driver->check(driver->cuEventCreate(&end, 0), "cuEventCreate"))
    return std::move(error);
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    driver->cuEventRecord(begin, nullptr);
    if (Error error = launch())
      return std::move(error);
    driver->cuEventRecord(end, nullptr);
    if (Error error = driver->check(driver->cuEventSynchronize(end),
                                    "cuEventSynchronize"))
      return std::move(error);
    float ms = 0;
    driver->cuEventElapsedTime(&ms, begin, end);
    times.push_back(ms);
  }
  driver->cuEventDestroy(begin);
  driver->cuEventDestroy(end);
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];

  unsigned bytesPerElement = kernelPlan.bytesPerElement();
  double gbps = double(bytesPerElement) * numel / (median * 1e-3) / 1e9;
  return json::Object{
      {"update", kernelPlan.name},
      {"arch", device->arch},
      {"numel", numel},
      {"param_dtype", dtypeName(options.spec.paramDType)},
      {"state_dtype", dtypeName(options.spec.stateDType)},
      {"kernels", static_cast<int64_t>(kernelPlan.kernels.size())},
      {"multi_tensor", kernelPlan.multiTensor},
      {"bytes_per_element", bytesPerElement},
      {"blocks_per_sm", defaultBlocksPerSm()},
      {"ms", median},
      {"GBps", gbps}};
}

int runBench(const CommonOptions &options, int64_t numel, int iterations,
             int warmup) {
  if (numel <= 0 || iterations <= 0 || warmup < 0)
    return reportError(createStringError(
        "--numel and --iterations must be positive, --warmup not negative"));
  Expected<std::string> text = readInput(options);
  if (!text)
    return reportError(text.takeError());
  Expected<json::Object> result =
      bench(options, *text, numel, iterations, warmup);
  if (!result)
    return reportError(result.takeError());
  outs() << json::Value(std::move(*result)) << "\n";
  return 0;
}

} // namespace kfuse
