/*===- kfuse.h - C API of the kfuse runtime ------------------------------===*\
|*                                                                          *|
|* Compiles optimizer updates written in the kfuse dialect to fused CUDA    *|
|* kernels at run time and launches them on caller-owned device memory.     *|
|* Every function returns a kfuse_status; on failure kfuse_last_error()     *|
|* holds the message (per thread). Valid C11 and C++.                       *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef KFUSE_H
#define KFUSE_H

#include <stddef.h>
#include <stdint.h>

#include "kfuse_version.h"

#if defined(_WIN32)
#define KFUSE_API
#else
#define KFUSE_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kfuse_status {
  KFUSE_OK = 0,
  KFUSE_INVALID_ARGUMENT = 1, /* bad arguments: counts, sizes, dtypes, null */
  KFUSE_PARSE = 2,            /* the update IR does not parse or verify */
  KFUSE_COMPILE = 3,          /* code generation or NVRTC failed */
  KFUSE_NO_DRIVER = 4,        /* libcuda.so.1 missing or unusable */
  KFUSE_NO_DEVICE = 5,        /* a driver but no CUDA device */
  KFUSE_LAUNCH = 6,           /* a CUDA driver call failed */
  KFUSE_INTERNAL = 7,         /* a bug in kfuse */
  KFUSE_NOT_READY = 8         /* kfuse_norm_launch_if_ready: not launched */
} kfuse_status;

/* Storage dtypes of tensor arguments. */
typedef enum kfuse_dtype {
  KFUSE_F32 = 0,
  KFUSE_BF16 = 1,
  KFUSE_F16 = 2
} kfuse_dtype;

/* Roles of update arguments. */
typedef enum kfuse_role {
  KFUSE_ROLE_PARAM = 0,
  KFUSE_ROLE_GRAD = 1,
  KFUSE_ROLE_STATE = 2,
  KFUSE_ROLE_HYPER = 3
} kfuse_role;

typedef struct kfuse_update kfuse_update;

typedef struct kfuse_arg_info {
  const char *name; /* valid while the update lives */
  int32_t role;     /* a kfuse_role */
  int32_t has_default;
  double default_value;
  int32_t level; /* 0: per element (a tensor of the param's shape); 1: per
                    tensor (a state of one f32 per tensor group, bound as a
                    one-element f32 tensor); in a 2-D update, 2: per row
                    (rows x 1), 3: per column (1 x cols) */
} kfuse_arg_info;

/* One launch argument, in the update's argument order. A tensor gives a
 * device pointer, its element count and a kfuse_dtype (value unused); a
 * hyperparameter gives data = NULL and its value. */
typedef struct kfuse_arg {
  const void *data;
  int64_t numel;
  int32_t dtype;
  double value;
} kfuse_arg;

/* Parses an update from IR text; `source_name` names it in diagnostics. */
KFUSE_API kfuse_status kfuse_update_create(const char *ir_text,
                                           const char *source_name,
                                           kfuse_update **out);
KFUSE_API kfuse_status kfuse_update_create_from_file(const char *path,
                                                     kfuse_update **out);
KFUSE_API void kfuse_update_destroy(kfuse_update *update);

/* The number of arguments; 0 for a null update. */
KFUSE_API size_t kfuse_update_num_args(const kfuse_update *update);
/* 1 when the update is 2-D (params as matrices, states per row or per
 * column): it runs as a plan with row lengths (kfuse_plan_create_matrix) and
 * is interpreted with kfuse_update_interpret_matrix. */
KFUSE_API int kfuse_update_is_matrix(const kfuse_update *update);
/* The row length a 2-D update's argument types fix (e.g. 256 for
 * tensor<?x256xf32> params), or 0 when they fix none (or for a null or 1-D
 * update). Its plans view every group's tensors, of any shape, as rows of
 * that length; a tensor whose size is not a multiple of it is an error. */
KFUSE_API int64_t kfuse_update_row_length(const kfuse_update *update);
KFUSE_API kfuse_status kfuse_update_arg_info(const kfuse_update *update,
                                             size_t index, kfuse_arg_info *out);

/* Checks the arguments, compiles on first use of a specialization (cached
 * per process) and launches on `stream` (a CUstream; NULL: the legacy default
 * stream) in the current CUDA context, or device 0's primary context when
 * the thread has none. `fuse` = 0 launches one kernel per operation. */
