"""Where kfuse's norm beats torch's in a training step bound by its host:
wall time per norm of 25 norm modules in a chain, forward and one backward,
kfuse's kernels against torch's native module, over sizes.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/norm_crossover.py \
        [--out DIR]

kfuse's path costs the host more per call (a Python autograd Function, its
allocations and two launches against torch's C++), and its kernels cost the
GPU less per element; the crossover is the size (rows x cols) above which a
kfuse module is faster end to end. Rows "norm_crossover" with case
<norm>.<dtype>.<rows>x<cols>, impl kfuse | torch, us_per_norm (median of 7
rounds, each 20 chains after warm-up, synchronized), and kfuse/torch ratios.
Appends JSON lines to DIR/norm_crossover.jsonl.
"""

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402

import kfuse.torch.nn as knn  # noqa: E402
from _measure import append_jsonl, commit  # noqa: E402

SIZES = [(1024, 768), (4096, 768), (4096, 1024), (8192, 1024),
         (8192, 2048), (16384, 2048), (16384, 4096), (32768, 4096)]


def per_norm_us(modules, x, dy, chains=20, rounds=7):
    def chain():
        h = x
        for module in modules:
            h = module(h)
        h.backward(dy)
    for _ in range(3):
        chain()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(chains):
            chain()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / chains / len(modules))
    return 1e6 * statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--depth", type=int, default=25)
    options = parser.parse_args()
    rows_out = []
    knn.set_eager_min_bytes(0)  # kfuse's kernels at every size here
    for norm in ("layernorm", "rmsnorm"):
        for dtype in (torch.float32, torch.bfloat16):
            for rows, cols in SIZES:
                x = torch.randn(rows, cols, device="cuda", dtype=dtype,
                                requires_grad=True)
                dy = torch.randn(rows, cols, device="cuda", dtype=dtype)
                make = {"layernorm": (torch.nn.LayerNorm, knn.LayerNorm),
                        "rmsnorm": (torch.nn.RMSNorm, knn.RMSNorm)}[norm]
                result = {}
                for impl, cls in zip(("torch", "kfuse"), make):
                    modules = [cls(cols, device="cuda", dtype=dtype)
                               for _ in range(options.depth)]
                    result[impl] = per_norm_us(modules, x, dy)
                case = f"{norm}.{str(dtype)[6:]}.{rows}x{cols}"
                for impl, us in result.items():
                    rows_out.append({"case": case, "impl": impl,
                                     "us_per_norm": round(us, 2)})
                rows_out.append({"case": case, "impl": "torch/kfuse",
                                 "ratio": round(result["torch"] /
                                                result["kfuse"], 3)})
                print(json.dumps(rows_out[-1]), round(result["torch"], 1),
                      round(result["kfuse"], 1), flush=True)
                del x, dy
    row = {"commit": commit(REPO), "device": torch.cuda.get_device_name(0),
           "depth": options.depth, "rows": rows_out}
    append_jsonl(options.out, "norm_crossover.jsonl", row)


if __name__ == "__main__":
    main()
