"""GPU tests of kfuse.torch.optim's optimizers with reductions (FusedLAMB,
FusedNovoGrad, Lars, Cautious AdamW) and of fused gradient clipping (max_grad_norm=),
against float64 references of their algorithms or torch's clip_grad_norm_
then torch's step (plain script).

Run on a machine with a CUDA GPU and PyTorch:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/test_gpu_optim_reduce.py \
        [--json OUT] [-k NAME]
KFUSE_SEPARATE_PHASES=1 runs the same tests with one launch per reduction
phase. Prints one line per test and "N passed, M failed"; exits 1 on any
failure, 0 with a SKIP line when PyTorch or a CUDA device is missing.
"""

import io
import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

try:
    import torch
except ImportError:
    print("SKIP bench/test_gpu_optim_reduce.py: PyTorch is not installed")
    sys.exit(0)
if not torch.cuda.is_available():
    print("SKIP bench/test_gpu_optim_reduce.py: no CUDA device")
    sys.exit(0)

import _gpu_tests  # noqa: E402
from kfuse.torch import optim as kopt  # noqa: E402

from _optim_testing import (  # noqa: E402
    OPTIM, STEPS, NovoGradReference, backward, batches, check_close,
    copy_grads, mlp, phase_launches, rel_l2, run_against_float64, states_of,
    torch_peer, twin,
    float64_twins, step_on_random_grads)

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


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


# -- FusedNovoGrad ------------------------------------------------------------

# Tiny tensors, odd sizes, one chunk (16384 elements) and its neighbours, and
# a tensor over three chunks: each its own norm, one plan.
NOVOGRAD_SIZES = [(1,), (3,), (7, 5), (64,), (16384,), (16385,),
                  (3 * 16384 + 17,), (300, 260)]


def novograd_params(seed, dtypes=None):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dtypes = dtypes or [torch.float32] * len(NOVOGRAD_SIZES)
    return [torch.nn.Parameter((torch.randn(s, device="cuda", generator=gen)
                                * 0.5).to(d))
            for s, d in zip(NOVOGRAD_SIZES, dtypes)]


def novograd_grads(params, gen, skip=()):
    """Fresh grads, of a scale that differs between tensors; the params at
    `skip` get none."""
    for i, p in enumerate(params):
        p.grad = None if i in skip else (
            torch.randn(p.shape, device="cuda", generator=gen) *
            (0.1 + i % 3)).to(p.dtype)


def novograd_run(seed, steps=STEPS, groups=list, **hp):
    """FusedNovoGrad against NovoGradReference on NOVOGRAD_SIZES, fed the
    same random grads for `steps` steps; `groups` splits a param list into
    param groups. Returns (params, twins, opt, reference)."""
    params = novograd_params(seed)
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt = kopt.FusedNovoGrad(groups(params), **hp)
    ref_opt = NovoGradReference(groups(ref), **hp)
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    for _ in range(steps):
        novograd_grads(params, gen)
        for p, r in zip(params, ref):
            r.grad = p.grad.double()
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    return params, ref, opt, ref_opt


def novograd_split(params):
    # Matrices and vectors, with their own lr and weight decay.
    return [{"params": [p for p in params if p.dim() > 1]},
            {"params": [p for p in params if p.dim() <= 1], "lr": 5e-3,
             "weight_decay": 0.0}]


def novograd_norms(opt):
    """The float32 norms of every group, in group order (Apex's slot 1)."""
    return [n for group in opt.param_groups
            for n in group["exp_avg_sq"][1].tolist()]


