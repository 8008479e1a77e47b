"""GPU tests of the kfuse Python package against torch.optim (plain script).

Run on a machine with a CUDA GPU and PyTorch:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/test_gpu.py [--json OUT]
Prints one line per test and "N passed, M failed"; exits 1 on any failure.
"""

import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import _gpu_tests  # noqa: E402
import kfuse  # noqa: E402

OPTIM = REPO / "library" / "optim"
N = 1 << 20
STEPS = 10
F32_TOLERANCE = 1e-6

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def time_ms(fn, repeats=30):
    """Milliseconds a call of `fn` takes on the device, after 5 warm-ups."""
    for _ in range(5):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def rel_l2(out, ref):
    out = out.double()
    ref = ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def check_close(name, out, ref, tolerance):
    assert torch.isfinite(out.float()).all(), f"{name}: non-finite values"
    error = rel_l2(out, ref)
    assert error <= tolerance, f"{name}: relative error {error:.3e} > {tolerance:.0e}"
    return error


def fresh(n, dtype=torch.float32, nonneg=False, seed=0, offset=0):
    """Random data (never zeros), optionally as a view `offset` elements in."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    base = torch.empty(n + offset, device="cuda", dtype=torch.float32)
    if nonneg:
        base.uniform_(0.0, 1.0, generator=gen)
    else:
        base.normal_(generator=gen)
    return base.to(dtype)[offset:]


def torch_steps(optimizer_cls, param, grads, **kwargs):
    p = torch.nn.Parameter(param.clone())
    opt = optimizer_cls([p], **kwargs)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    return p.detach(), opt.state[p]


def grads_for(n, dtype=torch.float32, offset=0):
    return [fresh(n, dtype, seed=100 + i, offset=offset) for i in range(STEPS)]


@test
def adamw_f32_matches_torch():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    p0 = fresh(N, seed=1)
    grads = grads_for(N)
    hp = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    ref_p, ref_state = torch_steps(torch.optim.AdamW, p0, grads, foreach=False, **hp)
    p = p0.clone()
    m = torch.zeros_like(p)
    v = torch.zeros_like(p)
    for step, g in enumerate(grads, 1):
        upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, lr=1e-3, beta1=0.9,
            beta2=0.999, eps=1e-8, weight_decay=1e-2, step=step)
    torch.cuda.synchronize()
    e = check_close("param", p, ref_p, F32_TOLERANCE)
    check_close("exp_avg", m, ref_state["exp_avg"], F32_TOLERANCE)
    # The IR computes 1 - beta2 in f32 (1 - 0.999f = 0.00099998713), torch in
    # double (0.001): 1.3e-5 relative in exp_avg_sq, far below the params'.
    ev = check_close("exp_avg_sq", v, ref_state["exp_avg_sq"], 1e-4)
    return {"param_rel_l2": e, "exp_avg_sq_rel_l2": ev}


@test
def adamw_defaults_and_unfused_match():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    p0 = fresh(N + 3, seed=2)
    grads = grads_for(N + 3)
    outs = []
    for fuse in (True, False):
        p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
        for step, g in enumerate(grads, 1):
            upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step, fuse=fuse)
        outs.append(p)
    ref_p, _ = torch_steps(torch.optim.AdamW, p0, grads, foreach=False,
                           lr=1e-3, weight_decay=1e-2)
    torch.cuda.synchronize()
    check_close("fused", outs[0], ref_p, F32_TOLERANCE)
    check_close("unfused", outs[1], ref_p, F32_TOLERANCE)
    check_close("fused vs unfused", outs[0], outs[1], F32_TOLERANCE)


@test
def adam_f32_matches_torch():
    upd = kfuse.Update(str(OPTIM / "adam.mlir"))
    p0 = fresh(N, seed=3)
    grads = grads_for(N)
    ref_p, ref_state = torch_steps(torch.optim.Adam, p0, grads, foreach=False,
                                   lr=2e-3, betas=(0.8, 0.99), eps=1e-7,
                                   weight_decay=1e-2)
    p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
    for step, g in enumerate(grads, 1):
        upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, lr=2e-3, beta1=0.8,
            beta2=0.99, eps=1e-7, weight_decay=1e-2, step=step)
    torch.cuda.synchronize()
    e = check_close("param", p, ref_p, F32_TOLERANCE)
    check_close("exp_avg_sq", v, ref_state["exp_avg_sq"], F32_TOLERANCE)
    return {"param_rel_l2": e}


@test
def sgd_f32_matches_torch():
    upd = kfuse.Update(str(OPTIM / "sgd.mlir"))
    errors = {}
    for nesterov in (False, True):
        p0 = fresh(N, seed=4)
        grads = grads_for(N)
        ref_p, ref_state = torch_steps(torch.optim.SGD, p0, grads, foreach=False,
                                       lr=1e-2, momentum=0.9, dampening=0.0,
                                       weight_decay=1e-3, nesterov=nesterov)
        p = p0.clone()
        buf = fresh(N, seed=5)  # ignored at step 1: never assume zeros
        for step, g in enumerate(grads, 1):
            upd(param=p, grad=g, momentum_buffer=buf, lr=1e-2, momentum=0.9,
                dampening=0.0, weight_decay=1e-3, nesterov=float(nesterov),
                step=step)
        torch.cuda.synchronize()
        errors[f"nesterov={nesterov}"] = check_close("param", p, ref_p, F32_TOLERANCE)
        check_close("momentum_buffer", buf, ref_state["momentum_buffer"], F32_TOLERANCE)
    return errors


def lion_reference(p, grads, m, lr, beta1, beta2, wd):
    p, m = p.double().clone(), m.double().clone()
    for g in grads:
        g = g.double()
        p.mul_(1 - lr * wd)
        c = beta1 * m + (1 - beta1) * g
        p.add_(torch.sign(c), alpha=-lr)
        m.mul_(beta2).add_(g, alpha=1 - beta2)
    return p, m


@test
def lion_f32_matches_reference():
    upd = kfuse.Update(str(OPTIM / "lion.mlir"))
    p0 = fresh(N, seed=6)
    m0 = fresh(N, seed=7)
    grads = grads_for(N)
    ref_p, ref_m = lion_reference(p0, grads, m0, 1e-4, 0.9, 0.99, 0.1)
    p, m = p0.clone(), m0.clone()
    for g in grads:
        upd(param=p, grad=g, exp_avg=m, lr=1e-4, beta1=0.9, beta2=0.99,
            weight_decay=0.1)
    torch.cuda.synchronize()
    e = check_close("param", p, ref_p, F32_TOLERANCE)
    check_close("exp_avg", m, ref_m, F32_TOLERANCE)
    return {"param_rel_l2": e}


@test
def misaligned_views_match():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    errors = {}
    for offset in (1, 2, 3):
        p0 = fresh(N + 5, seed=8)
        grads = grads_for(N + 5, offset=offset)
        ref_p, _ = torch_steps(torch.optim.AdamW, p0, grads, foreach=False,
                               lr=1e-3, weight_decay=1e-2)
        base = torch.empty(N + 5 + offset, device="cuda")
        p = base[offset:]
        p.copy_(p0)
        assert p.data_ptr() % 16 != 0
        m = torch.zeros(N + 5 + offset, device="cuda")[offset:]
        v = torch.zeros(N + 5 + offset, device="cuda")[offset:]
        sentinel = base[:offset].clone()
        for step, g in enumerate(grads, 1):
            upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step)
        torch.cuda.synchronize()
        assert torch.equal(base[:offset], sentinel), "wrote before the view"
        errors[f"offset={offset}"] = check_close("param", p, ref_p, F32_TOLERANCE)
    return errors


@test
def mismatched_sizes_raise_before_launch():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    p = fresh(N, seed=9)
    before = p.clone()
    try:
        upd(param=p, grad=fresh(N - 1), exp_avg=torch.zeros_like(p),
            exp_avg_sq=torch.zeros_like(p))
    except kfuse.KfuseError as error:
        assert error.status == "INVALID_ARGUMENT", error.status
        assert "elements" in str(error), str(error)
    else:
        raise AssertionError("no KfuseError for mismatched sizes")
    torch.cuda.synchronize()
    assert torch.equal(p, before), "param changed despite the error"


@test
def bad_arguments_raise():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    p = fresh(1024)
    good = dict(param=p, grad=fresh(1024), exp_avg=torch.zeros_like(p),
                exp_avg_sq=torch.zeros_like(p))
    cases = {
        "non-contiguous": dict(good, grad=fresh(2048)[::2]),
        "cpu tensor": dict(good, grad=torch.zeros(1024)),
        "unknown name": dict(good, momentum=0.9),
        "missing tensor": {k: v for k, v in good.items() if k != "grad"},
        "float64": dict(good, grad=fresh(1024).double()),
    }
    for what, kwargs in cases.items():
        try:
            upd(**kwargs)
        except kfuse.KfuseError as error:
            assert error.status == "INVALID_ARGUMENT", (what, error.status, str(error))
        else:
            raise AssertionError(f"no KfuseError for {what}")
    try:
        kfuse.Update("func.func @broken(")
    except kfuse.KfuseError as error:
        assert error.status == "PARSE", error.status
    else:
        raise AssertionError("no KfuseError for bad IR")
    # Storage dtypes are per argument: a bf16 exp_avg_sq beside an f32
    # exp_avg is a specialization of its own, not an error, and computes
    # what the all-f32 update does but for the state's rounding to bf16.
    mixed = {k: v.clone() for k, v in good.items()}
    mixed["exp_avg_sq"] = mixed["exp_avg_sq"].to(torch.bfloat16)
    plain = {k: v.clone() for k, v in good.items()}
    for step in (1, 2):  # the second step reads the rounded state
        upd(step=step, **mixed)
        upd(step=step, **plain)
    torch.cuda.synchronize()
    assert mixed["exp_avg_sq"].dtype == torch.bfloat16
    error = rel_l2(mixed["param"], plain["param"])
    assert error < 1e-2, error
    return {"mixed_dtypes_param_rel_l2": error}


def low_precision_reference(p0, grads, dtype, **hp):
    """AdamW in float64 with params stored in `dtype` after every step."""
    p = torch.nn.Parameter(p0.double())
    opt = torch.optim.AdamW([p], foreach=False, **hp)
    for g in grads:
        p.grad = g.double()
        opt.step()
        with torch.no_grad():
            p.copy_(p.to(dtype).double())
    return p.detach()


@test
def low_precision_params_work():
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    results = {}
    for dtype in (torch.float16, torch.bfloat16):
        p0 = fresh(N, dtype=dtype, seed=10)
        grads = grads_for(N, dtype=dtype)
        hp = dict(lr=1e-3, weight_decay=1e-2)
        ref = low_precision_reference(p0, grads, dtype, **hp)
        p = p0.clone()
        m = torch.zeros(N, device="cuda")
        v = torch.zeros(N, device="cuda")
        for step, g in enumerate(grads, 1):
            upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step, **hp)
        torch.cuda.synchronize()
        assert p.dtype == dtype
        ulp = torch.finfo(dtype).eps
        diff = (p.double() - ref).abs() / ref.abs().clamp_min(1e-3)
        results[str(dtype)] = {"max_rel": diff.max().item(),
                               "frac_off": (diff > ulp).float().mean().item()}
        assert diff.max().item() <= 2 * ulp, results
        assert results[str(dtype)]["frac_off"] < 1e-2, results
    return results


@test
def runs_on_a_side_stream():
    upd = kfuse.Update(str(OPTIM / "sgd.mlir"))
    p0 = fresh(N, seed=11)
    grads = grads_for(N)[:1]
    ref_p, _ = torch_steps(torch.optim.SGD, p0, grads, foreach=False, lr=1e-2,
                           momentum=0.0)
    stream = torch.cuda.Stream()
    p = p0.clone()
    buf = torch.zeros_like(p)
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        upd(param=p, grad=grads[0], momentum_buffer=buf, lr=1e-2, momentum=0.0)
    stream.synchronize()
    check_close("param", p, ref_p, F32_TOLERANCE)


@test
def compile_and_warmup_then_calls_hit():
    """Update.compile and Norm.compile report where the kernel came from;
    kfuse.warmup compiles a list on worker threads; the calls after them
    run the kernels compiled, with the results of uncompiled calls."""
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    n = 4099  # a size no other test compiles for
    p0 = fresh(n, seed=31)
    g = grads_for(n)[0]
    args = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2,
                step=3)

    def state():
        return dict(param=p0.clone(), grad=g, exp_avg=torch.zeros_like(p0),
                    exp_avg_sq=torch.zeros_like(p0))
    # The plan is specialized on dtypes and alignment, not on the size: an
    # earlier test may have compiled it already.
    first = upd.compile(**state(), **args)
    again = upd.compile(**state(), **args)
    assert first["cache"] in ("miss", "hit-disk", "hit-memory"), first
    assert again["cache"] == "hit-memory", again
    compiled = state()
    upd(**compiled, **args)
    norm = kfuse.library_norm("layernorm_fwd")
    x = torch.randn(37, 3001, device="cuda")
    w, b = torch.randn(3001, device="cuda"), torch.randn(3001, device="cuda")
    y = torch.empty_like(x)
    mean, rstd = torch.empty(37, device="cuda"), torch.empty(37, device="cuda")
    norm_args = dict(x=x, weight=w, bias=b, y=y, mean=mean, rstd=rstd)
    kfuse.warmup([(norm, norm_args), (upd, dict(**state(), **args, fuse=False))],
                 threads=2)
    assert norm.compile(**norm_args)["cache"] == "hit-memory"
    assert upd.compile(**state(), **args, fuse=False)["cache"] == "hit-memory"
    unfused = state()
    upd(**unfused, **args, fuse=False)
    norm(**norm_args)
    torch.cuda.synchronize()
    ref = torch.nn.functional.layer_norm(x, (3001,), w, b)
    check_close("layer_norm y", y, ref, 1e-5)
    check_close("fused vs unfused param", compiled["param"], unfused["param"],
                1e-7)
    return {"first": first["cache"], "first_ms": round(first["ms"], 1),
            "hit_ms": round(again["ms"], 4)}


@test
def device_arch_reported():
    arch = kfuse.device_arch()
    major, minor = torch.cuda.get_device_capability()
    assert arch == f"sm_{major}{minor}", arch
    return {"arch": arch}


#
# Multi-tensor plans: one launch a step over a list of tensor groups.
#

MT_SIZES = [1, 3, 4, 5, 0, 255, 256, 1000, 65536, 65537, 200003]


def mt_list(sizes=MT_SIZES, dtype=torch.float32, seed=20, offsets=None):
    """params, grads, exp_avg, exp_avg_sq; `offsets[i]` elements into a
    larger buffer for misaligned views."""
    lists = ([], [], [], [])
    for i, n in enumerate(sizes):
        off = offsets[i] if offsets else 0
        lists[0].append(fresh(n, dtype, seed=seed + i, offset=off))
        lists[1].append(fresh(n, dtype, seed=seed + 100 + i, offset=off))
        lists[2].append(fresh(n, seed=seed + 200 + i, offset=off))
        lists[3].append(fresh(n, nonneg=True, seed=seed + 300 + i, offset=off))
    return lists


def mt_opt(ps, gs, ms, vs, **kwargs):
    return kfuse.multi_tensor(str(OPTIM / "adamw.mlir"), params=ps, grads=gs,
                              states={"exp_avg": ms, "exp_avg_sq": vs},
                              **kwargs)


@test
def multi_tensor_keeps_each_state_in_its_own_dtype():
    """A dtype per argument: AdamW over the MT list with exp_avg in bf16 and
    exp_avg_sq in f32 is one plan (24 bytes per element), against
    adamw.mlir's formulas in float64 with exp_avg rounded to bf16 where it
    is stored, over 10 steps."""
    hp = dict(lr=2e-3, beta1=0.8, beta2=0.99, eps=1e-7, weight_decay=1e-2)
    ps, gs, ms, vs = mt_list()
    ms = [m.to(torch.bfloat16) for m in ms]
    ref = [[t.double() for t in ts] for ts in (ps, gs, ms, vs)]
    opt = mt_opt(ps, gs, ms, vs, **hp)
    assert opt.launches_per_step == 1, opt.launches_per_step
    total = sum(MT_SIZES)
    assert opt.bytes_per_step == 24 * total, (opt.bytes_per_step, total)
    b1, b2 = hp["beta1"], hp["beta2"]
    for step in range(1, 11):
        opt.step()
        for p, g, m, v in zip(*ref):
            bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
            decayed = p - hp["lr"] * hp["weight_decay"] * p
            m_new = m + (1 - b1) * (g - m)
            v.add_((1 - b2) * (g * g - v))
            p.copy_(decayed - hp["lr"] / bc1 * m_new /
                    (v.sqrt() / math.sqrt(bc2) + hp["eps"]))
            m.copy_(m_new.to(torch.bfloat16).double())
    torch.cuda.synchronize()
    assert all(m.dtype == torch.bfloat16 for m in ms)
    result = {}
    for name, out, want, tol in (("params", ps, ref[0], 1e-5),
                                 ("exp_avg", ms, ref[2], 1e-2),
                                 ("exp_avg_sq", vs, ref[3], 1e-5)):
        num = sum(float(((a.double() - b) ** 2).sum())
                  for a, b in zip(out, want))
        den = sum(float((b ** 2).sum()) for b in want)
        error = math.sqrt(num / den)
        assert error <= tol, (name, error)
        result[name] = error
    return result


@test
def multi_tensor_matches_per_tensor_launches():
    hp = dict(lr=2e-3, beta1=0.8, beta2=0.99, eps=1e-7, weight_decay=1e-2)
    offsets = [0, 1, 2, 3, 0, 1, 0, 3, 0, 2, 1]
    ps, gs, ms, vs = mt_list(offsets=offsets)
    ref = [[t.clone() for t in ts] for ts in (ps, gs, ms, vs)]
    opt = mt_opt(ps, gs, ms, vs, **hp)
    assert opt.launches_per_step == 1, opt.launches_per_step
    total = sum(MT_SIZES)
    assert opt.bytes_per_step == 28 * total, (opt.bytes_per_step, total)
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    for step in range(1, 6):
        opt.step()
        for p, g, m, v in zip(*ref):
            upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step, **hp)
    torch.cuda.synchronize()
    worst = 0.0
    for got, want in zip(ps + ms + vs, ref[0] + ref[2] + ref[3]):
        if got.numel():
            worst = max(worst, rel_l2(got, want))
    assert worst <= 1e-7, f"multi-tensor vs per-tensor: {worst:.3e}"
    assert opt.get_hyper("step") == 5.0, opt.get_hyper("step")
    return {"max_rel_l2": worst, "chunks": opt.num_chunks}


@test
def multi_tensor_matches_torch_and_writes_nothing_else():
    sizes = [7, 4096, 33, 100000]
    bases = [torch.randn(n + 8, device="cuda") for n in sizes]
    ps = [b[3:3 + n] for b, n in zip(bases, sizes)]  # misaligned views
    sentinels = [torch.cat([b[:3], b[3 + n:]]).clone()
                 for b, n in zip(bases, sizes)]
    p0 = [p.clone() for p in ps]
    grads = [[fresh(n, seed=40 + 10 * i + k) for i, n in enumerate(sizes)]
             for k in range(STEPS)]
    gs = [torch.empty(n, device="cuda") for n in sizes]
    ms = [torch.zeros(n, device="cuda") for n in sizes]
    vs = [torch.zeros(n, device="cuda") for n in sizes]
    opt = mt_opt(ps, gs, ms, vs, lr=1e-3, weight_decay=1e-2)
    for k in range(STEPS):
        for g, src in zip(gs, grads[k]):
            g.copy_(src)
        opt.step()
    torch.cuda.synchronize()
    errors = []
    for i, n in enumerate(sizes):
        ref, _ = torch_steps(torch.optim.AdamW, p0[i],
                             [grads[k][i] for k in range(STEPS)],
                             foreach=False, lr=1e-3, weight_decay=1e-2)
        errors.append(check_close(f"param {i}", ps[i], ref, F32_TOLERANCE))
        outside = torch.cat([bases[i][:3], bases[i][3 + n:]])
        assert torch.equal(outside, sentinels[i]), f"wrote outside tensor {i}"
    return {"max_rel_l2": max(errors)}


@test
def multi_tensor_every_library_optimizer():
    """Adam, SGD (momentum, nesterov) and Lion as multi-tensor plans match
    their per-tensor launches over 4 steps, with grad scaling on."""
    sizes = [1, 257, 4099, 70000]
    cases = [("adam", {"exp_avg": 0, "exp_avg_sq": 1}, dict(weight_decay=1e-2)),
             ("sgd", {"momentum_buffer": 0}, dict(momentum=0.9, nesterov=1.0)),
             ("lion", {"exp_avg": 0}, dict(weight_decay=1e-2))]
    worst = {}
    for name, states, hp in cases:
        ps, gs, ms, vs = mt_list(sizes, seed=60)
        pool = (ms, vs)
        state_lists = {s: pool[i] for s, i in states.items()}
        ref_p = [p.clone() for p in ps]
        ref_s = {s: [t.clone() for t in ts] for s, ts in state_lists.items()}
        opt = kfuse.multi_tensor(str(OPTIM / f"{name}.mlir"), params=ps,
                                 grads=gs, states=state_lists,
                                 grad_scaling=True, **hp)
        assert opt.launches_per_step == 2, opt.launches_per_step
        upd = kfuse.Update(str(OPTIM / f"{name}.mlir"))
        has_step = any(a.name == "step" for a in upd.args)
        for step in range(1, 5):
            opt.step()
            for i, (p, g) in enumerate(zip(ref_p, gs)):
                kwargs = {s: ts[i] for s, ts in ref_s.items()}
                if has_step:
                    kwargs["step"] = step
                upd(param=p, grad=g, **kwargs, **hp)
        torch.cuda.synchronize()
        err = max(rel_l2(a, b) for a, b in zip(ps, ref_p) if a.numel())
        assert err <= 1e-6, f"{name}: multi-tensor vs per-tensor {err:.3e}"
        worst[name] = err
    return worst


@test
def multi_tensor_master_weights_write_model_copies():
    sizes = [5, 1000, 4099]
    for model_dtype in (torch.bfloat16, torch.float16):
        ps, gs, ms, vs = mt_list(sizes)
        gs = [g.bfloat16() for g in gs]  # bf16 grads into f32 masters
        ref = [[t.clone() for t in ts] for ts in (ps, gs, ms, vs)]
        models = [torch.full_like(p, float("nan"), dtype=model_dtype)
                  for p in ps]
        opt = mt_opt(ps, gs, ms, vs, model_params=models, lr=1e-3)
        plain = mt_opt(*ref, lr=1e-3)
        assert opt.launches_per_step == 1, opt.launches_per_step
        for _ in range(3):
            opt.step()
            plain.step()
        torch.cuda.synchronize()
        for p, q, m in zip(ps, ref[0], models):
            # The masters step as without copies (to f32 contraction
            # differences); each copy is its master rounded to the model
            # dtype.
            check_close("master", p, q, 1e-7)
            assert torch.equal(m, p.to(model_dtype)), "model copy differs"
    return {"model_dtypes": ["bfloat16", "float16"]}


@test
def multi_tensor_step_hyper_counts_steps():
    ps, gs, ms, vs = mt_list([1000, 77])
    ref = [[t.clone() for t in ts] for ts in (ps, gs, ms, vs)]
    opt = mt_opt(ps, gs, ms, vs, step=5)  # five steps already taken
    opt.step()
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    for p, g, m, v in zip(*ref):
        upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=6)
    torch.cuda.synchronize()
    for got, want in zip(ps, ref[0]):
        check_close("param", got, want, 1e-7)
    assert opt.get_hyper("step") == 6.0, opt.get_hyper("step")
    opt.set_hyper("lr", 0.0)
    opt.set_hyper("weight_decay", 0.0)
    before = [p.clone() for p in ps]
    opt.step()
    torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(ps, before)), "lr=0 moved"
    assert opt.get_hyper("step") == 7.0


@test
def multi_tensor_stale_plan_raises_and_rebuilds():
    ps, gs, ms, vs = mt_list([100, 200])
    params = [torch.nn.Parameter(p) for p in ps]
    for p, g in zip(params, gs):
        p.grad = g
    opt = kfuse.multi_tensor(str(OPTIM / "adamw.mlir"), params=params,
                             states={"exp_avg": ms, "exp_avg_sq": vs})
    opt.step()
    params[1].data = params[1].data.clone()
    try:
        opt.step()
    except kfuse.KfuseError as error:
        assert "stale plan" in str(error), str(error)
    else:
        raise AssertionError("no KfuseError for a moved param")
    opt.rebuild()
    opt.step()
    assert opt.get_hyper("step") == 2.0, opt.get_hyper("step")
    params[0].grad = None  # zero_grad(set_to_none=True), no backward since
    try:
        opt.step()
    except kfuse.KfuseError as error:
        assert "have no grad" in str(error), str(error)
    else:
        raise AssertionError("no KfuseError for a missing grad")
    ms[0].data = ms[0].data.clone()  # a state moved in place
    params[0].grad = gs[0].clone()
    try:
        opt.step()
    except kfuse.KfuseError as error:
        assert "'exp_avg' of group 0 moved" in str(error), str(error)
    else:
        raise AssertionError("no KfuseError for a moved state")


@test
def multi_tensor_follows_new_grads():
    """Grads that backward reallocates (set_to_none) are rebound, in every
    check mode that looks at grads; results match torch.optim.AdamW given
    the same grads."""
    results = {}
    for mode in (True, "grads"):
        sizes = [1000, 7, 65537, 0, 300]
        model = [torch.nn.Parameter(fresh(n, seed=90 + i))
                 for i, n in enumerate(sizes)]
        ref = [torch.nn.Parameter(p.detach().clone()) for p in model]
        states = {"exp_avg": [torch.zeros_like(p) for p in model],
                  "exp_avg_sq": [torch.zeros_like(p) for p in model]}
        for p in model:
            p.grad = torch.randn_like(p)
        opt = kfuse.multi_tensor(str(OPTIM / "adamw.mlir"), params=model,
                                 states=states, lr=1e-2, check_stale=mode)
        torch_opt = torch.optim.AdamW(ref, lr=1e-2, weight_decay=1e-2,
                                      fused=True)
        for step in range(6):
            grads = [torch.randn_like(p) for p in model]
            # A fresh tensor each step, as backward after set_to_none;
            # allocate junk in between so addresses really change.
            junk = [torch.empty(4096, device="cuda") for _ in range(step)]
            for p, r, g in zip(model, ref, grads):
                p.grad = g.clone()
                r.grad = g.clone()
            del junk
            opt.step()
            torch_opt.step()
        torch.cuda.synchronize()
        worst = max(rel_l2(p.detach(), r.detach()) for p, r in zip(model, ref)
                    if p.numel())
        assert worst <= 1e-6, (mode, worst)
        results[str(mode)] = worst
    return results


@test
def multi_tensor_grad_scaling_skips_all_plans():
    """An inf in a bf16 group skips the f32 plan's step too (one shared
    flag; every scan runs before any update)."""
    a = mt_list([3000, 5], dtype=torch.float32, seed=64)
    b = mt_list([4000, 9], dtype=torch.bfloat16, seed=74)
    ps, gs, ms, vs = (x + y for x, y in zip(a, b))
    opt = mt_opt(ps, gs, ms, vs, grad_scaling=True)
    assert len(opt.plans) == 2
    before = [t.clone() for t in ps + ms + vs]
    gs[2][17] = float("inf")
    opt.step()
    torch.cuda.synchronize()
    assert opt.found_inf.item() != 0
    assert all(torch.equal(x, y) for x, y in zip(ps + ms + vs, before))
    assert opt.get_hyper("step") == 0.0
    gs[2][17] = 0.25
    opt.step()
    torch.cuda.synchronize()
    assert opt.found_inf.item() == 0
    assert not torch.equal(ps[0], before[0])
    assert not torch.equal(ps[2], before[2])
    assert [plan.hypers[plan.slot("step")].item()
            for plan in opt.plans] == [1.0, 1.0]


@test
def multi_tensor_splits_dtype_signatures():
    a = mt_list([300, 5], dtype=torch.float32, seed=60)
    b = mt_list([400, 9], dtype=torch.bfloat16, seed=70)
    ps, gs, ms, vs = (x + y for x, y in zip(a, b))
    ref = [[t.clone() for t in ts] for ts in (ps, gs, ms, vs)]
    opt = mt_opt(ps, gs, ms, vs)
    assert len(opt.plans) == 2 and opt.launches_per_step == 2
    opt.step()
    upd = kfuse.Update(str(OPTIM / "adamw.mlir"))
    for p, g, m, v in zip(*ref):
        upd(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=1)
    torch.cuda.synchronize()
    for got, want in zip(ps, ref[0]):
        if got.numel():
            check_close("split plans vs launches", got, want, 1e-7)


@test
def multi_tensor_grad_scaling_skips_inf_and_unscales():
    ps, gs, ms, vs = mt_list([5000, 70000, 3])
    opt = mt_opt(ps, gs, ms, vs, grad_scaling=True)
    assert opt.launches_per_step == 2, opt.launches_per_step
    before = [t.clone() for t in ps + ms + vs]
    gs[1][12345] = float("nan")
    opt.step()
    torch.cuda.synchronize()
    assert opt.found_inf.item() != 0
    assert all(torch.equal(a, b) for a, b in zip(ps + ms + vs, before))
    assert opt.get_hyper("step") == 0.0
    gs[1][12345] = 0.5
    half = [g * 0.5 for g in gs]
    ps2, ms2, vs2 = ([t.clone() for t in ts] for ts in (ps, ms, vs))
    plain = mt_opt(ps2, half, ms2, vs2)
    opt.set_hyper("inv_scale", 0.5)
    opt.step()
    plain.step()
    torch.cuda.synchronize()
    assert opt.found_inf.item() == 0
    worst = max(rel_l2(a, b) for a, b in zip(ps + ms + vs, ps2 + ms2 + vs2))
    assert worst <= 1e-7, worst
    assert opt.get_hyper("step") == 1.0
    return {"max_rel_l2": worst}


@test
def multi_tensor_graph_replay_reads_device_hypers():
    a = mt_list([4096, 100003, 17], seed=80)
    b = [[t.clone() for t in ts] for ts in a]
    graphed, eager = mt_opt(*a), mt_opt(*b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        graphed.step()
    torch.cuda.current_stream().wait_stream(side)
    eager.step()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graphed.step()
    lr = graphed.hyper_tensor("lr")
    assert lr.dtype == torch.float64 and lr.is_cuda
    for i in range(6):
        value = 1e-3 / (i + 1)
        if i % 2:
            lr.fill_(value)
        else:
            graphed.set_hyper("lr", value)
        graph.replay()
        eager.set_hyper("lr", value)
        eager.step()
    torch.cuda.synchronize()
    for x, y in zip(a[0] + a[2] + a[3], b[0] + b[2] + b[3]):
        assert torch.equal(x, y), "graph replay differs from eager steps"
    assert graphed.get_hyper("step") == eager.get_hyper("step") == 7.0


@test
def multi_tensor_bad_groups_raise():
    ps, gs, ms, vs = mt_list([10, 20])
    cases = {
        "numel within group": lambda: mt_opt(ps, [gs[0], gs[1][:19]], ms, vs),
        "missing state": lambda: kfuse.multi_tensor(
            str(OPTIM / "adamw.mlir"), params=ps, grads=gs,
            states={"exp_avg": ms}),
        "cpu tensor": lambda: mt_opt(ps, [gs[0], gs[1].cpu()], ms, vs),
        "unknown hyper": lambda: mt_opt(ps, gs, ms, vs, momentum=0.9),
        "empty list": lambda: mt_opt([], [], [], []),
    }
    for what, make in cases.items():
        try:
            make()
        except kfuse.KfuseError as error:
            assert error.status == "INVALID_ARGUMENT", (what, error.status,
                                                        str(error))
        else:
            raise AssertionError(f"no KfuseError for {what}")
    # Storage dtypes are per argument: groups whose exp_avg_sq differ in
    # dtype are plans of their own dtype signatures, not an error.
    mt_opt(ps, gs, ms, [vs[0], vs[1].half()])


REGISTER_ROWS = REPO / "test" / "Codegen" / "cuda-matrix-register-rows.mlir"


def block_rounded_reference(p, g, codes, scale, lr, beta):
    """One step of the test's block-rounded momentum in torch f32, rows of
    256 (the kernel contracts products into fma; results agree to its
    rounding, and a code may round the other way at a tie)."""
    m = codes * scale * beta + g * (1.0 - beta)
    new_scale = m.abs().amax(dim=1, keepdim=True) / 127.0
    new_codes = torch.round(m / new_scale)
    return p - lr * (new_codes * new_scale), new_codes, new_scale


@test
def multi_tensor_rows_in_registers_match_torch():
    """A phase that reduces rows held in registers (the per-block scale of
    a block-quantized state): one launch over GPT-2 small's list in its own
    shapes, which a kernel for rows of 256 views as rows of 256, against
    torch in f32, and its speed against a copy."""
    import bench_multi_tensor
    shapes = bench_multi_tensor.gpt2_shapes()
    sizes = [math.prod(shape) for shape in shapes]
    gen = torch.Generator(device="cuda").manual_seed(7)

    def rand(shape, scale=1.0):
        return torch.randn(shape, device="cuda", generator=gen) * scale

    ps = [rand(shape) for shape in shapes]
    gs = [rand(shape, 1e-2) for shape in shapes]
    codes = [torch.round(rand(shape, 40.0)).clamp_(-127, 127)
             for shape in shapes]
    scales = [rand(n // 256, 1e-4).abs() for n in sizes]
    hp = dict(lr=1e-2, beta=0.9)
    ref = [block_rounded_reference(p.view(-1, 256), g.view(-1, 256),
                                   c.view(-1, 256), sc.view(-1, 1), **hp)
           for p, g, c, sc in zip(ps, gs, codes, scales)]
    opt = kfuse.multi_tensor(str(REGISTER_ROWS), params=ps, grads=gs,
                             states={"codes": codes, "scale": scales}, **hp)
    assert opt.update.row_length == 256, opt.update.row_length
    assert opt.launches_per_step == 1, opt.launches_per_step
    opt.step()
    torch.cuda.synchronize()
    worst_p = max(rel_l2(p.view(-1, 256), want[0])
                  for p, want in zip(ps, ref))
    worst_s = max(rel_l2(sc.view(-1, 1), want[2])
                  for sc, want in zip(scales, ref))
    flips = sum(int((c.view(-1, 256) != want[1]).sum())
                for c, want in zip(codes, ref))
    far = max(float((c.view(-1, 256) - want[1]).abs().max())
              for c, want in zip(codes, ref))
    total = sum(sizes)
    assert worst_p <= 1e-6 and worst_s <= 1e-6, (worst_p, worst_s)
    assert far <= 1.0 and flips <= total * 1e-4, (flips, far)

    # A tensor whose size is not a multiple of the rows of 256.
    odd = [torch.zeros(400, device="cuda") for _ in range(3)]
    try:
        kfuse.multi_tensor(str(REGISTER_ROWS), params=odd[:1],
                           grads=odd[1:2],
                           states={"codes": odd[2:],
                                   "scale": [torch.zeros(1, device="cuda")]},
                           **hp)
    except kfuse.KfuseError as error:
        assert error.status == "INVALID_ARGUMENT", error.status
        assert "does not divide the 400 elements" in str(error), str(error)
    else:
        raise AssertionError("400 elements ran as rows of 256")

    # Bytes: param and codes read and written, grads read, a scale per row.
    moved = total * 20 + total // 256 * 8
    copy_src = torch.empty(moved // 8, dtype=torch.float32, device="cuda")
    copy_dst = torch.empty_like(copy_src)

    # SGD with momentum moves the same 20 B an element with no reduction:
    # what the rows' reductions cost is the difference.
    sgd = kfuse.multi_tensor(str(OPTIM / "sgd.mlir"), params=ps, grads=gs,
                             states={"momentum_buffer": codes}, lr=1e-9,
                             momentum=0.9)
    step_ms = time_ms(opt.step)
    sgd_ms = time_ms(sgd.step)
    copy_ms = time_ms(lambda: copy_dst.copy_(copy_src))
    return {"elements": total, "max_rel_l2_param": worst_p,
            "max_rel_l2_scale": worst_s, "codes_rounded_otherwise": flips,
            "step_ms": step_ms, "sgd_momentum_ms": sgd_ms, "copy_ms": copy_ms,
            "GBps": moved / step_ms / 1e6,
            "pct_of_copy": 100.0 * copy_ms / step_ms,
            "sgd_pct_of_copy": 100.0 * copy_ms / sgd_ms}


@test
def multi_tensor_row_variance_matches_torch():
    """A row's mean and variance reduced in registers (rows of 768, GPT-2
    small's list viewed as rows): the grad standardized per row, against
    torch's mean and biased variance in float64, and its speed."""
    import bench_multi_tensor
    shapes = bench_multi_tensor.gpt2_shapes()
    gen = torch.Generator(device="cuda").manual_seed(11)
    ps = [torch.randn(shape, device="cuda", generator=gen) for shape in shapes]
    gs = [torch.randn(shape, device="cuda", generator=gen) * 3 + 0.5
          for shape in shapes]
    before = [p.clone() for p in ps]
    opt = kfuse.multi_tensor(
        str(REPO / "test" / "Codegen" / "Inputs" /
            "register-rows-variance.mlir"),
        params=ps, grads=gs, lr=1e-2, eps=1e-5)
    assert opt.update.row_length == 768, opt.update.row_length
    opt.step()
    torch.cuda.synchronize()
    worst = 0.0
    for p, p0, g in zip(ps, before, gs):
        rows = g.double().view(-1, 768)
        mean = rows.mean(dim=1, keepdim=True)
        var = rows.var(dim=1, unbiased=False, keepdim=True)
        want = (rows - mean) / torch.sqrt(var + 1e-5)
        got = (p0.double() - p.double()).view(-1, 768) / 1e-2
        worst = max(worst, rel_l2(got, want))
    assert worst <= 1e-5, worst
    total = sum(math.prod(shape) for shape in shapes)
    step_ms = time_ms(opt.step)
    return {"elements": total, "max_rel_l2_step": worst, "step_ms": step_ms,
            "GBps": 12 * total / step_ms / 1e6}



