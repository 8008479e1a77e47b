"""Sweeps the norm code generator's layout knobs on the GPU.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/sweep_norm.py --out DIR

For each library norm (forward and backward alone), dtype and bench shape,
times kfuse's kernels under KFUSE_NORM_STAGES (0: rows in registers; 1:
staged in shared memory; 2: staged with the next row group prefetched) x
KFUSE_NORM_MIN_THREADS_PER_SM (threads kept resident per SM: the register
cap) x KFUSE_NORM_MAX_ELEMENTS (elements of a tensor a thread holds) x
KFUSE_NORM_BLOCK_SIZE (threads a block aims for) x KFUSE_NORM_SUMS (where
a block of one row keeps its column sums; backward only). Writes DIR/sweep_norm.jsonl, one row per setting.
GB/s counts the minimum bytes: fwd 2 x (x, y), bwd 3 x (dy, x, dx).
"""

import argparse
import itertools
import json
import os
import pathlib
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
STAGES = [0, 1, 2]
MIN_THREADS = [512, 1024]
MAX_ELEMENTS = [32, 64]
BLOCK_SIZES = [256]
SUMS = ["auto"]
KNOBS = ("KFUSE_NORM_STAGES", "KFUSE_NORM_MIN_THREADS_PER_SM",
         "KFUSE_NORM_MAX_ELEMENTS", "KFUSE_NORM_BLOCK_SIZE", "KFUSE_NORM_SUMS")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="",
                        help="comma-separated case prefixes to sweep, e.g. "
                             "layernorm.bf16.bwd")
    ints = lambda text: [int(v) for v in text.split(",")]  # noqa: E731
    parser.add_argument("--stages", type=ints, default=STAGES)
    parser.add_argument("--min-threads", type=ints, default=MIN_THREADS)
    parser.add_argument("--max-elements", type=ints, default=MAX_ELEMENTS)
    parser.add_argument("--block-sizes", type=ints, default=BLOCK_SIZES)
    parser.add_argument("--sums", type=lambda text: text.split(","),
                        default=SUMS)
    options = parser.parse_args()
    path = pathlib.Path(options.out) / "sweep_norm.jsonl"
    out = open(path, "w")
    src = torch.randn(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    copy = 8 * (1 << 28) / (time_ms(lambda: dst.copy_(src), 3, 20)["ms"]
                            * 1e-3) / 1e9
    print(f"copy {copy:.0f} GB/s", flush=True)
    commit = os.environ.get("KFUSE_COMMIT", "unknown")
    for kind, dname, (rows, cols) in itertools.product(
            ("layernorm", "rmsnorm"), DTYPES, SHAPES):
        dtype = DTYPES[dname]
        x = (torch.randn(rows, cols, device="cuda") * 2 + 0.5).to(dtype)
        w = (torch.randn(cols, device="cuda") * 0.1 + 1).to(dtype)
        b = (torch.randn(cols, device="cuda") * 0.1).to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        # The library norms called directly on preallocated outputs: the
        # loop times kernels, not allocations.
        y, dx = torch.empty_like(x), torch.empty_like(x)
        dw, db = torch.empty_like(w), torch.empty_like(w)
        mean = torch.empty(rows, device="cuda")
        rstd = torch.empty(rows, device="cuda")
        if kind == "layernorm":
            fwd_norm = kfuse.library_norm("layernorm_fwd")
            bwd_norm = kfuse.library_norm("layernorm_bwd")

            def fwd():
                fwd_norm(x=x, weight=w, bias=b, y=y, mean=mean, rstd=rstd)
                return (y,)

            def bwd():
                bwd_norm(dy=dy, x=x, mean=mean, rstd=rstd, weight=w, dx=dx,
                         dweight=dw, dbias=db)
                return (dx, dw)
        else:
            fwd_norm = kfuse.library_norm("rmsnorm_fwd")
            bwd_norm = kfuse.library_norm("rmsnorm_bwd")

            def fwd():
                fwd_norm(x=x, weight=w, y=y, rstd=rstd)
                return (y,)

            def bwd():
                bwd_norm(dy=dy, x=x, rstd=rstd, weight=w, dx=dx, dweight=dw)
                return (dx, dw)
        fwd()
        reference = {"fwd": None, "bwd": None}
        for mode, fn, passes in (("fwd", fwd, 2), ("bwd", bwd, 3)):
            case = f"{kind}.{dname}.{mode}.{rows}x{cols}"
            prefixes = [p for p in options.only.split(",") if p]
            if prefixes and not any(case.startswith(p) for p in prefixes):
                continue
            sums_options = options.sums if mode == "bwd" else SUMS
            for stages, threads, elements, block, sums in itertools.product(
                    options.stages, options.min_threads,
                    options.max_elements, options.block_sizes, sums_options):
                for knob, value in zip(
                        KNOBS, (stages, threads, elements, block, sums)):
                    os.environ[knob] = str(value)
                row = {"case": case,
                       "stages": stages, "min_threads_per_sm": threads,
                       "max_elements": elements, "block_size": block,
                       "sums": sums, "commit": commit}
                try:
                    result = fn()
                    torch.cuda.synchronize()
                    first = result[0].float().clone()
                    if reference[mode] is None:
                        reference[mode] = first
                    row["max_abs_diff_vs_first"] = float(
                        (first - reference[mode]).abs().max())
                    # Ten back-to-back calls a timing: the host's Python
                    # overhead stays hidden behind the kernels.
                    def many(fn=fn):
                        for _ in range(10):
                            fn()
                    timing = time_ms(many, 2, options.repeats)
                    timing["ms"] /= 10
                    gbps = passes * rows * cols * x.element_size() / (
                        timing["ms"] * 1e-3) / 1e9
                    row.update(ms=timing["ms"], GBps=gbps,
                               pct_of_copy=100 * gbps / copy)
                except Exception as error:  # noqa: BLE001
                    row["error"] = repr(error)
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")
                out.flush()
        del x, dy, y, dx
    for knob in KNOBS:
        os.environ.pop(knob, None)


if __name__ == "__main__":
    main()