KFUSE_API kfuse_status kfuse_update_launch(kfuse_update *update,
                                           const kfuse_arg *args, size_t nargs,
                                           void *stream, int fuse);

/* Multi-tensor plans: one update over a whole list of tensor groups (one
 * group per model parameter: param, grad, states) in one launch a step. The
 * plan keeps the table of the groups' pointers and the hyperparameters in
 * device memory, so a step costs the host the same for 10 or 10,000 tensors
 * and a CUDA graph can capture it. */
typedef struct kfuse_plan kfuse_plan;

/* Builds a plan over `num_groups` groups. `tensors` holds num_groups *
 * args_per_group kfuse_args, group-major, one per update argument
 * (args_per_group = kfuse_update_num_args). Tensor slots give each group's
 * tensors; every group must have the same dtype per role (make one plan per
 * dtype signature). The hyper slots of group 0 give the initial
 * hyperparameters (a "step" hyper counts the steps already taken, usually
 * 0; each step computes with step + 1 and stores it); other groups' hyper
 * slots are ignored. `flags`: KFUSE_PLAN_GRAD_SCALING adds a last hyper
 * "inv_scale" (initially 1.0) multiplying every grad, and skips, on the
 * device, any step whose grads hold an inf or NaN; KFUSE_PLAN_MASTER_WEIGHTS
 * treats params as f32 master weights and writes, in the same pass, each
 * updated param to a model copy: then every group also passes, after the
 * update's arguments, one "<param>_model" tensor per param (bf16 or f16),
 * and args_per_group counts them. Compiles (cached per process) and uploads
 * the table once, in the current CUDA context (device 0's primary context
 * when the thread has none). The tensors must not move while the plan is
 * used: check with kfuse_plan_matches and rebuild when they did. Chunks
 * hold 16384 elements (KFUSE_CHUNK_ELEMENTS overrides, for measuring).
 * KFUSE_PLAN_CLIP_GRAD_NORM adds a hyper "max_grad_norm" (initially 1.0) and
 * scales the grads inside the update by min(max_grad_norm / (global norm +
 * 1e-6), 1), as torch's clip_grad_norm_ (the grads themselves are not
 * written); the squared norm is the list total "grad_norm_sq"
 * (kfuse_plan_total_slot). An update that has a hyper "global_grad_norm"
 * clips itself: the flag makes that hyper the norm computed in the plan.
 * With KFUSE_PLAN_CLIP_EXTERNAL_NORM too, the plan does not reduce the norm:
 * it adds a hyper "global_grad_norm" (0: no clipping) that the caller
 * computes, so that several plans clip by one norm.
 * An update with reductions runs its phases in one cooperative launch;
 * KFUSE_PLAN_SEPARATE_PHASES (or KFUSE_SEPARATE_PHASES=1 in the
 * environment) launches each phase on its own. */
enum {
  KFUSE_PLAN_GRAD_SCALING = 1,
  KFUSE_PLAN_MASTER_WEIGHTS = 2,
  KFUSE_PLAN_CLIP_GRAD_NORM = 4,
  KFUSE_PLAN_SEPARATE_PHASES = 8,
  KFUSE_PLAN_CLIP_EXTERNAL_NORM = 16
};
KFUSE_API kfuse_status kfuse_plan_create(kfuse_update *update,
                                         const kfuse_arg *tensors,
                                         size_t num_groups,
                                         size_t args_per_group, int flags,
                                         kfuse_plan **out);
/* kfuse_plan_create for a 2-D update (params as matrices, states per row or
 * per column; kfuse_arg_info.level 2 and 3): `cols` holds each group's row
 * length. A group's params and grads hold rows x cols elements (row-major,
 * contiguous), its states per row `rows` and per column `cols`. Chunks hold
 * whole rows. Grad scaling, clipping and master weights are not generated
 * for 2-D updates yet (an error says so). For a 1-D update `cols` must be
 * NULL, which is kfuse_plan_create. */
KFUSE_API kfuse_status kfuse_plan_create_matrix(
    kfuse_update *update, const kfuse_arg *tensors, size_t num_groups,
    size_t args_per_group, const int64_t *cols, int flags, kfuse_plan **out);
KFUSE_API void kfuse_plan_destroy(kfuse_plan *plan);

/* Launches one step on `stream` (a CUstream; NULL: the legacy default
 * stream): kfuse_plan_num_launches kernels, plus a 4-byte memset with grad
 * scaling. Capturable into a CUDA graph. */