@test
def fused_novograd_matches_float64_apex_semantics():
    """FusedNovoGrad against Apex's algorithm in float64 over 100 steps on
    tensors of 1 element to over three chunks, in each mode Apex has: L2
    and max norms, regularization inside the moment, norms started at zero,
    no grad averaging, no bias correction, weight decay, two param groups.
    The per-tensor norms (group['exp_avg_sq'], Apex's layout) and the
    moments match too; one plan a group, its two phases in one launch."""
    cases = {
        "default": (dict(), list),
        "norm_type_0": (dict(norm_type=0), list),
        "reg_inside_moment": (dict(reg_inside_moment=True,
                                   weight_decay=0.01), list),
        "init_zero": (dict(init_zero=True), list),
        "no_grad_averaging": (dict(grad_averaging=False), list),
        "no_bias_correction": (dict(bias_correction=False), list),
        "weight_decay": (dict(weight_decay=0.01), list),
        "two_groups": (dict(lr=1e-2, weight_decay=0.01), novograd_split),
    }
    errors = {}
    for seed, (name, (hp, groups)) in enumerate(cases.items(), 400):
        params, ref, opt, ref_opt = novograd_run(seed, groups=groups,
                                                 lr=hp.pop("lr", 1e-3), **hp)
        errors[name] = check_close(name, params, ref, 1e-5)
        check_close(f"{name} exp_avg", states_of(opt, params, "exp_avg"),
                    [ref_opt.exp_avg[r] for r in ref], 1e-5)
        ours = novograd_norms(opt)
        theirs = [n for group in ref_opt.groups for n in group["norms"]]
        check_close(f"{name} exp_avg_sq", [torch.tensor(ours)],
                    [torch.tensor(theirs)], 1e-5)
        assert opt.launches_per_step == \
            len(opt.param_groups) * phase_launches(2), opt.launches_per_step
        packed = opt.state_dict()
        for group in packed["param_groups"]:
            assert group["step"] == STEPS, group["step"]
            half, full = group["exp_avg_sq"]
            assert half.numel() == 0 and full.numel() == len(group["params"])
            assert full.dtype == torch.float32 and full.is_cuda
        assert sorted(packed["state"][0]) == ["exp_avg"], \
            sorted(packed["state"][0])
    return errors


@test
def fused_novograd_state_dict_round_trip():
    """50 steps, a state dict through torch.save onto the CPU, a fresh
    FusedNovoGrad loading it (the norms moved back to the device, as
    Apex's load_state_dict does), 50 more steps: the same params as 100
    steps uninterrupted, and the plan writes the loaded norms."""
    hp = dict(lr=1e-2, weight_decay=0.01, norm_type=2)
    pa, pb = novograd_params(410), novograd_params(410)
    opt_a = kopt.FusedNovoGrad(novograd_split(pa), **hp)
    opt_b = kopt.FusedNovoGrad(novograd_split(pb), **hp)
    gen = torch.Generator(device="cuda").manual_seed(411)
    for step in range(STEPS):
        if step == STEPS // 2:
            buffer = io.BytesIO()
            torch.save(opt_b.state_dict(), buffer)
            buffer.seek(0)
            saved = torch.load(buffer, map_location="cpu")
            assert not saved["param_groups"][0]["exp_avg_sq"][1].is_cuda
            opt_b = kopt.FusedNovoGrad(novograd_split(pb), lr=0.5)
            opt_b.load_state_dict(saved)
            loaded = [g["exp_avg_sq"][1] for g in opt_b.param_groups]
            assert all(n.is_cuda for n in loaded)
            assert opt_b.param_groups[0]["lr"] == 1e-2
        novograd_grads(pa, gen)
        for a, b in zip(pa, pb):
            b.grad = a.grad.clone()
        opt_a.step()
        opt_b.step()
    torch.cuda.synchronize()
    # The norms the plan wrote are the loaded tensors, kept in the groups.
    assert all(g["exp_avg_sq"][1] is n
               for g, n in zip(opt_b.param_groups, loaded))
    assert opt_b.state_dict()["param_groups"][0]["step"] == STEPS
    exact = all(torch.equal(a, b) for a, b in zip(pa, pb))
    error = check_close("params after reload", pb, pa, 1e-6)
    check_close("norms after reload", [torch.tensor(novograd_norms(opt_b))],
                [torch.tensor(novograd_norms(opt_a))], 1e-6)
    return {"param_rel_l2": error, "bit_identical": exact}


