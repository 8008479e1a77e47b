"""Cold start of a kernel in the runtime, on a GPU: a kfuse.torch.optim
drop-in's first step() in a fresh process, from IR text to a loaded module,
against NVRTC's first compile of a trivial kernel in a fresh process.

    python3 bench/bench_load.py [--out DIR] [--repeats 7]

bench_compile.py measures `kfuse compile`, which writes a cubin; the runtime
instead hands a direct PTX image to the driver, which compiles it when the
module loads, so its cold start is measured here, where a driver is. Each
round runs, in turn, for each case and code generator (KFUSE_CODEGEN ptx and
cuda): a fresh process with an empty KFUSE_CACHE_DIR and the driver's JIT
cache off (CUDA_CACHE_DISABLE=1) that steps the drop-in once over a small
list (a cold compile); the same over the filled kfuse cache with the
driver's JIT cache on, in a directory of the round (a hit in both); and the
trivial kernel's first compile in a fresh process, with kfuse's NVRTC
options (as bench_compile.py's cold_over_trivial_first_in_process) and with
the arch alone. The runtime's own
timing (KFUSE_LOG=info: codegen, the compiler, the disk cache, the total
through the load) is read from its log line. Times are medians of the
rounds, ratios medians of the rounds' ratios. Writes DIR/bench_load.json.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

CASES = [
    # (case, drop-in, dtype, multi_tensor): the drop-in steps a list with
    # one multi-tensor plan; the single-tensor kernel is library/optim/
    # adamw.mlir launched over one tensor.
    ("adamw.plan.f32", "AdamW", "float32", True),
    ("adamw.plan.bf16", "AdamW", "bfloat16", True),
    ("adamw.single.f32", "AdamW", "float32", False),
]

LOG_LINE = re.compile(r"compiled @\S+ \(.*?\) for \S+: (\S+), codegen "
                      r"([\d.]+) ms, (\S+) ([\d.]+) ms, disk cache ([\d.]+) "
                      r"ms, total ([\d.]+) ms")


def worker(case):
    import torch
    import kfuse
    import kfuse.torch.optim as optim
    _, cls, dtype, multi = next(c for c in CASES if c[0] == case)
    dtype = getattr(torch, dtype)
    params = [torch.nn.Parameter(torch.randn(n, device="cuda").to(dtype))
              for n in (4096, 1000)]
    for p in params:
        p.grad = torch.randn_like(p)
    if multi:
        opt = getattr(optim, cls)(params, lr=1e-3)
        step = opt.step
    else:
        update = kfuse.Update(str(REPO / "library/optim/adamw.mlir"))
        p = params[0].detach()
        m, v = torch.zeros_like(p), torch.zeros_like(p)

        def step():
            update(param=p, grad=params[0].grad, exp_avg=m, exp_avg_sq=v)
    torch.cuda.synchronize()
    start = time.perf_counter()
    step()
    torch.cuda.synchronize()
    print(json.dumps({"first_step_ms": 1e3 * (time.perf_counter() - start)}))


def run_case(case, codegen, cache_dir, driver_cache):
    env = dict(os.environ, KFUSE_CODEGEN=codegen, KFUSE_CACHE_DIR=cache_dir,
               KFUSE_LOG="info")
    env.pop("KFUSE_CACHE", None)
    if driver_cache:
        env["CUDA_CACHE_PATH"] = driver_cache
        env.pop("CUDA_CACHE_DISABLE", None)
    else:
        env["CUDA_CACHE_DISABLE"] = "1"
    out = subprocess.run([sys.executable, __file__, "--worker", case],
                         env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{case} ({codegen}) failed:\n{out.stderr}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    lines = [LOG_LINE.search(line) for line in out.stderr.splitlines()]
    lines = [m for m in lines if m]
    if not lines:
        raise SystemExit(f"{case} ({codegen}): no compile log line in\n"
                         f"{out.stderr}")
    source, codegen_ms, compiler, compiler_ms, disk_ms, total_ms = \
        lines[-1].groups()
    row.update(source=source, codegen_ms=float(codegen_ms), compiler=compiler,
               compiler_ms=float(compiler_ms), disk_ms=float(disk_ms),
               total_ms=float(total_ms))
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--worker")
    options = parser.parse_args()
    if options.worker:
        sys.path.insert(0, str(REPO / "python"))
        worker(options.worker)
        return 0

    from bench_compile import (commit, kfuse_nvrtc_options, nvrtc_library,
                               trivial_subprocess_ms)
    import torch
    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    trivial_options = kfuse_nvrtc_options(nvrtc_library(), arch)
    rounds = []
    for _ in range(options.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            result = {
                "trivial_first_ms": trivial_subprocess_ms(trivial_options),
                "trivial_first_arch_only_ms": trivial_subprocess_ms(
                    [f"-arch={arch}"])}
            for case, *_ in CASES:
                for codegen in ("ptx", "cuda"):
                    cache = os.path.join(tmp, f"{case}-{codegen}")
                    driver = os.path.join(tmp, f"{case}-{codegen}-driver")
                    cold = run_case(case, codegen, cache, None)
                    run_case(case, codegen, cache, driver)  # fills the driver's
                    hit = run_case(case, codegen, cache, driver)
                    result[f"{case}.{codegen}"] = {"cold": cold, "hit": hit}
            rounds.append(result)

    def median(values):
        return statistics.median(values)

    rows = []
    for case, *_ in CASES:
        for codegen in ("ptx", "cuda"):
            key = f"{case}.{codegen}"
            cold = [r[key]["cold"] for r in rounds]
            hit = [r[key]["hit"] for r in rounds]
            rows.append({
                "case": key,
                "compiler": cold[0]["compiler"],
                "cold_total_ms": median([c["total_ms"] for c in cold]),
                "cold_codegen_ms": median([c["codegen_ms"] for c in cold]),
                "cold_compiler_ms": median([c["compiler_ms"] for c in cold]),
                "cold_first_step_ms": median([c["first_step_ms"]
                                              for c in cold]),
                "cold_over_trivial_first_in_process": median(
                    [r[key]["cold"]["total_ms"] / r["trivial_first_ms"]
                     for r in rounds]),
                "cold_over_trivial_arch_only": median(
                    [r[key]["cold"]["total_ms"] /
                     r["trivial_first_arch_only_ms"] for r in rounds]),
                "hit_source": hit[0]["source"],
                "hit_total_ms": median([h["total_ms"] for h in hit]),
                "hit_first_step_ms": median([h["first_step_ms"]
                                             for h in hit]),
            })
    report = {
        "device": torch.cuda.get_device_name(),
        "commit": commit(),
        "date": time.strftime("%Y-%m-%d"),
        "repeats": options.repeats,
        "trivial_first_ms": median([r["trivial_first_ms"] for r in rounds]),
        "trivial_first_arch_only_ms": median(
            [r["trivial_first_arch_only_ms"] for r in rounds]),
        "trivial_options": trivial_options,
        "rows": rows,
        "command": "python3 bench/bench_load.py --repeats "
                   f"{options.repeats}",
    }
    for row in rows:
        print(json.dumps(row))
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_load.json", "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
