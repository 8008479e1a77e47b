"""Driver of python-torch-optim-cpu.test (see there)."""

import sys

import torch

import kfuse
import kfuse.torch.optim as kopt

lib = sys.argv[1]
torch.manual_seed(0)
params = [torch.nn.Parameter(torch.randn(4, 3)), torch.nn.Parameter(torch.randn(5))]

opt = kopt.AdamW(params)
ref = torch.optim.AdamW(params)
keys = ("lr", "betas", "eps", "weight_decay", "amsgrad")
print("defaults as torch:", all(opt.defaults[k] == ref.defaults[k] for k in keys))
keys = ("lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value")
ada, ada_ref = kopt.Adagrad(params), torch.optim.Adagrad(params)
print("adagrad defaults as torch:",
      all(ada.defaults[k] == ada_ref.defaults[k] for k in keys),
      "state", {k: (tuple(v.shape), float(v.flatten()[0]))
                for k, v in sorted(ada.state[params[0]].items())})

for label, make in [("amsgrad", lambda: kopt.AdamW(params, amsgrad=True)),
                    ("maximize", lambda: kopt.Adam(params, maximize=True)),
                    ("sgd maximize", lambda: kopt.SGD(params, maximize=True)),
                    ("differentiable",
                     lambda: kopt.Adam(params, differentiable=True))]:
    try:
        opt_made = make()
        print(f"{label}: accepted, group {label.split()[-1]}="
              f"{opt_made.param_groups[0][label.split()[-1]]}")
    except NotImplementedError as error:
        print(f"{label}: NotImplementedError {error}")

# CPU params: torch's optimizer of the same name updates them, over the
# same optimizer.state, exactly as it would alone (three steps, a schedule).
def cpu_steps(cls, torch_cls, options):
    """Three steps (a schedule halving lr) of `cls` and of `torch_cls` on
    copies of `params`: (kfuse's optimizer and params, torch's optimizer,
    whether the params came out the same)."""
    ours = [torch.nn.Parameter(p.detach().clone()) for p in params]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in params]
    opt_ours, opt_theirs = cls(ours, lr=0.1, **options), \
        torch_cls(theirs, lr=0.1, **options)
    for step in range(3):
        for p, q in zip(ours, theirs):
            p.grad = torch.full_like(p, 0.5 + step)
            q.grad = p.grad.clone()
        opt_ours.step()
        opt_theirs.step()
        for o in (opt_ours, opt_theirs):
            o.param_groups[0]["lr"] *= 0.5
    same = all(torch.equal(p, q) for p, q in zip(ours, theirs))
    return opt_ours, ours, opt_theirs, same


for cls, torch_cls, options in ((kopt.AdamW, torch.optim.AdamW, {}),
                                (kopt.Adam, torch.optim.Adam,
                                 {"weight_decay": 0.1}),
                                (kopt.SGD, torch.optim.SGD,
                                 {"momentum": 0.9}),
                                (kopt.Adagrad, torch.optim.Adagrad,
                                 {"lr_decay": 0.01, "weight_decay": 0.1,
                                  "initial_accumulator_value": 0.1}),
                                (kopt.RMSprop, torch.optim.RMSprop,
                                 {"momentum": 0.9, "centered": True})):
    opt_ours, ours, _, same = cpu_steps(cls, torch_cls, options)
    state = opt_ours.state[ours[0]]
    print(f"cpu step {cls.__name__}: same as torch {same}, state "
          f"{sorted(state)}, fallbacks {opt_ours.fallbacks}")
for p in params:
    p.grad = torch.ones_like(p)
try:
    kopt.Lion(params).step()
    print("cpu step Lion: ran")
except NotImplementedError as error:
    print(f"cpu step Lion: NotImplementedError {error}")

# torch's state dict after two steps loads into kfuse's AdamW and back.
ref.step(); ref.step()
saved = ref.state_dict()
mine = kopt.AdamW(params)
mine.load_state_dict(saved)
back = mine.state_dict()
same = (back["param_groups"][0]["lr"] == saved["param_groups"][0]["lr"] and
        sorted(back["state"][0]) == sorted(saved["state"][0]) and
        torch.equal(back["state"][1]["exp_avg"], saved["state"][1]["exp_avg"]) and
        float(back["state"][0]["step"]) == 2.0)
print("torch -> kfuse -> state_dict:", "same" if same else f"DIFFERS {back}")
again = torch.optim.AdamW(params)
again.load_state_dict(back)
print("kfuse -> torch:", float(again.state_dict()["state"][0]["step"]))

# AMSGrad's extra state travels both ways too.
ams_ref = torch.optim.AdamW(params, amsgrad=True)
ams_ref.step(); ams_ref.step()
ams_saved = ams_ref.state_dict()
ams = kopt.AdamW(params, amsgrad=True)
ams.load_state_dict(ams_saved)
ams_again = torch.optim.AdamW(params, amsgrad=True)
ams_again.load_state_dict(ams.state_dict())
kept = torch.equal(ams_again.state_dict()["state"][1]["max_exp_avg_sq"],
                   ams_saved["state"][1]["max_exp_avg_sq"])
