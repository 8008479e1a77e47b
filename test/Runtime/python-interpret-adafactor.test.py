import ctypes
import math
import random
import sys

import kfuse
from kfuse._capi import ArgStruct, F32, HostArgStruct, STATUS_NAMES, lib

adafactor = kfuse.Update(sys.argv[1])
adamw = kfuse.Update(sys.argv[2])
vector = kfuse.Update(sys.argv[3])
print("levels:", ", ".join(f"{a.name} {a.level}" for a in adafactor.args
                          if a.role != "hyper"))
DEFAULTS = {a.name: a.default for a in adafactor.args if a.role == "hyper"}
rng = random.Random(11)


def pack(update, values, hypers):
    args = (HostArgStruct * len(update.args))()
    arrays = {}
    for index, info in enumerate(update.args):
        if info.role == "hyper":
            args[index].value = hypers.get(info.name, info.default or 0.0)
            continue
        data = values[info.name]
        arrays[info.name] = (ctypes.c_double * len(data))(*data)
        args[index].data = arrays[info.name]
        args[index].numel = len(data)
        args[index].dtype = F32
    return args, arrays


def result(status, arrays):
    if status:
        return STATUS_NAMES[status] + " " + lib().kfuse_last_error().decode()
    return {name: list(array) for name, array in arrays.items()}


def interpret(values, hypers, rows, cols):
    args, arrays = pack(adafactor, values, hypers)
    return result(lib().kfuse_update_interpret_matrix(
        adafactor._handle, args, len(args), rows, cols), arrays)


def lerp(start, end, weight):
    # torch's lerp: from the nearer end.
    if weight < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


def torch_step(values, h, rows, cols):
    """torch.optim.Adafactor's step on one 2-D param, in float64."""
    p, g = values["param"], values["grad"]
    t = h["step"]
    b = t ** h["beta2_decay"]
    rho = min(h["lr"], 1 / math.sqrt(t))
    numel = rows * cols
    alpha = max(h["eps2"], math.sqrt(sum(x * x for x in p)) /
                math.sqrt(numel)) * rho
    p = [x * (1 - h["lr"] * h["weight_decay"]) for x in p]
    at = lambda r, c: g[r * cols + c]  # noqa: E731
    row = [lerp(values["row_var"][r],
                sum(at(r, c) ** 2 for c in range(cols)) / cols, b)
           for r in range(rows)]
    col = [lerp(values["col_var"][c],
                sum(at(r, c) ** 2 for r in range(rows)) / rows, b)
           for c in range(cols)]
    row_mean = max(sum(row) / rows, h["eps1"])
    u = [at(r, c) / math.sqrt(max(row[r] * col[c] / row_mean,
                                  h["eps1"] ** 2))
         for r in range(rows) for c in range(cols)]
    denom = max(1.0, math.sqrt(sum(x * x for x in u) / numel) / h["d"])
    p = [x - alpha / denom * y for x, y in zip(p, u)]
    return {"param": p, "row_var": row, "col_var": col}


def f32(x):
    return ctypes.c_float(x).value


def run(name, rows=5, cols=7, zero_states=False, **changes):
    values = {"param": [f32(rng.gauss(0, 1)) for _ in range(rows * cols)]}
    for key, size in (("row_var", rows), ("col_var", cols)):
        values[key] = [0.0 if zero_states else f32(abs(rng.gauss(0, 0.1)))
                       for _ in range(size)]
    expected = dict(values)
    worst = 0.0
    for step in (1, 2, 3):
        grad = [f32(rng.gauss(0, 1)) for _ in range(rows * cols)]
        h = dict(DEFAULTS, step=float(step), **changes)
        got = interpret(dict(values, grad=grad), h, rows, cols)
        if isinstance(got, str):
            print(f"{name}: {got}")
            return
        expected = torch_step(dict(expected, grad=grad), h, rows, cols)
        # Relative to each tensor's largest magnitude, as kfuse check does.
        for key in ("param", "row_var", "col_var"):
            scale = max(max(abs(b) for b in expected[key]), 1e-30)
            worst = max(worst, max(abs(a - b) for a, b in
                                   zip(got[key], expected[key])) / scale)
        values = {k: got[k] for k in ("param", "row_var", "col_var")}
    print(f"{name}: {'ok' if worst < 2e-6 else f'error {worst:.3e}'}")