@test
def fused_novograd_half_params_and_refusals():
    """bfloat16 params' norms go to slot 0 (Apex's 16-bit slot), float32
    ones to slot 1, in param order; the float32 params match the float64
    reference as alone, the bfloat16 ones to bfloat16 precision. A group
    mixing float16 and bfloat16 params, or whose params with grads no
    longer match its norms, is refused by name."""
    dtypes = [torch.bfloat16 if i % 2 else torch.float32
              for i in range(len(NOVOGRAD_SIZES))]
    params = novograd_params(420, dtypes)
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt = kopt.FusedNovoGrad(params, lr=1e-3, weight_decay=0.01)
    ref_opt = NovoGradReference(ref, lr=1e-3, weight_decay=0.01)
    gen = torch.Generator(device="cuda").manual_seed(421)
    for _ in range(20):
        novograd_grads(params, gen)
        for p, r in zip(params, ref):
            r.grad = p.grad.double()
        opt.step()
        ref_opt.step()
        with torch.no_grad():
            for p, r in zip(params, ref):
                if p.dtype == torch.bfloat16:
                    r.copy_(r.bfloat16().double())
    torch.cuda.synchronize()
    half, full = opt.param_groups[0]["exp_avg_sq"]
    assert half.numel() == dtypes.count(torch.bfloat16), half.numel()
    assert full.numel() == dtypes.count(torch.float32), full.numel()
    f32 = [(p, r) for p, r in zip(params, ref) if p.dtype == torch.float32]
    bf16 = [(p, r) for p, r in zip(params, ref) if p.dtype != torch.float32]
    errors = {"float32": check_close("float32 params", *zip(*f32), 1e-5),
              "bfloat16": check_close("bfloat16 params", *zip(*bf16), 1e-2)}
    assert opt.launches_per_step == 2 * phase_launches(2)  # one plan a dtype

    mixed = novograd_params(422, [torch.float16, torch.bfloat16] +
                            [torch.float32] * (len(NOVOGRAD_SIZES) - 2))
    novograd_grads(mixed, gen)
    try:
        kopt.FusedNovoGrad(mixed).step()
        raise AssertionError("float16 and bfloat16 in one group ran")
    except RuntimeError as error:
        assert "mixes float16 and bfloat16" in str(error), error
    # Apex keeps one norm per param that had a grad at the first step.
    novograd_grads(params, gen, skip=(0,))
    try:
        opt.step()
        raise AssertionError("a step with other params having grads ran")
    except RuntimeError as error:
        assert "norms" in str(error), error
    return errors


@test
def fused_novograd_grad_scaler_and_max_grad_norm():
    """Under a GradScaler, an inf on the first step skips it whole: the
    norms stay zero and are started from the grads' norms at the next step,
    as if that one were the first; group['step'] in state_dict counts the
    steps taken. With max_grad_norm the grads are clipped by their global
    norm first, as clip_grad_norm_ before Apex's step."""
    params = novograd_params(430)
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt = kopt.FusedNovoGrad(params, lr=1e-3, weight_decay=0.01)
    ref_opt = NovoGradReference(ref, lr=1e-3, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 10)
    gen = torch.Generator(device="cuda").manual_seed(431)
    steps, inject_at = 30, (0, 12)
    for i in range(steps):
        novograd_grads(params, gen)
        scaler.scale(torch.zeros((), device="cuda"))  # as a loss would
        scale = scaler.get_scale()
        for p in params:
            p.grad.mul_(scale)
        if i in inject_at:
            params[-1].grad.view(-1)[5] = float("inf")
            before = [p.detach().clone() for p in params]
        else:
            for p, r in zip(params, ref):
                r.grad = p.grad.double() / scale
            ref_opt.step()
        scaler.step(opt)
        scaler.update()
        if i in inject_at:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before)), \
                f"step {i} with an inf grad changed a param"
    torch.cuda.synchronize()
    assert opt.state_dict()["param_groups"][0]["step"] == steps - 2
    results = {"grad_scaler": check_close("grad scaler", params, ref, 1e-5)}

    params = novograd_params(432)
    ref = [torch.nn.Parameter(p.detach().double().clone()) for p in params]
    opt = kopt.FusedNovoGrad(params, lr=1e-3, max_grad_norm=1.0)
    ref_opt = NovoGradReference(ref, lr=1e-3)
    clipped = 0
    for _ in range(STEPS):
        novograd_grads(params, gen)
        for p, r in zip(params, ref):
            r.grad = p.grad.double()
        norm = torch.nn.utils.clip_grad_norm_(ref, 1.0)
        clipped += int(norm > 1.0)
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()
    assert clipped > STEPS // 2, clipped
    results["max_grad_norm"] = check_close("max_grad_norm", params, ref, 1e-5)
    return results


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
def adafactor_vector_matches_torch_in_float64():
    """library/optim/adafactor_vector.mlir (Adafactor's unfactored path,
    two per-tensor means) through optimizer_from_ir on vector params of
    several sizes against torch.optim.Adafactor in float64 over 100 steps,
    with weight decay: params and the per-element variance. torch's eps1 is
    its dtype's epsilon by default, so both are given f32's."""
    Adafactor = kopt.optimizer_from_ir(OPTIM / "adafactor_vector.mlir",
                                       hyper_map={"eps": ("eps1", "eps2")})
    gen = torch.Generator(device="cuda").manual_seed(395)
    params = [torch.nn.Parameter(torch.randn(n, device="cuda", generator=gen))
              for n in (1, 7, 768, 3072, 50257)]
    ref = float64_twins(params)
    hp = dict(lr=1e-2, eps=(1.1920929e-07, 1e-3), weight_decay=0.01)
    opt = Adafactor(params, **hp)
    ref_opt = torch.optim.Adafactor(ref, **hp)
    step_on_random_grads(opt, ref_opt, params, ref, 1395)
    assert opt.launches_per_step == phase_launches(2), opt.launches_per_step
    variance = [opt.state[p]["variance"] for p in params]
    ref_variance = [ref_opt.state[r]["variance"] for r in ref]
    return {"param_rel_l2": check_close("params", params, ref, 1e-5),
            "variance_rel_l2": check_close("variance", variance,
                                           ref_variance, 1e-5)}


