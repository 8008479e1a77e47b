"""GPU tests of kfuse.torch.optim against torch.optim (plain script).

Run on a machine with a CUDA GPU and PyTorch:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/test_gpu_optim.py \
        [--json OUT] [-k NAME]
Prints one line per test and "N passed, M failed"; exits 1 on any failure,
0 with a SKIP line when PyTorch or a CUDA device is missing.

Most tests train a small MLP with real backward passes and hand each step's
grads, cloned, to a twin parameter list stepped by torch.optim (fused=True
where torch has it): both optimizers see the same grads, so the comparison
measures the optimizers alone.
"""

import copy
import math
import os
import pathlib
import sys
import warnings

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

try:
    import torch
except ImportError:
    print("SKIP bench/test_gpu_optim.py: PyTorch is not installed")
    sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP bench/test_gpu_optim.py: no CUDA device")
    sys.exit(0)

import _gpu_tests  # noqa: E402
import kfuse  # noqa: E402
import kfuse.torch  # noqa: E402
from kfuse.torch import optim as kopt  # noqa: E402

OPTIM = REPO / "library" / "optim"
STEPS = 100
TOLERANCE = 1e-6  # params, rel L2, f32

# GradScaler warns once that it will stop passing itself to step().
warnings.filterwarnings("ignore", message="GradScaler is going to stop",
                        category=FutureWarning)

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# -- helpers ------------------------------------------------------------------

def mlp(seed, dtype=torch.float32, sizes=(64, 128, 128, 10)):
    torch.manual_seed(seed)
    layers = []
    for index, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if index < len(sizes) - 2:
            layers.append(torch.nn.GELU())
    return torch.nn.Sequential(*layers).to(device="cuda", dtype=dtype)


def batches(steps, seed, dtype=torch.float32, batch=32):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [(torch.randn(batch, 64, device="cuda", generator=gen).to(dtype),
             torch.randn(batch, 10, device="cuda", generator=gen).to(dtype))
            for _ in range(steps)]


def backward(model, batch, extra=None, scaler=None, autocast=None):
    x, y = batch
    if autocast is not None:
        with torch.autocast("cuda", dtype=autocast):
            out = model(x)
    else:
        out = model(x)
    if extra is not None:
        out = out + extra
    loss = torch.nn.functional.mse_loss(out.float(), y.float())
    (scaler.scale(loss) if scaler is not None else loss).backward()
    return loss


def twin(params):
    return [torch.nn.Parameter(p.detach().clone()) for p in params]


def copy_grads(params, ref):
    for p, r in zip(params, ref):
        r.grad = None if p.grad is None else p.grad.detach().clone()


def rel_l2(out, ref):
    num = sum(((a.detach().double() - b.detach().double()) ** 2).sum()
              for a, b in zip(out, ref))
    den = sum((b.detach().double() ** 2).sum() for b in ref)
    return math.sqrt(float(num) / max(float(den), 1e-300))


def check_close(what, out, ref, tolerance=TOLERANCE):
    assert all(torch.isfinite(t.float()).all() for t in out), \
        f"{what}: non-finite values"
    error = rel_l2(out, ref)
    assert error <= tolerance, \
        f"{what}: relative L2 error {error:.3e} > {tolerance:.0e}"
    return error


def torch_peer(cls, params, **kwargs):
    """torch's optimizer, fused where it has a fused form."""
    try:
        return cls(params, fused=True, **kwargs)
    except (TypeError, RuntimeError, ValueError):
        return cls(params, foreach=True, **kwargs)


def states_of(opt, params, key):
    return [opt.state[p][key] for p in params if key in opt.state[p]]


def run_twins(make_kfuse, make_torch, steps=STEPS, seed=0, schedulers=None,
              model=None):
    """Trains `model` with the kfuse optimizer and a twin parameter list
    with torch's on the same grads; returns (params, twin, opt, ref_opt)."""
    model = model if model is not None else mlp(seed)
    params = list(model.parameters())
    ref = twin(params)
    opt, ref_opt = make_kfuse(params), make_torch(ref)
    sched = schedulers(opt, ref_opt) if schedulers else ()
    for batch in batches(steps, seed + 1):
        opt.zero_grad(set_to_none=True)
        backward(model, batch)
        copy_grads(params, ref)
        opt.step()
        ref_opt.step()
        for s in sched:
            s.step()
    torch.cuda.synchronize()
    return params, ref, opt, ref_opt


def twins_per_case(cls, torch_cls, cases, first_seed, keys, tolerance=1e-5):
    """run_twins of kfuse's `cls` against torch's `torch_cls` (foreach) for
    each {name: options} case: params and the states under `keys` compared,
    state[p]'s keys and a live step count of STEPS as torch's, one launch
    a step. Returns ({name: param error}, the last case's run)."""
    errors = {}
    for seed, (name, hp) in enumerate(cases.items(), first_seed):
        params, ref, opt, ref_opt = run_twins(
            lambda ps: cls(ps, **hp),
            lambda ps: torch_cls(ps, foreach=True, **hp), seed=seed)
        errors[name] = check_close(name, params, ref, tolerance)
        for key in keys:
            ours, theirs = (states_of(opt, params, key),
                            states_of(ref_opt, ref, key))
            assert len(ours) == len(theirs), (name, key)
            if ours:
                check_close(f"{name} {key}", ours, theirs, tolerance)
        assert sorted(opt.state[params[0]]) == \
            sorted(ref_opt.state[ref[0]]), (name, sorted(opt.state[params[0]]))
        assert opt.launches_per_step == 1, opt.launches_per_step
        live = {float(opt.state[p]["step"]) for p in params}
        assert live == {float(STEPS)}, live
    return errors, (params, opt)


def plan_ids(opt):
    return [id(c.mtu) for r in opt._kfuse_runtimes if r is not None
            for c in r.cohorts]


# -- parity with torch.optim --------------------------------------------------

@test
def adamw_matches_torch():
    hp = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    params, ref, opt, ref_opt = run_twins(
        lambda ps: kopt.AdamW(ps, **hp),
        lambda ps: torch_peer(torch.optim.AdamW, ps, **hp))
    e = check_close("params", params, ref)
    check_close("exp_avg", states_of(opt, params, "exp_avg"),
                states_of(ref_opt, ref, "exp_avg"), 1e-5)
    check_close("exp_avg_sq", states_of(opt, params, "exp_avg_sq"),
                states_of(ref_opt, ref, "exp_avg_sq"), 1e-4)
    assert opt.launches_per_step == 1, opt.launches_per_step
    steps = {float(s["step"]) for s in opt.state_dict()["state"].values()}
    assert steps == {float(STEPS)}, steps
    return {"param_rel_l2": e}


@test
def adam_matches_torch():
    hp = dict(lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=1e-2)
    params, ref, opt, _ = run_twins(
        lambda ps: kopt.Adam(ps, **hp),
        lambda ps: torch_peer(torch.optim.Adam, ps, **hp), seed=10)
    return {"param_rel_l2": check_close("params", params, ref)}


