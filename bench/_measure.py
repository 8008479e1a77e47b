"""Measurement helpers shared by the GPU benchmarks (see the device notes:
CUDA events around each call, warm-up first, the median of the timed calls)."""

import datetime
import gc
import json
import os
import statistics
import subprocess
import time
import traceback

import torch

GB = 1e9


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


class Report:
    """A benchmark's JSON report (written after every case): the device, the
    commit, the date, the device copy's bandwidth (copy_GBps, which the
    benchmark measures), one entry per measurement and the cases that
    failed. `fields` adds top-level lists or values."""

    def __init__(self, path, repo, **fields):
        import kfuse
        self.path = path
        props = torch.cuda.get_device_properties(0)
        self.data = {
            "device": f"{props.name} ({props.multi_processor_count} SMs, "
                      f"{props.total_memory / 2**30:.0f} GiB)",
            "commit": commit(repo),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "torch": torch.__version__, "kfuse_arch": None,
            "copy_GBps": None, "results": [], "errors": []}
        self.data.update(fields)
        try:
            self.data["kfuse_arch"] = kfuse.device_arch()
        except Exception as error:  # noqa: BLE001 - recorded; cases fail too
            self.data["errors"].append({"case": "device_arch",
                                        "error": repr(error)})

    def write(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
        tmp.replace(self.path)

    def record(self, case, impl, timing, moved_bytes, widths, extra,
               **fields):
        """Adds and prints the entry of one measurement: `timing` (time_ms)
        over `moved_bytes`, against the copy; `fields` before `extra` in
        the entry, `widths` the printed case and impl columns."""
        gbps = moved_bytes / (timing["ms"] * 1e-3) / GB
        copy = self.data["copy_GBps"]
        entry = {"case": case, "impl": impl, "ms": timing["ms"], "GBps": gbps,
                 "pct_of_copy": 100.0 * gbps / copy if copy else None,
                 **fields, "min_ms": timing["min_ms"],
                 "max_ms": timing["max_ms"], "repeats": timing["repeats"]}
        entry.update(extra)
        self.data["results"].append(entry)
        print(f"{case:{widths[0]}s} {impl:{widths[1]}s} {timing['ms']:8.3f} ms "
              f"{gbps:7.0f} GB/s {entry['pct_of_copy'] or 0:5.1f}% of copy "
              + " ".join(f"{k}={v}" for k, v in extra.items()
                         if not isinstance(v, (dict, list))), flush=True)
        return entry

    def guarded(self, name, fn):
        """Runs case `name`; an exception is recorded, not raised."""
        print(f"--- {name}", flush=True)
        begin = time.perf_counter()
        try:
            fn()
        except Exception as error:  # noqa: BLE001 - record and go on
            traceback.print_exc()
            self.data["errors"].append({"case": name, "error": repr(error)})
            print(f"{name} FAILED: {error}", flush=True)
        finally:
            try:
                free()
            except Exception:  # noqa: BLE001 - a broken context stays broken
                pass
            print(f"    ({time.perf_counter() - begin:.1f} s)", flush=True)
            self.write()