print("amsgrad torch -> kfuse -> torch: max_exp_avg_sq",
      "kept" if kept else "CHANGED", "step",
      float(ams_again.state_dict()["state"][0]["step"]))

sgd = torch.optim.SGD(params, lr=0.1, momentum=0.9)
sgd.step()
try:
    kopt.AdamW(params).load_state_dict(sgd.state_dict())
    print("foreign state: loaded")
except ValueError as error:
    print(f"foreign state: ValueError {error}")

groups = kopt.AdamW([{"params": params[:1], "lr": 0.5}, {"params": params[1:]}], lr=1e-3)
print("groups:", [g["lr"] for g in groups.param_groups])

Lion = kopt.optimizer_from_ir(f"{lib}/optim/lion.mlir")
lion = Lion(params)
print("from IR:", Lion.__name__, {k: lion.defaults[k] for k in sorted(lion.defaults) if k in ("lr", "weight_decay")})

# Apex's FusedNovoGrad: its refusals, its defaults, exp_avg_sq a per-tensor
# state of the IR, and its state (group['exp_avg_sq'], Apex's [16-bit norms,
# float32 norms]) through a state dict; CPU params have no torch peer.
for label, options in (("amsgrad", {"amsgrad": True}),
                       ("norm_type 1", {"norm_type": 1})):
    try:
        kopt.FusedNovoGrad(params, **options)
        print(f"novograd {label}: accepted")
    except RuntimeError as error:
        print(f"novograd {label}: RuntimeError {error}")
novo = kopt.FusedNovoGrad(params, lr=0.01)
print("novograd defaults:", {k: novo.defaults[k] for k in sorted(novo.defaults)},
      "moment_mode", novo.moment_mode)
update = kfuse.Update(f"{lib}/optim/novograd.mlir")
print("novograd states:", [(a.name, a.level) for a in update.args
                           if a.role == "state"])
FromIr = kopt.optimizer_from_ir(f"{lib}/optim/novograd.mlir")
variant = FromIr._kfuse_spec.variant({})
print("novograd from IR: per-tensor states", sorted(variant.tensor_states))
try:
    novo.step()
    print("novograd cpu step: ran")
except NotImplementedError as error:
    print(f"novograd cpu step: NotImplementedError {error}")
novo.param_groups[0].update(step=3, exp_avg_sq=[torch.zeros(0),
                                                torch.tensor([0.5, 2.0])])
for p in params:
    novo.state[p]["exp_avg"] = torch.full_like(p, 0.25)
saved = novo.state_dict()
again = kopt.FusedNovoGrad(params)
again.load_state_dict(saved)
group = again.param_groups[0]
print("novograd state dict:", sorted(saved["state"][0]), "step", group["step"],
      "lr", group["lr"], "exp_avg_sq", type(group["exp_avg_sq"]).__name__,
      "of", " and ".join(str(n.tolist()) for n in group["exp_avg_sq"]),
      "hidden steps", sorted(set(again._kfuse_hidden_steps.values())))
saved["param_groups"][0]["exp_avg_sq"] = [torch.zeros(2), torch.zeros(1)]
try:
    kopt.FusedNovoGrad(params).load_state_dict(saved)
    print("novograd bad norms: loaded")
except ValueError as error:
    print(f"novograd bad norms: ValueError {error}")

# Adafactor: torch's constructor checks; on the CPU torch's own Adafactor
# updates every param (on a GPU kfuse takes the vectors), where this torch
# has one (2.5 and later), with its state per shape, and the state dict
# goes to torch's class and back.
for bad in ({"d": 0.5}, {"beta2_decay": 0.5}, {"eps": (-1.0, 1e-3)}):
    try:
        kopt.Adafactor(params, **bad)
        print(f"adafactor {sorted(bad)[0]}: accepted")
    except ValueError as error:
        print(f"adafactor {sorted(bad)[0]}: ValueError {error}")
opt_ours = kopt.Adafactor(params, lr=0.1, weight_decay=0.1)
print("adafactor defaults:", {k: opt_ours.defaults[k]
                              for k in sorted(opt_ours.defaults)})
try:
    opt_ours, ours, opt_theirs, same = cpu_steps(
        kopt.Adafactor, torch.optim.Adafactor, {"weight_decay": 0.1})
    print("cpu step Adafactor: same as torch", same, "states",
          [sorted(opt_ours.state[p]) for p in ours])
    moved = kopt.Adafactor([torch.nn.Parameter(p.detach().clone())
                            for p in params], lr=0.1)
    moved.load_state_dict(opt_theirs.state_dict())
    back = torch.optim.Adafactor([torch.nn.Parameter(p.detach().clone())
                                  for p in params], lr=0.1)
    back.load_state_dict(moved.state_dict())
    print("adafactor torch -> kfuse -> torch: step",
          float(back.state_dict()["state"][0]["step"]))
except AttributeError:
    for p in params:
        p.grad = torch.ones_like(p)
    try:
        opt_ours.step()
        print("cpu step Adafactor: ran")
    except NotImplementedError as error:
        print(f"cpu step Adafactor: NotImplementedError {error}")