@test
def adafactor_matrix_matches_torch_in_float64():
    """library/optim/adafactor.mlir (the factored second moment, a 2-D
    update: row and column sums, four phases) through optimizer_from_ir on
    matrices of awkward shapes (one row, one column, rows not a multiple of
    a chunk's, columns not a multiple of the vector width, chunks of 32 and
    128 rows) against torch.optim.Adafactor in float64 over 100 steps, with
    weight decay: params, row_var and col_var."""
    Adafactor = kopt.optimizer_from_ir(OPTIM / "adafactor.mlir",
                                       hyper_map={"eps": ("eps1", "eps2")})
    gen = torch.Generator(device="cuda").manual_seed(396)
    shapes = [(768, 3072), (37, 257), (3, 1024), (1, 5), (5, 1), (1000, 64),
              (300, 768)]
    params = [torch.nn.Parameter(torch.randn(s, device="cuda", generator=gen))
              for s in shapes]
    ref = float64_twins(params)
    hp = dict(lr=1e-2, eps=(1.1920929e-07, 1e-3), weight_decay=0.01)
    opt = Adafactor(params, **hp)
    ref_opt = torch.optim.Adafactor(ref, **hp)
    step_on_random_grads(opt, ref_opt, params, ref, 1396)
    assert opt.launches_per_step == phase_launches(4), opt.launches_per_step
    for p in params:
        assert opt.state[p]["row_var"].shape == (p.shape[0], 1)
        assert opt.state[p]["col_var"].shape == (1, p.shape[1])
    result = {"param_rel_l2": check_close("params", params, ref, 1e-5)}
    for key in ("row_var", "col_var"):
        result[f"{key}_rel_l2"] = check_close(
            key, [opt.state[p][key] for p in params],
            [ref_opt.state[r][key] for r in ref], 1e-5)
    return result


@test
def adafactor_drop_in_matches_torch_in_float64():
    """kfuse.torch.optim.Adafactor on an MLP against torch.optim.Adafactor
    in float64 over 100 steps: the biases through kfuse's vector plan, the
    weight matrices through its factored plan, no fallbacks. State keys are
    torch's, and the state dict loads into torch's class and back."""
    hp = dict(lr=1e-2, eps=(2.0 ** -23, 1e-3), weight_decay=0.01)
    params, ref, opt, _ = run_against_float64(
        lambda ps: kopt.Adafactor(ps, **hp),
        lambda ps: torch.optim.Adafactor(ps, **hp), 397)
    error = check_close("params", params, ref, 1e-5)
    matrices = [i for i, p in enumerate(params) if p.dim() > 1]
    assert not opt.fallbacks, opt.fallbacks
    assert opt.launches_per_step == phase_launches(2) + phase_launches(4), \
        opt.launches_per_step
    for p in params:
        expected = (["step", "row_var", "col_var"] if p.dim() > 1
                    else ["step", "variance"])
        assert sorted(opt.state[p]) == sorted(expected), sorted(opt.state[p])
    twins = [torch.nn.Parameter(p.detach().clone()) for p in params]
    peer = torch.optim.Adafactor(twins, **hp)
    peer.load_state_dict(opt.state_dict())
    back = kopt.Adafactor([torch.nn.Parameter(p.detach().clone())
                           for p in params], **hp)
    back.load_state_dict(peer.state_dict())
    return {"param_rel_l2": error, "matrices": len(matrices)}


