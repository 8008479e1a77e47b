"""Multi-tensor AdamW, LAMB and NovoGrad: kfuse against torch.optim.AdamW and
torch's foreach ops.

Runs on the GPU machine:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/bench_multi_tensor.py --out DIR
Cases: the GPT-2-small parameter list (150 tensors, 124M elements) in f32 and
with bf16 params; 4096 tensors of 256 elements (host cost: wall time per
step); a CUDA-graph capture of kfuse's step with the lr changed between
replays; parity over 100 steps; grad scaling (inf skips the step, inv_scale
matches halved grads). Every case is guarded: DIR/bench_multi_tensor.json is
rewritten after each one, so a failure or a timeout keeps what ran.
Bandwidth counts the fewest bytes an update must move (28 B/element for f32
AdamW), against a device-to-device copy measured in the same run.
"""

import argparse
import contextlib
import json
import math
import os
import pathlib
import statistics
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import kfuse  # noqa: E402
import _measure  # noqa: E402
from _measure import host_ms, time_ms  # noqa: E402

ADAMW = REPO / "library" / "optim" / "adamw.mlir"
HP = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)
TORCH_HP = dict(lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"],
                weight_decay=HP["weight_decay"])
GB = 1e9


def gpt2_shapes(d=768, layers=12, vocab=50304, ctx=1024):
    """GPT-2 small's parameter shapes (as /work/shared/anchors/torch_peers.py)."""
    s = [(vocab, d), (ctx, d)]
    for _ in range(layers):
        s += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,),
              (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    s += [(d,), (d,)]
    return s


def numel_of(shapes):
    total = 0
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def make_list(shapes, param_dtype, state_dtype, seed=0):
    """params, grads, exp_avg, exp_avg_sq: random, never zeros."""
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def rand(shape, dtype, nonneg=False):
        t = torch.empty(shape, device="cuda", dtype=torch.float32)
        if nonneg:
            t.uniform_(0.0, 1e-3, generator=gen)
        else:
            t.normal_(generator=gen)
        return t.to(dtype)

    ps = [rand(s, param_dtype) for s in shapes]
    gs = [rand(s, param_dtype) for s in shapes]
    ms = [rand(s, state_dtype) for s in shapes]
    vs = [rand(s, state_dtype, nonneg=True) for s in shapes]
    return ps, gs, ms, vs


def f32_params_with_grads(shapes, seed=0):
    """f32 Parameters of `shapes` on the GPU, each with a grad, from
    make_list's values (the same for a seed)."""
    ps, gs, _, _ = make_list(shapes, torch.float32, torch.float32, seed)
    params = [torch.nn.Parameter(p) for p in ps]
    for p, g in zip(params, gs):
        p.grad = g
    return params


def kfuse_opt(ps, gs, ms, vs, **kwargs):
    return kfuse.multi_tensor(str(ADAMW), params=ps, grads=gs,
                              states={"exp_avg": ms, "exp_avg_sq": vs},
                              **dict(HP, **kwargs))


def torch_opt(shapes, dtype, seed=0, **impl):
    ps, gs, ms, vs = make_list(shapes, dtype, dtype, seed)
    params = [torch.nn.Parameter(p) for p in ps]
    for p, g in zip(params, gs):
        p.grad = g
    opt = torch.optim.AdamW(params, **TORCH_HP, **impl)
    opt.step()  # creates the states
    for p, m, v in zip(params, ms, vs):
        opt.state[p]["exp_avg"].copy_(m)
        opt.state[p]["exp_avg_sq"].copy_(v)
    del ms, vs
    return opt, params


def bpe(param_dtype, state_dtype):
    ps = torch.tensor([], dtype=param_dtype).element_size()
    ss = torch.tensor([], dtype=state_dtype).element_size()
    # Read param, grad, two states; write param and two states.
    return 3 * ps + 4 * ss


class Report(_measure.Report):
    def __init__(self, path):
        super().__init__(path, REPO)

    def row(self, case, impl, numel, timing, bytes_per_element, **extra):
        self.record(case, impl, timing, bytes_per_element * numel, (28, 22),
                    extra, bytes_per_element=bytes_per_element, numel=numel)


def copy_bandwidth(report, warmup, repeats):
    n = 1 << 28
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    timing = time_ms(lambda: dst.copy_(src), warmup, repeats)
    report.data["copy_GBps"] = 8 * n / (timing["ms"] * 1e-3) / GB
    report.data["copy"] = dict(timing, numel=n, dtype="float32")
    n2 = numel_of(gpt2_shapes())
    timing2 = time_ms(lambda: dst[:n2].copy_(src[:n2]), warmup, repeats)
    report.data["copy_gpt2s_size_GBps"] = 8 * n2 / (timing2["ms"] * 1e-3) / GB
    print(f"copy: {report.data['copy_GBps']:.0f} GB/s (2^28 f32), "
          f"{report.data['copy_gpt2s_size_GBps']:.0f} GB/s (gpt2s size)",
          flush=True)


def bench_list(report, case, shapes, param_dtype, state_dtype, warmup,
               repeats, torch_impls):
    n = numel_of(shapes)

    def run_kfuse(check_stale):
        ps, gs, ms, vs = make_list(shapes, param_dtype, state_dtype)
        opt = kfuse_opt(ps, gs, ms, vs, check_stale=check_stale)
        timing = time_ms(opt.step, warmup, repeats)
        finite = all(bool(torch.isfinite(p.float()).all()) for p in ps[:4])
        impl = {False: "kfuse", True: "kfuse_checked",
                "grads": "kfuse_check_grads"}[check_stale]
        report.row(case, impl, n, timing, bpe(param_dtype, state_dtype),
                   launches=opt.launches_per_step, tensors=len(shapes),
                   kfuse_bytes_per_step=opt.bytes_per_step,
                   chunks=opt.num_chunks, finite=finite,
                   check_stale=check_stale)

    # Without the per-step stale check (a fixed list, as in a training loop
    # or a captured graph) the host issues the launch at once; with it, the
    # data_ptr() of every tensor is compared first and the GPU waits.
    report.guarded(f"{case} kfuse", lambda: run_kfuse(False))
    report.guarded(f"{case} kfuse checked", lambda: run_kfuse(True))
    report.guarded(f"{case} kfuse grads checked",
                   lambda: run_kfuse("grads"))
    for impl, kwargs in torch_impls:
        def run_torch(impl=impl, kwargs=kwargs):
            opt, params = torch_opt(shapes, param_dtype, **kwargs)
            timing = time_ms(opt.step, warmup, repeats)
            sdt = opt.state[params[0]]["exp_avg"].dtype
            extra = {"tensors": len(shapes), "launches": None}
            if sdt != state_dtype:
                extra["note"] = (f"torch keeps states in the param dtype "
                                 f"({sdt}); bytes counted for its own layout")
            report.row(case, impl, n, timing, bpe(param_dtype, sdt), **extra)

        report.guarded(f"{case} {impl}", run_torch)


def bench_master(report, warmup, repeats):
    """f32 master weights with bf16 grads and a bf16 model copy written in
    the same pass: read p4 g2 m4 v4, write p4 m4 v4 copy2 = 28 B/element."""
    shapes = gpt2_shapes()
    n = numel_of(shapes)
    ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
    gs = [g.bfloat16() for g in gs]
    models = [p.bfloat16() for p in ps]
    opt = kfuse_opt(ps, gs, ms, vs, model_params=models, check_stale=False)
    timing = time_ms(opt.step, warmup, repeats)
    report.row("adamw.f32master_bf16model.gpt2s", "kfuse", n, timing, 28,
               launches=opt.launches_per_step, tensors=len(shapes),
               kfuse_bytes_per_step=opt.bytes_per_step,
               copy_matches=bool(torch.equal(models[0], ps[0].bfloat16())))


def bench_chunks(report, warmup, repeats):
    """kfuse on the f32 GPT-2 list over chunk sizes (KFUSE_CHUNK_ELEMENTS):
    smaller chunks balance the last wave of blocks better."""
    case = "adamw.f32.gpt2s"
    shapes = gpt2_shapes()
    n = numel_of(shapes)
    ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
    saved = os.environ.get("KFUSE_CHUNK_ELEMENTS")
    try:
        for chunk in (8192, 16384, 32768, 131072):
            os.environ["KFUSE_CHUNK_ELEMENTS"] = str(chunk)
            opt = kfuse_opt(ps, gs, ms, vs)
            timing = time_ms(opt.step, warmup, repeats)
            report.row(case, f"kfuse_chunk{chunk}", n, timing, 28,
                       launches=opt.launches_per_step, chunks=opt.num_chunks,
                       chunk_elements=chunk)
            del opt
    finally:
        if saved is None:
            os.environ.pop("KFUSE_CHUNK_ELEMENTS", None)
        else:
            os.environ["KFUSE_CHUNK_ELEMENTS"] = saved


def bench_tiny(report, warmup, repeats):
    """4096 tensors of 256: host cost per step under each stale-check mode,
    and with grads that backward reallocated every step (set_to_none)."""
    case = "adamw.f32.tiny4096"
    shapes = [(256,)] * 4096
    n = numel_of(shapes)
    steps = max(repeats, 20)

    def params_with_grads():
        ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
        params = [torch.nn.Parameter(p) for p in ps]
        for p, g in zip(params, gs):
            p.grad = g
        return params, ms, vs

    def run_kfuse(check_stale):
        params, ms, vs = params_with_grads()
        opt = kfuse.multi_tensor(str(ADAMW), params=params,
                                 states={"exp_avg": ms, "exp_avg_sq": vs},
                                 check_stale=check_stale, **HP)
        wall = host_ms(opt.step, warmup, steps)
        timing = time_ms(opt.step, warmup, repeats)
        name = {True: "kfuse", "grads": "kfuse_check_grads",
                False: "kfuse_nocheck"}[check_stale]
        report.row(case, name, n, timing, 28, wall_ms=wall,
                   launches=opt.launches_per_step, tensors=len(shapes),
                   check_stale=check_stale)

    def run_kfuse_new_grads(check_stale):
        # Two grad sets alternate, as backward after zero_grad(set_to_none)
        # hands new tensors; only opt.step() is on the clock (host time).
        params, ms, vs = params_with_grads()
        sets = [[p.grad for p in params],
                [torch.randn_like(p) for p in params]]
        opt = kfuse.multi_tensor(str(ADAMW), params=params,
                                 states={"exp_avg": ms, "exp_avg_sq": vs},
                                 check_stale=check_stale, **HP)
        host = []
        for step in range(warmup + steps):
            for p, g in zip(params, sets[step % 2]):
                p.grad = g
            start = time.perf_counter()
            opt.step()
            if step >= warmup:
                host.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "kfuse_new_grads_" + str(check_stale).lower(), n,
                   timing, 28, host_ms=statistics.median(host),
                   launches=opt.launches_per_step, tensors=len(shapes),
                   check_stale=check_stale,
                   note="grads replaced before every step; host_ms is "
                        "opt.step() alone, rebinding included")

    for mode in (True, "grads", False):
        report.guarded(f"{case} kfuse check_stale={mode}",
                       lambda mode=mode: run_kfuse(mode))
    for mode in (True, "grads"):
        report.guarded(f"{case} kfuse new grads check_stale={mode}",
                       lambda mode=mode: run_kfuse_new_grads(mode))
    for impl, kwargs in (("torch_fused", {"fused": True}),
                         ("torch_foreach", {"foreach": True})):
        def run_torch(impl=impl, kwargs=kwargs):
            opt, _ = torch_opt(shapes, torch.float32, **kwargs)
            wall = host_ms(opt.step, 2, 10)
            timing = time_ms(opt.step, 2, 10)
            report.row(case, impl, n, timing, 28, wall_ms=wall,
                       tensors=len(shapes), launches=None)

        report.guarded(f"{case} {impl}", run_torch)


