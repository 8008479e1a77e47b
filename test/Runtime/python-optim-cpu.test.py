import importlib.util
import pathlib
import sys
from collections import namedtuple

import kfuse

# 1. Without PyTorch (blocked here, so that the result is the same whether or
# not the machine has it), `import kfuse.torch` names what is missing.
sys.modules["torch"] = None
try:
    import kfuse.torch  # noqa: F401
except ImportError as error:
    print(f"import kfuse.torch: ImportError: {error}")
else:
    print("import kfuse.torch: imported without torch")
print("torch stays unimported:", sys.modules.get("torch") is None)

# 2. The torch-free half, loaded by path (importing it as kfuse.torch._spec
# would run kfuse.torch's __init__, which needs torch).
path = pathlib.Path(kfuse.__file__).parent / "torch" / "_spec.py"
loader_spec = importlib.util.spec_from_file_location("kfuse_torch_spec", path)
S = importlib.util.module_from_spec(loader_spec)
loader_spec.loader.exec_module(S)


def show(what, fn):
    try:
        print(f"{what}: {fn()}")
    except Exception as error:  # noqa: BLE001 - the message is the test
        print(f"{what}: {type(error).__name__}: {error}")


def options(defaults):
    return " ".join(f"{k}={v!r}" for k, v in defaults.items())


# The library is found beside the package (here: the checkout's).
print("library dir:", "ok" if S.optim_library_dir() ==
      pathlib.Path(sys.argv[1]).resolve() else S.optim_library_dir())

# Every variant agrees with the IR it runs: state and hyper names.
variants = {}
for spec in (S.ADAM, S.ADAMW, S.SGD, S.ADAGRAD, S.RMSPROP, S.LION,
             S.FUSED_LAMB, S.LARS, S.FUSED_NOVOGRAD, S.ADAFACTOR):
    variants.update(spec.variants)
for name, variant in sorted(variants.items()):
    update = kfuse.Update(variant.resolve_source(), name=name)
    states = [a.name for a in update.args if a.role == "state"]
    hypers = sorted(a.name for a in update.args if a.role == "hyper")
    expected = sorted(variant.hyper_names + list(variant.optimizer_hypers) +
                      (["step"] if variant.step else []))
    # FusedNovoGrad keeps its per-tensor norms in the param group.
    ok = (states == [ir for _, ir in variant.states] +
          list(variant.group_states) and hypers == expected
          and [a.role for a in update.args][:2] == ["param", "grad"])
    source = "<IR>" if "\n" in variant.source else variant.source
    print(f"library {name}: {source} states {states} hypers "
          f"{' '.join(hypers)}: {'ok' if ok else 'MISMATCH ' + str(expected)}")

# Options, variants and the values kfuse does not implement.
print("AdamW defaults:", options(S.ADAMW.defaults))
group = S.ADAMW.group_defaults({"lr": 3e-4, "betas": (0.9, 0.95),
                                "weight_decay": 0.1})
variant = S.ADAMW.variant(group)
print(f"AdamW group: {variant.name} {variant.plan_hypers(group)} keys "
      f"{variant.state_keys}")
print("Adam group:", S.ADAM.variant(S.ADAM.group_defaults({})).name +
      "; decoupled:", S.ADAM.variant(S.ADAM.group_defaults(
          {"decoupled_weight_decay": True})).name)
group = S.ADAMW.group_defaults({"amsgrad": True})
S.ADAMW.check_supported(group)
print("AdamW amsgrad:", S.ADAMW.variant(group).name, "keys",
      S.ADAMW.variant(group).state_keys, "; Adam:",
      S.ADAM.variant(S.ADAM.group_defaults({"amsgrad": True})).name)
# caution=True (timm's Cautious AdamW): decoupled AdamW only.
print("AdamW caution:", S.ADAMW.variant(
    S.ADAMW.group_defaults({"caution": True})).name)
show("Adam caution", lambda: S.ADAM.variant(
    S.ADAM.group_defaults({"caution": True})))