@test
def adam_decoupled_is_adamw():
    model = mlp(11)
    a = list(model.parameters())
    b = twin(a)
    opt_a = kopt.Adam(a, weight_decay=0.1, decoupled_weight_decay=True)
    opt_b = kopt.AdamW(b, weight_decay=0.1)
    for batch in batches(10, 12):
        opt_a.zero_grad()
        backward(model, batch)
        copy_grads(a, b)
        opt_a.step()
        opt_b.step()
    torch.cuda.synchronize()
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@test
def adagrad_matches_torch():
    """Adagrad against torch.optim.Adagrad (foreach: torch's fused one is
    CPU-only): lr_decay, weight decay, an initial accumulator, maximize;
    the state dict loads into torch's Adagrad and steps on there alike."""
    cases = {
        "default": dict(lr=1e-2),
        "decay": dict(lr=5e-2, lr_decay=1e-2, weight_decay=1e-3,
                      initial_accumulator_value=0.1, eps=1e-8),
        "maximize": dict(lr=1e-2, maximize=True),
    }
    errors, (params, opt) = twins_per_case(kopt.Adagrad, torch.optim.Adagrad,
                                           cases, 40, ("sum",))
    # kfuse -> torch: the state dict steps on in torch's Adagrad.
    moved = twin(params)
    torch_opt = torch.optim.Adagrad(moved, foreach=True, **cases["maximize"])
    torch_opt.load_state_dict(opt.state_dict())
    for p, q in zip(params, moved):
        p.grad = torch.ones_like(p)
        q.grad = torch.ones_like(q)
    opt.step()
    torch_opt.step()
    errors["after_load"] = check_close("after load", params, moved, 1e-5)
    return errors


@test
def rmsprop_matches_torch():
    """RMSprop against torch.optim.RMSprop (foreach), plain, with momentum,
    centered and both (each its own library file), weight decay and
    maximize: params, states and the keys of state[p] as torch's."""
    cases = {
        "plain": dict(lr=1e-3),
        "momentum": dict(lr=1e-3, momentum=0.9, weight_decay=1e-3),
        "centered": dict(lr=1e-3, centered=True, alpha=0.9),
        "centered_momentum": dict(lr=1e-3, centered=True, momentum=0.5,
                                  maximize=True),
    }
    return twins_per_case(kopt.RMSprop, torch.optim.RMSprop, cases, 50,
                          ("square_avg", "momentum_buffer", "grad_avg"))[0]


@test
def sgd_matches_torch():
    errors = {}
    cases = {
        "momentum": dict(lr=1e-2, momentum=0.9, weight_decay=1e-4),
        "nesterov": dict(lr=1e-2, momentum=0.9, nesterov=True),
        "dampening": dict(lr=1e-2, momentum=0.8, dampening=0.1,
                          weight_decay=1e-3),
        "plain": dict(lr=1e-2, weight_decay=1e-4),
    }
    for seed, (name, hp) in enumerate(cases.items(), 20):
        params, ref, opt, ref_opt = run_twins(
            lambda ps: kopt.SGD(ps, **hp),
            lambda ps: torch_peer(torch.optim.SGD, ps, **hp), seed=seed)
        errors[name] = check_close(name, params, ref)
        ours = opt.state_dict()["state"]
        theirs = ref_opt.state_dict()["state"]
        assert {k: sorted(v) for k, v in ours.items()} == \
            {k: sorted(v) for k, v in theirs.items()}, (name, ours.keys())
        if hp.get("momentum"):
            check_close(f"{name} momentum_buffer",
                        states_of(opt, params, "momentum_buffer"),
                        states_of(ref_opt, ref, "momentum_buffer"), 1e-5)
    return errors


@test
def amsgrad_matches_torch():
    """Adam and AdamW with amsgrad=True: params and all three states."""
    errors = {}
    cases = {"adamw": (kopt.AdamW, torch.optim.AdamW, 1e-2),
             "adam": (kopt.Adam, torch.optim.Adam, 1e-3)}
    for seed, (name, (mine, theirs, wd)) in enumerate(cases.items(), 30):
        hp = dict(lr=1e-3, betas=(0.9, 0.99), weight_decay=wd, amsgrad=True)
        params, ref, opt, ref_opt = run_twins(
            lambda ps: mine(ps, **hp),
            lambda ps: torch_peer(theirs, ps, **hp), seed=seed)
        errors[name] = check_close(name, params, ref)
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            check_close(f"{name} {key}", states_of(opt, params, key),
                        states_of(ref_opt, ref, key), 1e-4)
        ours = opt.state_dict()["state"]
        assert all(list(v) == ["step", "exp_avg", "exp_avg_sq",
                               "max_exp_avg_sq"] for v in ours.values()), \
            [list(v) for v in ours.values()]
        assert opt.launches_per_step == 1, opt.launches_per_step
    return errors


@test
def maximize_matches_torch():
    """maximize=True for AdamW, Adam with AMSGrad and SGD (momentum and
    plain) against torch, and a group with maximize beside one without."""
    errors = {}
    cases = {
        "adamw": (kopt.AdamW, torch.optim.AdamW,
                  dict(lr=1e-3, weight_decay=1e-2)),
        "adam amsgrad": (kopt.Adam, torch.optim.Adam,
                         dict(lr=1e-3, weight_decay=1e-3, amsgrad=True)),
        "sgd momentum": (kopt.SGD, torch.optim.SGD,
                         dict(lr=1e-2, momentum=0.9, weight_decay=1e-4)),
        "sgd plain": (kopt.SGD, torch.optim.SGD, dict(lr=1e-2)),
    }
    for seed, (name, (mine, theirs, hp)) in enumerate(cases.items(), 40):
        params, ref, _, _ = run_twins(
            lambda ps: mine(ps, maximize=True, **hp),
            lambda ps: torch_peer(theirs, ps, maximize=True, **hp),
            seed=seed)
        errors[name] = check_close(name, params, ref)
    params, ref, opt, _ = run_twins(
        lambda ps: kopt.AdamW([{"params": ps[:2], "maximize": True},
                               {"params": ps[2:]}], lr=1e-3),
        lambda ps: torch.optim.AdamW([{"params": ps[:2], "maximize": True},
                                      {"params": ps[2:]}], lr=1e-3,
                                     fused=True), seed=45)
    errors["mixed groups"] = check_close("mixed groups", params, ref)
    # Switching maximize on after steps rebuilds that group's plans.
    before = plan_ids(opt)
    opt.param_groups[1]["maximize"] = True
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    assert plan_ids(opt) != before
    return errors


