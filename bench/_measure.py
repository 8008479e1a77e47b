"""Measurement helpers shared by the GPU benchmarks (see the device notes:
CUDA events around each call, warm-up first, the median of the timed calls)."""

import gc
import os
import statistics
import subprocess

import torch


def commit(repo):
    """The commit measured: KFUSE_COMMIT (the GPU copy has no .git) or git."""
    if os.environ.get("KFUSE_COMMIT"):
        return os.environ["KFUSE_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo,
                              capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - no git there is fine
        return "unknown"


def free():
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def time_ms(fn, warmup, repeats):
    """Median and spread of `fn` over `repeats` runs, timed with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"ms": statistics.median(times), "min_ms": min(times),
            "max_ms": max(times), "repeats": repeats}