KFUSE_API kfuse_status kfuse_plan_step(kfuse_plan *plan, void *stream);

/* Parts of a step, for several plans that must skip a step together: with
 * grad scaling, bind one found_inf flag to all of them
 * (kfuse_plan_bind_found_inf), then zero it and scan with the first plan
 * (KFUSE_STEP_ZERO_FOUND_INF | KFUSE_STEP_SCAN), scan with the others
 * (KFUSE_STEP_SCAN), and only then update with each (KFUSE_STEP_UPDATE).
 * kfuse_plan_step is all three. */
enum {
  KFUSE_STEP_ZERO_FOUND_INF = 1,
  KFUSE_STEP_SCAN = 2,
  KFUSE_STEP_UPDATE = 4
};
KFUSE_API kfuse_status kfuse_plan_step_phases(kfuse_plan *plan, int phases,
                                              void *stream);
/* Points tensor argument `arg_index` (a plan argument index, e.g. the grad)
 * of every group at new device memory of the same size and dtype:
 * `addresses` holds num_groups addresses, in group order. For grads that
 * backward reallocates (zero_grad(set_to_none=True)): the changed part of
 * the table is rewritten on `stream`, ordered after the steps already
 * queued there; refused while the stream is captured. Host cost grows with
 * num_groups, so call it only when an address changed. */
KFUSE_API kfuse_status kfuse_plan_rebind(kfuse_plan *plan, size_t arg_index,
                                         const uint64_t *addresses,
                                         size_t num_groups, void *stream);
/* 1 when `tensors` (laid out as for kfuse_plan_create) are the tensors the
 * plan was built on (pointers, sizes, dtypes), else 0. */
KFUSE_API int kfuse_plan_matches(const kfuse_plan *plan,
                                 const kfuse_arg *tensors, size_t num_groups,
                                 size_t args_per_group);

/* Hyperparameters by name ("lr", "step", "inv_scale", ...).
 * set/get synchronize the context around the copy; set_async orders the
 * write on `stream` and fails while that stream is being captured (a graph
 * reads the device slot at every replay: write the slot from device code,
 * e.g. a framework tensor bound with kfuse_plan_bind_hypers). */
KFUSE_API kfuse_status kfuse_plan_set_hyper(kfuse_plan *plan, const char *name,
                                            double value);
KFUSE_API kfuse_status kfuse_plan_set_hyper_async(kfuse_plan *plan,
                                                  const char *name,
                                                  double value, void *stream);
KFUSE_API kfuse_status kfuse_plan_get_hyper(kfuse_plan *plan, const char *name,
                                            double *out);
/* The device address of a hyper's slot: one double. */
KFUSE_API kfuse_status kfuse_plan_hyper_pointer(const kfuse_plan *plan,
                                                const char *name,
                                                uint64_t *device_address);
/* The device address of the found_inf flag (one float, nonzero after a
 * step whose grads were not finite); fails without grad scaling. */
KFUSE_API kfuse_status kfuse_plan_found_inf_pointer(const kfuse_plan *plan,
                                                    uint64_t *device_address);

/* Moves the hyperparameters into caller-owned device memory of
 * kfuse_plan_num_args doubles (slot i = plan argument i), copying the current
 * values on `stream`; the memory must outlive the plan's use of it. */
KFUSE_API kfuse_status kfuse_plan_bind_hypers(kfuse_plan *plan,
                                              uint64_t device_address,
                                              size_t num_slots, void *stream);
/* Moves the found_inf flag into caller-owned device memory (one float). */
KFUSE_API kfuse_status kfuse_plan_bind_found_inf(kfuse_plan *plan,
                                                 uint64_t device_address);

/* Plans of updates with reductions keep their totals (floats) on the
 * device, current after each step. The slot of the reduction over the list
 * named `name` (e.g. "grad_norm_sq" with KFUSE_PLAN_CLIP_GRAD_NORM), and the
 * floats the totals hold; fails for a name the plan lacks. */
KFUSE_API kfuse_status kfuse_plan_total_slot(const kfuse_plan *plan,
                                             const char *name, size_t *slot,
                                             size_t *num_floats);
/* Moves the totals into caller-owned device memory of at least num_floats
 * floats (kfuse_plan_total_slot), e.g. a framework tensor. */
