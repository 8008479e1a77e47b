import ctypes
import math
import random
import sys

import kfuse
from kfuse._capi import F32, HostArgStruct, STATUS_NAMES, lib

novograd = kfuse.Update(sys.argv[1])
print("exp_avg_sq level:",
      next(a.level for a in novograd.args if a.name == "exp_avg_sq"))
DEFAULTS = {a.name: a.default for a in novograd.args if a.role == "hyper"}
rng = random.Random(7)
N = 257


def interpret(values, hypers, norm_size=1):
    args = (HostArgStruct * len(novograd.args))()
    arrays = {}
    for index, info in enumerate(novograd.args):
        if info.role == "hyper":
            args[index].value = hypers[info.name]
            continue
        data = values[info.name]
        if info.level == "tensor":
            data = data * norm_size
        arrays[info.name] = (ctypes.c_double * len(data))(*data)
        args[index].data = arrays[info.name]
        args[index].numel = len(data)
        args[index].dtype = F32
    status = lib().kfuse_update_interpret(novograd._handle, args, len(args))
    if status:
        return STATUS_NAMES[status] + " " + lib().kfuse_last_error().decode()
    return {name: list(array) for name, array in arrays.items()}


def apex_step(values, h):
    """Apex's FusedNovoGrad on one tensor, in float64."""
    p, g, m = values["param"], values["grad"], values["exp_avg"]
    (v,) = values["exp_avg_sq"]
    b1, b2, t = h["beta1"], h["beta2"], h["step"]
    if h["norm_type"] == 0:
        n = max(abs(x) for x in g)
        blend = b2 * v + (1 - b2) * n
    else:
        n = math.sqrt(sum(x * x for x in g))
        blend = math.sqrt(b2 * v * v + (1 - b2) * n * n)
    v = n if h["init_from_norm"] else blend
    bc1 = 1 - b1 ** t if h["bias_correction"] else 1.0
    bc2 = math.sqrt(1 - b2 ** t) if h["bias_correction"] else 1.0
    b3 = 1 - b1 if h["grad_averaging"] else 1.0
    d = v / bc2 + h["eps"]
    wd = h["weight_decay"]
    out_p, out_m = [], []
    for pi, gi, mi in zip(p, g, m):
        if h["reg_inside_moment"]:
            mi = b1 * mi + b3 * (gi / d + wd * pi)
            pi = pi - h["lr"] * mi / bc1
        else:
            mi = b1 * mi + b3 * gi
            pi = pi - h["lr"] * ((mi / bc1) / d + wd * pi)
        out_p.append(pi)
        out_m.append(mi)
    return {"param": out_p, "grad": g, "exp_avg": out_m, "exp_avg_sq": [v]}


def f32(x):
    return ctypes.c_float(x).value


def run(name, **changes):
    values = {"param": [f32(rng.gauss(0, 1)) for _ in range(N)],
              "exp_avg": [f32(rng.gauss(0, 0.1)) for _ in range(N)],
              "exp_avg_sq": [f32(abs(rng.gauss(0, 3)))]}
    expected = dict(values)
    worst = 0.0
    for step in (1, 2, 3):
        grad = [f32(rng.gauss(0, 1)) for _ in range(N)]
        h = dict(DEFAULTS, lr=1e-2, step=float(step), **changes)
        if name == "init_from_norm":
            h["init_from_norm"] = 1.0 if step == 1 else 0.0
        got = interpret(dict(values, grad=grad), h)
        expected = apex_step(dict(expected, grad=grad), h)
        # Relative to each tensor's largest magnitude, as kfuse check does.
        for key in ("param", "exp_avg", "exp_avg_sq"):
            scale = max(abs(b) for b in expected[key])
            worst = max(worst, max(abs(a - b) for a, b in
                                   zip(got[key], expected[key])) / scale)
        values = {k: got[k] for k in ("param", "exp_avg", "exp_avg_sq")}
    print(f"{name}: {'ok' if worst < 2e-6 else f'error {worst:.3e}'}")


run("default")
run("init_from_norm")
run("norm_type 0", norm_type=0.0)
run("reg_inside_moment", reg_inside_moment=1.0)
run("no bias correction, no averaging", bias_correction=0.0,
    grad_averaging=0.0)
run("weight decay", weight_decay=0.1)
values = {"param": [1.0] * 4, "grad": [1.0] * 4, "exp_avg": [0.0] * 4,
          "exp_avg_sq": [0.5]}
print("norm of 3 elements:",
      interpret(values, dict(DEFAULTS, step=1.0), norm_size=3))