class LionReference(torch.optim.Optimizer):
    """Lion as library/optim/lion.mlir computes it (interpolation forms;
    uniform scalars in double, rounded to f32 by torch's scalar ops)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas,
                                      weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), wd = (group["lr"], group["betas"],
                                      group["weight_decay"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m, g = state["exp_avg"], p.grad
                diff = g - m
                c = m + diff * (1.0 - beta1)
                p.sub_(p * (lr * wd))
                p.sub_(torch.sign(c) * lr)
                m.add_(diff * (1.0 - beta2))


@test
def lion_matches_reference():
    hp = dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)
    params, ref, opt, ref_opt = run_twins(
        lambda ps: kopt.Lion(ps, **hp), lambda ps: LionReference(ps, **hp),
        seed=30)
    e = rel_l2(params, ref)
    # c = m + (1 - beta1)(g - m) rounds differently when fused into an FMA;
    # where c is within an ulp of 0 its sign can flip, moving one element by
    # 2 lr once (the grads are shared, so nothing compounds). Rounding
    # differences are far below lr: count flips apart.
    flips = sum(int(((a - b).abs() > hp["lr"]).sum()) for a, b in
                zip(params, ref))
    total = sum(p.numel() for p in params)
    masked = [torch.where((a - b).abs() > hp["lr"], b, a).detach()
              for a, b in zip(params, ref)]
    e_rest = check_close("params (sign flips aside)", masked, ref)
    assert flips <= max(3, total * STEPS * 1e-7), f"{flips} sign flips"
    check_close("exp_avg", states_of(opt, params, "exp_avg"),
                states_of(ref_opt, ref, "exp_avg"), 1e-5)
    return {"param_rel_l2": e, "flips": flips, "rel_l2_without_flips": e_rest}


class LambReference:
    """Apex's FusedLAMB in float64 on float64 twins: global grad-norm
    clipping, Adam moments, the per-tensor trust ratio."""

    def __init__(self, params, lr=1e-3, bias_correction=True,
                 betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 adam_w_mode=True, grad_averaging=True, max_grad_norm=1.0,
                 use_nvlamb=False, lrs=None):
        self.params = params
        self.lrs = dict(zip(params, lrs)) if lrs else {}
        self.hp = dict(lr=lr, bias_correction=bias_correction, betas=betas,
                       eps=eps, weight_decay=weight_decay,
                       adam_w_mode=adam_w_mode, grad_averaging=grad_averaging,
                       max_grad_norm=max_grad_norm, use_nvlamb=use_nvlamb)
        self.state = {p: {"exp_avg": torch.zeros_like(p),
                          "exp_avg_sq": torch.zeros_like(p)} for p in params}
        self.steps = 0

    @torch.no_grad()
    def step(self):
        hp = self.hp
        live = [p for p in self.params if p.grad is not None]
        norm = math.sqrt(sum(float((p.grad.double() ** 2).sum())
                             for p in live))
        clip = norm / hp["max_grad_norm"] \
            if norm > hp["max_grad_norm"] else 1.0
        self.steps += 1
        beta1, beta2 = hp["betas"]
        beta3 = 1 - beta1 if hp["grad_averaging"] else 1.0
        bc1 = 1 - beta1 ** self.steps if hp["bias_correction"] else 1.0
        bc2 = 1 - beta2 ** self.steps if hp["bias_correction"] else 1.0
        wd = hp["weight_decay"]
        for p in live:
            lr = self.lrs.get(p, hp["lr"])
            m, v = self.state[p]["exp_avg"], self.state[p]["exp_avg_sq"]
            g = p.grad.double() / clip
            if not hp["adam_w_mode"]:
                g = g + wd * p
            m.mul_(beta1).add_(beta3 * g)
            v.mul_(beta2).add_((1 - beta2) * g * g)
            r = (m / bc1) / ((v / bc2).sqrt() + hp["eps"])
            if hp["adam_w_mode"]:
                r = r + wd * p
            ratio = lr
            if hp["use_nvlamb"] or wd != 0:
                pn, rn = float(p.norm()), float(r.norm())
                if pn != 0 and rn != 0:
                    ratio = lr * pn / rn
            p.sub_(ratio * r)


# KFUSE_SEPARATE_PHASES=1 runs each reduction phase as a launch of its own.
SEPARATE_PHASES = os.environ.get("KFUSE_SEPARATE_PHASES") == "1"


def phase_launches(phases):
    """Launches per plan of a reduction update of `phases` phases."""
    return phases if SEPARATE_PHASES else 1


def run_against_float64(make_opt, make_ref, seed, steps=STEPS):
    """Trains an MLP with `make_opt`'s optimizer and float64 twins of its
    params with `make_ref`'s reference, fed the same grads; returns
    (params, twins, opt, reference)."""
    model = mlp(seed)
    params = list(model.parameters())
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt, ref_opt = make_opt(params), make_ref(ref)
    for batch in batches(steps, seed + 1):
        opt.zero_grad()
        backward(model, batch)
        for p, r in zip(params, ref):
            r.grad = p.grad.detach().double().clone()
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    return params, ref, opt, ref_opt


def lamb_run(seed, steps=STEPS, **hp):
    """FusedLAMB against LambReference (see run_against_float64)."""
    return run_against_float64(lambda ps: kopt.FusedLAMB(ps, **hp),
                               lambda ps: LambReference(ps, **hp), seed, steps)


@test
def fused_lamb_matches_float64_apex_semantics():
    """FusedLAMB against Apex's algorithm in float64 over 100 steps, for
    each mode Apex has: clipping on and off, L2 (adam_w_mode=False), no
    grad averaging, no bias correction, NVLAMB with weight_decay=0."""
    cases = {
        "default": dict(lr=1e-3),
        "clipped": dict(lr=1e-3, max_grad_norm=0.05, weight_decay=0.1),
        "l2": dict(lr=1e-3, adam_w_mode=False, weight_decay=0.05),
        "no_averaging": dict(lr=1e-3, grad_averaging=False,
                             bias_correction=False),
        "nvlamb_no_decay": dict(lr=1e-3, weight_decay=0.0, use_nvlamb=True),
        "no_decay": dict(lr=1e-3, weight_decay=0.0),
    }
    errors = {}
    for seed, (name, hp) in enumerate(cases.items(), 300):
        params, ref, opt, ref_opt = lamb_run(seed, **hp)
        errors[name] = check_close(name, params, ref, 1e-5)
        check_close(f"{name} exp_avg", states_of(opt, params, "exp_avg"),
                    [ref_opt.state[r]["exp_avg"] for r in ref], 1e-5)
        # The norm, the moments and the param: three phases, one launch.
        assert opt.launches_per_step == phase_launches(3), opt.launches_per_step
        packed = opt.state_dict()
        assert packed["param_groups"][0]["step"] == STEPS, \
            packed["param_groups"][0]["step"]
        assert sorted(packed["state"][0]) == ["exp_avg", "exp_avg_sq"], \
            sorted(packed["state"][0])
    return errors


@test
def fused_lamb_two_groups_share_one_norm():
    """Two param groups are two plans: the global norm, over both, is then
    torch's foreach norm, and each plan clips by it. The norm reported
    matches the float64 one."""
    params, ref, opt, ref_opt = run_against_float64(
        lambda ps: kopt.FusedLAMB([{"params": ps[:2]},
                                   {"params": ps[2:], "lr": 5e-4}],
                                  lr=1e-3, max_grad_norm=0.05),
        lambda ps: LambReference(ps, lr=1e-3, max_grad_norm=0.05,
                                 lrs=[1e-3] * 2 + [5e-4] * (len(ps) - 2)),
        320, STEPS)
    error = check_close("params", params, ref, 1e-5)
    # Each plan runs its two phases in one launch.
    assert opt.launches_per_step == 2 * phase_launches(2), opt.launches_per_step
    norm = float(opt.grad_norm)
    expected = float(torch.stack([r.grad.norm() for r in ref]).norm())
    assert abs(norm - expected) <= 1e-5 * expected, (norm, expected)
    return {"param_rel_l2": error}


@test
def fused_lamb_norms_span_chunks():
    """Per-tensor norms over tensors of one element to several chunks, odd
    sizes (the scalar path) and misaligned views, in one plan, against the
    float64 reference: each tensor gets its own trust ratio."""
    torch.manual_seed(7)
    base = torch.randn(70001 + 3, device="cuda")
    params = [torch.nn.Parameter(torch.randn(n, device="cuda"))
              for n in (1, 3, 16383, 16384, 16385, 100000, 3 * 16384 + 5)]
    # A view that starts 4 bytes into its storage: not 16-byte aligned.
    params.append(torch.nn.Parameter(base[1:70002].view(70001)))
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    hp = dict(lr=1e-2, weight_decay=0.01, max_grad_norm=10.0)
    opt = kopt.FusedLAMB(params, **hp)
    ref_opt = LambReference(ref, **hp)
    gen = torch.Generator(device="cuda").manual_seed(8)
    for _ in range(20):
        for p, r in zip(params, ref):
            p.grad = torch.randn(p.shape, device="cuda", generator=gen) * \
                (1 + p.numel() % 7)
            r.grad = p.grad.double()
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    errors = [rel_l2([p], [r]) for p, r in zip(params, ref)]
    assert max(errors) <= 1e-5, errors
    return {"max_param_rel_l2": max(errors)}


@test
def fused_lamb_grad_scaler_skips_inf_steps():
    """Under a GradScaler the grads are unscaled in the kernels (the global
    norm too) and a step with an inf grad is skipped whole: params, states
    and the step count as before it; group['step'] in state_dict counts the
    steps taken."""
    model = mlp(330)
    params = list(model.parameters())
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt = kopt.FusedLAMB(params, lr=1e-3, max_grad_norm=0.1)
    ref_opt = LambReference(ref, lr=1e-3, max_grad_norm=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 10)
    steps, inject_at = 30, 10
    for i, batch in enumerate(batches(steps, 331)):
        opt.zero_grad()
        backward(model, batch, scaler=scaler)
        scale = scaler.get_scale()
        if i == inject_at:
            params[0].grad[0, 0] = float("inf")
            before = [p.detach().clone() for p in params]
        else:
            for p, r in zip(params, ref):
                r.grad = p.grad.detach().double() / scale
            ref_opt.step()
        scaler.step(opt)
        scaler.update()
        if i == inject_at:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before)), \
                "a step with an inf grad changed a param"
    torch.cuda.synchronize()
    assert opt.state_dict()["param_groups"][0]["step"] == steps - 1
    return {"param_rel_l2": check_close("params", params, ref, 1e-5)}


class LarsReference:
    """timm.optim.Lars in float64 on float64 twins: the per-tensor trust
    ratio, then SGD with momentum (the buffer is the grad at step 1)."""

    def __init__(self, params, lr=1.0, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, trust_coeff=1e-3,
                 eps=1e-8, trust_clip=False, always_adapt=False):
        self.params = params
        self.hp = dict(lr=lr, momentum=momentum, dampening=dampening,
                       weight_decay=weight_decay, nesterov=nesterov,
                       trust_coeff=trust_coeff, eps=eps,
                       trust_clip=trust_clip, always_adapt=always_adapt)
        self.buffers = {}

    @torch.no_grad()
    def step(self):
        hp = self.hp
        wd = hp["weight_decay"]
        for p in self.params:
            g = p.grad.double().clone()
            if wd != 0 or hp["always_adapt"]:
                w_norm, g_norm = float(p.norm()), float(g.norm())
                ratio = 1.0
                if w_norm > 0 and g_norm > 0:
                    ratio = hp["trust_coeff"] * w_norm / (
                        g_norm + w_norm * wd + hp["eps"])
                if hp["trust_clip"]:
                    ratio = min(ratio / hp["lr"], 1.0)
                g.add_(p, alpha=wd).mul_(ratio)
            if hp["momentum"] != 0:
                buf = self.buffers.get(p)
                if buf is None:
                    buf = self.buffers[p] = g.clone()
                else:
                    buf.mul_(hp["momentum"]).add_(g, alpha=1 - hp["dampening"])
                g = g.add(buf, alpha=hp["momentum"]) if hp["nesterov"] else buf
            p.add_(g, alpha=-hp["lr"])


@test
def lars_matches_float64_timm_semantics():
    """library/optim/lars.mlir through optimizer_from_ir against timm's
    Lars in float64 over 100 steps: with momentum and weight decay, with
    trust_clip (LARC), Nesterov."""
    Lars = kopt.optimizer_from_ir(OPTIM / "lars.mlir")
    cases = {
        "momentum_decay": dict(lr=0.1, momentum=0.9, weight_decay=1e-4),
        "larc_clip": dict(lr=0.1, momentum=0.9, weight_decay=1e-4,
                          trust_clip=True),
        "nesterov": dict(lr=0.05, momentum=0.9, weight_decay=5e-4,
                         nesterov=True),
    }
    errors = {}
    for seed, (name, hp) in enumerate(cases.items(), 370):
        params, ref, opt, _ = run_against_float64(
            lambda ps: Lars(ps, **{k: float(v) for k, v in hp.items()}),
            lambda ps: LarsReference(ps, **hp), seed)
        errors[name] = check_close(name, params, ref, 1e-5)
        assert opt.launches_per_step == phase_launches(2), opt.launches_per_step
    return errors


@test
def lars_drop_in_matches_float64_timm():
    """kfuse.torch.optim.Lars with timm's signature: momentum 0 keeps no
    state (lars_plain), momentum keeps momentum_buffer; both against the
    float64 reference over 100 steps."""
    errors = {}
    for seed, hp in enumerate((dict(lr=0.5, weight_decay=1e-4),
                               dict(lr=0.1, momentum=0.9, weight_decay=1e-4,
                                    trust_clip=True)), 375):
        params, ref, opt, _ = run_against_float64(
            lambda ps: kopt.Lars(ps, **hp),
            lambda ps: LarsReference(ps, **hp), seed)
        keys = sorted(opt.state[params[0]])
        assert keys == (["momentum_buffer"] if hp.get("momentum") else []), \
            keys
        errors["momentum" if hp.get("momentum") else "plain"] = check_close(
            str(hp), params, ref, 1e-5)
    return errors


class CautiousAdamWReference:
    """timm's AdamW(caution=True) in float64 on float64 twins."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        self.params, self.lr, self.betas = params, lr, betas
        self.eps, self.wd = eps, weight_decay
        self.state = {p: (torch.zeros_like(p), torch.zeros_like(p))
                      for p in params}
        self.steps = 0

    @torch.no_grad()
    def step(self):
        self.steps += 1
        beta1, beta2 = self.betas
        bc1 = 1 - beta1 ** self.steps
        bc2 = 1 - beta2 ** self.steps
        for p in self.params:
            g = p.grad.double()
            m, v = self.state[p]
            p.mul_(1 - self.lr * self.wd)
            m.lerp_(g, 1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / math.sqrt(bc2)).add_(self.eps)
            mask = (m * g > 0).double()
            mask.div_(mask.mean().clamp_(min=1e-3))
            p.addcdiv_(m * mask, denom, value=-self.lr / bc1)


