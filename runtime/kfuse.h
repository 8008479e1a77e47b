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
  KFUSE_INTERNAL = 7          /* a bug in kfuse */
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
KFUSE_API kfuse_status kfuse_update_arg_info(const kfuse_update *update,
                                             size_t index, kfuse_arg_info *out);

/* Checks the arguments, compiles on first use of a specialization (cached
 * per process) and launches on `stream` (a CUstream; NULL: the legacy default
 * stream) in the current CUDA context, or device 0's primary context when
 * the thread has none. `fuse` = 0 launches one kernel per operation. */
KFUSE_API kfuse_status kfuse_update_launch(kfuse_update *update,
                                           const kfuse_arg *args, size_t nargs,
                                           void *stream, int fuse);

/* Writes the current device's arch ("sm_90") into `buf`. */
KFUSE_API kfuse_status kfuse_device_arch(char *buf, size_t len);

/* The message of this thread's last failure ("" when none). */
KFUSE_API const char *kfuse_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KFUSE_H */
