"""Measurement helpers shared by the GPU benchmarks (see the device notes:
CUDA events around each call, warm-up first, the median of the timed calls)."""

import gc
import os
import statistics
import subprocess
import time

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


def host_ms(fn, warmup, repeats):
    """Host wall time per call over `repeats` calls, one sync at the end:
    what a caller bound by its host pays a call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / repeats


# Cycles per second the GPU spins at in torch.cuda._sleep; guessed high (the
# H200 boosts to 1.98 GHz), since sleeping longer only costs wall time.
_SLEEP_HZ = 2.0e9


def time_ms(fn, warmup, repeats, fed=False):
    """Median and spread of `fn` over `repeats` runs, timed with CUDA events.

    fed=True times the GPU's work alone: a spin kernel queued before the
    start event keeps the GPU busy while the host queues `fn`'s launches,
    so that the host time of the first launch (tens of microseconds through
    Python) does not sit inside the timed region. The spin lasts three times
    the median host time of `fn` in the warm-up calls after the first (which
    may compile). Kernel benchmarks use it (kfuse and its peers alike); a
    training step, whose host time is real, does not."""
    hosts = []
    for _ in range(warmup):
        begin = time.perf_counter()
        fn()
        hosts.append(time.perf_counter() - begin)
    torch.cuda.synchronize()
    host = statistics.median(hosts[1:] or hosts or [0.0])
    spin_cycles = int(_SLEEP_HZ * min(3 * host + 2e-4, 0.05))
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if fed:
            torch.cuda._sleep(spin_cycles)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"ms": statistics.median(times), "min_ms": min(times),
            "max_ms": max(times), "repeats": repeats, "fed": fed}


def append_jsonl(directory, name, row):
    """Appends `row` as one JSON line to directory/name (made if missing)."""
    import json
    import pathlib
    out = pathlib.Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / name, "a") as f:
        f.write(json.dumps(row) + "\n")