@test
def cautious_adamw_matches_float64_timm_semantics():
    """library/optim/cautious_adamw.mlir (a per-tensor mean of the caution
    mask) through optimizer_from_ir against timm's AdamW(caution=True) in
    float64 over 100 steps."""
    Cautious = kopt.optimizer_from_ir(
        OPTIM / "cautious_adamw.mlir",
        hyper_map={"betas": ("beta1", "beta2")})
    hp = dict(lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.05)
    params, ref, opt, _ = run_against_float64(
        lambda ps: Cautious(ps, **hp),
        lambda ps: CautiousAdamWReference(ps, **hp), 380)
    assert opt.launches_per_step == phase_launches(2), opt.launches_per_step
    # A coordinate whose m * g is within rounding of 0 may be kept by one
    # and dropped by the other; the params still agree to 1e-5.
    return {"param_rel_l2": check_close("params", params, ref, 1e-5)}


@test
def adamw_caution_matches_float64_timm():
    """kfuse.torch.optim.AdamW(caution=True) runs cautious_adamw.mlir: as
    timm's AdamW(caution=True) in float64, with AdamW's state keys."""
    hp = dict(lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.05)
    params, ref, opt, _ = run_against_float64(
        lambda ps: kopt.AdamW(ps, caution=True, **hp),
        lambda ps: CautiousAdamWReference(ps, **hp), 390)
    assert opt.launches_per_step == phase_launches(2), opt.launches_per_step
    assert sorted(opt.state[params[0]]) == ["exp_avg", "exp_avg_sq", "step"]
    assert opt.param_groups[0]["caution"] is True
    return {"param_rel_l2": check_close("params", params, ref, 1e-5)}


