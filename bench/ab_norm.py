"""Times variants of a norm side by side in one process (A/B).

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/ab_norm.py \
        --variant two_pass=old/layernorm_fwd.mlir \
        --variant variance=library/norm/layernorm_fwd.mlir \
        --variant variance_1024=library/norm/layernorm_fwd.mlir:KFUSE_NORM_MIN_THREADS_PER_SM=1024 \
        --out DIR

Each variant is NAME=PATH[:ENV=VALUE,...]; every variant must take the
arguments of a library LayerNorm or RMSNorm forward or backward (told apart
by their argument names). The variants of one case run interleaved, in
rounds, so that clock and thermal drift reach all of them alike. Writes
DIR/ab_norm.jsonl; GB/s counts the minimum bytes (fwd 2 passes, bwd 3);
rel_l2_to_first compares each variant's y (or dx) with the first's.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402

# The knobs change between compiles in this process (runtime/Norm.cpp reads
# them once otherwise).
os.environ["KFUSE_NORM_LIVE_KNOBS"] = "1"

import kfuse  # noqa: E402
from _measure import time_ms  # noqa: E402

SHAPES = [(65536, 1024), (32768, 4096), (16384, 12288)]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def parse_variant(text):
    name, _, rest = text.partition("=")
    path, _, env = rest.partition(":")
    knobs = dict(item.split("=", 1) for item in env.split(",") if item)
    return name, path, knobs


def make_inputs(rows, cols, dtype):
    """Random x, weight, bias and dy for a rows x cols norm."""
    x = (torch.randn(rows, cols, device="cuda") * 2 + 0.5).to(dtype)
    w = (torch.randn(cols, device="cuda") * 0.1 + 1).to(dtype)
    b = (torch.randn(cols, device="cuda") * 0.1).to(dtype)
    dy = torch.randn(rows, cols, device="cuda").to(dtype)
    return x, w, b, dy


def make_call(norm, x, w, b, dy):
    rows, cols = x.shape
    names = set(a.name for a in norm.args)
    mean = torch.randn(rows, device="cuda")
    rstd = torch.rand(rows, device="cuda") + 0.5
    out = torch.empty_like(x)
    dw, db = torch.empty_like(w), torch.empty_like(w)
    if "dy" in names:
        kwargs = dict(dy=dy, x=x, rstd=rstd, weight=w, dx=out, dweight=dw)
        if "mean" in names:
            kwargs.update(mean=mean, dbias=db)
        return (lambda: norm(**kwargs)), 3, out
    kwargs = dict(x=x, weight=w, y=out, rstd=rstd)
    if "mean" in names:
        kwargs.update(bias=b, mean=mean)
    return (lambda: norm(**kwargs)), 2, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", default=",".join(
        f"{r}x{c}" for r, c in SHAPES), help="ROWSxCOLS,...")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    options = parser.parse_args()
    variants = [parse_variant(v) for v in options.variant]
    shapes = [tuple(map(int, shape.split("x")))
              for shape in options.shapes.split(",")]
    norms = {name: kfuse.Norm(str(REPO / path)) for name, path, _ in variants}
    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    copy = 8 * (1 << 28) / (time_ms(lambda: dst.copy_(src), 3, 20, fed=True)["ms"]
                            * 1e-3) / 1e9
    print(f"copy {copy:.0f} GB/s", flush=True)
    out = open(pathlib.Path(options.out) / "ab_norm.jsonl", "w")
    for dname in options.dtypes.split(","):
        dtype = DTYPES[dname]
        for rows, cols in shapes:
            x, w, b, dy = make_inputs(rows, cols, dtype)
            samples = {name: [] for name, _, _ in variants}
            calls, results = {}, {}
            for name, _, knobs in variants:
                os.environ.update(knobs)
                call, passes, result = make_call(norms[name], x, w, b, dy)
                call()  # compiles under the variant's knobs
                torch.cuda.synchronize()
                results[name] = result.double()
                for knob in knobs:
                    os.environ.pop(knob)
                calls[name] = (call, passes, knobs)
            for _ in range(options.rounds):
                for name, (call, passes, knobs) in calls.items():
                    os.environ.update(knobs)

                    def many(call=call):
                        for _ in range(10):
                            call()
                    samples[name].append(time_ms(many, 2, 5, fed=True)["ms"]
                                         / 10)
                    for knob in knobs:
                        os.environ.pop(knob)
            for name, (call, passes, knobs) in calls.items():
                ms = statistics.median(samples[name])
                gbps = passes * rows * cols * x.element_size() / (ms * 1e-3) / 1e9
                first = results[variants[0][0]]
                row = {"variant": name, "knobs": knobs, "dtype": dname,
                       "rows": rows, "cols": cols, "ms": ms, "GBps": gbps,
                       "pct_of_copy": 100 * gbps / copy, "copy_GBps": copy,
                       # The output (y or dx) against the first variant's.
                       "rel_l2_to_first": float(
                           (results[name] - first).norm() / first.norm())}
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")
            del x, dy


if __name__ == "__main__":
    main()