def bench_speedup(report, warmup, repeats, rounds=5):
    """kfuse against torch fused AdamW on the f32 GPT-2 list, alternating
    rounds in one process: the ratio of medians per round, and its median."""
    case = "adamw.f32.gpt2s"
    shapes = gpt2_shapes()
    n = numel_of(shapes)
    ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
    ours = kfuse_opt(ps, gs, ms, vs, check_stale=False)
    theirs, _ = torch_opt(shapes, torch.float32, fused=True)
    ratios, kfuse_ms, torch_ms = [], [], []
    for _ in range(rounds):
        a = time_ms(ours.step, warmup, repeats)["ms"]
        b = time_ms(theirs.step, warmup, repeats)["ms"]
        kfuse_ms.append(a)
        torch_ms.append(b)
        ratios.append(b / a)
    report.data.setdefault("speedups", []).append({
        "case": case, "vs": "torch_fused", "rounds": rounds,
        "kfuse_ms": kfuse_ms, "torch_fused_ms": torch_ms,
        "speedup_per_round": ratios,
        "speedup_median": statistics.median(ratios),
        "speedup_min": min(ratios)})
    print(f"speedup {case} vs torch_fused over {rounds} rounds: "
          f"median {statistics.median(ratios):.2f}x, min {min(ratios):.2f}x",
          flush=True)


