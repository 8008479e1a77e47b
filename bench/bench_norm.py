"""LayerNorm and RMSNorm: kfuse against PyTorch eager and torch.compile.

Runs on the GPU machine:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/bench_norm.py --out DIR
Cases `{layernorm,rmsnorm}.{f32,bf16}.{fwd,fwdbwd}.{65536x1024,32768x4096,
16384x12288}`, impls `kfuse`, `torch` (F.layer_norm / F.rms_norm; fwdbwd is
the forward and the backward through autograd with a given dy) and
`torch_compile` (the same function compiled with dynamic=False; compile time
excluded from the timing, reported as compile_s). Weights have the input's
dtype (bf16 weights for bf16 inputs) in every impl, so that all run the same
problem. kfuse's fwdbwd is its forward kernel, then its backward kernels.

GB/s counts the fewest bytes a norm must move: fwd = 2 x rows*cols*elemsize
(x read, y written), fwdbwd = 5 x (and y, dy read, x read again, dx
written); the row statistics and weights are left out. pct_of_copy is
against a device-to-device copy measured in the same run. ms is the median
of CUDA-event timings after warm-up, of `inner` back-to-back calls divided
by `inner`, queued behind a spin kernel so that the GPU's time alone is
timed (bench/_measure.time_ms fed=True; the copy is timed so too).
unfed_ms (and unfed_pct_of_copy) times the same calls from an idle GPU, so
it adds the first call's host time over `inner` and any gap where the host
falls behind the GPU.

Before timing, kfuse's outputs are checked against torch's (a case whose
outputs differ fails instead of being timed). Eager cases run first; the
torch.compile cases then run until --budget-s has passed, the rest marked
skipped. DIR/bench_norm.json is rewritten after every case.
"""

