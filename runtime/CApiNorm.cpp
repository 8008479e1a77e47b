//===- CApiNorm.cpp - the C API over norm kernels -------------------------===//
//
// The kfuse_norm_* functions of kfuse.h. Their failures are reported through
// kfuse_last_error(), like every other function's.
//
//===----------------------------------------------------------------------===//

#include "runtime/kfuse.h"

#include "runtime/CApiSupport.h"
#include "runtime/Errors.h"
#include "runtime/Norm.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace kfuse;

using namespace kfuse::capi;

namespace {

/// The DType of C dtype code `code`, if it names one.
std::optional<DType> dtypeOfCode(int32_t code) {
  switch (code) {
  case KFUSE_F32:
    return DType::f32;
  case KFUSE_BF16:
    return DType::bf16;
  case KFUSE_F16:
    return DType::f16;
  default:
    return std::nullopt;
  }
}

} // namespace

extern "C" {

/// An owning norm handle of `kernel`, a norm.
static kfuse_norm *normHandle(std::unique_ptr<Kernel> kernel) {
  auto *norm = static_cast<Norm *>(kernel.release());
  return new kfuse_norm{std::unique_ptr<Norm>(norm), norm};
}

kfuse_status kfuse_norm_create(const char *ir_text, const char *source_name,
                               kfuse_norm **out) {
  return createKernelHandle(ir_text, source_name, /*fromFile=*/false,
                            KernelKind::norm, out, normHandle);
}

kfuse_status kfuse_norm_create_from_file(const char *path, kfuse_norm **out) {
  return createKernelHandle(path, nullptr, /*fromFile=*/true, KernelKind::norm,
                            out, normHandle);
}

void kfuse_norm_destroy(kfuse_norm *norm) {
  if (norm && norm->owned) // a kfuse_kernel's view is the kernel's
    delete norm;
}

size_t kfuse_norm_num_launches(const kfuse_norm *norm) {
  return norm ? norm->norm->launchesPerCall() : 0;
}

/// The launch arguments of `args` for `norm` (both checked), or a failed
/// status.
static kfuse_status
toNormLaunchArgs(const kfuse_norm *norm, const kfuse_arg *args, size_t nargs,
                 llvm::SmallVectorImpl<LaunchArg> &launchArgs) {
  if (!norm)
    return fail(KFUSE_INVALID_ARGUMENT, "norm is null");
  if (!args && nargs != 0)
    return fail(KFUSE_INVALID_ARGUMENT, "args is null");
  llvm::ArrayRef<ArgInfo> infos = norm->norm->args();
  launchArgs.assign(nargs, LaunchArg());
  for (size_t i = 0; i < nargs; ++i) {
    const kfuse_arg &arg = args[i];
    LaunchArg &launchArg = launchArgs[i];
    launchArg.data = arg.data;
    launchArg.numel = arg.numel;
    launchArg.value = arg.value;
    bool isTensor = i < infos.size() && infos[i].role != ArgRole::hyper;
    if (!isTensor)
      continue;
    std::optional<DType> dtype = dtypeOfCode(arg.dtype);
    if (!dtype)
      return fail(KFUSE_INVALID_ARGUMENT, "tensor '" + infos[i].name +
                                              "' has unknown dtype code " +
                                              std::to_string(arg.dtype));
    launchArg.dtype = *dtype;
  }
  return KFUSE_OK;
}

kfuse_status kfuse_norm_launch(kfuse_norm *norm, const kfuse_arg *args,
                               size_t nargs, int64_t rows, int64_t cols,
                               void *stream) {
  return guarded([&] {
    llvm::SmallVector<LaunchArg, 16> launchArgs;
    if (kfuse_status status = toNormLaunchArgs(norm, args, nargs, launchArgs))
      return status;
    if (llvm::Error error = norm->norm->launch(launchArgs, rows, cols,
                                               static_cast<CUstream>(stream)))
      return fail(std::move(error));
    return succeed();
  });
}

kfuse_status kfuse_norm_launch_if_ready(kfuse_norm *norm, const kfuse_arg *args,
                                        size_t nargs, int64_t rows,
                                        int64_t cols, void *stream) {
  return guarded([&] {
    llvm::SmallVector<LaunchArg, 16> launchArgs;
    if (kfuse_status status = toNormLaunchArgs(norm, args, nargs, launchArgs))
      return status;
    bool ready = false;
    if (llvm::Error error = norm->norm->launch(
            launchArgs, rows, cols, static_cast<CUstream>(stream), &ready))
      return fail(std::move(error));
    if (!ready)
      return fail(KFUSE_NOT_READY, "the kernels for these arguments are not "
                                   "loaded yet: call kfuse_norm_launch");
    return succeed();
  });
}

kfuse_status kfuse_norm_compile(kfuse_norm *norm, const kfuse_arg *args,
                                size_t nargs, int64_t rows, int64_t cols,
                                kfuse_compile_info *info) {
  return guarded([&] {
    auto start = std::chrono::steady_clock::now();
    llvm::SmallVector<LaunchArg, 16> launchArgs;
    if (kfuse_status status = toNormLaunchArgs(norm, args, nargs, launchArgs))
      return status;
    llvm::Expected<Specialization> spec =
        norm->norm->specialize(launchArgs, rows, cols);
    if (!spec)
      return fail(spec.takeError());
    bool built = false;
    llvm::Expected<std::shared_ptr<CompiledNorm>> compiled =
        norm->norm->compile(*spec, &built);
    if (!compiled)
      return fail(compiled.takeError());
    reportCompile(info, built, (*compiled)->cacheSource, start);
    return succeed();
  });
}

kfuse_status kfuse_warmup(const kfuse_warmup_job *jobs, size_t count,
                          int threads, kfuse_status *statuses) {
  return guarded([&] {
    if (!jobs && count != 0)
      return fail(KFUSE_INVALID_ARGUMENT, "jobs is null");
    if (threads < 0)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "threads is " + std::to_string(threads));
    // Workers compile in the caller's context (none: each compile takes
    // device 0's primary context, as a launch would).
    CUcontext context = callerContext();
    std::vector<kfuse_status> results(count, KFUSE_OK);
    std::vector<std::string> messages(count);
    std::atomic<size_t> next{0};
    auto work = [&] {
      adoptContext(context);
      for (size_t index; (index = next++) < count;) {
        const kfuse_warmup_job &job = jobs[index];
        if (job.update && job.norm)
          results[index] =
              fail(KFUSE_INVALID_ARGUMENT, "names both an update and a norm");
        else if (job.update)
          results[index] = kfuse_update_compile(job.update, job.args, job.nargs,
                                                job.fuse, nullptr);
        else if (job.norm)
          results[index] = kfuse_norm_compile(job.norm, job.args, job.nargs,
                                              job.rows, job.cols, nullptr);
        else
          results[index] = fail(KFUSE_INVALID_ARGUMENT,
                                "names neither an update nor a norm");
        if (results[index] != KFUSE_OK)
          messages[index] = kfuse_last_error();
      }
    };
    unsigned workers = threads > 0
                           ? unsigned(threads)
                           : std::max(1u, std::thread::hardware_concurrency());
    workers = unsigned(std::min<size_t>(workers, count));
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < workers; ++i)
      pool.emplace_back(work);
    work(); // the calling thread takes jobs too
    for (std::thread &thread : pool)
      thread.join();
    if (statuses)
      std::copy(results.begin(), results.end(), statuses);
    for (size_t index = 0; index < count; ++index)
      if (results[index] != KFUSE_OK)
        return fail(results[index], "warm-up job " + std::to_string(index) +
                                        ": " + messages[index]);
    return succeed();
  });
}