run("zero states", zero_states=True)
run("random states")
run("weight decay, d = 0.5", zero_states=True, weight_decay=0.1, d=0.5)
run("single row", rows=1, cols=9, zero_states=True)

def torch_vector_step(values, h):
    """torch.optim.Adafactor's step on a vector param, in float64."""
    p, g, v = values["param"], values["grad"], values["variance"]
    t = h["step"]
    b = t ** h["beta2_decay"]
    rho = min(h["lr"], 1 / math.sqrt(t))
    alpha = max(h["eps2"], math.sqrt(sum(x * x for x in p) / len(p))) * rho
    p = [x * (1 - h["lr"] * h["weight_decay"]) for x in p]
    v = [lerp(vi, gi * gi, b) for vi, gi in zip(v, g)]
    u = [gi / math.sqrt(max(vi, h["eps1"] ** 2)) for gi, vi in zip(g, v)]
    denom = max(1.0, math.sqrt(sum(x * x for x in u) / len(u)) / h["d"])
    return {"param": [x - alpha / denom * y for x, y in zip(p, u)],
            "variance": v}


def run_vector(name, n=301, **changes):
    values = {"param": [f32(rng.gauss(0, 1)) for _ in range(n)],
              "variance": [0.0] * n}
    expected = dict(values)
    worst = 0.0
    for step in (1, 2, 3):
        grad = [f32(rng.gauss(0, 1)) for _ in range(n)]
        h = dict(DEFAULTS, step=float(step), **changes)
        args, arrays = pack(vector, dict(values, grad=grad), h)
        got = result(lib().kfuse_update_interpret(vector._handle, args,
                                                  len(args)), arrays)
        if isinstance(got, str):
            print(f"{name}: {got}")
            return
        expected = torch_vector_step(dict(expected, grad=grad), h)
        for key in ("param", "variance"):
            scale = max(abs(b) for b in expected[key])
            worst = max(worst, max(abs(a - b) for a, b in
                                   zip(got[key], expected[key])) / scale)
        values = {k: got[k] for k in ("param", "variance")}
    print(f"{name}: {'ok' if worst < 2e-6 else f'error {worst:.3e}'}")


run_vector("vector, zero state")
run_vector("vector, weight decay, d = 0.5", weight_decay=0.1, d=0.5)

short = {"param": [0.5] * 35, "grad": [1.0] * 35, "row_var": [0.0] * 4,
         "col_var": [0.0] * 7}
print("short row_var:", interpret(short, dict(DEFAULTS), 5, 7))
args, arrays = pack(adafactor, dict(short, row_var=[0.0] * 5), DEFAULTS)
print("1-D entry:", result(lib().kfuse_update_interpret(
    adafactor._handle, args, len(args)), arrays))
group = (ArgStruct * len(adafactor.args))()
for index, info in enumerate(adafactor.args):
    group[index].value = info.default or 0.0
    if info.role != "hyper":
        group[index].data = ctypes.cast(args[index].data, ctypes.c_void_p)
        group[index].numel = args[index].numel
plan = ctypes.c_void_p()
status = lib().kfuse_plan_create(adafactor._handle, group, 1, len(group), 0,
                                 ctypes.byref(plan))
print("launch plan:", STATUS_NAMES[status], lib().kfuse_last_error().decode())
flat = {"param": [0.5] * 6, "grad": [1.0] * 6, "exp_avg": [0.0] * 6,
        "exp_avg_sq": [0.0] * 6}
args, arrays = pack(adamw, flat, {"step": 1.0})
print("2-D entry on adamw:", result(lib().kfuse_update_interpret_matrix(
    adamw._handle, args, len(args), 2, 3), arrays))
