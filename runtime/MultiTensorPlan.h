//===- MultiTensorPlan.h - one launch for a whole parameter list -*- C++
//-*-===//
//
// A MultiTensorPlan binds an update to a fixed list of tensor groups (one
// group per model parameter: param, grad, states): it compiles the update's
// multi-tensor kernel, uploads the table of the groups' pointers and chunks
// once, and keeps the hyperparameters in device memory. A step is then one
// launch (two with grad scaling) whose host cost does not depend on the
// number of tensors, and which a CUDA graph can capture.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_MULTITENSORPLAN_H
#define KFUSE_RUNTIME_MULTITENSORPLAN_H

#include "runtime/Jit.h"
#include "runtime/MultiTensorTable.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace kfuse {

/// Checks `groups` (group-major, one LaunchArg per update argument; hyper
/// slots are ignored) for a multi-tensor plan: at least one group, each
/// group valid on its own (see validateTensorGroups), one dtype per role
/// within a group and across groups. Derives the specialization: those
/// dtypes, dynamic numel, alignment 16 (groups that are not 16-byte aligned
/// take the kernel's scalar path, told by MultiTensorEntry::aligned). Needs
/// no GPU.
llvm::Expected<Specialization>
specializeMultiTensor(llvm::ArrayRef<ArgInfo> infos,
                      llvm::ArrayRef<LaunchArg> groups, size_t numGroups,
                      llvm::ArrayRef<int64_t> cols = {});

/// The tensors of `groups` in the order `tensorArgs` (update argument
/// indices) gives, group-major, as the table builder takes them.
std::vector<TableTensor>
gatherTableTensors(llvm::ArrayRef<LaunchArg> groups, size_t argsPerGroup,
                   llvm::ArrayRef<unsigned> tensorArgs);

/// Checks that `plan` has the multi-tensor ABI the runtime launches
/// (codegen/KernelPlan.h) for an update with arguments `infos`: marked
/// multi-tensor, no temporaries, every tensor argument in tensorArgs, a
/// found-inf scan exactly when `gradScaling`.
llvm::Error checkMultiTensorPlan(const KernelPlan &plan,
                                 llvm::ArrayRef<ArgInfo> infos,
                                 bool gradScaling);

/// The arguments a plan's callers pass per group: the update's own, then,
/// with master weights, one `<param>_model` tensor per param (in param
/// order), as kfuse-master-weights appends them.
std::vector<ArgInfo> planArgInfos(llvm::ArrayRef<ArgInfo> updateArgs,
                                  bool masterWeights);

struct MultiTensorPlanOptions {
  bool gradScaling = false;      // kfuse-grad-scaling: inv_scale + found_inf
  bool masterWeights = false;    // kfuse-master-weights: model copies
  bool clipGradNorm = false;     // kfuse-clip-grad-norm: max_grad_norm
  bool clipNormExternal = false; // ... by a caller's "global_grad_norm"
  /// Reduction phases in one cooperative launch (false: one launch each,
  /// also where KFUSE_SEPARATE_PHASES=1).
  bool gridBarrier = defaultGridBarrier();
  int64_t chunkElements = defaultChunkElements();
  /// A 2-D update's row length of each group (empty for 1-D updates).
  std::vector<int64_t> cols;
};

class MultiTensorPlan {
public:
  /// Validates `groups` (numGroups * update.args().size() LaunchArgs,
  /// group-major), compiles (cached) and uploads the table. `hyperValues`
  /// holds one value per update argument (tensor slots ignored): the initial
  /// device hyperparameters; a "step" slot holds the steps already taken.
  /// Hypers the pipeline adds (inv_scale) start at their defaults.
  static llvm::Expected<std::unique_ptr<MultiTensorPlan>>
  create(Update &update, llvm::ArrayRef<LaunchArg> groups, size_t numGroups,
         llvm::ArrayRef<double> hyperValues,
         const MultiTensorPlanOptions &options = {});

  /// Parts of a step, for plans that must skip together: with grad scaling
  /// over several plans sharing one found_inf flag (bindFoundInfStorage),
  /// the first plan zeroes it, every plan scans, and only then does any plan
  /// update.
  enum StepPhase : unsigned {
    StepZeroFoundInf = 1, // a 4-byte memset of the flag (grad scaling only)
    StepScan = 2,         // the found-inf scan kernels (grad scaling only)
    StepUpdate = 4,       // the update kernels
    WholeStep = StepZeroFoundInf | StepScan | StepUpdate,
  };

  /// Launches `phases` of one step on `stream`: with grad scaling, zeroes
  /// found_inf and runs the scan first. No per-tensor host work. Where the
  /// update kernels scan the grads themselves (KernelInfo::setsFoundInf), a
  /// whole step skips the scan kernel; a scan part alone runs it (plans
  /// sharing the flag scan in turn, then update in turn), and the update
  /// part after it takes the flag. An update part after no scan part
  /// neither scans nor skips.
  llvm::Error step(CUstream stream, unsigned phases = WholeStep);

  /// Points tensor argument `argIndex` (a plan argument index) of every
  /// group at new memory of the same size and dtype, e.g. grads that
  /// backward allocated anew after zero_grad(set_to_none=True). `addresses`
  /// holds one device address per group. The table is rewritten on
  /// `stream`, after the steps already queued there (refused while the
  /// stream is captured: a graph bakes its table in). Costs the host time
  /// in the number of groups: call it when an address changed.
  llvm::Error rebind(unsigned argIndex, llvm::ArrayRef<uint64_t> addresses,
                     CUstream stream);
  size_t numGroups() const { return groupCount; }

  /// Whether `groups` (as given to create) are the tensors this plan was
  /// built on: same count, pointers, sizes and dtypes. A plan never checks
  /// this itself at step time; callers rebuild when it is false.
  bool matches(llvm::ArrayRef<LaunchArg> groups, size_t numGroups) const;