# Every library optimizer on the f32 GPT-2 list, with torch's fused peer
# where it has one: (name, states, kfuse hypers, torch class, torch kwargs,
# bytes per element).
OPTIMIZERS = [
    ("adam", ("exp_avg", "exp_avg_sq"), dict(lr=1e-3, weight_decay=0.0),
     "Adam", dict(lr=1e-3), 28),
    ("sgd", ("momentum_buffer",), dict(lr=1e-2, momentum=0.9),
     "SGD", dict(lr=1e-2, momentum=0.9), 20),
    ("lion", ("exp_avg",), dict(lr=1e-4, weight_decay=1e-2), None, None, 20),
]


def bench_optimizers(report, warmup, repeats):
    shapes = gpt2_shapes()
    n = numel_of(shapes)
    for name, states, hp, torch_cls, torch_kw, bytes_per in OPTIMIZERS:
        case = f"{name}.f32.gpt2s"

        def run_kfuse(name=name, states=states, hp=hp, case=case,
                      bytes_per=bytes_per):
            ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
            lists = dict(zip(states, (ms, vs)))
            opt = kfuse.multi_tensor(str(ADAMW.parent / f"{name}.mlir"),
                                     params=ps, grads=gs, states=lists,
                                     check_stale=False, **hp)
            opt.step()  # SGD's first step only copies grads into momentum
            timing = time_ms(opt.step, warmup, repeats)
            report.row(case, "kfuse", n, timing, bytes_per,
                       launches=opt.launches_per_step, tensors=len(shapes),
                       kfuse_bytes_per_step=opt.bytes_per_step)

        report.guarded(f"{case} kfuse", run_kfuse)
        if torch_cls is None:
            continue

        def run_torch(torch_cls=torch_cls, torch_kw=torch_kw, case=case,
                      bytes_per=bytes_per):
            ps, gs, _, _ = make_list(shapes, torch.float32, torch.float32)
            params = [torch.nn.Parameter(p) for p in ps]
            for p, g in zip(params, gs):
                p.grad = g
            opt = getattr(torch.optim, torch_cls)(params, fused=True,
                                                  **torch_kw)
            opt.step()
            timing = time_ms(opt.step, warmup, repeats)
            report.row(case, "torch_fused", n, timing, bytes_per,
                       tensors=len(shapes), launches=None)

        report.guarded(f"{case} torch_fused", run_torch)


# The drop-ins of optimizers with reductions or more states, over GPT-2
# small: (case, kfuse constructor, torch peer or None, the fewest bytes per
# element the algorithm moves in f32).
DROP_INS = [
    # p g sum read, p sum written.
    ("adagrad", lambda k, ps: k.Adagrad(ps, lr=1e-2, check_stale=False),
     lambda ps: torch.optim.Adagrad(ps, lr=1e-2, foreach=True), 20),
    # p g square_avg read and written, with momentum a buffer too.
    ("rmsprop", lambda k, ps: k.RMSprop(ps, lr=1e-3, check_stale=False),
     lambda ps: torch.optim.RMSprop(ps, lr=1e-3, foreach=True), 20),
    ("rmsprop_centered_momentum",
     lambda k, ps: k.RMSprop(ps, lr=1e-3, centered=True, momentum=0.9,
                             check_stale=False),
     lambda ps: torch.optim.RMSprop(ps, lr=1e-3, centered=True, momentum=0.9,
                                    foreach=True), 36),
    # Norms of p and g first (read p g), then p g buf read, p buf written.
    ("lars", lambda k, ps: k.Lars(ps, lr=1.0, momentum=0.9,
                                  weight_decay=1e-4, check_stale=False),
     None, 28),
    # The mask's mean per tensor needs the new moments first: read g m v,
    # write m v; then read p g m v, write p.
    ("cautious_adamw",
     lambda k, ps: k.AdamW(ps, **TORCH_HP, caution=True, check_stale=False),
     None, 40),
]


def bench_drop_ins(report, warmup, repeats):
    from kfuse.torch import optim as kopt

    shapes = gpt2_shapes()
    n = numel_of(shapes)
    for name, make_kfuse, make_torch, fewest in DROP_INS:
        case = f"{name}.f32.gpt2s"

        def run(impl, make, case=case, fewest=fewest):
            ps, gs, _, _ = make_list(shapes, torch.float32, torch.float32)
            params = [torch.nn.Parameter(p) for p in ps]
            for p, g in zip(params, gs):
                p.grad = g
            with (separate_phases() if impl.endswith("_separate")
                  else contextlib.nullcontext()):
                opt = make(params)
                opt.step()
            timing = time_ms(opt.step, warmup, repeats)
            extra = {}
            if impl.startswith("kfuse"):
                extra = dict(launches=opt.launches_per_step,
                             kfuse_bytes_per_element=sum(
                                 c.mtu.bytes_per_step
                                 for r in opt._kfuse_runtimes if r
                                 for c in r.cohorts) / n)
            report.row(case, impl, n, timing, fewest, **extra)

        for impl in ("kfuse", "kfuse_separate"):
            report.guarded(f"{case} {impl}",
                           lambda: run(impl, lambda ps: make_kfuse(kopt, ps)))
        if make_torch is not None:
            report.guarded(f"{case} torch_foreach",
                           lambda: run("torch_foreach", make_torch))


LAMB = REPO / "library" / "optim" / "lamb.mlir"


class separate_phases:
    """Within it, new plans launch each reduction phase on its own
    (KFUSE_SEPARATE_PHASES=1) instead of one cooperative launch."""

    def __enter__(self):
        os.environ["KFUSE_SEPARATE_PHASES"] = "1"

    def __exit__(self, *exc):
        del os.environ["KFUSE_SEPARATE_PHASES"]
LAMB_HP = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
               max_grad_norm=1.0)


