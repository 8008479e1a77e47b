import ctypes
import pathlib
import sys

import kfuse
from kfuse._capi import (BF16, F32, LEVEL_NAMES, ROLE_NAMES, STATUS_NAMES,
                         ArgInfoStruct, ArgStruct, norm_lib)

library = pathlib.Path(sys.argv[1])
norms = {}
for name in ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd",
             "add_layernorm_fwd"):
    norm = kfuse.Norm(str(library / f"{name}.mlir"))
    norms[name] = norm
    print(f"{name}: " + " ".join(
        f"{a.name}:{a.role}:{a.level}" +
        (f"={a.default:.3g}" if a.default is not None else "")
        for a in norm.args) + f" launches={norm.launches}")
try:
    kfuse.Norm(sys.argv[2])
except kfuse.KfuseError as error:
    print("not a norm:", error.status, error)
try:
    kfuse.Norm("/nonexistent/norm.mlir")
except kfuse.KfuseError as error:
    print("no file:", error.status, error)

ln = norms["layernorm_fwd"]
print("bytes f32:", ln.bytes(7, 4096))
print("bytes bf16 x/y:", ln.bytes(7, 4096, {"x": "bf16", "y": "bf16"}))

# Launches through the C API with fake device addresses (never touched).
lib = norm_lib()
ROWS, COLS = 7, 4096


def args_for(norm, rows=ROWS, cols=COLS, **changes):
    args = (ArgStruct * len(norm.args))()
    for i, info in enumerate(norm.args):
        a = args[i]
        if info.role == "hyper":
            a.value = info.default
            continue
        a.data = 0x100000 * (i + 1)
        a.numel = {"element": rows * cols, "row": rows,
                  "column": cols}[info.level]
        a.dtype = F32
        for key, value in changes.get(info.name, {}).items():
            setattr(a, key, value)
    return args


def launch(what, norm, args, count=None, rows=ROWS, cols=COLS):
    status = lib.kfuse_norm_launch(norm._handle, args,
                                   len(norm.args) if count is None else count,
                                   rows, cols, None)
    if status == 0:
        print(f"{what}: OK")
    else:
        print(f"{what}:", STATUS_NAMES[status],
              lib.kfuse_last_error().decode())


launch("count", ln, args_for(ln), count=len(ln.args) - 1)
launch("weight numel", ln, args_for(ln, weight={"numel": 1000}))
launch("x numel", ln, args_for(ln, x={"numel": ROWS * COLS - 1}))
launch("mean numel", ln, args_for(ln, mean={"numel": ROWS + 1}))
launch("dtype code", ln, args_for(ln, y={"dtype": 9}))
launch("null y", ln, args_for(ln, y={"data": None}))
launch("cols 0", ln, args_for(ln), cols=0)
launch("rows -1", ln, args_for(ln), rows=-1)
launch("rows 0", ln, args_for(ln, rows=0), rows=0)
try:
    kfuse.device_arch()
    print("launch: skipped (GPU present)")
except kfuse.KfuseError:
    launch("launch", ln, args_for(ln, x={"dtype": BF16}))
# kfuse_norm_launch_if_ready checks as kfuse_norm_launch does, before it
# needs a device.
status = lib.kfuse_norm_launch_if_ready(
    ln._handle, args_for(ln, mean={"numel": ROWS + 1}), len(ln.args), ROWS,
    COLS, None)
print("if ready, mean numel:", STATUS_NAMES[status],
      lib.kfuse_last_error().decode())
print("null norm:", lib.kfuse_norm_num_launches(None),
      STATUS_NAMES[lib.kfuse_norm_launch(None, None, 0, 1, 1, None)],
      lib.kfuse_last_error().decode())
print("torch imported:", "torch" in sys.modules)
# One entry for either kind: kfuse.Kernel makes the object of the kind the
# source holds, and the C API describes both kinds' arguments alike.
for path in (sys.argv[1] + "/layernorm_bwd.mlir", sys.argv[2]):
    kernel = kfuse.Kernel(path)
    info = ArgInfoStruct()
    described = []
    for index in range(lib.kfuse_kernel_num_args(kernel._kernel)):
        kfuse.check(lib.kfuse_kernel_arg_info(kernel._kernel, index,
                                              ctypes.byref(info)))
        described.append(f"{info.name.decode()}:"
                         f"{ROLE_NAMES[info.role]}:"
                         f"{LEVEL_NAMES[info.level]}")
    print("kernel:", type(kernel).__name__, kernel.kind,
          isinstance(kernel, kfuse.Kernel), " ".join(described[:4]))
print("null kernel:", lib.kfuse_kernel_get_kind(None),
      lib.kfuse_kernel_num_args(None), lib.kfuse_kernel_update(None),
      STATUS_NAMES[lib.kfuse_kernel_launch(None, None, 0, 0, 0, None)],
      lib.kfuse_last_error().decode())