@test
def max_grad_norm_matches_torch_clip():
    """max_grad_norm= clips inside the step as clip_grad_norm_(foreach)
    before torch's fused step: params within 1e-6 after 100 steps (the clip
    active on most of them), grad_norm the norm torch returns, two launches
    a step, the grads left unscaled."""
    results = {}
    for name, cls, torch_cls, hp in (
            ("adamw", kopt.AdamW, torch.optim.AdamW, dict(lr=1e-3)),
            ("sgd", kopt.SGD, torch.optim.SGD, dict(lr=1e-2, momentum=0.9))):
        model = mlp(340)
        params = list(model.parameters())
        ref = twin(params)
        opt = cls(params, max_grad_norm=1e-3, **hp)
        ref_opt = torch_peer(torch_cls, ref, **hp)
        clipped = 0
        for batch in batches(STEPS, 341):
            opt.zero_grad()
            backward(model, batch)
            copy_grads(params, ref)
            grads_before = [p.grad.clone() for p in params]
            norm = torch.nn.utils.clip_grad_norm_(ref, 1e-3, foreach=True)
            opt.step()
            ref_opt.step()
            clipped += int(norm > 1e-3)
            assert all(torch.equal(p.grad, g) for p, g in
                       zip(params, grads_before)), "a grad was written"
            assert torch.allclose(opt.grad_norm, norm, rtol=1e-5), \
                (float(opt.grad_norm), float(norm))
        torch.cuda.synchronize()
        assert opt.launches_per_step == phase_launches(2), opt.launches_per_step
        assert clipped > STEPS // 2, clipped
        results[name] = check_close(name, params, ref)
    return results


@test
def max_grad_norm_under_grad_scaler():
    """With a GradScaler the norm is of the unscaled grads (as unscale_
    then clip_grad_norm_), and an inf step is skipped whole."""
    model = mlp(350)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(params, lr=1e-3, max_grad_norm=0.5)
    ref_opt = torch_peer(torch.optim.AdamW, ref, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    ref_scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    for i, batch in enumerate(batches(30, 351)):
        opt.zero_grad(set_to_none=True)
        backward(model, batch, scaler=scaler, autocast=torch.float16)
        if i == 10:
            params[0].grad[0, 0] = float("inf")
            before = [p.detach().clone() for p in params]
        copy_grads(params, ref)
        ref_scaler.scale(torch.zeros((), device="cuda"))
        ref_scaler.unscale_(ref_opt)
        torch.nn.utils.clip_grad_norm_(ref, 0.5, foreach=True)
        scaler.step(opt)
        ref_scaler.step(ref_opt)
        scaler.update()
        ref_scaler.update()
        if i == 10:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before))
    torch.cuda.synchronize()
    return {"param_rel_l2": check_close("params", params, ref)}


@test
def max_grad_norm_over_several_plans():
    """Two param groups (decay and no decay, as Hugging Face's Trainer
    makes them) are two plans: both clip by one norm over every grad
    (torch's foreach norm), against clip_grad_norm_ before torch's step,
    over 100 steps; then the same under a GradScaler with an inf step.
    Each plan is one launch."""
    def groups(ps):
        return [{"params": [p for p in ps if p.dim() > 1]},
                {"params": [p for p in ps if p.dim() <= 1],
                 "weight_decay": 0.0}]
    results = {}
    model = mlp(360)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(groups(params), lr=1e-3, weight_decay=0.1,
                     max_grad_norm=1e-3)
    ref_opt = torch_peer(torch.optim.AdamW, groups(ref), lr=1e-3,
                         weight_decay=0.1)
    clipped = 0
    for batch in batches(STEPS, 361):
        opt.zero_grad()
        backward(model, batch)
        copy_grads(params, ref)
        norm = torch.nn.utils.clip_grad_norm_(ref, 1e-3, foreach=True)
        opt.step()
        ref_opt.step()
        clipped += int(norm > 1e-3)
        assert torch.allclose(opt.grad_norm, norm, rtol=1e-5), \
            (float(opt.grad_norm), float(norm))
    torch.cuda.synchronize()
    assert opt.launches_per_step == 2, opt.launches_per_step
    assert clipped > STEPS // 2, clipped
    results["two_groups"] = check_close("two groups", params, ref)

    model = mlp(362)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(groups(params), lr=1e-3, max_grad_norm=0.5)
    ref_opt = torch_peer(torch.optim.AdamW, groups(ref), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    ref_scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    for i, batch in enumerate(batches(30, 363)):
        opt.zero_grad(set_to_none=True)
        backward(model, batch, scaler=scaler, autocast=torch.float16)
        if i == 10:
            params[-1].grad[0] = float("inf")
            before = [p.detach().clone() for p in params]
        copy_grads(params, ref)
        ref_scaler.scale(torch.zeros((), device="cuda"))
        ref_scaler.unscale_(ref_opt)
        torch.nn.utils.clip_grad_norm_(ref, 0.5, foreach=True)
        scaler.step(opt)
        ref_scaler.step(ref_opt)
        scaler.update()
        ref_scaler.update()
        if i == 10:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before))
    torch.cuda.synchronize()
    results["two_groups_grad_scaler"] = check_close("scaled", params, ref)
    return results


@test
def param_groups_with_own_hyperparameters():
    def groups(ps, **extra):
        return [{"params": ps[0::2]},
                {"params": ps[1::2], "lr": 3e-3, "weight_decay": 0.0,
                 "betas": (0.8, 0.95)}]
    params, ref, opt, _ = run_twins(
        lambda ps: kopt.AdamW(groups(ps), lr=1e-3, weight_decay=0.1),
        lambda ps: torch_peer(torch.optim.AdamW, groups(ps), lr=1e-3,
                              weight_decay=0.1), seed=40)
    assert opt.launches_per_step == 2, opt.launches_per_step
    e_adamw = check_close("adamw groups", params, ref)
    sgd_groups = lambda ps: [{"params": ps[:2], "momentum": 0.0},  # noqa: E731
                             {"params": ps[2:], "lr": 5e-2}]
    params, ref, opt, _ = run_twins(
        lambda ps: kopt.SGD(sgd_groups(ps), lr=1e-2, momentum=0.9),
        lambda ps: torch_peer(torch.optim.SGD, sgd_groups(ps), lr=1e-2,
                              momentum=0.9), seed=41)
    return {"adamw": e_adamw, "sgd": check_close("sgd groups", params, ref)}