show("AdamW caution amsgrad", lambda: S.ADAMW.variant(
    S.ADAMW.group_defaults({"caution": True, "amsgrad": True})))
for spec in (S.ADAMW, S.SGD):
    spec.check_supported(spec.group_defaults({"maximize": True}))
print("maximize: supported by AdamW and SGD")
show("Adam differentiable", lambda: S.ADAM.check_supported(
    S.ADAM.group_defaults({"differentiable": True})))
show("Adam bad beta", lambda: S.check_adam_args(1e-3, (0.9, 1.0), 1e-8, 0))
for momentum in (0, 0.9):
    group = S.SGD.group_defaults({"lr": 0.1, "momentum": momentum,
                                  "nesterov": momentum != 0})
    variant = S.SGD.variant(group)
    print(f"SGD momentum {momentum}: {variant.name} "
          f"{variant.plan_hypers(group)} keys {variant.state_keys}")
show("SGD nesterov with dampening",
     lambda: S.check_sgd_args(0.1, 0.9, 0.1, 0, True))
print("Lion defaults:", options(S.LION.defaults))


class FakeParam:
    def __init__(self, dims, dtype="torch.bfloat16"):
        self.dims, self.dtype = dims, dtype

    def dim(self):
        return self.dims


# Adafactor: vectors run adafactor_vector.mlir, matrices torch's optimizer;
# eps1 = None is the first param's machine epsilon, as torch takes it.
group = S.ADAFACTOR.group_defaults({"params": [FakeParam(2), FakeParam(1)]})
variant = S.ADAFACTOR.variant(group)
print(f"Adafactor group: {variant.name} {variant.plan_hypers(group)} keys "
      f"{variant.state_keys}")
print("Adafactor fallback:", S.ADAFACTOR.fallback(FakeParam(3)), "|",
      S.ADAFACTOR.fallback(FakeParam(2)), "|", S.ADAFACTOR.fallback(FakeParam(1)))
print(f"Adafactor matrices: {variant.matrices.name} "
      f"{variant.matrices.hyper_names == variant.hyper_names} keys "
      f"{variant.matrices.state_keys}")
show("Adafactor bad d",
     lambda: S.check_adafactor_args(1e-2, -0.8, (None, 1e-3), 0.5, 0))
saved_group = dict(S.ADAFACTOR.defaults, params=[0, 1])
S.check_state_dict(S.ADAFACTOR, {
    "state": {0: {"step": 1.0, "row_var": 0, "col_var": 0},
              1: {"step": 1.0, "variance": 0}},
    "param_groups": [saved_group]}, [2])
print("Adafactor state dict with a matrix's row_var and col_var: ok")
show("Adafactor state dict without variance",
     lambda: S.check_state_dict(S.ADAFACTOR, {
         "state": {1: {"step": 1.0}}, "param_groups": [saved_group]}, [2]))


class FakeTensor:
    pass


tensor_lr = S.LION.variant({}).plan_hypers(
    S.LION.group_defaults({"lr": FakeTensor()}))[0][1]
print("tensor option passes through:", type(tensor_lr).__name__)

# Pure helpers.
print("cohorts:", " | ".join(
    ",".join(map(str, c)) for c in S.step_cohorts([3.0, 3.0, 0.0, 3.0, 0.0])))
adamw = kfuse.Update(S.ADAMW.variants["adamw"].resolve_source())
print("shortest f32:", " ".join(
    f"{a.name}={S.shortest_f32(a.default)!r}" for a in adamw.args
    if a.role == "hyper"), S.shortest_f32(0.1), S.shortest_f32(0.0),
    S.shortest_f32(1e300))


class Scalar:
    def item(self):
        return 7


print("step values:", S.step_value(3), S.step_value(Scalar()))

# Optimizers from IR.
spec = S.spec_from_ir(adamw.args, "AdamwIr", state_names={"exp_avg": "m",
                                                          "exp_avg_sq": "v"},
                      hyper_map={"betas": ("beta1", "beta2")},
                      source="adamw.mlir")
