"""Driver of python-torch-ops-cpu.test (see there)."""

import importlib.util
import pathlib

import torch

import kfuse.torch.nn as knn
from kfuse.torch import _ops

ops = torch.ops.kfuse
for name in _ops._SCHEMAS:
    print(getattr(ops, name).default._schema)


def describe(tensors):
    return "[" + ", ".join(
        f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')} "
        f"{'contiguous' if t.is_contiguous() else 'strided'}"
        for t in tensors) + "]"


def meta(*shape, dtype=torch.float32):
    return torch.empty(shape, device="meta", dtype=dtype)


# Meta tensors reach the fake implementations (registered for them on
# torch < 2.2, used by fake tensors since); autograd stays out of the way.
x = meta(4, 3, 8, dtype=torch.bfloat16).transpose(0, 1)  # not contiguous
w = meta(8, dtype=torch.bfloat16)
with torch.inference_mode():
    print("fake layer_norm_fwd:", describe(ops.layer_norm_fwd(
        x.transpose(0, 1), w, None, 8, 1e-5, torch.float32)))
    print("fake layer_norm_bwd:", describe(ops.layer_norm_bwd(
        meta(4, 3, 8), x.transpose(0, 1), meta(2, 12), w, None, 8)))
    print("fake rms_norm_fwd:", describe(ops.rms_norm_fwd(
        x.transpose(0, 1), None, 8, 1e-6, torch.bfloat16)))
    print("fake rms_norm_bwd:", describe(ops.rms_norm_bwd(
        meta(4, 3, 8), x.transpose(0, 1), meta(12), None, 8)))

for what, call in (
        ("cpu", lambda: ops.layer_norm_fwd(torch.zeros(4, 8), None, None, 8,
                                           1e-5, torch.float32)),
        ("cols", lambda: ops.rms_norm_fwd(torch.zeros(4, 6), None, 5, 1e-5,
                                          torch.float32)),
        ("short stats", lambda: ops.layer_norm_bwd(
            torch.zeros(4, 6), torch.zeros(4, 6), torch.zeros(2, 3), None,
            None, 6)),
        ("dy dtype", lambda: ops.rms_norm_bwd(
            torch.zeros(4, 6, dtype=torch.float64), torch.zeros(4, 6),
            torch.zeros(4), None, 6))):
    try:
        with torch.inference_mode():
            call()
        print(what, "accepted")
    except ValueError as error:
        print(f"{what}: ValueError {error}")
    if what == "cpu":
        # From here on the float64 fake kernels take CPU tensors (the
        # cols check above runs with them).
        spec = importlib.util.spec_from_file_location(
            "nn_cpu_fakes", pathlib.Path(__file__).with_name(
                "python-torch-nn-cpu.test.py"))
        head = spec.loader.get_source("nn_cpu_fakes").split(
            "def rel(a, b):")[0]
        exec(compile(head, spec.origin, "exec"), {})

torch.manual_seed(0)
x = torch.randn(6, 2, 16)
dy = torch.randn(6, 2, 16)
w, b = torch.randn(16), torch.randn(16)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


# CPU tensors: no grad needed, the CPU kernel runs the fakes.
with torch.no_grad():
    y, stats = ops.layer_norm_fwd(x, w, b, 16, 1e-5, torch.float32)
    ey, _, estats = knn._layer_norm_forward(x, w, b, 16, 1e-5, torch.float32)
    print("layer_norm_fwd matches the eager path:", same(y, ey),
          same(stats, estats))
    got = ops.layer_norm_bwd(dy, x, stats, w, b, 16)
    want = knn._layer_norm_backward(dy, x, stats, w, b, 16)
    print("layer_norm_bwd matches the eager path:",
          *(same(g, e) for g, e in zip(got, want)))
    y, rstd = ops.rms_norm_fwd(x, w, 16, 1e-6, torch.float32)
    ey, _, erstd = knn._rms_norm_forward(x, w, 16, 1e-6, torch.float32)
    print("rms_norm_fwd matches the eager path:", same(y, ey),
          same(rstd, erstd))
    got = ops.rms_norm_bwd(dy, x, rstd, w, 16)
    want = knn._rms_norm_backward(dy, x, rstd, w, 16)
    print("rms_norm_bwd matches the eager path:",
          *(same(g, e) for g, e in zip(got, want)))