@test
def lr_schedulers_every_step():
    def cosine(opt, ref_opt):
        return [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=STEPS,
                                                           eta_min=1e-5)
                for o in (opt, ref_opt)]

    params, ref, opt, _ = run_twins(
        lambda ps: kopt.AdamW(ps, lr=2e-3),
        lambda ps: torch_peer(torch.optim.AdamW, ps, lr=2e-3),
        seed=50, schedulers=cosine)
    e_cos = check_close("cosine", params, ref)
    assert abs(opt.param_groups[0]["lr"] - 1e-5) < 1e-9

    def step_lr(opt, ref_opt):
        return [torch.optim.lr_scheduler.StepLR(o, step_size=10, gamma=0.5)
                for o in (opt, ref_opt)]
    params, ref, opt, _ = run_twins(
        lambda ps: kopt.SGD(ps, lr=5e-2, momentum=0.9),
        lambda ps: torch_peer(torch.optim.SGD, ps, lr=5e-2, momentum=0.9),
        seed=51, schedulers=step_lr)
    e_step = check_close("steplr", params, ref)

    # Changing lr writes one hyper: the plans are the ones built at step 1.
    model = mlp(52)
    opt = kopt.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    before = None
    for batch in batches(10, 53):
        opt.zero_grad()
        backward(model, batch)
        opt.step()
        sched.step()
        before = before or plan_ids(opt)
    assert plan_ids(opt) == before, "an lr change rebuilt the plan"
    return {"cosine": e_cos, "steplr": e_step}


@test
def tensor_lr_with_scheduler():
    def make(cls):
        return lambda ps: cls(ps, lr=torch.tensor(1e-3, device="cuda"),
                              fused=True)

    def sched(opt, ref_opt):
        return [torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.97)
                for o in (opt, ref_opt)]
    params, ref, _, _ = run_twins(make(kopt.AdamW), make(torch.optim.AdamW),
                                  steps=30, seed=55, schedulers=sched)
    return {"param_rel_l2": check_close("tensor lr", params, ref)}


# -- state dicts --------------------------------------------------------------

def describe(state_dict):
    """The format of a state dict: keys, order, tensor kinds."""
    def kind(value):
        if torch.is_tensor(value):
            return (str(value.dtype), value.device.type, tuple(value.shape))
        return repr(value)
    return {
        "state": {k: [(n, kind(v)) for n, v in s.items()]
                  for k, s in state_dict["state"].items()},
        "group_keys": [sorted(g) for g in state_dict["param_groups"]],
        "params": [g["params"] for g in state_dict["param_groups"]],
    }


def train(model, opt, data, peer=None, peer_opt=None):
    params = list(model.parameters())
    for batch in data:
        opt.zero_grad(set_to_none=True)
        backward(model, batch)
        if peer is not None:
            peer_params = list(peer.parameters())
            copy_grads(params, peer_params)
            peer_opt.step()
        opt.step()


@test
def state_dict_round_trips():
    results = {}
    data = batches(20, 61)
    groups = lambda m: [{"params": list(m.parameters())[:2]},  # noqa: E731
                        {"params": list(m.parameters())[2:], "lr": 2e-3}]
    for first, second, flags in (("torch", "kfuse", dict(fused=True)),
                                 ("kfuse", "torch", {})):
        classes = {"torch": torch.optim.AdamW, "kfuse": kopt.AdamW}
        # 10 steps with the first optimizer.
        model = mlp(60)
        opt = classes[first](groups(model), lr=1e-3, **flags)
        train(model, opt, data[:10])
        saved = copy.deepcopy(opt.state_dict())
        # Then 10 with the second, loaded from it; the first goes on as the
        # reference (20 steps), on the same grads.
        other = copy.deepcopy(model)
        other_opt = classes[second](groups(other), lr=1e-3, **flags)
        other_opt.load_state_dict(saved)
        train(other, other_opt, data[10:], peer=model, peer_opt=opt)
        torch.cuda.synchronize()
        name = f"{first}->{second}"
        results[name] = check_close(name, list(other.parameters()),
                                    list(model.parameters()))
        ours, theirs = other_opt.state_dict(), opt.state_dict()
        assert describe(ours) == describe(theirs), (name, describe(ours),
                                                    describe(theirs))
        steps = {float(s["step"]) for s in ours["state"].values()}
        assert steps == {20.0}, (name, steps)
        assert ours["param_groups"][1]["lr"] == 2e-3
    # The same format as torch's own, fresh, for SGD with momentum.
    model = mlp(62)
    sgd = {"kfuse": kopt.SGD(model.parameters(), lr=0.1, momentum=0.9)}
    peer = copy.deepcopy(model)
    sgd["torch"] = torch.optim.SGD(peer.parameters(), lr=0.1, momentum=0.9)
    train(model, sgd["kfuse"], data[:3], peer=peer, peer_opt=sgd["torch"])
    assert describe(sgd["kfuse"].state_dict()) == \
        describe(sgd["torch"].state_dict())
    return results


@test
def state_dict_rejects_a_foreign_state():
    model = mlp(63)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(model, sgd, batches(2, 64))
    opt = kopt.AdamW(model.parameters())
    try:
        opt.load_state_dict(sgd.state_dict())
    except ValueError as error:
        assert "lacks 'step', 'exp_avg', 'exp_avg_sq'" in str(error), error
    else:
        raise AssertionError("no error loading SGD's state into AdamW")


# -- grads that come and go, groups added late --------------------------------

@test
def param_without_grad_is_skipped():
    model = mlp(70)
    extra = torch.nn.Parameter(torch.randn(10, device="cuda"))
    params = list(model.parameters()) + [extra]
    ref = twin(params)
    opt = kopt.AdamW(params, lr=1e-3)
    ref_opt = torch_peer(torch.optim.AdamW, ref, lr=1e-3)
    start = extra.detach().clone()
    for i, batch in enumerate(batches(40, 71)):
        opt.zero_grad(set_to_none=True)
        backward(model, batch, extra=extra if i >= 5 else None)
        copy_grads(params, ref)
        opt.step()
        ref_opt.step()
        if i == 4:
            torch.cuda.synchronize()
            assert extra not in opt.state, "state allocated without a grad"
            assert torch.equal(extra, start), "a param without grad moved"
    torch.cuda.synchronize()
    # The late param counts its own steps: a plan of its own.
    assert opt.launches_per_step == 2, opt.launches_per_step
    steps = [float(s["step"]) for s in opt.state_dict()["state"].values()]
    assert steps == [40.0] * (len(params) - 1) + [35.0], steps
    return {"param_rel_l2": check_close("params", params, ref)}


@test
def add_param_group_after_steps():
    model = mlp(75)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(params[:2], lr=1e-3)
    ref_opt = torch_peer(torch.optim.AdamW, ref[:2], lr=1e-3)
    for i, batch in enumerate(batches(30, 76)):
        if i == 5:
            opt.add_param_group({"params": params[2:], "lr": 2e-3,
                                 "weight_decay": 0.0})
            ref_opt.add_param_group({"params": ref[2:], "lr": 2e-3,
                                     "weight_decay": 0.0})
        model.zero_grad(set_to_none=True)
        backward(model, batch)
        copy_grads(params, ref)
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    assert opt.launches_per_step == 2
    return {"param_rel_l2": check_close("params", params, ref)}


# -- GradScaler ---------------------------------------------------------------