print("from IR:", spec.name, options(spec.defaults))
group = spec.group_defaults({"lr": 3e-4, "betas": (0.9, 0.95)})
variant = spec.variant(group)
print(f"from IR hypers: {variant.plan_hypers(group)} keys {variant.state_keys}")
made = spec.constructor_defaults((2e-3, (0.8, 0.9)), {})
print(f"from IR positional: lr={made['lr']} betas={made['betas']}")
show("from IR unknown option",
     lambda: spec.constructor_defaults((), {"momentum": 0.9}))
show("from IR too many positional",
     lambda: spec.constructor_defaults((1, 2, 3, 4, 5), {}))
lion = kfuse.Update(S.LION.variants["lion"].resolve_source())
plain = S.spec_from_ir(lion.args, "Lion")
print("from IR plain:", plain.name, options(plain.defaults) + "; step:",
      plain.variant({}).step)
show("from IR bad hyper", lambda: S.spec_from_ir(
    adamw.args, "X", hyper_map={"betas": ("beta1", "beta3")}))
show("from IR step option", lambda: S.spec_from_ir(
    adamw.args, "X", hyper_map={"t": "step"}))
show("from IR twice", lambda: S.spec_from_ir(
    adamw.args, "X", hyper_map={"a": "lr", "b": ("lr", "eps")}))
show("from IR bad states", lambda: S.spec_from_ir(
    adamw.args, "X", state_names=["exp_avg"]))
show("from IR reserved", lambda: S.spec_from_ir(
    adamw.args, "X", hyper_map={"maximize": "eps"}))
Arg = namedtuple("Arg", ["name", "role", "default"])
two_params = [Arg("p", "param", None), Arg("q", "param", None),
              Arg("g", "grad", None)]
show("from IR two params", lambda: S.spec_from_ir(two_params, "X"))
show("from IR model role", lambda: S.spec_from_ir(
    [Arg("p", "param", None), Arg("g", "grad", None),
     Arg("p_model", "model", None)], "X"))
required = S.spec_from_ir([Arg("p", "param", None), Arg("g", "grad", None),
                           Arg("lr", "hyper", None)], "X")
print("from IR required: lr =", required.defaults["lr"])

# State dicts in torch.optim's format (numbers stand in for tensors).
saved = {
    "state": {0: {"step": 4.0, "exp_avg": 0, "exp_avg_sq": 0},
              1: {"step": 4.0, "exp_avg": 0, "exp_avg_sq": 0}},
    "param_groups": [dict(S.ADAMW.defaults, params=[0, 1, 2])],
}
show("state dict ok", lambda: S.check_state_dict(S.ADAMW, saved, [3]) or
     "AdamW")
show("state dict groups", lambda: S.check_state_dict(S.ADAMW, saved, [3, 1]))
show("state dict sizes", lambda: S.check_state_dict(
    S.ADAMW, dict(saved, param_groups=[dict(S.ADAMW.defaults, params=[0, 1])]),
    [3]))
del saved["state"][1]["exp_avg_sq"]
show("state dict missing", lambda: S.check_state_dict(S.ADAMW, saved, [3]))
show("state dict amsgrad", lambda: S.check_state_dict(
    S.ADAMW, {"state": {0: {"step": 1.0, "exp_avg": 0, "exp_avg_sq": 0}},
              "param_groups": [dict(S.ADAMW.defaults, amsgrad=True,
                                    params=[0])]}, [1]))
show("state dict differentiable", lambda: S.check_state_dict(
    S.ADAMW, {"state": {}, "param_groups": [dict(S.ADAMW.defaults,
                                                 differentiable=True,
                                                 params=[0])]}, [1]))
show("state dict not a dict", lambda: S.check_state_dict(S.SGD, [], [1]))
sgd_saved = {"state": {0: {"momentum_buffer": None}},
             "param_groups": [dict(S.SGD.defaults, momentum=0.9, params=[0]),
                              dict(S.SGD.defaults, params=[1])]}
show("state dict sgd", lambda: S.check_state_dict(S.SGD, sgd_saved, [1, 1])
     or "ok")