def torch_lamb(params, states, step, lr, betas, eps, weight_decay,
               max_grad_norm):
    """LAMB as torch's foreach ops write it (Apex semantics, adam_w_mode):
    the global grad norm and clip, the moments, r, the per-tensor norms and
    trust ratios, the update."""
    beta1, beta2 = betas
    grads = [p.grad for p in params]
    ms, vs = states
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    clip = torch.clamp(norm / max_grad_norm, min=1.0)
    gs = torch._foreach_div(grads, clip)
    torch._foreach_mul_(ms, beta1)
    torch._foreach_add_(ms, gs, alpha=1 - beta1)
    torch._foreach_mul_(vs, beta2)
    torch._foreach_addcmul_(vs, gs, gs, 1 - beta2)
    denom = torch._foreach_sqrt(vs)
    torch._foreach_div_(denom, (1 - beta2 ** step) ** 0.5)
    torch._foreach_add_(denom, eps)
    r = torch._foreach_div(ms, denom)
    torch._foreach_div_(r, 1 - beta1 ** step)
    torch._foreach_add_(r, params, alpha=weight_decay)
    pn = torch.stack(torch._foreach_norm(params))
    rn = torch.stack(torch._foreach_norm(r))
    trust = torch.where((pn > 0) & (rn > 0), pn / rn, torch.ones_like(pn))
    torch._foreach_mul_(r, list((trust * -lr).unbind()))
    torch._foreach_add_(params, r)


def bench_lamb(report, warmup, repeats):
    """LAMB over GPT-2 small: kfuse's plan without and with the global
    grad-norm clip (its phases in one cooperative launch, and one launch
    per phase: `_separate`), the FusedLAMB drop-in, and torch foreach ops.
    Bytes: LAMB's minimum is 40 B/element in f32. Its trust ratio needs
    the whole of r before any param is written, so a second pass reads
    what the first stored (m, v or r, and p) and writes p: read p g m v,
    write m v, then read p m v, write p. Clipping adds a read of g before
    the moments (44 B)."""
    from kfuse.torch import optim as kopt

    shapes = gpt2_shapes()
    n = numel_of(shapes)
    case = "lamb.f32.gpt2s"

    def run_plan(clip, separate):
        ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
        hp = dict(max_grad_norm=1.0) if clip else dict(max_grad_norm=0.0)
        with (separate_phases() if separate else contextlib.nullcontext()):
            opt = kfuse.multi_tensor(str(LAMB), params=ps, grads=gs,
                                     states={"exp_avg": ms,
                                             "exp_avg_sq": vs},
                                     check_stale=False, lr=1e-3, eps=1e-6,
                                     weight_decay=0.01, clip_grad_norm=clip,
                                     **hp)
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case + (".clip" if clip else ""),
                   "kfuse" + ("_separate" if separate else ""), n, timing,
                   44 if clip else 40,
                   launches=opt.launches_per_step, tensors=len(shapes),
                   kfuse_bytes_per_step=opt.bytes_per_step,
                   clipping=clip)

    def drop_in(params):
        return kopt.FusedLAMB(params, check_stale=False, **LAMB_HP)

    def run_drop_in():
        ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
        params = [torch.nn.Parameter(p) for p in ps]
        for p, g in zip(params, gs):
            p.grad = g
        opt = drop_in(params)
        opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case + ".clip", "kfuse_FusedLAMB", n, timing, 44,
                   launches=opt.launches_per_step,
                   host_ms=host_ms(opt.step, warmup, repeats))

    def run_torch():
        ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32)
        params = [torch.nn.Parameter(p) for p in ps]
        for p, g in zip(params, gs):
            p.grad = g
        steps = [0]

        def step():
            steps[0] += 1
            with torch.no_grad():
                torch_lamb(params, (ms, vs), steps[0], **LAMB_HP)

        timing = time_ms(step, warmup, repeats)
        report.row(case + ".clip", "torch_foreach", n, timing, 44)

    for clip in (False, True):
        for separate in (False, True):
            report.guarded(f"{case} clip={clip} separate={separate}",
                           lambda c=clip, s=separate: run_plan(c, s))
    report.guarded(f"{case}.clip kfuse_FusedLAMB", run_drop_in)
    report.guarded(f"{case}.clip torch_foreach", run_torch)

    def parity():
        """The drop-in against torch foreach LAMB in float64 over 100 steps
        on the first 40 tensors of the list (fresh grads each step)."""
        sub = shapes[:40]
        ps, _, _, _ = make_list(sub, torch.float32, torch.float32, seed=5)
        params = [torch.nn.Parameter(p) for p in ps]
        ref = [torch.nn.Parameter(p.detach().double().clone()) for p in ps]
        ref_states = ([torch.zeros_like(r) for r in ref],
                      [torch.zeros_like(r) for r in ref])
        # Fresh grads each step: the default checks follow them.
        opt = kopt.FusedLAMB(params, **LAMB_HP)
        gen = torch.Generator(device="cuda").manual_seed(6)
        for step in range(1, 101):
            for p, r in zip(params, ref):
                p.grad = torch.randn(p.shape, device="cuda", generator=gen)
                r.grad = p.grad.double()
            opt.step()
            with torch.no_grad():
                torch_lamb(ref, ref_states, step, **LAMB_HP)
        error = rel_l2(torch.cat([p.detach().flatten() for p in params]),
                       torch.cat([r.detach().flatten() for r in ref]))
        report.data.setdefault("parity", {})["lamb_f32_vs_f64_100_steps"] = {
            "param_rel_l2": error, "tensors": len(sub),
            "elements": numel_of(sub)}
        print(f"lamb parity: param rel L2 {error:.3e}", flush=True)
        if not error <= 1e-5:
            raise AssertionError(f"LAMB parity {error:.3e} > 1e-5")

    report.guarded("lamb parity", parity)


NOVOGRAD = REPO / "library" / "optim" / "novograd.mlir"
NOVOGRAD_HP = dict(lr=1e-3, betas=(0.95, 0.98), eps=1e-8, weight_decay=1e-3)


