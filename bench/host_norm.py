"""Host time of a norm call through each of kfuse's entry points, against
torch's: what a small norm, or a training step bound by its host, pays
per call.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/host_norm.py \
        [--out DIR] [--label NAME]

On a 64 x 1024 float32 input (the GPU's work is a few microseconds, under
the host's), the mean wall time per call of 500 calls after 50 warm-up
ones, synchronized at the end:
  functional        kfuse.layer_norm_fwd (allocates y, mean, rstd)
  norm_call         Norm.__call__ on preallocated outputs (checked)
  lean_launch       Norm.lean_launcher, kfuse.torch.nn's launch: values in
                    a fixed order, one struct.pack (mean and rstd one
                    tensor); launch_checked in results before 2026-12-05
  bwd_lean_launch   the backward's (row and finish kernels, workspace)
  module_fwd        kfuse.torch.nn.LayerNorm forward, autograd recording
  module_fwdbwd     ... and its backward
  torch_*           F.layer_norm and nn.LayerNorm the same way
  function_floor_fwdbwd  an autograd.Function that only allocates: the
                    floor of any Python Function
  *chain25_per_norm  25 modules in a chain and one backward, per norm:
                    the engine's start-up paid once, as in a model (the
                    floor's: 25 allocating Functions; allocating_*: with
                    kfuse's five allocations, and its two launches;
                    kfuse_function_*: its autograd Function alone)
Run in a process of its own: KFUSE_NORM_LIVE_KNOBS (which bench_norm.py
sets) makes every launch read the knobs' environment variables. Appends one
JSON line to DIR/host_norm.jsonl, with --label and KFUSE_PDL.
"""

import argparse
import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kfuse  # noqa: E402
import kfuse.torch.nn as knn  # noqa: E402
from _measure import append_jsonl, commit, host_ms  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--label", default="")
    options = parser.parse_args()
    rows, cols = 64, 1024
    x = torch.randn(rows, cols, device="cuda")
    w = torch.ones(cols, device="cuda")
    b = torch.zeros(cols, device="cuda")
    dy = torch.randn(rows, cols, device="cuda")
    y, mean, rstd = kfuse.layer_norm_fwd(x, w, b)
    fwd = kfuse.library_norm("layernorm_fwd")
    bwd = kfuse.library_norm("layernorm_bwd")
    fwd_tensors = dict(x=x, weight=w, bias=b, y=y, mean=mean, rstd=rstd)
    dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
    xg = x.clone().requires_grad_()
    wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
    kfuse_module = knn.LayerNorm(cols, device="cuda")
    torch_module = torch.nn.LayerNorm(cols, device="cuda")

    class Floor(torch.autograd.Function):
        """The least a Python autograd Function costs: an allocation
        forward and backward, no launch."""

        @staticmethod
        def forward(ctx, t):
            return torch.empty_like(t)

        @staticmethod
        def backward(ctx, grad):
            return torch.empty_like(grad)

    class Allocating(torch.autograd.Function):
        """Floor with kfuse's allocations (y and the statistics forward; dx,
        dweight and dbias backward) and, with `launch`, its two launches:
        what the kfuse Function adds beyond them is its own Python."""

        @staticmethod
        def forward(ctx, t, weight, bias, launch):
            y = torch.empty_like(t)
            stats = t.new_empty((2, rows))
            if launch:
                lean_fwd(rows, cols, t, weight, bias, y, stats, 1e-5)
            ctx.save_for_backward(t, stats, weight)
            ctx.launch = launch
            return y

        @staticmethod
        def backward(ctx, grad):
            t, stats, weight = ctx.saved_tensors
            dt = torch.empty_like(t)
            dweight, dbias = torch.empty_like(weight), torch.empty_like(weight)
            if ctx.launch:
                lean_bwd(rows, cols, grad, t, stats, weight, dt, dweight,
                         dbias)
            return dt, dweight, dbias, None

    def chain(module, depth=25):
        # One backward for a chain of norms, as in a model: the autograd
        # engine's start-up is paid once, not per norm.
        h = xg
        for _ in range(depth):
            h = module(h)
        h.backward(dy)

    stats = torch.stack([mean, rstd])
    lean_fwd = fwd.lean_launcher(knn._ORDERS["layernorm_fwd"])
    lean_bwd = bwd.lean_launcher(knn._ORDERS["layernorm_bwd"])
    cases = {
        "functional": lambda: kfuse.layer_norm_fwd(x, w, b),
        "norm_call": lambda: fwd(**fwd_tensors, eps=1e-5),
        "lean_launch": lambda: lean_fwd(rows, cols, x, w, b, y, stats, 1e-5),
        "bwd_lean_launch": lambda: lean_bwd(rows, cols, dy, x, stats, w, dx,
                                            dw, db),
        "module_fwd": lambda: kfuse_module(xg),
        "module_fwdbwd": lambda: kfuse_module(xg).backward(dy),
        "torch_functional": lambda: F.layer_norm(x, (cols,), w, b),
        "torch_module_fwd": lambda: torch_module(xg),
        "torch_module_fwdbwd": lambda: torch_module(xg).backward(dy),
        "function_floor_fwdbwd": lambda: Floor.apply(xg).backward(dy),
        "module_chain25_per_norm": lambda: chain(kfuse_module),
        "torch_module_chain25_per_norm": lambda: chain(torch_module),
        "function_floor_chain25_per_norm": lambda: chain(Floor.apply),
        "allocating_chain25_per_norm": lambda: chain(
            lambda h: Allocating.apply(h, wg, bg, False)),
        "allocating_launching_chain25_per_norm": lambda: chain(
            lambda h: Allocating.apply(h, wg, bg, True)),
        "kfuse_function_chain25_per_norm": lambda: chain(
            lambda h: knn._LayerNormFunction.apply(h, wg, bg, cols, 1e-5,
                                                   torch.float32)),
    }
    result = {name: round(1e3 * host_ms(fn, 50, 500) /
                          (25 if "chain25" in name else 1), 2)
              for name, fn in cases.items()}
    row = {"label": options.label, "KFUSE_PDL": os.environ.get("KFUSE_PDL"),
           "rows": rows, "cols": cols, "host_us_per_call": result,
           "commit": commit(REPO), "device": torch.cuda.get_device_name(0)}
    print(json.dumps(row), flush=True)
    append_jsonl(options.out, "host_norm.jsonl", row)


if __name__ == "__main__":
    main()