kfuse_status kfuse_norm_bytes(const kfuse_norm *norm, const int32_t *dtypes,
                              size_t ndtypes, int64_t rows, int64_t cols,
                              uint64_t *out) {
  return guarded([&] {
    if (!norm || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "norm or out is null");
    llvm::ArrayRef<ArgInfo> infos = norm->norm->args();
    if (dtypes && ndtypes != infos.size())
      return fail(KFUSE_INVALID_ARGUMENT,
                  "expected " + std::to_string(infos.size()) +
                      " dtypes (one per argument), got " +
                      std::to_string(ndtypes));
    if (rows < 0 || cols < 1)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "rows must be at least 0 and cols at least 1, got " +
                      std::to_string(rows) + " x " + std::to_string(cols));
    std::vector<DType> storage;
    if (dtypes) {
      for (size_t i = 0; i < ndtypes; ++i) {
        if (infos[i].role == ArgRole::hyper) {
          storage.push_back(DType::f32);
          continue;
        }
        std::optional<DType> dtype = dtypeOfCode(dtypes[i]);
        if (!dtype)
          return fail(KFUSE_INVALID_ARGUMENT, "tensor '" + infos[i].name +
                                                  "' has unknown dtype code " +
                                                  std::to_string(dtypes[i]));
        storage.push_back(*dtype);
      }
    }
    std::optional<uint64_t> bytes =
        normMinimumBytes(infos, storage, rows, cols);
    if (!bytes)
      return fail(KFUSE_INVALID_ARGUMENT,
                  "the bytes of " + std::to_string(rows) + " x " +
                      std::to_string(cols) + " do not fit 64 bits");
    *out = *bytes;
    return succeed();
  });
}

} // extern "C"