def torch_novograd(params, exp_avgs, norms, step, lr, betas, eps,
                   weight_decay):
    """NovoGrad as torch's foreach ops write it (Apex's semantics, the
    defaults: L2 norms started from the first step's, grad averaging, bias
    correction, decay on the update): the per-tensor grad norms, the
    running norms, the moments, the update."""
    beta1, beta2 = betas
    grads = [p.grad for p in params]
    n = torch.stack(torch._foreach_norm(grads))
    if step == 1:
        norms.copy_(n)
    else:
        norms.copy_(torch.sqrt(beta2 * norms * norms + (1 - beta2) * n * n))
    bc1 = 1 - beta1 ** step
    denom = (norms / math.sqrt(1 - beta2 ** step) + eps) * bc1
    torch._foreach_mul_(exp_avgs, beta1)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    update = torch._foreach_div(exp_avgs, list(denom.unbind()))
    torch._foreach_add_(update, params, alpha=weight_decay)
    torch._foreach_add_(params, update, alpha=-lr)


def bench_novograd(report, warmup, repeats, steps=100):
    """NovoGrad over GPT-2 small: kfuse's plan (its two phases, the grad
    norms per tensor and the update, in one cooperative launch, and one
    launch per phase: `_separate`), the FusedNovoGrad drop-in, and torch
    foreach ops. Bytes: 24 B/element in f32, the fewest NovoGrad moves: the
    norm of a tensor's grad is needed before any of its elements updates,
    so phase 1 reads g and phase 2 reads g p m and writes p m. Then parity
    of the drop-in against Apex's algorithm in float64 over `steps` steps
    on the first 40 tensors."""
    from kfuse.torch import optim as kopt
    from _optim_testing import (NovoGradReference, float64_twins,
                                step_on_random_grads)

    shapes = gpt2_shapes()
    n = numel_of(shapes)
    case = "novograd.f32.gpt2s"

    def run_plan(separate):
        ps, gs, ms, _ = make_list(shapes, torch.float32, torch.float32)
        norms = torch.zeros(len(ps), device="cuda")
        beta1, beta2 = NOVOGRAD_HP["betas"]
        with (separate_phases() if separate else contextlib.nullcontext()):
            opt = kfuse.multi_tensor(
                str(NOVOGRAD), params=ps, grads=gs,
                states={"exp_avg": ms, "exp_avg_sq": list(norms.split(1))},
                check_stale=False, lr=NOVOGRAD_HP["lr"], beta1=beta1,
                beta2=beta2, eps=NOVOGRAD_HP["eps"],
                weight_decay=NOVOGRAD_HP["weight_decay"])
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "kfuse" + ("_separate" if separate else ""), n,
                   timing, 24, launches=opt.launches_per_step,
                   tensors=len(shapes),
                   kfuse_bytes_per_step=opt.bytes_per_step,
                   norms_finite=bool(torch.isfinite(norms).all()))

    def run_drop_in():
        params = f32_params_with_grads(shapes)
        opt = kopt.FusedNovoGrad(params, check_stale=False, **NOVOGRAD_HP)
        opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "kfuse_FusedNovoGrad", n, timing, 24,
                   launches=opt.launches_per_step,
                   host_ms=host_ms(opt.step, warmup, repeats))

    def run_torch():
        params = f32_params_with_grads(shapes)
        ms = [torch.zeros_like(p) for p in params]
        norms = torch.zeros(len(params), device="cuda")
        count = [0]

        def step():
            count[0] += 1
            with torch.no_grad():
                torch_novograd(params, ms, norms, count[0], **NOVOGRAD_HP)

        timing = time_ms(step, warmup, repeats)
        report.row(case, "torch_foreach", n, timing, 24,
                   host_ms=host_ms(step, warmup, repeats))

    for separate in (False, True):
        report.guarded(f"{case} separate={separate}",
                       lambda s=separate: run_plan(s))
    report.guarded(f"{case} kfuse_FusedNovoGrad", run_drop_in)
    report.guarded(f"{case} torch_foreach", run_torch)

    def parity():
        sub = shapes[:40]
        ps, _, _, _ = make_list(sub, torch.float32, torch.float32, seed=11)
        params = [torch.nn.Parameter(p) for p in ps]
        ref = float64_twins(params)
        opt = kopt.FusedNovoGrad(params, **NOVOGRAD_HP)
        ref_opt = NovoGradReference(ref, **NOVOGRAD_HP)
        step_on_random_grads(opt, ref_opt, params, ref, 12, steps)
        error = rel_l2(torch.cat([p.detach().flatten() for p in params]),
                       torch.cat([r.detach().flatten() for r in ref]))
        report.data.setdefault("parity", {})[
            "novograd_f32_vs_f64_100_steps"] = {
                "param_rel_l2": error, "tensors": len(sub),
                "elements": numel_of(sub), "steps": steps}
        print(f"novograd parity: param rel L2 {error:.3e}", flush=True)
        if not error <= 1e-5:
            raise AssertionError(f"NovoGrad parity {error:.3e} > 1e-5")

    report.guarded("novograd parity", parity)


ADAFACTOR_HP = dict(lr=1e-2, eps=(2.0 ** -23, 1e-3), weight_decay=0.01)


def adafactor_bytes(shapes):
    """The fewest bytes per element Adafactor moves in f32, averaged over
    `shapes`: a matrix's factored form reads p and g (the sums of p^2 and
    of g^2 per row and column), g again (the RMS of the update), then p
    and g and writes p: 24 B; a vector's reads p, g, v and writes v, then
    reads p, g, v and writes p: 32 B."""
    total = 0
    for shape in shapes:
        total += (24 if len(shape) == 2 else 32) * numel_of([shape])
    return total / numel_of(shapes)