KFUSE_API kfuse_status kfuse_plan_bind_totals(kfuse_plan *plan,
                                              uint64_t device_address,
                                              size_t num_floats);

/* The plan's arguments: the update's, then those it adds ("inv_scale"). */
KFUSE_API size_t kfuse_plan_num_args(const kfuse_plan *plan);
KFUSE_API kfuse_status kfuse_plan_arg_info(const kfuse_plan *plan, size_t index,
                                           kfuse_arg_info *out);
/* Kernel launches of kfuse_plan_step (1 per phase, or 1 for a cooperative
 * plan; 1 more for the found-inf scan with grad scaling, unless the first
 * phase scans the grads itself); 0 for a null plan. */
KFUSE_API size_t kfuse_plan_num_launches(const kfuse_plan *plan);
/* Kernel launches of kfuse_plan_step_phases(plan, phases, ...); 0 for a
 * null plan or phases outside KFUSE_STEP_*. */
KFUSE_API size_t kfuse_plan_num_launches_in(const kfuse_plan *plan, int phases);
/* Chunks in the plan's table; -1 for a null plan. */
KFUSE_API int64_t kfuse_plan_num_chunks(const kfuse_plan *plan);
/* Bytes one step moves over all its kernels (the grad scan included). */
KFUSE_API kfuse_status kfuse_plan_bytes_per_step(const kfuse_plan *plan,
                                                 uint64_t *out);

/* Writes the current device's arch ("sm_90") into `buf`. */
KFUSE_API kfuse_status kfuse_device_arch(char *buf, size_t len);

/* The message of this thread's last failure ("" when none). */
KFUSE_API const char *kfuse_last_error(void);

/* The loaded library's version, the KFUSE_VERSION_STRING it was built with
 * (compare it with this header's to catch a mismatched library). */
KFUSE_API const char *kfuse_version(void);

/* The NVRTC the library compiles with (13 and 0 for CUDA 13.0). */
KFUSE_API kfuse_status kfuse_nvrtc_version(int *major, int *minor);

/* The installed CUDA driver's version as cuDriverGetVersion gives it (13000
 * for 13.0), read without initializing the driver; KFUSE_NO_DRIVER where
 * libcuda.so.1 cannot be loaded. */
KFUSE_API kfuse_status kfuse_driver_version(int *version);

/* Where a compile found its module. */
typedef enum kfuse_cache_source {
  KFUSE_CACHE_MISS = 0,       /* generated and compiled with NVRTC */
  KFUSE_CACHE_HIT_MEMORY = 1, /* already loaded in this process */
  KFUSE_CACHE_HIT_DISK = 2    /* generated, the image read from disk */
} kfuse_cache_source;

typedef struct kfuse_compile_info {
  int32_t cache; /* a kfuse_cache_source */
  double ms;     /* wall time of the call */
} kfuse_compile_info;

/* Compiles what kfuse_update_launch with these arguments would run, in the
 * current CUDA context, without launching (a warm-up). May be called from
 * many threads at once: compiles of different modules run in parallel, and
 * concurrent calls for one module compile it once. `info` may be NULL. */
KFUSE_API kfuse_status kfuse_update_compile(kfuse_update *update,
                                            const kfuse_arg *args, size_t nargs,
                                            int fuse, kfuse_compile_info *info);

/* Compiles the update for a device of `arch` ("sm_90") as a launch with
 * float32 tensors (16-byte aligned, any element count) would run it, through
 * the disk cache, without a device or a driver: nothing is loaded. A check
 * that the compiler works (python -m kfuse doctor) and a warm-up of the
 * disk cache; a kernel with direct PTX is stored as its PTX, which the
 * driver compiles when a launch loads it. `info` may be NULL. */
KFUSE_API kfuse_status kfuse_update_compile_for_arch(const kfuse_update *update,
                                                     const char *arch, int fuse,
                                                     kfuse_compile_info *info);

/* One argument of kfuse_update_interpret: a tensor's values as doubles on
 * the host (numel of them, rounded to `dtype` as the GPU stores them, and
 * replaced where the update writes the tensor), or a hyperparameter's
 * value (data = NULL). */
typedef struct kfuse_host_arg {
  double *data;
  int64_t numel;
  int32_t dtype; /* a kfuse_dtype: the storage a launch would have */
  double value;
} kfuse_host_arg;

