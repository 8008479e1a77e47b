"""What the GPU tests of kfuse.torch.optim share (bench/test_gpu_optim.py,
bench/test_gpu_optim_reduce.py): a small MLP trained with real backward
passes, twin parameter lists stepped by a peer on the same grads, the
comparisons, and float64 references of optimizers torch lacks (Apex's
FusedNovoGrad; bench/bench_multi_tensor.py uses it too). The scripts import it once they know PyTorch and a CUDA device
are there."""

import math
import os
import pathlib
import sys
import warnings

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

# GradScaler warns once that it will stop passing itself to step().
warnings.filterwarnings("ignore", message="GradScaler is going to stop",
                        category=FutureWarning)

OPTIM = REPO / "library" / "optim"
STEPS = 100
TOLERANCE = 1e-6  # params, rel L2, f32


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


def step_on_random_grads(opt, ref_opt, params, ref, seed, steps=STEPS):
    """`steps` steps of `opt` over `params` and of `ref_opt` over their
    float64 twins `ref`, each step on fresh normal grads (the twins' the
    same values in float64)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    for _ in range(steps):
        for p, r in zip(params, ref):
            p.grad = torch.randn(p.shape, device="cuda", generator=gen)
            r.grad = p.grad.double()
        opt.step()
        ref_opt.step()
    torch.cuda.synchronize()


def float64_twins(params):
    return [torch.nn.Parameter(p.detach().double().clone()) for p in params]


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


class NovoGradReference:
    """Apex's FusedNovoGrad in float64 on float64 twins: per param group,
    one running norm per param with a grad (L2, or max-abs at
    norm_type=0), started from the first step's grad norms unless
    init_zero; the moments with the regularization inside them
    (reg_inside_moment) or on the update. `params` is a list of tensors or
    of param group dicts with their own options, as torch.optim's."""

    def __init__(self, params, reg_inside_moment=False, **options):
        defaults = dict(lr=1e-3, bias_correction=True, betas=(0.9, 0.999),
                        eps=1e-8, weight_decay=0.0, grad_averaging=True,
                        norm_type=2, init_zero=False)
        defaults.update(options)
        params = list(params)
        if not params or not isinstance(params[0], dict):
            params = [{"params": params}]
        self.groups = [dict(defaults, **group) for group in params]
        self.inside = bool(reg_inside_moment)
        self.exp_avg = {}

    @torch.no_grad()
    def step(self):
        for group in self.groups:
            group["step"] = t = group.get("step", 0) + 1
            beta1, beta2 = group["betas"]
            live = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad.double() for p in live]
            norms = [float(g.abs().max()) if group["norm_type"] == 0
                     else float(g.norm()) for g in grads]
            if "norms" not in group:
                # Apex starts from the norms (the first blend keeps them).
                group["norms"] = [0.0] * len(live) if group["init_zero"] \
                    else list(norms)
            bc1, bc2 = 1.0, 1.0
            if group["bias_correction"]:
                bc1 = 1 - beta1 ** t
                bc2 = math.sqrt(1 - beta2 ** t)
            beta3 = 1 - beta1 if group["grad_averaging"] else 1.0
            lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
            for i, (p, g, n) in enumerate(zip(live, grads, norms)):
                v = group["norms"][i]
                if group["norm_type"] == 0:
                    v = beta2 * v + (1 - beta2) * n
                else:
                    v = math.sqrt(beta2 * v * v + (1 - beta2) * n * n)
                group["norms"][i] = v
                denom = v / bc2 + eps
                m = self.exp_avg.setdefault(p, torch.zeros_like(p))
                if self.inside:
                    m.mul_(beta1).add_(beta3 * (g / denom + wd * p))
                    p.sub_(lr * m / bc1)
                else:
                    m.mul_(beta1).add_(beta3 * g)
                    p.sub_(lr * ((m / bc1) / denom + wd * p))
