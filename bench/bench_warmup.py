"""Warm-up of many kernels at once: kfuse_warmup on 1 thread against N.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/bench_warmup.py --out DIR

Compiles every library optimizer (f32 and bf16 params) and every library
norm (f32 and bf16, 1024 and 4096 columns) with the disk cache off, once on
one worker thread and once on --threads, each in a fresh process (the
in-memory cache is per process). Needs a GPU (a compile loads its module);
no kernel runs, so the tensor pointers are placeholders. Writes
DIR/bench_warmup.json.
"""

import argparse
import ctypes
import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))


class WarmupJob(ctypes.Structure):
    _fields_ = [("update", ctypes.c_void_p), ("norm", ctypes.c_void_p),
                ("args", ctypes.c_void_p), ("nargs", ctypes.c_size_t),
                ("rows", ctypes.c_int64), ("cols", ctypes.c_int64),
                ("fuse", ctypes.c_int)]


def run_once(threads):
    import kfuse
    from kfuse._capi import ArgStruct, BF16, F32, STATUS_NAMES, lib

    keep, jobs = [], []
    for name in ["adamw", "adam", "sgd", "lion"]:
        update = kfuse.Update(str(REPO / "library/optim" / f"{name}.mlir"))
        for dtype in [F32, BF16]:
            args = (ArgStruct * len(update.args))()
            for i, info in enumerate(update.args):
                if info.role == "hyper":
                    args[i].value = info.default or 0.0
                else:
                    args[i].data = 0x10000000 * (i + 1)
                    args[i].numel = 1 << 20
                    args[i].dtype = dtype if info.role in ("param", "grad") else F32
            keep += [update, args]
            jobs.append((update._handle, None, args, len(update.args), 0, 0))
    rows = 1024
    for name in ["layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd",
                 "rmsnorm_bwd", "add_layernorm_fwd"]:
        norm = kfuse.library_norm(name)
        for dtype in [F32, BF16]:
            for cols in [1024, 4096]:
                args = (ArgStruct * len(norm.args))()
                for i, info in enumerate(norm.args):
                    if info.role == "hyper":
                        args[i].value = info.default or 0.0
                        continue
                    args[i].data = 0x10000000 * (i + 1)
                    args[i].numel = {"element": rows * cols, "row": rows,
                                     "column": cols}[info.level]
                    args[i].dtype = dtype if info.level != "row" else F32
                keep += [norm, args]
                jobs.append((None, norm._handle, args, len(norm.args), rows,
                             cols))
    table = (WarmupJob * len(jobs))()
    for slot, (u, n, args, count, r, c) in zip(table, jobs):
        slot.update, slot.norm = u, n
        slot.args = ctypes.cast(args, ctypes.c_void_p)
        slot.nargs, slot.rows, slot.cols, slot.fuse = count, r, c, 1
    function = lib().kfuse_warmup
    function.argtypes = [ctypes.POINTER(WarmupJob), ctypes.c_size_t,
                         ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    statuses = (ctypes.c_int * len(jobs))()
    lib().kfuse_device_arch(ctypes.create_string_buffer(32), 32)  # driver up
    start = time.perf_counter()
    status = function(table, len(jobs), threads, statuses)
    seconds = time.perf_counter() - start
    print(json.dumps({"threads": threads, "jobs": len(jobs),
                      "seconds": seconds, "status": STATUS_NAMES[status],
                      "error": lib().kfuse_last_error().decode() if status else "",
                      "failed": sum(1 for s in statuses if s)}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 8)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--child", type=int, default=0)
    options = parser.parse_args()
    if options.child:
        run_once(options.child)
        return
    rows = []
    for threads in [1, options.threads]:
        env = dict(os.environ, KFUSE_CACHE="0")
        out = subprocess.run([sys.executable, __file__, "--child", str(threads)],
                             env=env, capture_output=True, text=True)
        if out.returncode:
            sys.stderr.write(out.stderr)
            raise SystemExit(f"warm-up on {threads} thread(s) failed")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]))
    summary = {"case": "warmup", "serial_s": rows[0]["seconds"],
               "parallel_s": rows[1]["seconds"], "threads": options.threads,
               "jobs": rows[0]["jobs"],
               "speedup": rows[0]["seconds"] / rows[1]["seconds"],
               "failed": rows[0]["failed"] + rows[1]["failed"],
               "commit": os.environ.get("KFUSE_COMMIT", "unknown")}
    print(json.dumps(summary))
    with open(pathlib.Path(options.out) / "bench_warmup.json", "w") as out:
        out.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