def bench_adafactor(report, warmup, repeats, steps=100):
    """Adafactor over GPT-2 small: kfuse.torch.optim.Adafactor (a plan for
    the matrices, library/optim/adafactor.mlir, four phases in one
    cooperative launch, or one launch each: `_separate`; a plan for the
    vectors) against torch.optim.Adafactor (foreach, its default on CUDA,
    and the loop). Then parity of the drop-in against torch's in float64
    over `steps` steps on the first 40 tensors."""
    from kfuse.torch import optim as kopt
    from _optim_testing import float64_twins, step_on_random_grads

    shapes = gpt2_shapes()
    n = numel_of(shapes)
    case = "adafactor.f32.gpt2s"
    bytes_per_element = adafactor_bytes(shapes)

    def run_drop_in(separate):
        params = f32_params_with_grads(shapes)
        with (separate_phases() if separate else contextlib.nullcontext()):
            opt = kopt.Adafactor(params, check_stale=False, **ADAFACTOR_HP)
            opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "kfuse_Adafactor" + ("_separate" if separate
                                              else ""), n, timing,
                   bytes_per_element, launches=opt.launches_per_step,
                   fallbacks=len(opt.fallbacks),
                   host_ms=host_ms(opt.step, warmup, repeats),
                   finite=all(bool(torch.isfinite(p).all())
                              for p in params[:4]))

    def run_torch(foreach):
        params = f32_params_with_grads(shapes)
        opt = torch.optim.Adafactor(params, foreach=foreach, **ADAFACTOR_HP)
        opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "torch_" + ("foreach" if foreach else "loop"), n,
                   timing, bytes_per_element,
                   host_ms=host_ms(opt.step, warmup, repeats))

    for separate in (False, True):
        report.guarded(f"{case} separate={separate}",
                       lambda s=separate: run_drop_in(s))
    for foreach in (True, False):
        report.guarded(f"{case} torch foreach={foreach}",
                       lambda f=foreach: run_torch(f))

    def parity():
        sub = shapes[:40]
        ps, _, _, _ = make_list(sub, torch.float32, torch.float32, seed=13)
        params = [torch.nn.Parameter(p) for p in ps]
        ref = float64_twins(params)
        opt = kopt.Adafactor(params, **ADAFACTOR_HP)
        ref_opt = torch.optim.Adafactor(ref, **ADAFACTOR_HP)
        step_on_random_grads(opt, ref_opt, params, ref, 14, steps)
        error = rel_l2(torch.cat([p.detach().flatten() for p in params]),
                       torch.cat([r.detach().flatten() for r in ref]))
        report.data.setdefault("parity", {})[
            "adafactor_f32_vs_torch_f64_100_steps"] = {
                "param_rel_l2": error, "tensors": len(sub),
                "elements": numel_of(sub), "steps": steps,
                "fallbacks": len(opt.fallbacks)}
        print(f"adafactor parity: param rel L2 {error:.3e}", flush=True)
        if not error <= 1e-5:
            raise AssertionError(f"Adafactor parity {error:.3e} > 1e-5")

    report.guarded("adafactor parity", parity)


def bench_adamw_clip(report, warmup, repeats, steps=100):
    """AdamW with max_grad_norm=1.0 over GPT-2 small: kfuse's AdamW drop-in
    (the norm in the step's first pass, the clip applied as the update
    reads the grads: 32 B/element, 4 to read the grads once more) against
    torch.nn.utils.clip_grad_norm_(foreach=True) then torch's fused AdamW
    (the norm, then the grads scaled in place: 40 B/element). Wall time per
    step, the way a training loop pays it; then parity over `steps` steps
    on fresh grads."""
    from kfuse.torch import optim as kopt

    shapes = gpt2_shapes()
    n = numel_of(shapes)
    case = "adamw_clip.f32.gpt2s"

    def run_kfuse(separate):
        params = f32_params_with_grads(shapes)
        with (separate_phases() if separate else contextlib.nullcontext()):
            opt = kopt.AdamW(params, **TORCH_HP, max_grad_norm=1.0,
                             check_stale=False)
            opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case, "kfuse_AdamW_max_grad_norm" +
                   ("_separate" if separate else ""), n, timing, 32,
                   launches=opt.launches_per_step,
                   host_ms=host_ms(opt.step, warmup, repeats))

    def run_torch():
        params = f32_params_with_grads(shapes)
        opt = torch.optim.AdamW(params, **TORCH_HP, fused=True)

        def step():
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            opt.step()

        step()
        timing = time_ms(step, warmup, repeats)
        report.row(case, "torch_clip_foreach+fused", n, timing, 40,
                   host_ms=host_ms(step, warmup, repeats))

    def groups(params):
        # Decay and no decay, as Hugging Face's Trainer groups them.
        return [{"params": [p for p in params if p.dim() > 1]},
                {"params": [p for p in params if p.dim() <= 1],
                 "weight_decay": 0.0}]

    def run_kfuse_groups():
        params = f32_params_with_grads(shapes)
        opt = kopt.AdamW(groups(params), **TORCH_HP, max_grad_norm=1.0,
                         check_stale=False)
        opt.step()
        timing = time_ms(opt.step, warmup, repeats)
        report.row(case + ".2groups", "kfuse_AdamW_max_grad_norm", n, timing,
                   32, launches=opt.launches_per_step,
                   host_ms=host_ms(opt.step, warmup, repeats),
                   note="the norm by torch's foreach norm over both plans")

    def run_torch_groups():
        params = f32_params_with_grads(shapes)
        opt = torch.optim.AdamW(groups(params), **TORCH_HP, fused=True)

        def step():
            torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
            opt.step()

        step()
        timing = time_ms(step, warmup, repeats)
        report.row(case + ".2groups", "torch_clip_foreach+fused", n, timing,
                   40, host_ms=host_ms(step, warmup, repeats))

    report.guarded(f"{case} kfuse", lambda: run_kfuse(False))
    report.guarded(f"{case} kfuse separate", lambda: run_kfuse(True))
    report.guarded(f"{case} torch", run_torch)
    report.guarded(f"{case}.2groups kfuse", run_kfuse_groups)
    report.guarded(f"{case}.2groups torch", run_torch_groups)

    def parity():
        sub = shapes[:40]
        ps, _, _, _ = make_list(sub, torch.float32, torch.float32, seed=9)
        params = [torch.nn.Parameter(p) for p in ps]
        ref = [torch.nn.Parameter(p.detach().clone()) for p in ps]
        opt = kopt.AdamW(params, **TORCH_HP, max_grad_norm=1.0)
        ref_opt = torch.optim.AdamW(ref, **TORCH_HP, fused=True)
        gen = torch.Generator(device="cuda").manual_seed(10)
        clipped = 0
        for _ in range(steps):
            for p, r in zip(params, ref):
                p.grad = torch.randn(p.shape, device="cuda", generator=gen)
                r.grad = p.grad.clone()
            norm = torch.nn.utils.clip_grad_norm_(ref, 1.0, foreach=True)
            clipped += int(norm > 1.0)
            opt.step()
            ref_opt.step()
        error = rel_l2(torch.cat([p.detach().flatten() for p in params]),
                       torch.cat([r.detach().flatten() for r in ref]))
        report.data.setdefault("parity", {})["adamw_clip_f32_100_steps"] = {
            "param_rel_l2": error, "steps_clipped": clipped,
            "tensors": len(sub)}
        print(f"adamw_clip parity: param rel L2 {error:.3e}, "
              f"{clipped} of {steps} steps clipped", flush=True)
        if not error <= 1e-6:
            raise AssertionError(f"adamw_clip parity {error:.3e} > 1e-6")

    report.guarded("adamw_clip parity", parity)


