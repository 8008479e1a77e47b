//===- MultiTensorPlan.cpp - one launch for a whole parameter list --------===//

#include "runtime/MultiTensorPlan.h"
#include "runtime/Errors.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdlib>
#include <numeric>

namespace kfuse {

static llvm::Error invalid(const llvm::Twine &message) {
  return makeError(ErrorCode::InvalidArgument, message);
}

static llvm::Error internal(const llvm::Twine &message) {
  return makeError(ErrorCode::Internal, message);
}

/// Roles by ArgRole value (param, grad, state, hyper, model).

/// The tensor arguments of an update, in argument order.
static std::vector<unsigned> tensorArgsOf(llvm::ArrayRef<ArgInfo> infos) {
  std::vector<unsigned> indices;
  for (auto [index, info] : llvm::enumerate(infos))
    if (info.role != ArgRole::hyper)
      indices.push_back(index);
  return indices;
}

std::vector<TableTensor>
gatherTableTensors(llvm::ArrayRef<LaunchArg> groups, size_t argsPerGroup,
                   llvm::ArrayRef<unsigned> tensorArgs) {
  std::vector<TableTensor> tensors;
  if (argsPerGroup == 0)
    return tensors;
  size_t numGroups = groups.size() / argsPerGroup;
  tensors.reserve(numGroups * tensorArgs.size());
  for (size_t group = 0; group < numGroups; ++group)
    for (unsigned index : tensorArgs) {
      const LaunchArg &arg = groups[group * argsPerGroup + index];
      tensors.push_back({reinterpret_cast<uintptr_t>(arg.data), arg.numel});
    }
  return tensors;
}

llvm::Expected<Specialization>
specializeMultiTensor(llvm::ArrayRef<ArgInfo> infos,
                      llvm::ArrayRef<LaunchArg> groups, size_t numGroups,
                      llvm::ArrayRef<int64_t> cols) {
  size_t perGroup = infos.size();
  if (numGroups == 0)
    return invalid("a multi-tensor plan needs at least one tensor group");
  if (perGroup == 0 || groups.size() / perGroup != numGroups ||
      groups.size() % perGroup != 0)
    return invalid("expected " + llvm::Twine(numGroups) + " groups of " +
                   llvm::Twine(perGroup) + " arguments, got " +
                   llvm::Twine(groups.size()) + " arguments");

  // A dtype per tensor argument, the same in every group: one plan
  // compiles for one dtype signature.
  for (size_t group = 0; group < numGroups; ++group) {
    for (auto [index, info] : llvm::enumerate(infos)) {
      if (info.role == ArgRole::hyper)
        continue;
      const LaunchArg &arg = groups[group * perGroup + index];
      if (info.perTensor()) {
        if (llvm::Error error = checkTensorLevelArg(
                info, arg, "tensor group " + llvm::Twine(group) + ": "))
          return std::move(error);
        continue; // one f32 per tensor
      }
      if (arg.dtype == DType::pred)
        return invalid("tensor group " + llvm::Twine(group) + ": tensor '" +
                       info.name + "' has unsupported dtype pred");
      DType first = groups[index].dtype;
      if (arg.dtype != first)
        return invalid("tensor group " + llvm::Twine(group) + ": " +
                       argRoleName(info.role) + " '" + info.name + "' is " +
                       dtypeName(arg.dtype) + " but group 0's is " +
                       dtypeName(first) + "; make one plan per dtype");
    }
  }

  std::vector<unsigned> tensorArgs = tensorArgsOf(infos);
  std::vector<std::string> names;
  llvm::SmallVector<ArgLevel> levels;
  for (unsigned index : tensorArgs) {
    names.push_back(infos[index].name);
    levels.push_back(infos[index].level);
  }
  if (llvm::Error error =
          validateTensorGroups(gatherTableTensors(groups, perGroup, tensorArgs),
                               names, levels, cols))
    return std::move(error);

  Specialization spec;
  setStorageDTypes(spec, infos, groups.take_front(perGroup));
  spec.numel = -1;
  spec.alignment = 16;
  return spec;
}

llvm::Error checkMultiTensorPlan(const KernelPlan &plan,
                                 llvm::ArrayRef<ArgInfo> infos,
                                 bool gradScaling) {
  std::string what = "the multi-tensor plan of '" + plan.name + "'";
  if (!plan.multiTensor)
    return internal(what + " is not marked multi-tensor");
  if (plan.kernels.empty())
    return internal(what + " has no kernels");
  if (!plan.temporaries.empty())
    return internal(what + " needs temporaries, which multi-tensor kernels "
                           "cannot have");
  if (plan.args.size() < infos.size())
    return internal(what + " has " + llvm::Twine(plan.args.size()) +
                    " arguments, the update " + llvm::Twine(infos.size()));
  if (plan.checksFoundInf != gradScaling)
    return internal(what + (gradScaling ? " does not check" : " checks") +
                    " for non-finite grads");
  std::vector<unsigned> expected = tensorArgsOf(infos);
  std::vector<unsigned> sorted = plan.tensorArgs;
  llvm::sort(sorted);
  if (sorted != expected)
    return internal(what + " lists " + llvm::Twine(plan.tensorArgs.size()) +
                    " tensor arguments, the update has " +
                    llvm::Twine(expected.size()));
  size_t scans = 0, scanningUpdates = 0, updatePhases = 0;
  for (const KernelInfo &kernel : plan.kernels) {
    scans += kernel.role == KernelInfo::Role::FoundInfScan;
    scanningUpdates += kernel.setsFoundInf;
    if (kernel.role == KernelInfo::Role::Update)
      updatePhases += kernel.phases;
    if (kernel.phases > 1 &&
        plan.numReductions + plan.numRowReductions + plan.numColReductions == 0)
      return internal(what + " has a kernel of " + llvm::Twine(kernel.phases) +
                      " phases and no reductions");
  }
  // Kernels of reduction phases take the workspace parameters; one update
  // phase never does.
  unsigned reductions =
      plan.numReductions + plan.numRowReductions + plan.numColReductions;
  if ((updatePhases > 1) != (reductions > 0))
    return internal(what + " has " + llvm::Twine(updatePhases) +
                    " update phases and " + llvm::Twine(reductions) +
                    " reductions; phases come with reductions");
  if ((scans == 1) != gradScaling || scans > 1)
    return internal(what + " has " + llvm::Twine(scans) +
                    " found-inf scan kernels" +
                    (gradScaling ? "; grad scaling needs one" : ""));
  if (scanningUpdates > (gradScaling ? 1 : 0))
    return internal(what + " has " + llvm::Twine(scanningUpdates) +
                    " update kernels that scan the grads; at most one may, "
                    "with grad scaling");
  return llvm::Error::success();
}

namespace {
/// Makes a plan's context current for one call and restores the caller's.
class ScopedContext {
public:
  ScopedContext(CudaDriver &driver, CUcontext context) : driver(driver) {
    if (driver.cuCtxGetCurrent(&previous) != CUDA_SUCCESS)
      previous = nullptr;
    if (previous != context)
      result = driver.cuCtxSetCurrent(context);
    switched = previous != context && result == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    if (switched && previous)
      driver.cuCtxSetCurrent(previous);
  }
  llvm::Error check() const {
    return driver.check(result, "cuCtxSetCurrent to the plan's context");
  }

private:
  CudaDriver &driver;
  CUcontext previous = nullptr;
  CUresult result = CUDA_SUCCESS;
  bool switched = false;
};
} // namespace

std::vector<ArgInfo> planArgInfos(llvm::ArrayRef<ArgInfo> updateArgs,
                                  bool masterWeights) {
  std::vector<ArgInfo> infos(updateArgs.begin(), updateArgs.end());
  if (masterWeights)
    for (const ArgInfo &arg : updateArgs)
      if (arg.role == ArgRole::param)
        infos.push_back({arg.name + "_model", ArgRole::model, arg.dtype,
                         std::nullopt, ArgLevel::element});
  return infos;
}

llvm::Expected<std::unique_ptr<MultiTensorPlan>>
MultiTensorPlan::create(Update &update, llvm::ArrayRef<LaunchArg> groups,
                        size_t numGroups, llvm::ArrayRef<double> hyperValues,
                        const MultiTensorPlanOptions &options) {
  std::vector<ArgInfo> planArgs =
      planArgInfos(update.args(), options.masterWeights);
  llvm::ArrayRef<ArgInfo> infos = planArgs;
  if (update.isMatrix() != !options.cols.empty())
    return invalid(update.isMatrix()
                       ? "'" + update.sourceName() +
                             "' is a 2-D update: its plan needs each "
                             "group's row length (kfuse_plan_create_matrix)"
                       : "'" + update.sourceName() +
                             "' is not a 2-D update; row lengths apply only "
                             "to 2-D updates");
  // Kernels made for one row length (the argument types') view every
  // group's tensors as rows of it, whatever their shapes.
  std::vector<int64_t> cols(options.cols.begin(), options.cols.end());
  if (update.rowLength() > 0)
    cols.assign(numGroups, update.rowLength());
  llvm::Expected<Specialization> spec =
      specializeMultiTensor(infos, groups, numGroups, cols);
  if (!spec)
    return spec.takeError();
  if (hyperValues.size() != infos.size())
    return invalid("expected " + llvm::Twine(infos.size()) +
                   " initial hyperparameter values (one per argument), got " +
                   llvm::Twine(hyperValues.size()));

  llvm::Expected<CudaDriver &> driver = CudaDriver::get();
  if (!driver)
    return driver.takeError();
  PipelineOptions pipeline;
  pipeline.multiTensor = true;
  pipeline.gradScaling = options.gradScaling;
  pipeline.masterWeights = options.masterWeights;
  pipeline.clipGradNorm = options.clipGradNorm;
  pipeline.clipNormExternal = options.clipNormExternal;
  pipeline.gridBarrier = options.gridBarrier;
  llvm::Expected<std::shared_ptr<CompiledUpdate>> compiled =
      update.compile(*spec, pipeline);
  if (!compiled)
    return compiled.takeError();
  const KernelPlan &plan = (*compiled)->plan;
  if (llvm::Error error =
          checkMultiTensorPlan(plan, infos, options.gradScaling))
    return std::move(error);
  llvm::Expected<DeviceInfo> device = driver->currentDevice();
  if (!device)
    return device.takeError();
  if (device->context != (*compiled)->context)
    return internal("the module was loaded into another context");

  std::unique_ptr<MultiTensorPlan> result(new MultiTensorPlan());
  MultiTensorPlan &self = *result;
  self.driver = &*driver;
  self.context = device->context;
  self.launchMode = CudaDriver::kernelLaunchMode(device->computeMajor);
  self.compiled = *compiled;
  self.argsPerGroup = infos.size();
  std::vector<unsigned> slots = tensorArgsOf(infos);
  self.builtOn.reserve(numGroups * slots.size());
  for (size_t group = 0; group < numGroups; ++group)
    for (unsigned index : slots)
      self.builtOn.push_back(groups[group * infos.size() + index]);

  // Chunks begin on a vector boundary of every kernel that walks them.
  unsigned vectorWidth = 1;
  for (const KernelInfo &kernel : plan.kernels)
    vectorWidth = std::lcm(vectorWidth, std::max(kernel.vectorWidth, 1u));
  std::vector<std::string> names;
  llvm::SmallVector<ArgLevel> levels;
  for (unsigned index : plan.tensorArgs) {
    names.push_back(plan.args[index].name);
    levels.push_back(plan.args[index].level);
  }
  llvm::Expected<MultiTensorTable> table = buildMultiTensorTable(
      gatherTableTensors(groups, infos.size(), plan.tensorArgs), names,
      vectorWidth, options.chunkElements, levels, cols);
  if (!table)
    return table.takeError();
  self.chunkCount = static_cast<long long>(table->chunks.size());
  self.groupCount = numGroups;
  self.hostEntries = table->entries;
  self.elements = table->totalElements;

  std::vector<double> hyperInit(plan.args.size(), 0.0);
  for (auto [index, arg] : llvm::enumerate(plan.args)) {
    if (arg.role != ArgRole::hyper)
      continue;
    hyperInit[index] = index < infos.size() ? hyperValues[index]
                                            : arg.defaultValue.value_or(0.0);
  }

  CudaDriver &cuda = *driver;
  auto upload = [&](DeviceBuffer &buffer, const void *data,
                    size_t bytes) -> llvm::Error {
    llvm::Expected<DeviceBuffer> allocated =
        DeviceBuffer::allocate(cuda, bytes);
    if (!allocated)
      return allocated.takeError();
    buffer = std::move(*allocated);
    if (bytes == 0)
      return llvm::Error::success();
    if (data)
      return cuda.check(cuda.cuMemcpyHtoD(buffer.get(), data, bytes),
                        "upload of " + llvm::Twine(bytes) + " bytes");
    return cuda.check(cuda.cuMemsetD8(buffer.get(), 0, bytes),
                      "zeroing " + llvm::Twine(bytes) + " bytes");
  };
  if (llvm::Error error =
          upload(self.entries, table->entries.data(),
                 table->entries.size() * sizeof(MultiTensorEntry)))
    return std::move(error);
  if (llvm::Error error =
          upload(self.chunks, table->chunks.data(),
                 table->chunks.size() * sizeof(MultiTensorChunk)))
    return std::move(error);
  if (llvm::Error error = upload(self.hypers, hyperInit.data(),
                                 hyperInit.size() * sizeof(double)))
    return std::move(error);
  if (llvm::Error error =
          upload(self.doneCounter, nullptr, sizeof(unsigned int)))
    return std::move(error);
  if (plan.checksFoundInf)
    if (llvm::Error error = upload(self.foundInf, nullptr, sizeof(float)))
      return std::move(error);
  if (plan.numReductions > 0) {
    // The arrivals start at zero and the kernels leave them so; partials and
    // totals are written before they are read.
    size_t perChunk = plan.numReductions * sizeof(float);
    if (llvm::Error error =
            upload(self.partials, nullptr, perChunk * table->chunks.size()))
      return std::move(error);
    // Slot 0 of totals and arrivals is the whole list's, then one per
    // entry.
    size_t slots = table->entries.size() + 1;
    if (llvm::Error error = upload(self.totals, nullptr, perChunk * slots))
      return std::move(error);
    if (llvm::Error error =
            upload(self.arrivals, nullptr, sizeof(unsigned int) * slots))
      return std::move(error);
  }
  if (plan.matrix) {
    // Written before they are read, each step; at least one float each so
    // that the kernels get a valid address.
    size_t rowBytes =
        std::max<size_t>(1, size_t(table->totalRows) * plan.numRowReductions) *
        sizeof(float);
    size_t colBytes = std::max<size_t>(1, size_t(table->totalColPartials) *
                                              plan.numColReductions) *
                      sizeof(float);
    if (llvm::Error error = upload(self.rowTotals, nullptr, rowBytes))
      return std::move(error);
    if (llvm::Error error = upload(self.colPartials, nullptr, colBytes))
      return std::move(error);
  }
  // A barrier kernel's two barrier counters and one chunk counter per
  // phase, zero between launches.
  unsigned phases = 0;
  for (const KernelInfo &kernel : plan.kernels)
    if (kernel.phases > 1)
      phases = std::max(phases, kernel.phases);
  if (phases > 0)
    if (llvm::Error error =
            upload(self.barrier, nullptr, (2 + phases) * sizeof(unsigned int)))
      return std::move(error);
  // Copies from pageable memory may still be in flight when they return,
  // and steps may run on streams that do not wait for the default one.
  if (llvm::Error error =
          cuda.check(cuda.cuCtxSynchronize(), "cuCtxSynchronize"))
    return std::move(error);
  self.entriesAddress = self.entries.get();
  self.chunksAddress = self.chunks.get();
  self.hypersAddress = self.hypers.get();
  self.doneCounterAddress = self.doneCounter.get();
  self.foundInfAddress = self.foundInf.get();
  self.partialsAddress = self.partials.get();
  self.totalsAddress = self.totals.get();
  self.arrivalsAddress = self.arrivals.get();
  self.barrierAddress = self.barrier.get();
  self.rowTotalsAddress = self.rowTotals.get();
  self.colPartialsAddress = self.colPartials.get();
  self.updateFoundInfAddress = self.foundInfAddress;

  unsigned maxGrid = std::max<int64_t>(
      1, std::min<int64_t>(self.chunkCount,
                           int64_t(device->smCount) * defaultBlocksPerSm()));
  bool foundInfZeroed = false;
  for (auto [kernel, function] :
       llvm::zip_equal(plan.kernels, (*compiled)->functions)) {
    Launch launch;
    launch.function = function;
    launch.where = "kernel '" + kernel.name + "' (" + kernel.location + ")";
    launch.grid = maxGrid;
    launch.block = kernel.blockSize;
    launch.sharedBytes = kernel.sharedBytes;
    if (kernel.phases > 1) {
      // Grid barriers need every block resident: as many as fit.
      int resident = 0;
      if (llvm::Error error = cuda.check(
              cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                  &resident, function, kernel.blockSize, kernel.sharedBytes),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor of " + launch.where))
        return std::move(error);
      if (resident < 1)
        return makeError(ErrorCode::Launch, launch.where +
                                                " fits no block of " +
                                                llvm::Twine(kernel.blockSize) +
                                                " threads on an SM");
      launch.cooperative = true;
      launch.grid = std::max<int64_t>(
          1, std::min<int64_t>(self.chunkCount,
                               int64_t(device->smCount) * resident));
    }
    // Signatures from codegen/KernelPlan.h; the pointers refer to members
    // of this (never moved) plan.
    launch.params = {&self.entriesAddress, &self.chunksAddress,
                     &self.chunkCount, &self.hypersAddress,
                     &self.foundInfAddress};
    bool scans =
        kernel.role == KernelInfo::Role::FoundInfScan || kernel.setsFoundInf;
    if (scans) {
      launch.zeroFoundInfFirst = !foundInfZeroed;
      foundInfZeroed = true;
    }
    // A plan whose update kernels scan (setsFoundInf) runs its scan kernel
    // only in a scan part alone: see step().
    launch.stepPhases =
        kernel.role == KernelInfo::Role::FoundInfScan ? StepScan : StepUpdate;
    if (plan.checksFoundInf && kernel.role == KernelInfo::Role::Update)
      self.scansInUpdate |= kernel.setsFoundInf;
    if (kernel.role != KernelInfo::Role::FoundInfScan) {
      launch.params.push_back(&self.doneCounterAddress);
      if (plan.numReductions > 0)
        launch.params.insert(launch.params.end(),
                             {&self.partialsAddress, &self.totalsAddress,
                              &self.arrivalsAddress});
      if (plan.matrix)
        launch.params.insert(launch.params.end(), {&self.rowTotalsAddress,
                                                   &self.colPartialsAddress});
      if (launch.cooperative)
        launch.params.push_back(&self.barrierAddress);
    }
    self.launches.push_back(std::move(launch));
  }
  // Update kernels that scan take the flag only in steps that scan.
  if (self.scansInUpdate)
    for (Launch &launch : self.launches)
      if (launch.stepPhases == StepUpdate)
        launch.params[4] = &self.updateFoundInfAddress;
  return std::move(result);
}

MultiTensorPlan::~MultiTensorPlan() {
  if (!driver)
    return;
  ScopedContext scope(*driver, context);
  entries.reset();
  chunks.reset();
  hypers.reset();
  doneCounter.reset();
  foundInf.reset();
  partials.reset();
  totals.reset();
  arrivals.reset();
  barrier.reset();
  rowTotals.reset();
  colPartials.reset();
}

llvm::Error MultiTensorPlan::step(CUstream stream, unsigned phases) {
  if (phases == 0 || (phases & ~unsigned(WholeStep)) != 0)
    return invalid("step phases " + llvm::Twine(phases) +
                   " are not a nonempty combination of zero-found-inf (1), "
                   "scan (2) and update (4)");
  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return error;
  static const bool syncEachKernel = std::getenv("KFUSE_SYNC_LAUNCH");
  if (scansInUpdate) {
    if (phases & StepZeroFoundInf)
      if (llvm::Error error = driver->check(
              driver->cuMemsetD32Async(foundInfAddress, 0, 1, stream),
              "zeroing found_inf"))
        return error;
    if (phases & StepScan)
      scanPending = true;
    if (phases & StepUpdate) {
      updateFoundInfAddress = scanPending ? foundInfAddress : 0;
      scanPending = false;
    }
  }
  for (Launch &launch : launches) {
    if (!isLaunchedIn(launch, phases))
      continue;
    if (launch.zeroFoundInfFirst && !scansInUpdate &&
        (phases & StepZeroFoundInf))
      if (llvm::Error error = driver->check(
              driver->cuMemsetD32Async(foundInfAddress, 0, 1, stream),
              "zeroing found_inf"))
        return error;
    CUresult result = driver->launchKernel(
        launch.function, launch.grid, 1, launch.block, launch.sharedBytes,
        stream, launch.params.data(),
        launch.cooperative ? CudaDriver::LaunchMode::Cooperative : launchMode);
    if (llvm::Error error =
            driver->check(result, (launch.cooperative ? "cooperative launch of "
                                                      : "launch of ") +
                                      launch.where))
      return error;
    if (syncEachKernel)
      if (llvm::Error error = driver->check(driver->cuStreamSynchronize(stream),
                                            "execution of " + launch.where))
        return error;
  }
  return llvm::Error::success();
}

llvm::Error MultiTensorPlan::rebind(unsigned argIndex,
                                    llvm::ArrayRef<uint64_t> addresses,
                                    CUstream stream) {
  const KernelPlan &plan = compiled->plan;
  auto column = llvm::find(plan.tensorArgs, argIndex);
  if (argIndex >= argsPerGroup || column == plan.tensorArgs.end())
    return invalid("argument " + llvm::Twine(argIndex) +
                   " is not a tensor argument of the plan");
  const std::string &name = plan.args[argIndex].name;
  if (addresses.size() != groupCount)
    return invalid("rebinding '" + name + "' with " +
                   llvm::Twine(addresses.size()) + " addresses; the plan has " +
                   llvm::Twine(groupCount) + " groups");
  size_t entryColumn = column - plan.tensorArgs.begin();
  std::vector<unsigned> slots = tensorArgsOf(args().take_front(argsPerGroup));
  size_t slot = llvm::find(slots, argIndex) - slots.begin();
  size_t first = groupCount, last = 0;
  for (auto [group, address] : llvm::enumerate(addresses)) {
    MultiTensorEntry &entry = hostEntries[group];
    if (address == 0 && (entry.numel > 0 || plan.args[argIndex].perTensor()))
      return invalid("rebinding '" + name + "': group " + llvm::Twine(group) +
                     " has a null address for " + llvm::Twine(entry.numel) +
                     " elements");
    if (entry.pointers[entryColumn] != address) {
      first = std::min(first, group);
      last = group;
    }
  }
  if (first == groupCount)
    return llvm::Error::success();

  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return error;
  llvm::Expected<bool> capturing = driver->isCapturing(stream);
  if (!capturing)
    return capturing.takeError();
  if (*capturing)
    return invalid("cannot rebind '" + name +
                   "' while the stream is being captured; a captured step "
                   "needs tensors that stay in place");
  for (size_t group = first; group <= last; ++group) {
    MultiTensorEntry &entry = hostEntries[group];
    entry.pointers[entryColumn] = addresses[group];
    entry.aligned = 1;
    for (size_t i = 0; i < plan.tensorArgs.size(); ++i)
      if (!plan.args[plan.tensorArgs[i]].perTensor() &&
          entry.pointers[i] % 16 != 0)
        entry.aligned = 0;
    builtOn[group * slots.size() + slot].data =
        reinterpret_cast<const void *>(addresses[group]);
  }
  // The source is pageable: the driver stages it before returning, so the
  // host image may change again right after.
  size_t bytes = (last - first + 1) * sizeof(MultiTensorEntry);
  return driver->check(driver->cuMemcpyHtoDAsync(
                           entriesAddress + first * sizeof(MultiTensorEntry),
                           &hostEntries[first], bytes, stream),
                       "upload of the rebound table");
}

bool MultiTensorPlan::matches(llvm::ArrayRef<LaunchArg> groups,
                              size_t numGroups) const {
  llvm::ArrayRef<ArgInfo> infos = args().take_front(argsPerGroup);
  if (groups.size() != numGroups * argsPerGroup)
    return false;
  size_t slot = 0;
  for (size_t group = 0; group < numGroups; ++group)
    for (auto [index, info] : llvm::enumerate(infos)) {
      if (info.role == ArgRole::hyper)
        continue;
      if (slot >= builtOn.size())
        return false;
      const LaunchArg &now = groups[group * argsPerGroup + index];
      const LaunchArg &then = builtOn[slot++];
      if (now.data != then.data || now.numel != then.numel ||
          now.dtype != then.dtype)
        return false;
    }
  return slot == builtOn.size();
}

llvm::Expected<unsigned>
MultiTensorPlan::hyperIndex(llvm::StringRef name) const {
  std::string known;
  for (auto [index, arg] : llvm::enumerate(args())) {
    if (arg.role != ArgRole::hyper)
      continue;
    if (arg.name == name)
      return index;
    known += (known.empty() ? "" : ", ") + arg.name;
  }
  return invalid("no hyperparameter '" + name + "'; the plan has " + known);
}

llvm::Expected<CUdeviceptr>
MultiTensorPlan::hyperPointer(llvm::StringRef name) const {
  llvm::Expected<unsigned> index = hyperIndex(name);
  if (!index)
    return index.takeError();
  return hypersAddress + CUdeviceptr(*index) * sizeof(double);
}

llvm::Error MultiTensorPlan::setHyper(llvm::StringRef name, double value,
                                      CUstream stream) {
  llvm::Expected<CUdeviceptr> slot = hyperPointer(name);
  if (!slot)
    return slot.takeError();
  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return error;
  llvm::Expected<bool> capturing = driver->isCapturing(stream);
  if (!capturing)
    return capturing.takeError();
  // A captured copy would replay from this call's stack frame.
  if (*capturing)
    return invalid("cannot set hyperparameter '" + name +
                   "' while its stream is being captured; write its device "
                   "slot (hyper pointer) from a captured kernel instead");
  // The source is pageable: the driver stages it before returning.
  return driver->check(
      driver->cuMemcpyHtoDAsync(*slot, &value, sizeof(double), stream),
      "write of hyperparameter '" + name + "'");
}

llvm::Error MultiTensorPlan::setHyperSync(llvm::StringRef name, double value) {
  llvm::Expected<CUdeviceptr> slot = hyperPointer(name);
  if (!slot)
    return slot.takeError();
  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return error;
  if (llvm::Error error =
          driver->check(driver->cuCtxSynchronize(), "cuCtxSynchronize"))
    return error;
  if (llvm::Error error =
          driver->check(driver->cuMemcpyHtoD(*slot, &value, sizeof(double)),
                        "write of hyperparameter '" + name + "'"))
    return error;
  return driver->check(driver->cuCtxSynchronize(), "cuCtxSynchronize");
}

llvm::Expected<double> MultiTensorPlan::getHyper(llvm::StringRef name) {
  llvm::Expected<CUdeviceptr> slot = hyperPointer(name);
  if (!slot)
    return slot.takeError();
  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return std::move(error);
  if (llvm::Error error =
          driver->check(driver->cuCtxSynchronize(), "cuCtxSynchronize"))
    return std::move(error);
  double value = 0;
  if (llvm::Error error =
          driver->check(driver->cuMemcpyDtoH(&value, *slot, sizeof(double)),
                        "read of hyperparameter '" + name + "'"))
    return std::move(error);
  return value;
}

llvm::Error MultiTensorPlan::bindHyperStorage(CUdeviceptr address, size_t slots,
                                              CUstream stream) {
  if (slots != numHyperSlots())
    return invalid("hyperparameter storage of " + llvm::Twine(slots) +
                   " slots; the plan has " + llvm::Twine(numHyperSlots()));
  if (address == 0 || address % alignof(double) != 0)
    return invalid("hyperparameter storage at " + llvm::Twine(address) +
                   " is null or not 8-byte aligned");
  ScopedContext scope(*driver, context);
  if (llvm::Error error = scope.check())
    return error;
  if (address != hypersAddress)
    if (llvm::Error error = driver->check(
            driver->cuMemcpyDtoDAsync(address, hypersAddress,
                                      slots * sizeof(double), stream),
            "copy of the hyperparameters"))
      return error;
  hypersAddress = address;
  return llvm::Error::success();
}

llvm::Error MultiTensorPlan::bindFoundInfStorage(CUdeviceptr address) {
  if (!foundInfAddress)
    return invalid("the plan has no found_inf flag (grad scaling is off)");
  if (address == 0 || address % alignof(float) != 0)
    return invalid("found_inf storage at " + llvm::Twine(address) +
                   " is null or not 4-byte aligned");
  foundInfAddress = address;
  return llvm::Error::success();
}

size_t MultiTensorPlan::numTotals() const {
  return totals.size() / sizeof(float);
}

llvm::Expected<size_t> MultiTensorPlan::totalSlot(llvm::StringRef name) const {
  for (const auto &[total, index] : compiled->plan.listTotals)
    if (total == name)
      return index;
  std::string known;
  for (const auto &[total, index] : compiled->plan.listTotals)
    known += (known.empty() ? "" : ", ") + total;
  return invalid("the plan has no reduction over the list named '" + name +
                 "'" + (known.empty() ? "" : "; it has " + known));
}

llvm::Error MultiTensorPlan::bindTotalsStorage(CUdeviceptr address,
                                               size_t floats) {
  if (!totalsAddress)
    return invalid("the plan has no reductions");
  if (floats < numTotals() || address == 0 || address % alignof(float) != 0)
    return invalid("reduction totals need " + llvm::Twine(numTotals()) +
                   " floats at a 4-byte aligned address; got " +
                   llvm::Twine(floats) + " at " + llvm::Twine(address));
  totalsAddress = address;
  return llvm::Error::success();
}

bool MultiTensorPlan::isLaunchedIn(const Launch &launch,
                                   unsigned phases) const {
  // The update kernels scan the grads themselves in a step that has both
  // parts; a scan part alone (plans sharing the flag, every one scanned
  // before any updates) runs the scan kernel, and the update part after it
  // scans again, harmlessly. An update part after no scan part neither
  // scans nor skips (a null flag).
  if (!(phases & launch.stepPhases))
    return false;
  return !(scansInUpdate && launch.stepPhases == StepScan &&
           (phases & StepUpdate));
}

unsigned MultiTensorPlan::launchesIn(unsigned phases) const {
  return llvm::count_if(launches, [&](const Launch &launch) {
    return isLaunchedIn(launch, phases);
  });
}

uint64_t MultiTensorPlan::bytesPerStep() const {
  return uint64_t(compiled->plan.bytesPerElement()) * uint64_t(elements);
}

} // namespace kfuse