/* Runs the update once on host memory in kfuse's reference interpreter,
 * rounding as the GPU does (f32 arithmetic, storage dtypes), with no GPU:
 * the oracle kfuse's own tests compare kernels with. Slow: for checks. */
KFUSE_API kfuse_status kfuse_update_interpret(const kfuse_update *update,
                                              kfuse_host_arg *args,
                                              size_t nargs);

/* kfuse_update_interpret for a 2-D update (its params rows x cols matrices,
 * row-major, its states per element, per row (rows values) or per column
 * (cols values); kfuse_arg_info.level tells which): each tensor holds the
 * values its level needs, in the storage `dtype` gives it. One interpreter
 * and one path for both: kfuse_update_interpret is this with rows = cols =
 * 0. On the GPU a 2-D update runs as a plan (kfuse_plan_create_matrix). */
KFUSE_API kfuse_status kfuse_update_interpret_matrix(const kfuse_update *update,
                                                     kfuse_host_arg *args,
                                                     size_t nargs, int64_t rows,
                                                     int64_t cols);

/* Norms: a function marked kfuse.norm (LayerNorm, RMSNorm, forward or
 * backward; library/norm/) over `rows` rows of `cols` columns, compiled at
 * run time like updates. Its arguments are inputs, outputs and hypers; each
 * tensor is shaped full (rows x cols, row-major, rows contiguous), per row
 * (rows elements), per column (cols elements). Each tensor may have its own
 * dtype. A per-column output is a sum over the rows (dweight, dbias),
 * computed as per-block partials and a fixed-order second kernel: its bits
 * are the same every run for a given (rows, device). */
enum { KFUSE_ROLE_INPUT = 5, KFUSE_ROLE_OUTPUT = 6 };

typedef struct kfuse_norm kfuse_norm;

/* Parses a norm from IR text; `source_name` names it in diagnostics. */
KFUSE_API kfuse_status kfuse_norm_create(const char *ir_text,
                                         const char *source_name,
                                         kfuse_norm **out);
KFUSE_API kfuse_status kfuse_norm_create_from_file(const char *path,
                                                   kfuse_norm **out);
KFUSE_API void kfuse_norm_destroy(kfuse_norm *norm);

/* A norm's arguments are described by kfuse_kernel_num_args and
 * kfuse_kernel_arg_info (kfuse_kernel_create): a tensor's level is per
 * element (full), per row or per column. */
/* Kernels a launch with rows > 0 runs: 1, or 2 when the norm has per-column
 * outputs; 0 for a null norm. */
KFUSE_API size_t kfuse_norm_num_launches(const kfuse_norm *norm);

/* Checks the arguments (kfuse_args in the norm's argument order: a tensor's
 * numel must be rows * cols, rows or cols by its shape), compiles on first
 * use of a specialization (dtypes, cols, alignment; cached per process) and
 * launches on `stream` (a CUstream; NULL: the legacy default stream) in the
 * current CUDA context, or device 0's primary context when the thread has
 * none. Nothing is launched when a check fails. rows = 0 launches no kernel
 * but sets per-column outputs to zero. A norm with per-column outputs
 * allocates its workspace stream-ordered (capturable in a CUDA graph). */
KFUSE_API kfuse_status kfuse_norm_launch(kfuse_norm *norm,
                                         const kfuse_arg *args, size_t nargs,
                                         int64_t rows, int64_t cols,
                                         void *stream);

/* kfuse_norm_launch where that waits on neither the compiler nor the device:
 * the kernels for these arguments are already loaded by this norm in the
 * current context. Otherwise launches nothing and returns KFUSE_NOT_READY
 * (also under KFUSE_SYNC_LAUNCH), so that a caller holding a lock, such as
 * Python's GIL, holds it only through the launch and drops it to call
 * kfuse_norm_launch, which compiles. Argument errors are reported as by
 * kfuse_norm_launch. */
KFUSE_API kfuse_status kfuse_norm_launch_if_ready(kfuse_norm *norm,
                                                  const kfuse_arg *args,
                                                  size_t nargs, int64_t rows,
                                                  int64_t cols, void *stream);

/* Compiles what kfuse_norm_launch with these arguments would run, without
 * launching; as kfuse_update_compile. */
KFUSE_API kfuse_status kfuse_norm_compile(kfuse_norm *norm,
                                          const kfuse_arg *args, size_t nargs,
                                          int64_t rows, int64_t cols,
                                          kfuse_compile_info *info);

