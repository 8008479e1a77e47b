//===- CApiKernel.cpp - the C API over a kernel of either kind ------------===//
//
// The kfuse_kernel_* functions of kfuse.h: one handle for any kernel source,
// whose kind's own functions take the update or norm handle it holds.
//
//===----------------------------------------------------------------------===//

#include "runtime/kfuse.h"

#include "runtime/CApiSupport.h"

#include <string>

using namespace kfuse;
using namespace kfuse::capi;

namespace {

/// The kernel handle of `kernel`, with the view of its kind.
kfuse_kernel *kernelHandle(std::unique_ptr<Kernel> kernel) {
  auto *handle = new kfuse_kernel{std::move(kernel), {}, {}};
  if (handle->kernel->kind() == KernelKind::update)
    handle->updateView.update = static_cast<Update *>(handle->kernel.get());
  else
    handle->normView.norm = static_cast<Norm *>(handle->kernel.get());
  return handle;
}

/// Fails unless `kernel` is set and `rows` x `cols` fits its kind: 0 x 0 for
/// an update (its tensors' lengths are its extent).
kfuse_status checkExtents(const kfuse_kernel *kernel, int64_t rows,
                          int64_t cols) {
  if (!kernel)
    return fail(KFUSE_INVALID_ARGUMENT, "kernel is null");
  if (kernel->kernel->kind() == KernelKind::update && (rows != 0 || cols != 0))
    return fail(KFUSE_INVALID_ARGUMENT,
                "'" + kernel->kernel->sourceName().str() +
                    "' is an update: its extent is its tensors' length, so "
                    "rows and cols must be 0, got " +
                    std::to_string(rows) + " x " + std::to_string(cols));
  return KFUSE_OK;
}

} // namespace

extern "C" {

kfuse_status kfuse_kernel_create(const char *ir_text, const char *source_name,
                                 kfuse_kernel **out) {
  return createKernelHandle(ir_text, source_name, /*fromFile=*/false,
                            std::nullopt, out, kernelHandle);
}

kfuse_status kfuse_kernel_create_from_file(const char *path,
                                           kfuse_kernel **out) {
  return createKernelHandle(path, nullptr, /*fromFile=*/true, std::nullopt, out,
                            kernelHandle);
}

void kfuse_kernel_destroy(kfuse_kernel *kernel) { delete kernel; }

int kfuse_kernel_get_kind(const kfuse_kernel *kernel) {
  if (!kernel)
    return -1;
  return kernel->kernel->kind() == KernelKind::norm ? KFUSE_KIND_NORM
                                                    : KFUSE_KIND_UPDATE;
}

size_t kfuse_kernel_num_args(const kfuse_kernel *kernel) {
  return kernel ? kernel->kernel->args().size() : 0;
}

kfuse_status kfuse_kernel_arg_info(const kfuse_kernel *kernel, size_t index,
                                   kfuse_arg_info *out) {
  return guarded([&] {
    if (!kernel || !out)
      return fail(KFUSE_INVALID_ARGUMENT, "kernel or out is null");
    return describeArg(kernel->kernel->args(), index, "kernel", out);
  });
}

kfuse_update *kfuse_kernel_update(kfuse_kernel *kernel) {
  return kernel && kernel->updateView.update ? &kernel->updateView : nullptr;
}

kfuse_norm *kfuse_kernel_norm(kfuse_kernel *kernel) {
  return kernel && kernel->normView.norm ? &kernel->normView : nullptr;
}

kfuse_status kfuse_kernel_launch(kfuse_kernel *kernel, const kfuse_arg *args,
                                 size_t nargs, int64_t rows, int64_t cols,
                                 void *stream) {
  if (kfuse_status status = checkExtents(kernel, rows, cols))
    return status;
  if (kfuse_update *update = kfuse_kernel_update(kernel))
    return kfuse_update_launch(update, args, nargs, stream, /*fuse=*/1);
  return kfuse_norm_launch(kfuse_kernel_norm(kernel), args, nargs, rows, cols,
                           stream);
}

kfuse_status kfuse_kernel_compile(kfuse_kernel *kernel, const kfuse_arg *args,
                                  size_t nargs, int64_t rows, int64_t cols,
                                  kfuse_compile_info *info) {
  if (kfuse_status status = checkExtents(kernel, rows, cols))
    return status;
  if (kfuse_update *update = kfuse_kernel_update(kernel))
    return kfuse_update_compile(update, args, nargs, /*fuse=*/1, info);
  return kfuse_norm_compile(kfuse_kernel_norm(kernel), args, nargs, rows, cols,
                            info);
}

} // extern "C"