def bench_graph(report, warmup, repeats):
    """Captures kfuse's step, replays it with the lr changed between replays,
    against eager steps from the same state."""
    case = "adamw.f32.gpt2s.graph"
    shapes = gpt2_shapes()
    n = numel_of(shapes)
    a = make_list(shapes, torch.float32, torch.float32, seed=3)
    b = [[t.clone() for t in ts] for ts in a]
    graphed = kfuse_opt(*a)
    eager = kfuse_opt(*b)
    torch.cuda.synchronize()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            graphed.step()
    torch.cuda.current_stream().wait_stream(side)
    for _ in range(3):
        eager.step()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graphed.step()
    lr_view = graphed.hyper_tensor("lr")
    replays = 20
    for i in range(replays):
        lr = HP["lr"] * (1.0 - i / replays)
        # Both ways of changing a hyper between replays.
        if i % 2:
            graphed.set_hyper("lr", lr)
        else:
            lr_view.fill_(lr)
        graph.replay()
        eager.set_hyper("lr", lr)
        eager.step()
    torch.cuda.synchronize()

    exact = True
    max_rel = 0.0
    for x, y in zip([t for ts in a[:1] + a[2:] for t in ts],
                    [t for ts in b[:1] + b[2:] for t in ts]):
        if not torch.equal(x, y):
            exact = False
            diff = ((x.double() - y.double()).norm() /
                    y.double().norm().clamp_min(1e-30)).item()
            max_rel = max(max_rel, diff)
    steps = (graphed.get_hyper("step"), eager.get_hyper("step"))
    graphed.set_hyper("lr", HP["lr"])
    timing = time_ms(graph.replay, warmup, repeats)
    eager_timing = time_ms(eager.step, warmup, repeats)
    ok = (exact or max_rel <= 1e-7) and steps[0] == steps[1] == 3 + replays
    report.row(case, "kfuse_graph_replay", n, timing, 28,
               eager_ms=eager_timing["ms"], bit_identical=exact,
               max_rel_l2=max_rel, steps=list(steps), replays=replays,
               matches_eager=ok, launches=graphed.launches_per_step)
    report.data["graph"] = {"bit_identical": exact, "max_rel_l2": max_rel,
                            "steps_graphed_eager": list(steps),
                            "matches_eager": ok, "replay_ms": timing["ms"],
                            "eager_ms": eager_timing["ms"]}
    if not ok:
        raise AssertionError(f"graph replays differ from eager steps: "
                             f"exact={exact} max_rel={max_rel} steps={steps}")


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def parity_f32(report, steps):
    shapes = gpt2_shapes()
    gen = torch.Generator(device="cuda").manual_seed(7)
    p0 = [torch.randn(s, device="cuda", generator=gen) for s in shapes]
    grads = [torch.empty_like(p) for p in p0]
    params = [torch.nn.Parameter(p.clone()) for p in p0]
    for p, g in zip(params, grads):
        p.grad = g  # torch and kfuse read the same grad tensors
    ref = torch.optim.AdamW(params, **TORCH_HP, fused=True)
    params64 = [torch.nn.Parameter(p.double()) for p in p0]
    ref64 = torch.optim.AdamW(params64, **TORCH_HP, foreach=True)
    ks = [p.clone() for p in p0]
    ms = [torch.zeros_like(p) for p in p0]
    vs = [torch.zeros_like(p) for p in p0]
    opt = kfuse_opt(ks, grads, ms, vs)
    for step in range(steps):
        gen.manual_seed(1000 + step)
        for g in grads:
            g.normal_(generator=gen)
        opt.step()
        ref.step()
        for p64, g in zip(params64, grads):
            p64.grad = g.double()
        ref64.step()
    torch.cuda.synchronize()
    errors = [rel_l2(k, p.detach()) for k, p in zip(ks, params)]
    kfuse_f64 = [rel_l2(k, p.detach()) for k, p in zip(ks, params64)]
    torch_f64 = [rel_l2(p.detach(), q.detach()) for p, q in zip(params, params64)]
    flat = lambda ts: torch.cat([t.detach().double().flatten() for t in ts])
    all_k, all_t, all_r = flat(ks), flat(params), flat(params64)
    m_errors = [rel_l2(m, ref.state[p]["exp_avg"]) for m, p in zip(ms, params)]
    v_errors = [rel_l2(v, ref.state[p]["exp_avg_sq"])
                for v, p in zip(vs, params)]
    result = {"steps": steps, "tensors": len(shapes),
              "max_param_rel_l2": max(errors),
              "max_exp_avg_rel_l2": max(m_errors),
              "max_exp_avg_sq_rel_l2": max(v_errors),
              "max_param_rel_l2_kfuse_vs_f64": max(kfuse_f64),
              "max_param_rel_l2_torch_fused_vs_f64": max(torch_f64),
              "all_params_rel_l2_kfuse_vs_torch_fused":
                  ((all_k - all_t).norm() / all_t.norm()).item(),
              "all_params_rel_l2_kfuse_vs_f64":
                  ((all_k - all_r).norm() / all_r.norm()).item(),
              "all_params_rel_l2_torch_fused_vs_f64":
                  ((all_t - all_r).norm() / all_r.norm()).item(),
              "kfuse_step": opt.get_hyper("step"),
              "goal_param_rel_l2_1e-6_met": max(errors) <= 1e-6}
    report.data.setdefault("parity", {})["f32_vs_torch_fused"] = result
    print(json.dumps(result), flush=True)


