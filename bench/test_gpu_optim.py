"""GPU tests of kfuse.torch.optim against torch.optim (plain script); the
optimizers with reductions and fused clipping are in
bench/test_gpu_optim_reduce.py.

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
import pathlib
import sys

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

from _optim_testing import (  # noqa: E402
    OPTIM, STEPS, backward, batches, check_close, copy_grads, mlp, plan_ids,
    rel_l2, run_twins, states_of, torch_peer, twin, twins_per_case)

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


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
