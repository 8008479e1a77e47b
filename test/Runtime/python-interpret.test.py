import ctypes
import math
import struct
import sys

import kfuse
from kfuse._capi import BF16, F32, HostArgStruct, STATUS_NAMES, lib

adamw = kfuse.Update(sys.argv[1])
hypers = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
          "weight_decay": 0.1, "step": 1.0}
start = {"param": [0.5, -1.25, 2.0, 0.0], "grad": [0.1, -0.2, 0.3, 0.4],
         "exp_avg": [0.01, 0.0, -0.02, 0.0],
         "exp_avg_sq": [0.001, 0.0, 0.002, 0.0]}


def interpret(values, dtype=F32, count=None, sizes=None):
    args = (HostArgStruct * len(adamw.args))()
    arrays = {}
    for index, info in enumerate(adamw.args):
        if info.role == "hyper":
            args[index].value = hypers[info.name]
            continue
        data = values[info.name][:(sizes or {}).get(info.name)]
        arrays[info.name] = (ctypes.c_double * len(data))(*data)
        args[index].data = arrays[info.name]
        args[index].numel = len(data)
        args[index].dtype = dtype if info.role in ("param", "grad") else F32
    status = lib().kfuse_update_interpret(adamw._handle, args,
                                          count or len(args))
    if status:
        return STATUS_NAMES[status] + " " + lib().kfuse_last_error().decode()
    return {name: list(array) for name, array in arrays.items()}


# torch.optim.AdamW, in float64.
h = hypers
expected = []
for p, g, m, v in zip(*(start[n] for n in
                        ("param", "grad", "exp_avg", "exp_avg_sq"))):
    p *= 1 - h["lr"] * h["weight_decay"]
    m = h["beta1"] * m + (1 - h["beta1"]) * g
    v = h["beta2"] * v + (1 - h["beta2"]) * g * g
    m_hat = m / (1 - h["beta1"] ** h["step"])
    v_hat = v / (1 - h["beta2"] ** h["step"])
    expected.append(p - h["lr"] * m_hat / (math.sqrt(v_hat) + h["eps"]))
got = interpret(start)["param"]
error = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(got, expected))
print("f32 step: max relative error below 1e-6:", error < 1e-6)


def is_bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return bits & 0xFFFF == 0


print("bf16 param is bf16:", all(is_bf16(x)
                                 for x in interpret(start, BF16)["param"]))
print("too few args:", interpret(start, count=len(adamw.args) - 1))
args = (HostArgStruct * len(adamw.args))()
for index, info in enumerate(adamw.args):
    args[index].data = (ctypes.c_double * 4)()
    args[index].numel = 4
status = lib().kfuse_update_interpret(adamw._handle, args, len(args))
print("pointer for a hyper:", STATUS_NAMES[status],
      lib().kfuse_last_error().decode())
print("mixed sizes:", interpret(start, sizes={"grad": 3}))