import argparse
import math
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
# KFUSE_NORM_BLOCKS_PER_SM changes between launches here (runtime/Norm.cpp
# reads it once otherwise).
os.environ["KFUSE_NORM_LIVE_KNOBS"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import kfuse  # noqa: E402
import _measure  # noqa: E402
from _measure import time_ms  # noqa: E402

GB = 1e9
SHAPES = [(65536, 1024), (32768, 4096), (16384, 12288)]
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
LN_EPS = 1e-5
RMS_EPS = 1e-6
# Relative L2 difference allowed between kfuse's and torch's outputs: both
# round to the storage dtype.
GATE = {"f32": 1e-4, "bf16": 2e-2}


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    den = ref.norm().item()
    num = (out - ref).norm().item()
    return num / den if den > 0 else num


class Report(_measure.Report):
    def __init__(self, path):
        super().__init__(path, REPO, skipped=[])

    def row(self, case, impl, timing, min_bytes, **extra):
        entry = self.record(case, impl, timing, min_bytes, (34, 14), extra,
                            min_bytes=min_bytes)
        if "unfed_ms" in timing:
            copy = self.data["copy_GBps"]
            entry["unfed_ms"] = timing["unfed_ms"]
            entry["unfed_pct_of_copy"] = (
                100.0 * min_bytes / (timing["unfed_ms"] * 1e-3) / GB / copy
                if copy else None)


def copy_bandwidth(report, warmup, repeats):
    n = 1 << 28
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    timing = time_ms(lambda: dst.copy_(src), warmup, repeats, fed=True)
    report.data["copy_GBps"] = 8 * n / (timing["ms"] * 1e-3) / GB
    report.data["copy"] = dict(timing, numel=n, dtype="float32")
    print(f"copy: {report.data['copy_GBps']:.0f} GB/s (2^28 f32)", flush=True)


def timed(fn, warmup, repeats, inner):
    """time_ms of `inner` back-to-back calls, per call: fed (the GPU's time
    alone, see _measure.time_ms), with the timing from the start event on
    the idle GPU as `unfed_ms` (which adds the first call's host time over
    `inner`, and any gap where the host falls behind)."""
    def many():
        for _ in range(inner):
            fn()
    timing = time_ms(many, warmup, repeats, fed=True)
    unfed = time_ms(many, 1, max(5, repeats // 2))
    for key in ("ms", "min_ms", "max_ms"):
        timing[key] /= inner
    timing["unfed_ms"] = unfed["ms"] / inner
    timing["inner"] = inner
    return timing


class Case:
    """One (kind, dtype, mode, shape) with its inputs, random, never zeros."""

    def __init__(self, kind, dname, mode, rows, cols):
        self.kind, self.dname, self.mode = kind, dname, mode
        self.rows, self.cols = rows, cols
        self.dtype = DTYPES[dname]
        self.name = f"{kind}.{dname}.{mode}.{rows}x{cols}"
        gen = torch.Generator(device="cuda").manual_seed(rows + cols)

        def rand(shape, scale=1.0, shift=0.0):
            t = torch.empty(shape, device="cuda", dtype=torch.float32)
            t.normal_(generator=gen)
            return (t * scale + shift).to(self.dtype)

        self.x = rand((rows, cols), 2.0, 0.5)
        self.w = rand(cols, 0.1, 1.0)
        self.b = rand(cols, 0.1) if kind == "layernorm" else None
        self.dy = rand((rows, cols)) if mode == "fwdbwd" else None
        elem = self.x.element_size()
        self.min_bytes = (2 if mode == "fwd" else 5) * rows * cols * elem

    # The torch function both eager and compiled run.
    def torch_fn(self):
        cols = self.cols
        if self.kind == "layernorm":
            def fn(x, w, b):
                return F.layer_norm(x, (cols,), w, b, LN_EPS)
        else:
            def fn(x, w, b):
                return F.rms_norm(x, (cols,), w, RMS_EPS)
        return fn

    def torch_call(self, fn):
        """A no-argument call of `fn` doing this case's work: returns the
        outputs (y; or dx, dweight[, dbias])."""
        x, w, b, dy = self.x, self.w, self.b, self.dy
        if self.mode == "fwd":
            def call():
                with torch.no_grad():
                    return (fn(x, w, b),)
            return call
        xr = x.detach().requires_grad_()
        wr = w.detach().requires_grad_()
        br = b.detach().requires_grad_() if b is not None else None
        leaves = (xr, wr) + ((br,) if br is not None else ())

        def call():
            y = fn(xr, wr, br)
            return torch.autograd.grad(y, leaves, dy)
        return call

    def kfuse_call(self):
        x, w, b, dy = self.x, self.w, self.b, self.dy
        if self.kind == "layernorm":
            if self.mode == "fwd":
                return lambda: (kfuse.layer_norm_fwd(x, w, b, LN_EPS)[0],)

            def call():
                _, mean, rstd = kfuse.layer_norm_fwd(x, w, b, LN_EPS)
                return kfuse.layer_norm_bwd(dy, x, mean, rstd, w)
            return call
        if self.mode == "fwd":
            return lambda: (kfuse.rms_norm_fwd(x, w, RMS_EPS)[0],)

        def call():
            _, rstd = kfuse.rms_norm_fwd(x, w, RMS_EPS)
            return kfuse.rms_norm_bwd(dy, x, rstd, w)
        return call

    def kfuse_launches(self):
        fwd = "layernorm_fwd" if self.kind == "layernorm" else "rmsnorm_fwd"
        bwd = "layernorm_bwd" if self.kind == "layernorm" else "rmsnorm_bwd"
        launches = kfuse.library_norm(fwd).launches
        if self.mode == "fwdbwd":
            launches += kfuse.library_norm(bwd).launches
        return launches


def inner_for(case):
    # About 2 ms of GPU work per timed region at ~4 TB/s.
    seconds = case.min_bytes / 4e12
    return max(1, min(20, math.ceil(2e-3 / max(seconds, 1e-6))))


def run_eager(report, case, warmup, repeats):
    inner = inner_for(case)
    torch_call = case.torch_call(case.torch_fn())
    kfuse_call = case.kfuse_call()
    # Correctness gate: kfuse against torch before timing anything.
    want = torch_call()
    got = kfuse_call()
    torch.cuda.synchronize()
    names = ["y"] if case.mode == "fwd" else ["dx", "dweight", "dbias"]
    gate = {}
    for name, g, w in zip(names, got, want):
        error = rel_l2(g, w)
        gate[name] = float(f"{error:.3e}")
        if not error <= GATE[case.dname]:
            raise AssertionError(f"{case.name}: kfuse {name} differs from "
                                 f"torch by {error:.3e} (relative L2) > "
                                 f"{GATE[case.dname]:.0e}")
    del want, got
    weights = case.dname
    timing = timed(kfuse_call, warmup, repeats, inner)
    report.row(case.name, "kfuse", timing, case.min_bytes,
               launches=case.kfuse_launches(), weights=weights,
               inner=inner, rows=case.rows, cols=case.cols,
               gate_rel_l2_vs_torch=gate)
    timing = timed(torch_call, warmup, repeats, inner)
    report.row(case.name, "torch", timing, case.min_bytes, weights=weights,
               inner=inner, rows=case.rows, cols=case.cols)


def run_compiled(report, case, warmup, repeats, compiled):
    inner = inner_for(case)
    key = (case.kind, case.dname, case.rows, case.cols)
    if key not in compiled:
        compiled[key] = torch.compile(case.torch_fn(), dynamic=False)
    call = case.torch_call(compiled[key])
    begin = time.perf_counter()
    call()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - begin
    timing = timed(call, warmup, repeats, inner)
    report.row(case.name, "torch_compile", timing, case.min_bytes,
               weights=case.dname, inner=inner, rows=case.rows,
               cols=case.cols, compile_s=round(compile_s, 2))


def blocks_per_sm_sweep(report, warmup, repeats):
    """The backward alone over KFUSE_NORM_BLOCKS_PER_SM (the cap on the grid
    of kernels with column sums; by default the blocks an SM holds at once):
    more blocks per SM hide more latency, fewer keep the partials small."""
    saved = os.environ.get("KFUSE_NORM_BLOCKS_PER_SM")
    bwd = kfuse.library_norm("layernorm_bwd")
    try:
        for dname, (rows, cols) in (("bf16", (16384, 12288)),
                                    ("f32", (65536, 1024))):
            case = Case("layernorm", dname, "fwdbwd", rows, cols)
            _, mean, rstd = kfuse.layer_norm_fwd(case.x, case.w, case.b)
            dx = torch.empty_like(case.x)
            dw, db = torch.empty_like(case.w), torch.empty_like(case.w)
            min_bytes = 3 * rows * cols * case.x.element_size()

            def call():
                bwd(dy=case.dy, x=case.x, mean=mean, rstd=rstd,
                    weight=case.w, dx=dx, dweight=dw, dbias=db)

            for blocks in (0, 1, 2, 4, 8, 16):
                # 0: unset, the runtime's default (one full wave).
                if blocks:
                    os.environ["KFUSE_NORM_BLOCKS_PER_SM"] = str(blocks)
                else:
                    os.environ.pop("KFUSE_NORM_BLOCKS_PER_SM", None)
                timing = timed(call, warmup, repeats, 5)
                report.row(f"layernorm.{dname}.bwd.{rows}x{cols}",
                           f"kfuse_bpsm{blocks or 'default'}", timing,
                           min_bytes,
                           launches=bwd.launches, blocks_per_sm=blocks,
                           weights=dname, inner=5,
                           kfuse_bytes=bwd.bytes(rows, cols, {
                               n: case.dtype for n in
                               ("dy", "x", "weight", "dx", "dweight",
                                "dbias")}))
            del case
    finally:
        if saved is None:
            os.environ.pop("KFUSE_NORM_BLOCKS_PER_SM", None)
        else:
            os.environ["KFUSE_NORM_BLOCKS_PER_SM"] = saved


def cases(only):
    for kind in ("layernorm", "rmsnorm"):
        for dname in ("f32", "bf16"):
            for mode in ("fwd", "fwdbwd"):
                for rows, cols in SHAPES:
                    name = f"{kind}.{dname}.{mode}.{rows}x{cols}"
                    if not only or only in name:
                        yield kind, dname, mode, rows, cols


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--budget-s", type=float, default=200.0,
                        help="start no torch.compile case after this")
    parser.add_argument("--only", help="run only cases containing this")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the torch.compile impl")
    options = parser.parse_args()
    start = time.perf_counter()
    w, r = options.warmup, options.repeats
    report = Report(pathlib.Path(options.out) / "bench_norm.json")
    report.data.update({"warmup": w, "repeats": r,
                        "gate_rel_l2": GATE,
                        "bytes": "fwd 2, fwdbwd 5 x rows*cols*elemsize"})
    report.write()
    if not hasattr(F, "rms_norm") and any(
            spec[0] == "rmsnorm" for spec in cases(options.only)):
        report.data["errors"].append({"case": "rmsnorm",
                                      "error": "torch has no F.rms_norm"})

    report.guarded("copy", lambda: copy_bandwidth(report, w, r))
    for spec in cases(options.only):
        def run(spec=spec):
            run_eager(report, Case(*spec), w, r)
        report.guarded(f"{'.'.join(map(str, spec[:3]))} {spec[3]}x{spec[4]}",
                       run)
    if not options.only or "bpsm" in options.only:
        report.guarded("blocks per SM", lambda: blocks_per_sm_sweep(
            report, w, r))

    if not options.no_compile:
        import torch._dynamo

        # One compile per (kind, dtype, shape) and mode: more than the
        # default recompile limit of one function, past which dynamo
        # silently runs eager.
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, 64)
        compiled = {}
        for spec in cases(options.only):
            name = f"{spec[0]}.{spec[1]}.{spec[2]}.{spec[3]}x{spec[4]}"
            if time.perf_counter() - start > options.budget_s:
                report.data["skipped"].append(
                    {"case": name, "impl": "torch_compile",
                     "why": f"time budget of {options.budget_s:.0f} s spent"})
                continue

            def run(spec=spec):
                run_compiled(report, Case(*spec), w, r, compiled)
            report.guarded(f"{name} torch_compile", run)

    report.data["wall_s"] = round(time.perf_counter() - start, 1)
    print(f"\n{'case':34s} {'impl':14s} {'ms':>8s} {'GB/s':>7s} "
          f"{'%copy':>6s} {'launches':>8s}")
    for e in report.data["results"]:
        print(f"{e['case']:34s} {e['impl']:14s} {e['ms']:8.3f} "
              f"{e['GBps']:7.0f} {e['pct_of_copy'] or 0:6.1f} "
              f"{e.get('launches') or '':>8}")
    for e in report.data["skipped"]:
        print(f"SKIPPED {e['case']} {e['impl']}: {e['why']}")
    for e in report.data["errors"]:
        print(f"ERROR {e['case']}: {e['error']}")
    report.write()
    return 1 if report.data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