def scaled_run(autocast, unscale_and_clip=False, steps=30, inject_at=10,
               maximize=False):
    model = mlp(80)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(params, lr=1e-3)
    ref_opt = torch_peer(torch.optim.AdamW, ref, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    ref_scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    ref_scaler.scale(torch.zeros((), device="cuda"))  # creates its scale
    if maximize:
        for o in (opt, ref_opt):
            o.param_groups[0]["maximize"] = True
    for i, batch in enumerate(batches(steps, 81)):
        opt.zero_grad(set_to_none=True)
        backward(model, batch, scaler=scaler, autocast=autocast)
        if i == inject_at:
            params[2].grad[3, 5] = float("inf")
            before = [p.detach().clone() for p in params]
            scale = scaler.get_scale()
        copy_grads(params, ref)
        if unscale_and_clip:
            for s, o, ps in ((scaler, opt, params),
                             (ref_scaler, ref_opt, ref)):
                s.unscale_(o)
                torch.nn.utils.clip_grad_norm_(ps, max_norm=1.0)
        scaler.step(opt)
        ref_scaler.step(ref_opt)
        scaler.update()
        ref_scaler.update()
        if i == inject_at:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before)), \
                "a step with an inf grad changed a param"
            assert scaler.get_scale() == scale / 2, (scaler.get_scale(), scale)
        # state[p]['step'] is live: torch's count after every step, the
        # skipped one included, with no sync_state() or state_dict().
        live = [float(opt.state[p]["step"]) for p in params]
        assert live == [float(ref_opt.state[r]["step"]) for r in ref], \
            (i, live)
    torch.cuda.synchronize()
    steps_taken = {float(s["step"])
                   for s in opt.state_dict()["state"].values()}
    assert steps_taken == {float(steps - 1)}, steps_taken
    assert scaler.get_scale() == ref_scaler.get_scale()
    return check_close("params", params, ref)


@test
def grad_scaler_skips_inf_steps():
    return {str(dtype): scaled_run(dtype)
            for dtype in (torch.float16, torch.bfloat16)}


@test
def grad_scaler_after_unscale_and_clip():
    return {"param_rel_l2": scaled_run(torch.float16, unscale_and_clip=True)}


@test
def grad_scaler_with_maximize():
    """maximize=True under a GradScaler: the grads are multiplied by
    -1/scale, the inf step is still skipped."""
    return {"param_rel_l2": scaled_run(torch.float16, maximize=True),
            "unscaled_first": scaled_run(torch.bfloat16, maximize=True,
                                         unscale_and_clip=True)}