/* One compile of kfuse_warmup: an update (norm = NULL; rows, cols unused) or
 * a norm (update = NULL), with the arguments a launch would take. */
typedef struct kfuse_warmup_job {
  kfuse_update *update;
  kfuse_norm *norm;
  const kfuse_arg *args;
  size_t nargs;
  int64_t rows, cols; /* norms */
  int fuse;           /* updates */
} kfuse_warmup_job;

/* Compiles every job (kfuse_update_compile or kfuse_norm_compile) on up to
 * `threads` threads (0: one per hardware thread), in the calling thread's
 * CUDA context, and returns when all are done. `statuses` (NULL, or
 * `count` entries) receives each job's status; the return value is the
 * first failure in job order, with kfuse_last_error() naming the job. */
KFUSE_API kfuse_status kfuse_warmup(const kfuse_warmup_job *jobs, size_t count,
                                    int threads, kfuse_status *statuses);

/* The fewest bytes a launch over rows x cols moves (every tensor read or
 * written once) when argument i has kfuse_dtype dtypes[i] (hyper entries
 * ignored; dtypes = NULL: every tensor f32, else ndtypes = num_args). */
KFUSE_API kfuse_status kfuse_norm_bytes(const kfuse_norm *norm,
                                        const int32_t *dtypes, size_t ndtypes,
                                        int64_t rows, int64_t cols,
                                        uint64_t *out);

/* Any kernel source, either kind: one handle for an update and a norm. Its
 * arguments are described alike (kfuse_arg_info: a norm's inputs and
 * outputs have the roles KFUSE_ROLE_INPUT and KFUSE_ROLE_OUTPUT, its
 * per-row and per-column tensors the levels 2 and 3, its full tensors 0);
 * kfuse_kernel_launch launches either kind, and the functions of one kind
 * take the handle kfuse_kernel_update or kfuse_kernel_norm returns. */
typedef struct kfuse_kernel kfuse_kernel;

typedef enum kfuse_kernel_kind {
  KFUSE_KIND_UPDATE = 0,
  KFUSE_KIND_NORM = 1
} kfuse_kernel_kind;

/* Parses a kernel of either kind from IR text; `source_name` names it in
 * diagnostics. */
KFUSE_API kfuse_status kfuse_kernel_create(const char *ir_text,
                                           const char *source_name,
                                           kfuse_kernel **out);
KFUSE_API kfuse_status kfuse_kernel_create_from_file(const char *path,
                                                     kfuse_kernel **out);
KFUSE_API void kfuse_kernel_destroy(kfuse_kernel *kernel);

/* A kfuse_kernel_kind; -1 for a null kernel. */
KFUSE_API int kfuse_kernel_get_kind(const kfuse_kernel *kernel);
/* The number of arguments; 0 for a null kernel. */
KFUSE_API size_t kfuse_kernel_num_args(const kfuse_kernel *kernel);
KFUSE_API kfuse_status kfuse_kernel_arg_info(const kfuse_kernel *kernel,
                                             size_t index, kfuse_arg_info *out);

/* The kernel as an update or as a norm, for the functions of its kind (plans
 * of an update, a norm's bytes): NULL when it is the other kind. Valid while
 * the kernel lives; kfuse_update_destroy and kfuse_norm_destroy leave it
 * alone. */
KFUSE_API kfuse_update *kfuse_kernel_update(kfuse_kernel *kernel);
KFUSE_API kfuse_norm *kfuse_kernel_norm(kfuse_kernel *kernel);

/* Launches the kernel on `stream`: an update over one tensor group, fused
 * (rows = cols = 0; as kfuse_update_launch), a norm over rows x cols (as
 * kfuse_norm_launch). */
KFUSE_API kfuse_status kfuse_kernel_launch(kfuse_kernel *kernel,
                                           const kfuse_arg *args, size_t nargs,
                                           int64_t rows, int64_t cols,
                                           void *stream);

/* Compiles what kfuse_kernel_launch with these arguments would run, without
 * launching (as kfuse_update_compile and kfuse_norm_compile). */
KFUSE_API kfuse_status kfuse_kernel_compile(kfuse_kernel *kernel,
                                            const kfuse_arg *args, size_t nargs,
                                            int64_t rows, int64_t cols,
                                            kfuse_compile_info *info);

#ifdef __cplusplus
}
#endif

#endif /* KFUSE_H */