@test
def adafactor_drop_in_hands_torch_what_kfuse_does_not_take():
    """kfuse.torch.optim.Adafactor with a 3-D param (torch factors each
    leading index's matrix): that one runs torch's Adafactor, listed in
    fallbacks; the matrix and the vector stay on kfuse, also under
    maximize=True (the grads multiplied by -1 as they are read); all within
    1e-5 of torch in float64 over 100 steps."""
    gen = torch.Generator(device="cuda").manual_seed(398)
    results = {}
    for maximize in (False, True):
        shapes = [(4, 8, 16), (32, 64), (64,)]
        params = [torch.nn.Parameter(torch.randn(s, device="cuda",
                                                 generator=gen))
                  for s in shapes]
        ref = float64_twins(params)
        hp = dict(lr=1e-2, eps=(2.0 ** -23, 1e-3), maximize=maximize)
        opt = kopt.Adafactor(params, **hp)
        ref_opt = torch.optim.Adafactor(ref, **hp)
        step_on_random_grads(opt, ref_opt, params, ref, 1398 + maximize)
        assert [i for i, _ in opt.fallbacks[0]] == [0], opt.fallbacks
        results[f"maximize_{maximize}_param_rel_l2"] = check_close(
            "params", params, ref, 1e-5)
    return results


@test
def adafactor_drop_in_under_grad_scaler():
    """kfuse.torch.optim.Adafactor under a GradScaler: two plans (vectors,
    and matrices whose first phase scans the grads itself), one found_inf:
    every plan scans before any updates, so an inf in a matrix's grad at a
    step, or in a vector's at another, leaves every param as it was. Over
    30 steps against torch's Adafactor on the unscaled grads in float64, and
    with no inf at all the same launches as a whole step per plan plus one
    scan each."""
    gen = torch.Generator(device="cuda").manual_seed(399)
    shapes = [(48, 96), (96,), (96, 32), (32,)]
    params = [torch.nn.Parameter(torch.randn(s, device="cuda", generator=gen))
              for s in shapes]
    ref = float64_twins(params)
    hp = dict(lr=1e-2, eps=(2.0 ** -23, 1e-3), weight_decay=0.01)
    opt = kopt.Adafactor(params, **hp)
    ref_opt = torch.optim.Adafactor(ref, **hp)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 10)
    steps, inject = 30, {4: 2, 11: 1}  # step: the param whose grad is inf
    for i in range(steps):
        scaler.scale(torch.zeros((), device="cuda"))  # as a loss would
        scale = scaler.get_scale()
        for p in params:
            p.grad = torch.randn(p.shape, device="cuda", generator=gen)
        if i in inject:
            params[inject[i]].grad.view(-1)[7] = float("inf")
            before = [p.detach().clone() for p in params]
        else:
            for p, r in zip(params, ref):
                r.grad = p.grad.double()
            ref_opt.step()
        for p in params:
            p.grad.mul_(scale)
        scaler.step(opt)
        scaler.update()
        if i in inject:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before)), \
                f"step {i} with an inf grad changed a param"
    torch.cuda.synchronize()
    assert not opt.fallbacks, opt.fallbacks
    assert all(int(opt.state[p]["step"]) == steps - len(inject)
               for p in params), [opt.state[p]["step"] for p in params]
    return {"param_rel_l2": check_close("params", params, ref, 1e-5),
            "launches_per_step": opt.launches_per_step}


@test
def adafactor_max_grad_norm_matches_clip_then_torch():
    """kfuse.torch.optim.Adafactor(max_grad_norm=1e-3) on an MLP: the vectors'
    and the matrices' plans scale the grads by one norm over all of them
    (torch's foreach norm, as clip_grad_norm_ computes it; a 2-D update
    clips by the caller's norm), against clip_grad_norm_ then torch's
    Adafactor in float64 over STEPS steps."""
    params, ref, opt = clip_run(kopt.Adafactor, torch.optim.Adafactor, 441,
                                1e-3, lr=1e-2)
    assert not opt.fallbacks, opt.fallbacks
    return {"param_rel_l2": check_close("params", params, ref, 1e-5)}


