"""Device time of each kernel of the library norms, from the CUDA profiler.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/profile_norm.py --out DIR

A norm launch with column sums runs two kernels (the row kernel, then the
finish kernel that adds the blocks' partials); end-to-end timing sees only
their total. This runs each library norm at the bench sizes under
torch.profiler (CUPTI traces every kernel of the context, kfuse's too) and
writes DIR/profile_norm.jsonl: one row per (norm, dtype, shape, kernel) with
its mean device time and the share of the launch it takes.
"""

import argparse
import collections
import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import kfuse  # noqa: E402
from ab_norm import DTYPES, SHAPES, make_call, make_inputs  # noqa: E402
from _measure import commit  # noqa: E402

NORMS = ["layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--norms", default=",".join(NORMS))
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    options = parser.parse_args()
    out = open(pathlib.Path(options.out) / "profile_norm.jsonl", "w")
    for name in options.norms.split(","):
        norm = kfuse.Norm(str(REPO / "library/norm" / f"{name}.mlir"))
        for dname in options.dtypes.split(","):
            dtype = DTYPES[dname]
            for rows, cols in SHAPES:
                x, w, b, dy = make_inputs(rows, cols, dtype)
                call, _, _ = make_call(norm, x, w, b, dy)
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(options.calls):
                        call()
                    torch.cuda.synchronize()
                totals = collections.defaultdict(float)
                for event in prof.key_averages():
                    if event.key.startswith("kfuse_"):
                        totals[event.key] += getattr(
                            event, "device_time_total",
                            getattr(event, "cuda_time_total", 0.0))
                launch = sum(totals.values())
                for kernel, us in totals.items():
                    row = {"norm": name, "dtype": dname, "rows": rows,
                           "cols": cols, "kernel": kernel,
                           "us": us / options.calls,
                           "share": us / launch if launch else 0.0,
                           "commit": commit(REPO)}
                    print(json.dumps(row), flush=True)
                    out.write(json.dumps(row) + "\n")
                del x, dy


if __name__ == "__main__":
    main()
