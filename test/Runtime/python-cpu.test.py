import sys

import kfuse

update = kfuse.Update(sys.argv[1])
print("args: " + " ".join(
    f"{a.name}:{a.role}" + (f"={a.default:.3g}" if a.default is not None else "")
    for a in update.args))
try:
    kfuse.Update(sys.argv[2])
except kfuse.KfuseError as error:
    print("parse error:", error)
try:
    print("device:", kfuse.device_arch())
except kfuse.KfuseError as error:
    print("device: unavailable:", error)

# Multi-tensor plans through the C API (no PyTorch here): a dtype mismatch
# across groups is reported before anything needs a driver; a valid list
# then fails with the missing driver (or, on a GPU machine, builds a plan).
import ctypes

from kfuse._capi import ArgStruct, BF16, F32, STATUS_NAMES, lib

nargs = len(update.args)


def groups(dtypes):
    args = (ArgStruct * (len(dtypes) * nargs))()
    for g, dtype in enumerate(dtypes):
        for i, info in enumerate(update.args):
            a = args[g * nargs + i]
            if info.role == "hyper":
                a.value = info.default if info.default is not None else 0.0
            else:
                a.data = 0x100000 * (g * nargs + i + 1)
                a.numel = 1000 + g
                a.dtype = dtype
    return args


plan = ctypes.c_void_p()
status = lib().kfuse_plan_create(update._handle, groups([F32, BF16]), 2, nargs,
                                 0, ctypes.byref(plan))
print("plan mixed dtypes:", STATUS_NAMES[status],
      lib().kfuse_last_error().decode())
status = lib().kfuse_plan_create(update._handle, groups([F32, F32]), 2, nargs - 1,
                                 0, ctypes.byref(plan))
print("plan bad layout:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
status = lib().kfuse_plan_create(update._handle, groups([F32, F32]), 2, nargs,
                                 2, ctypes.byref(plan))
print("plan master weights:", STATUS_NAMES[status],
      lib().kfuse_last_error().decode())
status = lib().kfuse_plan_create(update._handle, groups([F32, F32]), 2, nargs,
                                 32, ctypes.byref(plan))
print("plan flags:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
status = lib().kfuse_plan_create(update._handle, groups([F32, F32]), 2, nargs,
                                 16, ctypes.byref(plan))
print("plan external norm:", STATUS_NAMES[status],
      lib().kfuse_last_error().decode())
status = lib().kfuse_plan_create(update._handle, groups([F32, F32]), 2, nargs,
                                 1, ctypes.byref(plan))
if status == 0:
    print("plan: created (GPU present)")
    lib().kfuse_plan_destroy(plan)
else:
    print("plan:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
print("null plan:", lib().kfuse_plan_num_launches(None),
      lib().kfuse_plan_num_chunks(None),
      lib().kfuse_plan_matches(None, None, 0, 0),
      STATUS_NAMES[lib().kfuse_plan_step(None, None)])

# kfuse_update_compile: argument checks first, then the driver (or, on a
# GPU machine, a compile: a miss or disk hit, then a memory hit).
class CompileInfo(ctypes.Structure):
    _fields_ = [("cache", ctypes.c_int32), ("ms", ctypes.c_double)]


compile_update = lib().kfuse_update_compile
compile_update.argtypes = [ctypes.c_void_p, ctypes.POINTER(ArgStruct),
                           ctypes.c_size_t, ctypes.c_int,
                           ctypes.POINTER(CompileInfo)]
info = CompileInfo()
status = compile_update(None, None, 0, 1, ctypes.byref(info))
print("compile null:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
status = compile_update(update._handle, groups([F32]), nargs - 1, 1,
                        ctypes.byref(info))
print("compile count:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
status = compile_update(update._handle, groups([F32]), nargs, 1,
                        ctypes.byref(info))
if status == 0:
    first = info.cache
    compile_update(update._handle, groups([F32]), nargs, 1, ctypes.byref(info))
    print("compile:", "miss-or-disk" if first in (0, 2) else first,
          "then", info.cache)
else:
    print("compile:", STATUS_NAMES[status], lib().kfuse_last_error().decode())


# kfuse_warmup: jobs checked and compiled on worker threads; each job's
# status comes back, the first failure names its job.
class WarmupJob(ctypes.Structure):
    _fields_ = [("update", ctypes.c_void_p), ("norm", ctypes.c_void_p),
                ("args", ctypes.POINTER(ArgStruct)), ("nargs", ctypes.c_size_t),
                ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("fuse", ctypes.c_int)]


warmup = lib().kfuse_warmup
warmup.argtypes = [ctypes.POINTER(WarmupJob), ctypes.c_size_t, ctypes.c_int,
                   ctypes.POINTER(ctypes.c_int)]
good = groups([F32])
jobs = (WarmupJob * 3)()
jobs[0].update, jobs[0].args, jobs[0].nargs, jobs[0].fuse = update._handle, good, nargs, 1
jobs[1].update, jobs[1].args, jobs[1].nargs = update._handle, good, nargs - 1
statuses = (ctypes.c_int * 3)()
status = warmup(jobs, 3, 2, statuses)
print("warmup:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
print("warmup statuses:", " ".join(STATUS_NAMES[s] for s in statuses))
print("warmup none:", STATUS_NAMES[warmup(None, 0, 0, None)])