@test
def step_count_is_live_without_host_sync():
    """state[p]['step'] views the plan's device count: steps (with and
    without a GradScaler) run under torch's sync debug mode "error" and the
    view follows them; state_dict() holds torch's form (float32 on the
    CPU) and leaves the view live. (Building plans synchronizes: the first
    step, and the first scaled one, which adds the inf scan, run outside.)"""
    model = mlp(95)
    params = list(model.parameters())
    opt = kopt.AdamW(params, lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    data = batches(8, 96)

    def without_sync(batches, scaled):
        torch.cuda.set_sync_debug_mode("error")
        try:
            for batch in batches:
                opt.zero_grad(set_to_none=True)
                backward(model, batch, scaler=scaler if scaled else None)
                if scaled:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
        finally:
            torch.cuda.set_sync_debug_mode(0)

    backward(model, data[0])
    opt.step()
    view = opt.state[params[0]]["step"]
    assert view.is_cuda and view.dim() == 0, view
    without_sync(data[1:4], scaled=False)
    assert opt.state[params[0]]["step"] is view
    assert float(view) == 4.0, float(view)
    opt.zero_grad(set_to_none=True)
    backward(model, data[4], scaler=scaler)
    scaler.step(opt)
    scaler.update()
    view = opt.state[params[0]]["step"]
    without_sync(data[5:], scaled=True)
    assert opt.state[params[0]]["step"] is view
    steps = [float(opt.state[p]["step"]) for p in params]
    saved = opt.state_dict()["state"][0]["step"]
    assert (saved.device.type, saved.dtype) == ("cpu", torch.float32), saved
    opt.zero_grad(set_to_none=True)
    backward(model, data[0], scaler=scaler)
    scaler.step(opt)
    scaler.update()
    after = float(opt.state[params[0]]["step"])
    assert steps == [8.0] * len(params) and after == 9.0, (steps, after)
    assert float(saved) == 8.0
    return {"steps": steps[0], "after_state_dict": after}


@test
def grad_scaler_skips_every_group():
    """An inf in one group's grads skips the other groups too (one flag)."""
    model = mlp(85)
    params = list(model.parameters())
    opt = kopt.AdamW([{"params": params[:2]},
                      {"params": params[2:], "lr": 1e-2}], lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    data = batches(3, 86)
    for batch in data[:2]:
        opt.zero_grad()
        backward(model, batch, scaler=scaler)
        scaler.step(opt)
        scaler.update()
    opt.zero_grad()
    backward(model, data[2], scaler=scaler)
    params[-1].grad[0] = float("nan")
    before = [p.detach().clone() for p in params]
    scaler.step(opt)
    scaler.update()
    torch.cuda.synchronize()
    assert all(torch.equal(p, b) for p, b in zip(params, before))
    assert {float(s["step"]) for s in opt.state_dict()["state"].values()} \
        == {2.0}


# -- CUDA graphs --------------------------------------------------------------

@test
def capturable_step_graph_matches_eager():
    sizes = [(128, 64), (128,), (10, 128), (10,), (3,)]
    gen = torch.Generator(device="cuda").manual_seed(90)
    init = [torch.randn(s, device="cuda", generator=gen) for s in sizes]
    pa, pb = twin(init), twin(init)
    ga = [torch.zeros_like(t) for t in init]
    gb = [torch.zeros_like(t) for t in init]
    for p, g in zip(pa + pb, ga + gb):
        p.grad = g
    lr_a = torch.tensor(1e-3, device="cuda")
    lr_b = torch.tensor(1e-3, device="cuda")
    opt_a = kopt.AdamW(pa, lr=lr_a, weight_decay=0.05, capturable=True)
    opt_b = kopt.AdamW(pb, lr=lr_b, weight_decay=0.05)

    def feed(i):
        for g_a, g_b in zip(ga, gb):
            g_a.copy_(torch.randn(g_a.shape, device="cuda", generator=gen))
            g_b.copy_(g_a)
        value = 1e-3 * (0.55 + 0.45 * math.cos(i / 5))
        lr_a.fill_(value)
        lr_b.fill_(value)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(2):
            feed(i)
            opt_a.step()
            opt_b.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        opt_a.step()
    for i in range(2, 22):
        feed(i)
        graph.replay()
        opt_b.step()
    torch.cuda.synchronize()
    assert all(torch.equal(a, b) for a, b in zip(pa, pb)), \
        "graph replays differ from eager steps"
    for key in ("exp_avg", "exp_avg_sq"):
        assert all(torch.equal(a, b) for a, b in
                   zip(states_of(opt_a, pa, key), states_of(opt_b, pb, key)))
    step_a = opt_a.state_dict()["state"][0]["step"]
    step_b = opt_b.state_dict()["state"][0]["step"]
    assert step_a.is_cuda and step_a.dtype == torch.float32, step_a
    assert not step_b.is_cuda and step_b.dtype == torch.float32, step_b
    assert float(step_a) == float(step_b) == 22.0, (step_a, step_b)


@test
def capturable_reduction_plans_replay_as_eager():
    """Plans with reductions (AdamW with max_grad_norm: the norm's phase and
    the update, one cooperative launch; FusedLAMB: three phases) captured
    in a CUDA graph: 20 replays give the eager steps' bits, the grad norm
    included."""
    sizes = [(128, 64), (128,), (10, 128), (10,), (3,)]
    results = {}
    for name, make in (
            ("adamw_clip", lambda ps: kopt.AdamW(ps, lr=1e-3,
                                                 weight_decay=0.05,
                                                 max_grad_norm=0.1,
                                                 capturable=True)),
            ("lamb", lambda ps: kopt.FusedLAMB(ps, lr=1e-3,
                                               max_grad_norm=0.1))):
        gen = torch.Generator(device="cuda").manual_seed(91)
        init = [torch.randn(s, device="cuda", generator=gen) for s in sizes]
        pa, pb = twin(init), twin(init)
        ga = [torch.zeros_like(t) for t in init]
        gb = [torch.zeros_like(t) for t in init]
        for p, g in zip(pa + pb, ga + gb):
            p.grad = g
        opt_a, opt_b = make(pa), make(pb)

        def feed():
            for g_a, g_b in zip(ga, gb):
                g_a.copy_(torch.randn(g_a.shape, device="cuda",
                                      generator=gen))
                g_b.copy_(g_a)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                feed()
                opt_a.step()
                opt_b.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            opt_a.step()
        for _ in range(20):
            feed()
            graph.replay()
            opt_b.step()
            assert torch.equal(opt_a.grad_norm, opt_b.grad_norm), name
        torch.cuda.synchronize()
        assert all(torch.equal(a, b) for a, b in zip(pa, pb)), \
            f"{name}: graph replays differ from eager steps"
        results[name] = {"launches": opt_a.launches_per_step,
                         "grad_norm": float(opt_a.grad_norm)}
    return results


@test
def capturable_whole_iteration_graph():
    """Forward, backward and step in one graph; grads zeroed in place."""
    model_a = mlp(95)
    model_b = copy.deepcopy(model_a)
    lr_a = torch.tensor(1e-3, device="cuda")
    opt_a = kopt.AdamW(model_a.parameters(), lr=lr_a, capturable=True)
    opt_b = kopt.AdamW(model_b.parameters(), lr=1e-3)
    static = [torch.zeros(32, 64, device="cuda"),
              torch.zeros(32, 10, device="cuda")]
    data = batches(23, 96)

    def iteration(model, opt, batch):
        opt.zero_grad(set_to_none=False)
        backward(model, batch)
        opt.step()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for batch in data[:3]:
            static[0].copy_(batch[0])
            static[1].copy_(batch[1])
            iteration(model_a, opt_a, static)
            iteration(model_b, opt_b, batch)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        iteration(model_a, opt_a, static)
    for batch in data[3:]:
        static[0].copy_(batch[0])
        static[1].copy_(batch[1])
        graph.replay()
        iteration(model_b, opt_b, batch)
    torch.cuda.synchronize()
    return {"param_rel_l2": check_close(
        "graph vs eager", list(model_a.parameters()),
        list(model_b.parameters()))}


@test
def capture_refuses_a_rebuild():
    params = twin([torch.randn(100, device="cuda")])
    params[0].grad = torch.randn(100, device="cuda")
    opt = kopt.AdamW(params, capturable=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(side):
            with torch.cuda.graph(graph):
                opt.step()  # no plan yet: building one syncs
    except RuntimeError as error:
        assert "cannot happen during CUDA graph capture" in str(error), error
    else:
        raise AssertionError("a first step was captured")
    torch.cuda.synchronize()


# -- the rest of the torch.optim surface --------------------------------------

@test
def closure_runs_with_grad_enabled():
    model = mlp(100)
    opt = kopt.SGD(model.parameters(), lr=0.1)
    batch = batches(1, 101)[0]
    before = [p.detach().clone() for p in model.parameters()]
    seen = []

    def closure():
        seen.append(torch.is_grad_enabled())
        opt.zero_grad()
        return backward(model, batch)
    with torch.no_grad():
        loss = opt.step(closure)
    torch.cuda.synchronize()
    assert seen == [True] and torch.is_tensor(loss)
    assert not any(torch.equal(p, b) for p, b in zip(model.parameters(),
                                                     before))


@test
def unsupported_options_raise():
    p = torch.nn.Parameter(torch.randn(8, device="cuda"))
    cases = {
        "differentiable": lambda: kopt.AdamW([p], differentiable=True),
        "sgd differentiable": lambda: kopt.SGD([p], differentiable=True),
        "group differentiable": lambda: kopt.AdamW(
            [{"params": [p], "differentiable": True}]),
    }
    for what, make in cases.items():
        try:
            make()
        except NotImplementedError as error:
            assert "is not implemented" in str(error), (what, error)
        else:
            raise AssertionError(f"no NotImplementedError for {what}")
    # Params kfuse's kernels do not take: torch's AdamW updates them, in
    # the same optimizer, beside the ones kfuse does (mixed in one group).
    cuda = torch.nn.Parameter(torch.randn(8, device="cuda"))
    odd = {"cpu": torch.nn.Parameter(torch.randn(8)),
           "float64": torch.nn.Parameter(torch.randn(
               8, device="cuda", dtype=torch.float64)),
           "strided": torch.nn.Parameter(torch.randn(
               8, 2, device="cuda").t())}
    ours = [cuda] + list(odd.values())
    theirs = [torch.nn.Parameter(t.detach().clone()) for t in ours]
    opt_ours = kopt.AdamW(ours, lr=1e-2)
    opt_theirs = torch.optim.AdamW(theirs, lr=1e-2)
    for step in range(3):
        for a, b in zip(ours, theirs):
            a.grad = torch.full_like(a, 0.25 * (step + 1))
            b.grad = a.grad.clone()
        opt_ours.step()
        opt_theirs.step()
    for (what, a), b in zip([("cuda", cuda)] + list(odd.items()), theirs):
        limit = 0 if what != "cuda" else 1e-6
        error = (a.detach() - b.detach()).abs().max().item()
        assert error <= limit, (what, error)
    assert [why for _, why in opt_ours.fallbacks[0]] == \
        ["on cpu", "torch.float64", "not contiguous (e.g. channels_last)"], \
        opt_ours.fallbacks
    # Lion has no torch counterpart: refused at the first step, by name.
    param = torch.nn.Parameter(torch.randn(8))
    param.grad = torch.ones_like(param)
    try:
        kopt.Lion([param]).step()
    except NotImplementedError as error:
        assert "no torch.optim counterpart" in str(error), error
    else:
        raise AssertionError("no NotImplementedError for a CPU Lion param")


@test
def optimizer_from_ir_matches_adamw():
    AdamW2 = kfuse.torch.optimizer_from_ir(
        OPTIM / "adamw.mlir", hyper_map={"betas": ("beta1", "beta2")})
    model = mlp(110)
    a = list(model.parameters())
    b = twin(a)
    opt_a = AdamW2(a, lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
    opt_b = kopt.AdamW(b, lr=2e-3, betas=(0.9, 0.95), weight_decay=0.1)
    assert isinstance(opt_a, torch.optim.Optimizer)
    for batch in batches(20, 111):
        opt_a.zero_grad()
        backward(model, batch)
        copy_grads(a, b)
        opt_a.step()
        opt_b.step()
    torch.cuda.synchronize()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert describe(opt_a.state_dict())["state"] == \
        describe(opt_b.state_dict())["state"]
    return {"class": AdamW2.__name__,
            "defaults": repr(AdamW2([a[0]]).defaults)}


@test
def bf16_params_follow_torch():
    model = mlp(120, dtype=torch.bfloat16)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(params, lr=1e-3)
    ref_opt = torch_peer(torch.optim.AdamW, ref, lr=1e-3)
    for batch in batches(20, 121, dtype=torch.bfloat16):
        opt.zero_grad()
        backward(model, batch)
        copy_grads(params, ref)
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    assert all(s.dtype == torch.bfloat16
               for s in states_of(opt, params, "exp_avg"))
    # Both round f32 math to bf16; an ulp here and there differs.
    return {"param_rel_l2": check_close("bf16 params", params, ref, 1e-2)}


def main():
    options = _gpu_tests.parse_args()
    return _gpu_tests.run(TESTS, options.k, options.json)


if __name__ == "__main__":
    sys.exit(main())