def parity_bf16(report, steps):
    """bf16 params and grads, f32 states, against float64 AdamW with the
    params rounded to bf16 after every step (what the storage forces)."""
    shapes = gpt2_shapes()
    gen = torch.Generator(device="cuda").manual_seed(8)
    p0 = [torch.randn(s, device="cuda", generator=gen).bfloat16()
          for s in shapes]
    grads = [torch.empty_like(p) for p in p0]
    refs = [torch.nn.Parameter(p.double()) for p in p0]
    ref = torch.optim.AdamW(refs, **TORCH_HP, foreach=True)
    ks = [p.clone() for p in p0]
    ms = [torch.zeros(p.shape, device="cuda") for p in p0]
    vs = [torch.zeros(p.shape, device="cuda") for p in p0]
    opt = kfuse_opt(ks, grads, ms, vs)
    for step in range(steps):
        gen.manual_seed(2000 + step)
        for g, r in zip(grads, refs):
            g.copy_(torch.randn(g.shape, device="cuda", generator=gen))
            r.grad = g.double()
        opt.step()
        ref.step()
        with torch.no_grad():
            for r in refs:
                r.copy_(r.bfloat16().double())
    torch.cuda.synchronize()
    ulp = torch.finfo(torch.bfloat16).eps
    off = total = 0
    max_rel = 0.0
    for k, r in zip(ks, refs):
        rd = r.detach()
        rel = (k.double() - rd).abs() / rd.abs().clamp_min(1e-6)
        off += int((rel > ulp).sum())
        total += rel.numel()
        max_rel = max(max_rel, rel.max().item())
    result = {"steps": steps, "numel": total, "max_rel": max_rel,
              "frac_elements_off_by_more_than_1ulp": off / total,
              "note": "reference: float64 AdamW (foreach), params rounded to "
                      "bf16 after each step; kfuse states f32"}
    report.data.setdefault("parity", {})["bf16p_f32s_vs_f64"] = result
    print(json.dumps(result), flush=True)


def grad_scaling(report):
    shapes = gpt2_shapes()
    ps, gs, ms, vs = make_list(shapes, torch.float32, torch.float32, seed=9)
    scaled = kfuse_opt(ps, gs, ms, vs, grad_scaling=True)
    before = [t.clone() for t in ps + ms + vs]
    saved = gs[5].view(-1)[0].item()
    gs[5].view(-1)[0] = float("inf")
    scaled.step()
    torch.cuda.synchronize()
    unchanged = all(torch.equal(x, y) for x, y in zip(ps + ms + vs, before))
    found = scaled.found_inf.item()
    step_after_inf = scaled.get_hyper("step")
    gs[5].view(-1)[0] = saved

    # inv_scale 0.5 against an unscaled plan on halved grads, same state.
    half = [g * 0.5 for g in gs]
    ps2, ms2, vs2 = ([t.clone() for t in ts] for ts in (ps, ms, vs))
    plain = kfuse_opt(ps2, half, ms2, vs2)
    scaled.set_hyper("inv_scale", 0.5)
    scaled.step()
    plain.step()
    torch.cuda.synchronize()
    found_after = scaled.found_inf.item()
    exact = all(torch.equal(x, y) for x, y in zip(ps + ms + vs,
                                                  ps2 + ms2 + vs2))
    max_rel = max(rel_l2(x, y) for x, y in zip(ps + ms + vs, ps2 + ms2 + vs2))
    result = {"inf_step_left_everything_bit_identical": unchanged,
              "found_inf_after_inf_step": found,
              "step_after_inf_step": step_after_inf,
              "found_inf_after_finite_step": found_after,
              "step_after_finite_step": scaled.get_hyper("step"),
              "inv_scale_half_matches_halved_grads_exactly": exact,
              "inv_scale_half_max_rel_l2": max_rel,
              "launches": scaled.launches_per_step,
              "bytes_per_step": scaled.bytes_per_step}
    result["ok"] = (unchanged and found != 0 and step_after_inf == 0
                    and found_after == 0 and result["step_after_finite_step"] == 1
                    and (exact or max_rel <= 1e-7))
    report.data["grad_scaling"] = result
    print(json.dumps(result), flush=True)
    if not result["ok"]:
        raise AssertionError(f"grad scaling check failed: {result}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--parity-steps", type=int, default=100)
    parser.add_argument("--only", help="run only cases containing this")
    options = parser.parse_args()
    w, r = options.warmup, options.repeats
    report = Report(pathlib.Path(options.out) / "bench_multi_tensor.json")
    report.data.update({"warmup": w, "repeats": r})
    report.write()

    def want(name):
        return not options.only or options.only in name

    report.guarded("copy", lambda: copy_bandwidth(report, w, r))
    torch_both = (("torch_fused", {"fused": True}),
                  ("torch_foreach", {"foreach": True}))
    if want("adamw.f32.gpt2s"):
        bench_list(report, "adamw.f32.gpt2s", gpt2_shapes(), torch.float32,
                   torch.float32, w, r, torch_both)
    if want("speedup"):
        report.guarded("adamw.f32.gpt2s speedup",
                       lambda: bench_speedup(report, w, r))
    if want("optimizers"):
        bench_optimizers(report, w, r)
    if want("chunks"):
        report.guarded("adamw.f32.gpt2s chunk sizes",
                       lambda: bench_chunks(report, w, r))
    if want("adamw.bf16p_f32s.gpt2s"):
        bench_list(report, "adamw.bf16p_f32s.gpt2s", gpt2_shapes(),
                   torch.bfloat16, torch.float32, w, r,
                   (("torch_fused", {"fused": True}),))
    if want("master"):
        report.guarded("adamw.f32master_bf16model.gpt2s",
                       lambda: bench_master(report, w, r))
    if want("tiny4096"):
        bench_tiny(report, w, r)
    if want("drop_ins"):
        bench_drop_ins(report, w, r)
    if want("lamb"):
        bench_lamb(report, w, r)
    if want("novograd"):
        bench_novograd(report, w, r)
    if want("adafactor"):
        bench_adafactor(report, w, r)
    if want("adamw_clip"):
        bench_adamw_clip(report, w, r)
    if want("graph"):
        report.guarded("adamw.f32.gpt2s.graph",
                       lambda: bench_graph(report, w, r))
    if want("parity"):
        report.guarded("parity f32",
                       lambda: parity_f32(report, options.parity_steps))
        report.guarded("parity bf16",
                       lambda: parity_bf16(report, options.parity_steps))
    if want("grad_scaling"):
        report.guarded("grad scaling", lambda: grad_scaling(report))

    print(f"\n{'case':28s} {'impl':22s} {'ms':>8s} {'GB/s':>7s} {'%copy':>6s} "
          f"{'wall_ms':>8s}")
    for e in report.data["results"]:
        print(f"{e['case']:28s} {e['impl']:22s} {e['ms']:8.3f} "
              f"{e['GBps']:7.0f} {e['pct_of_copy'] or 0:6.1f} "
              f"{e.get('wall_ms', float('nan')):8.3f}")
    for e in report.data["errors"]:
        print(f"ERROR {e['case']}: {e['error']}")
    report.write()
    return 1 if report.data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