def clip_run(cls, torch_cls, seed, max_norm, groups=list, **hp):
    """`cls` with max_grad_norm=`max_norm` on an MLP's params (`groups` of
    them) against clip_grad_norm_(foreach) then `torch_cls`, over STEPS
    steps: every step the grads stay unwritten and grad_norm is torch's
    norm, the clip active on most steps. Returns (params, twins, opt)."""
    model = mlp(seed)
    params = list(model.parameters())
    ref = twin(params)
    opt = cls(groups(params), max_grad_norm=max_norm, **hp)
    ref_opt = torch_peer(torch_cls, groups(ref), **hp)
    clipped = 0
    for batch in batches(STEPS, seed + 1):
        opt.zero_grad()
        backward(model, batch)
        copy_grads(params, ref)
        grads_before = [p.grad.clone() for p in params]
        norm = torch.nn.utils.clip_grad_norm_(ref, max_norm, foreach=True)
        opt.step()
        ref_opt.step()
        clipped += int(norm > max_norm)
        assert all(torch.equal(p.grad, g) for p, g in
                   zip(params, grads_before)), "a grad was written"
        assert torch.allclose(opt.grad_norm, norm, rtol=1e-5), \
            (float(opt.grad_norm), float(norm))
    torch.cuda.synchronize()
    assert clipped > STEPS // 2, clipped
    return params, ref, opt


def scaled_clip_run(seed, max_norm, groups=list, steps=30, inject_at=10):
    """AdamW(max_grad_norm) under a GradScaler against unscale_, then
    clip_grad_norm_, then torch's AdamW under its own scaler; an inf in the
    last param's grad at `inject_at` must leave every param as it was.
    Returns the params' relative L2 error."""
    model = mlp(seed)
    params = list(model.parameters())
    ref = twin(params)
    opt = kopt.AdamW(groups(params), lr=1e-3, max_grad_norm=max_norm)
    ref_opt = torch_peer(torch.optim.AdamW, groups(ref), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    ref_scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 12)
    for i, batch in enumerate(batches(steps, seed + 1)):
        opt.zero_grad(set_to_none=True)
        backward(model, batch, scaler=scaler, autocast=torch.float16)
        if i == inject_at:
            params[-1].grad.view(-1)[0] = float("inf")
            before = [p.detach().clone() for p in params]
        copy_grads(params, ref)
        ref_scaler.scale(torch.zeros((), device="cuda"))
        ref_scaler.unscale_(ref_opt)
        torch.nn.utils.clip_grad_norm_(ref, max_norm, foreach=True)
        scaler.step(opt)
        ref_scaler.step(ref_opt)
        scaler.update()
        ref_scaler.update()
        if i == inject_at:
            torch.cuda.synchronize()
            assert all(torch.equal(p, b) for p, b in zip(params, before)), \
                "a step with an inf grad changed a param"
    torch.cuda.synchronize()
    return check_close("params", params, ref)


def decay_groups(params):
    """Decay and no decay, as Hugging Face's Trainer groups params."""
    return [{"params": [p for p in params if p.dim() > 1]},
            {"params": [p for p in params if p.dim() <= 1],
             "weight_decay": 0.0}]


@test
def max_grad_norm_matches_torch_clip():
    """max_grad_norm= clips inside the step as clip_grad_norm_(foreach)
    before torch's fused step: params within 1e-6 after 100 steps, the
    grads left unscaled, the norm's phase and the update in one launch."""
    results = {}
    for name, cls, torch_cls, hp in (
            ("adamw", kopt.AdamW, torch.optim.AdamW, dict(lr=1e-3)),
            ("sgd", kopt.SGD, torch.optim.SGD, dict(lr=1e-2, momentum=0.9))):
        params, ref, opt = clip_run(cls, torch_cls, 340, 1e-3, **hp)
        assert opt.launches_per_step == phase_launches(2), \
            opt.launches_per_step
        results[name] = check_close(name, params, ref)
    return results


@test
def max_grad_norm_under_grad_scaler():
    """With a GradScaler the norm is of the unscaled grads (as unscale_
    then clip_grad_norm_), and an inf step is skipped whole."""
    return {"param_rel_l2": scaled_clip_run(350, 0.5)}


@test
def max_grad_norm_over_several_plans():
    """Two param groups (decay and no decay) are two plans: both clip by
    one norm over every grad (torch's foreach norm), against
    clip_grad_norm_ before torch's step; then the same under a GradScaler
    with an inf step. Each plan is one launch."""
    params, ref, opt = clip_run(kopt.AdamW, torch.optim.AdamW, 360, 1e-3,
                                groups=decay_groups, lr=1e-3,
                                weight_decay=0.1)
    assert opt.launches_per_step == 2, opt.launches_per_step
    return {"two_groups": check_close("two groups", params, ref),
            "two_groups_grad_scaler": scaled_clip_run(362, 0.5,
                                                      groups=decay_groups)}


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


def main():
    options = _gpu_tests.parse_args()
    return _gpu_tests.run(TESTS, options.k, options.json)


if __name__ == "__main__":
    sys.exit(main())