@test
def multi_tensor_long_rows_match_torch():
    """Rows of several warps held in registers, their parts combined through
    shared memory: a row's mean and variance over rows of 4096 (four warps a
    row) and of 1312 (64 threads of 6 vectors, some past the row's end),
    and two dependent row reductions over rows of 2048 (a scratch region per
    level), and values per column read beside rows of 768 (a gain and a
    shift per column of each tensor), against float64; the 4096 case timed
    beside a device copy."""
    inputs = REPO / "test" / "Codegen" / "Inputs"
    gen = torch.Generator(device="cuda").manual_seed(13)
    results = {}

    def run(name, length, shapes, reference, columns=(), **hypers):
        ps = [torch.randn(shape, device="cuda", generator=gen)
              for shape in shapes]
        gs = [torch.randn(shape, device="cuda", generator=gen) * 3 + 0.5
              for shape in shapes]
        states = {column: [torch.randn(length, device="cuda", generator=gen)
                           for _ in shapes] for column in columns}
        before = [p.clone() for p in ps]
        opt = kfuse.multi_tensor(str(inputs / name), params=ps, grads=gs,
                                 states=states, **hypers)
        assert opt.update.row_length == length, opt.update.row_length
        opt.step()
        torch.cuda.synchronize()
        worst = 0.0
        for i, (p, p0, g) in enumerate(zip(ps, before, gs)):
            rows = g.double().view(-1, length)
            want = reference(rows, *(states[c][i].double() for c in columns))
            got = (p0.double() - p.double()).view(-1, length)
            worst = max(worst, rel_l2(got, want))
        assert worst <= 1e-5, (name, worst)
        return opt, ps, worst

    def standardized(rows, lr=1e-2, eps=1e-5):
        mean = rows.mean(dim=1, keepdim=True)
        var = rows.var(dim=1, unbiased=False, keepdim=True)
        return lr * (rows - mean) / torch.sqrt(var + eps)

    def normalized(rows, lr=1e-2, bound=2.0):
        u = rows / rows.square().mean(dim=1, keepdim=True).sqrt()
        peak = u.abs().amax(dim=1, keepdim=True)
        return lr * u / torch.clamp(peak / bound, min=1.0)

    long_shapes = [(4096, 4096), (11008, 4096), (4096,), (3, 4096)]
    opt, ps, worst = run("register-rows-long-variance.mlir", 4096, long_shapes,
                         standardized, lr=1e-2, eps=1e-5)
    results["rows4096_variance_max_rel_l2"] = worst
    total = sum(p.numel() for p in ps)
    step_ms = time_ms(opt.step)
    # 12 B an element: param read and written, grad read; a copy of as many
    # bytes reads half of them and writes the other half.
    moved = 12 * total
    src = torch.empty(moved // 8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src))
    results.update(rows4096_elements=total, rows4096_step_ms=step_ms,
                   rows4096_GBps=moved / step_ms / 1e6,
                   copy_GBps=moved / copy_ms / 1e6)
    results["rows4096_pct_of_copy"] = round(
        100 * results["rows4096_GBps"] / results["copy_GBps"], 1)
    _, _, worst = run("register-rows-uneven-variance.mlir", 1312,
                      [(1312 * 300,), (700, 1312), (1312,)], standardized,
                      lr=1e-2, eps=1e-5)
    results["rows1312_variance_max_rel_l2"] = worst
    _, _, worst = run("register-rows-long-two-levels.mlir", 2048,
                      [(2048, 2048), (5, 2048), (2048 * 77,)], normalized,
                      lr=1e-2, bound=2.0)
    results["rows2048_two_levels_max_rel_l2"] = worst

    def affine(rows, gain, shift, lr=1e-2, eps=1e-5):
        return standardized(rows, 1.0, eps) * lr * gain + lr * shift

    _, _, worst = run("register-rows-column-inputs.mlir", 768,
                      [(768, 3072), (768,), (50, 768)], affine,
                      columns=("gain", "shift"), lr=1e-2, eps=1e-5)
    results["rows768_column_inputs_max_rel_l2"] = worst
    return results



@test
def multi_tensor_static_rows_adafactor_matches_dynamic():
    """library/optim/adafactor.mlir with its row length fixed at 768 (rows
    held in registers: the row sums in the same pass, the column sums added
    per thread over its rows, then over the block's row slots, into each
    chunk's partials) against the same file with dynamic rows (the strip
    schedule), over GPT-2 small's matrices of 768 columns, three steps."""
    import tempfile
    text = (REPO / "library" / "optim" / "adafactor.mlir").read_text()
    static = text.replace("?x?x", "?x768x").replace("1x?x", "1x768x")
    assert static != text
    shapes = [(1024, 768), (768, 768), (3072, 768), (4096, 768)]
    gen = torch.Generator(device="cuda").manual_seed(17)
    ps = [torch.randn(shape, device="cuda", generator=gen) * 0.02
          for shape in shapes]
    grads = [[torch.randn(shape, device="cuda", generator=gen) * 1e-3
              for shape in shapes] for _ in range(3)]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "adafactor_768.mlir"
        path.write_text(static)
        runs = {}
        for name, source in (("dynamic", OPTIM / "adafactor.mlir"),
                             ("static", path)):
            params = [p.clone() for p in ps]
            gs = [g.clone() for g in grads[0]]
            states = {"row_var": [torch.zeros(s[0], device="cuda")
                                  for s in shapes],
                      "col_var": [torch.zeros(s[1], device="cuda")
                                  for s in shapes]}
            opt = kfuse.multi_tensor(str(source), params=params, grads=gs,
                                     states=states, lr=1e-2)
            if name == "static":
                assert opt.update.row_length == 768
            for step in range(3):
                for g, new in zip(gs, grads[step]):
                    g.copy_(new)
                opt.step()
            torch.cuda.synchronize()
            runs[name] = (params, states)
    for key, pick in (("params", lambda run: run[0]),
                      ("row_var", lambda run: run[1]["row_var"]),
                      ("col_var", lambda run: run[1]["col_var"])):
        a = torch.cat([t.flatten() for t in pick(runs["static"])])
        b = torch.cat([t.flatten() for t in pick(runs["dynamic"])])
        results[key + "_rel_l2"] = rel_l2(a, b)
        assert results[key + "_rel_l2"] <= 1e-5, (key, results)
    return results



@test
def layernorm_as_update_matches_torch():
    """LayerNorm forward and backward written as 2-D updates with rows of
    1024 (test/Codegen/Inputs/layernorm-update-*.mlir: inputs and outputs as
    an update's arguments, rows held in registers, weight and bias per
    column, dweight and dbias column sums) over a list of tensors in one
    launch, against float64; then over one 65536 x 1024 f32 tensor beside
    the norm emitter's kernel (library/norm) and torch, with a device copy."""
    import torch.nn.functional as F
    inputs = REPO / "test" / "Codegen" / "Inputs"
    gen = torch.Generator(device="cuda").manual_seed(19)
    cols, eps = 1024, 1e-5

    def rand(*shape, scale=1.0, shift=0.0):
        return torch.randn(shape, device="cuda", generator=gen) * scale + shift

    def make(update, shapes, extra):
        groups = [extra(shape) for shape in shapes]
        return kfuse.MultiTensorUpdate(kfuse.Update(str(inputs / update)),
                                       groups, {"eps": eps}), groups

    def fwd_group(shape):
        rows = math.prod(shape) // cols
        return {"x": rand(*shape, scale=2.0, shift=0.5),
                "weight": rand(cols, scale=0.1, shift=1.0),
                "bias": rand(cols, scale=0.1),
                "y": torch.empty(shape, device="cuda"),
                "mean": torch.empty(rows, device="cuda"),
                "rstd": torch.empty(rows, device="cuda")}

    results = {}
    shapes = [(4096, cols), (300, cols), (cols,)]
    fwd, groups = make("layernorm-update-fwd.mlir", shapes, fwd_group)
    fwd.step()
    torch.cuda.synchronize()
    worst = 0.0
    for group in groups:
        x = group["x"].double().view(-1, cols)
        mean = x.mean(dim=1)
        rstd = torch.rsqrt(x.var(dim=1, unbiased=False) + eps)
        y = F.layer_norm(x, (cols,), group["weight"].double(),
                         group["bias"].double(), eps)
        worst = max(worst, rel_l2(group["y"].view(-1, cols), y),
                    rel_l2(group["mean"], mean), rel_l2(group["rstd"], rstd))
    results["fwd_max_rel_l2"] = worst
    assert worst <= 1e-5, results

    def bwd_group(shape):
        rows = math.prod(shape) // cols
        x = rand(*shape, scale=2.0, shift=0.5)
        rowwise = x.view(-1, cols)
        return {"dy": rand(*shape), "x": x,
                "mean": rowwise.mean(dim=1).contiguous(),
                "rstd": torch.rsqrt(rowwise.var(dim=1, unbiased=False) +
                                    eps).contiguous(),
                "weight": rand(cols, scale=0.1, shift=1.0),
                "dx": torch.empty(shape, device="cuda"),
                "dweight": torch.empty(cols, device="cuda"),
                "dbias": torch.empty(cols, device="cuda"),
                "rows": rows}

    bwd_shapes = [(4096, cols), (300, cols), (cols,)]
    groups = [bwd_group(shape) for shape in bwd_shapes]
    bwd = kfuse.MultiTensorUpdate(
        kfuse.Update(str(inputs / "layernorm-update-bwd.mlir")),
        [{k: v for k, v in g.items() if k != "rows"} for g in groups], {})
    bwd.step()
    torch.cuda.synchronize()
    worst = 0.0
    for group in groups:
        x = group["x"].double().view(-1, cols).requires_grad_()
        w = group["weight"].double().requires_grad_()
        b = torch.zeros(cols, dtype=torch.float64, device="cuda",
                        requires_grad=True)
        y = F.layer_norm(x, (cols,), w, b, eps)
        y.backward(group["dy"].double().view(-1, cols))
        worst = max(worst, rel_l2(group["dx"].view(-1, cols), x.grad),
                    rel_l2(group["dweight"], w.grad),
                    rel_l2(group["dbias"], b.grad))
    results["bwd_max_rel_l2"] = worst
    assert worst <= 1e-5, results

    # One tensor of 65536 rows: the update form beside the norm emitter's.
    rows = 65536
    fwd, (group,) = make("layernorm-update-fwd.mlir", [(rows, cols)],
                         fwd_group)
    norm = kfuse.Norm(str(OPTIM.parent / "norm" / "layernorm_fwd.mlir"))
    out = {k: torch.empty_like(v) for k, v in group.items()
           if k in ("y", "mean", "rstd")}
    x, w, b = group["x"], group["weight"], group["bias"]
    moved = 2 * rows * cols * 4
    src = torch.empty(moved // 8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src))
    timings = {
        "update_form": time_ms(fwd.step),
        "norm_emitter": time_ms(lambda: norm(x=x, weight=w, bias=b, eps=eps,
                                             **out)),
        "torch": time_ms(lambda: F.layer_norm(x, (cols,), w, b, eps)),
    }
    for name, ms in timings.items():
        results[f"fwd_65536x1024_{name}_ms"] = ms
        results[f"fwd_65536x1024_{name}_pct_of_copy"] = round(
            100 * copy_ms / ms, 1)
    (group,) = [bwd_group((rows, cols))]
    bwd = kfuse.MultiTensorUpdate(
        kfuse.Update(str(inputs / "layernorm-update-bwd.mlir")),
        [{k: v for k, v in group.items() if k != "rows"}], {})
    norm_bwd = kfuse.Norm(str(OPTIM.parent / "norm" / "layernorm_bwd.mlir"))
    args = {k: group[k] for k in ("dy", "x", "mean", "rstd", "weight")}
    outs = {k: torch.empty_like(group[k]) for k in ("dx", "dweight",
                                                    "dbias")}
    norm_bwd(**args, **outs)
    bwd.step()
    torch.cuda.synchronize()
    results["bwd_65536x1024_update_vs_emitter_rel_l2"] = max(
        rel_l2(group[k], outs[k]) for k in outs)
    moved = 3 * rows * cols * 4
    src = torch.empty(moved // 8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = time_ms(lambda: dst.copy_(src))
    for name, fn in (("update_form", bwd.step),
                     ("norm_emitter", lambda: norm_bwd(**args, **outs))):
        ms = time_ms(fn)
        results[f"bwd_65536x1024_{name}_ms"] = ms
        results[f"bwd_65536x1024_{name}_pct_of_copy"] = round(
            100 * copy_ms / ms, 1)
    return results


def main():
    options = _gpu_tests.parse_args()
    assert torch.cuda.is_available(), "no CUDA device"
    return _gpu_tests.run(TESTS, options.k, options.json)


if __name__ == "__main__":
    sys.exit(main())