  /// Writes one hyperparameter, ordered on `stream` (refused while the
  /// stream is being captured: write hyperPointer's slot from device code
  /// then).
  llvm::Error setHyper(llvm::StringRef name, double value, CUstream stream);
  /// Writes one hyperparameter after all work in the context finished.
  llvm::Error setHyperSync(llvm::StringRef name, double value);
  /// Reads one hyperparameter after all work in the context finished.
  llvm::Expected<double> getHyper(llvm::StringRef name);
  /// The device address of a hyperparameter's slot (a double).
  llvm::Expected<CUdeviceptr> hyperPointer(llvm::StringRef name) const;
  /// The device address of the found_inf flag (a float), 0 without grad
  /// scaling.
  CUdeviceptr foundInfPointer() const { return foundInfAddress; }

  /// Moves the hyperparameters to caller-owned device memory of
  /// numHyperSlots() doubles (e.g. a framework's tensor, so that its views
  /// are ordinary tensors), copying the current values on `stream`. The
  /// memory must outlive the plan's use of it.
  llvm::Error bindHyperStorage(CUdeviceptr address, size_t slots,
                               CUstream stream);
  /// Moves the found_inf flag to caller-owned device memory (one float).
  llvm::Error bindFoundInfStorage(CUdeviceptr address);

  /// The slot in the reduction totals of the named reduction over the
  /// list (e.g. "grad_norm_sq" of kfuse-clip-grad-norm), after a step its
  /// value, and the floats the totals hold.
  llvm::Expected<size_t> totalSlot(llvm::StringRef name) const;
  size_t numTotals() const;
  /// Moves the reduction totals to caller-owned device memory of
  /// numTotals() floats (made current by each step's reduction phases).
  llvm::Error bindTotalsStorage(CUdeviceptr address, size_t floats);

  /// The plan's arguments: the update's, then those the pipeline added.
  llvm::ArrayRef<ArgInfo> args() const { return compiled->plan.args; }
  size_t numHyperSlots() const { return compiled->plan.args.size(); }
  /// Kernels step(stream, phases) launches.
  unsigned launchesIn(unsigned phases) const;
  unsigned launchesPerStep() const { return launchesIn(WholeStep); }
  /// Bytes every step moves: KernelPlan::bytesPerElement() (all kernels,
  /// the scan included) times the elements of all groups.
  uint64_t bytesPerStep() const;
  int64_t numChunks() const { return chunkCount; }
  int64_t totalElements() const { return elements; }
  const KernelPlan &kernelPlan() const { return compiled->plan; }

  /// Frees the plan's device memory in its own context.
  ~MultiTensorPlan();
  MultiTensorPlan(const MultiTensorPlan &) = delete;
  MultiTensorPlan &operator=(const MultiTensorPlan &) = delete;

private:
  MultiTensorPlan() = default;
  llvm::Expected<unsigned> hyperIndex(llvm::StringRef name) const;
  llvm::Error makeContextCurrent() const;

  CudaDriver *driver = nullptr;
  CUcontext context = nullptr;
  /// How a kernel without grid barriers launches on this device
  /// (CudaDriver::kernelLaunchMode).
  CudaDriver::LaunchMode launchMode = CudaDriver::LaunchMode::Plain;
  std::shared_ptr<CompiledUpdate> compiled;
  size_t argsPerGroup = 0;
  /// What the plan was built on, by tensor slot: pointer, numel, dtype.
  std::vector<LaunchArg> builtOn;
  size_t groupCount = 0;
  /// The host image of the device entries, kept for rebind.
  std::vector<MultiTensorEntry> hostEntries;

  DeviceBuffer entries, chunks, hypers, doneCounter, foundInf;
  /// Per-tensor reductions (KernelPlan::numReductions): per-chunk partials,
  /// per-entry totals and arrival counters.
  DeviceBuffer partials, totals, arrivals;
  /// The two counters of a cooperative kernel's grid barriers.
  DeviceBuffer barrier;
  /// A 2-D plan's totals per row and column partials per chunk.
  DeviceBuffer rowTotals, colPartials;
  // Kernel parameter values; `launchParams` points at these, so rebinding
  // storage only changes a value here.
  CUdeviceptr entriesAddress = 0, chunksAddress = 0;
  long long chunkCount = 0;
  CUdeviceptr hypersAddress = 0, foundInfAddress = 0, doneCounterAddress = 0;
  CUdeviceptr partialsAddress = 0, totalsAddress = 0, arrivalsAddress = 0;
  CUdeviceptr barrierAddress = 0;
  CUdeviceptr rowTotalsAddress = 0, colPartialsAddress = 0;
  /// Update kernels scan the grads themselves (KernelInfo::setsFoundInf):
  /// they take updateFoundInfAddress, the flag in a step with a scan part
  /// (scanPending), else 0.
  bool scansInUpdate = false, scanPending = false;
  CUdeviceptr updateFoundInfAddress = 0;
  int64_t elements = 0;
  struct Launch {
    CUfunction function = nullptr;
    std::string where; // for errors
    unsigned grid = 1, block = 256;
    unsigned sharedBytes = 0; // dynamic shared memory per block
    bool zeroFoundInfFirst = false;
    bool cooperative = false;         // phases with grid barriers
    unsigned stepPhases = StepUpdate; // the StepPhase parts it belongs to
    std::vector<void *> params;
  };
  std::vector<Launch> launches;
  /// Whether step(stream, phases) launches `launch`.
  bool isLaunchedIn(const Launch &launch, unsigned phases) const;
};

} // namespace kfuse

#endif // KFUSE_RUNTIME_MULTITENSORPLAN_H
