"""The torch-free half of kfuse.torch.optim: what each optimizer is.

An OptimizerSpec says which kfuse update a param group runs (a Variant: the
IR, its state tensors and how the group's options become the IR's
hyperparameters), which torch.optim options exist with their defaults, and
which option values kfuse does not implement. kfuse.torch.optim turns a spec
into a torch.optim.Optimizer; everything here is plain Python so that it can
be checked without PyTorch (test/Runtime/python-optim-cpu.test).
"""

import math
import numbers
import pathlib
import struct

from kfuse._capi import library_dir

__all__ = ["REQUIRED", "Variant", "OptimizerSpec", "ADAM", "ADAMW", "SGD",
           "ADAGRAD", "RMSPROP", "LION", "ADAFACTOR", "FUSED_LAMB", "FUSED_NOVOGRAD", "LARS",
           "SGD_PLAIN_IR",
           "spec_from_ir",
           "check_state_dict", "step_cohorts", "hyper_number", "shortest_f32",
           "step_value", "optim_library_dir", "check_adam_args",
           "check_sgd_args", "check_adagrad_args", "check_rmsprop_args",
           "check_lion_args", "check_novograd_args", "novograd_slot",
           "check_adafactor_args",
           "prefixed"]


class _Required:
    """An option without a default (torch.optim's `required`)."""

    def __repr__(self):
        return "<required parameter>"


REQUIRED = _Required()

# Options every kfuse optimizer accepts and ignores or checks, as torch.optim
# does: one launch a step is what fused/foreach ask for already.
_RESERVED_OPTIONS = ("params", "foreach", "fused", "capturable",
                     "differentiable", "maximize")


def prefixed(name):
    return f"kfuse.torch.optim.{name}"


def optim_library_dir():
    """The folder of the library's optimizers (see kfuse._capi.library_dir)."""
    return library_dir("optim")


# Plain SGD (momentum 0). sgd.mlir would keep a momentum buffer and apply
# dampening after the first step, which torch.optim.SGD ignores without
# momentum; this update has no state at all.
SGD_PLAIN_IR = """\
// SGD without momentum, as torch.optim.SGD with momentum=0:
//   p <- p - lr * (g + wd * p)
func.func @sgd_plain(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-3 : f32},
    %weight_decay: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "weight_decay", kfuse.default = 0.0 : f32})
    attributes {kfuse.update} {
  %wd_v = kfuse.broadcast %weight_decay like %param : f32, tensor<?xf32>
  %lr_v = kfuse.broadcast %lr like %param : f32, tensor<?xf32>
  %p_wd = arith.mulf %param, %wd_v : tensor<?xf32>
  %g = arith.addf %grad, %p_wd : tensor<?xf32>
  %lr_g = arith.mulf %lr_v, %g : tensor<?xf32>
  %p_new = arith.subf %param, %lr_g : tensor<?xf32>
  kfuse.write %p_new to %param : tensor<?xf32>
  return
}
"""


def hyper_number(value):
    """A group option as a plan hyperparameter: numbers (bools included)
    become floats; anything else (a tensor) is returned as is, for the
    caller to copy on the device."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def step_value(step):
    """A state's 'step' (a number or a one-element tensor) as a float."""
    if hasattr(step, "item"):
        return float(step.item())
    return float(step)


def step_cohorts(steps):
    """Positions grouped by equal step counts, groups and members in
    first-seen order: params whose counts differ need plans of their own
    (a plan has one "step")."""
    cohorts = {}
    for position, step in enumerate(steps):
        cohorts.setdefault(step, []).append(position)
    return list(cohorts.values())


def _f32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def shortest_f32(value):
    """The shortest decimal that rounds to the same float32 as `value`.

    IR defaults are f32 constants: "1.0e-3 : f32" reads back as
    0.0010000000474974513, and a plan computes 1 - beta2 in double, so the
    decimal the IR author wrote (as torch.optim's defaults are) is the
    faithful default."""
    value = float(value)
    if not math.isfinite(value) or value == 0.0:
        return value
    try:
        target = _f32(value)
    except OverflowError:
        return value
    for digits in range(1, 10):
        candidate = float(f"{value:.{digits}g}")
        if _f32(candidate) == target:
            return candidate
    return value


def _option(name):
    return lambda group: group[name]


def _element(name, index):
    return lambda group: group[name][index]


class Variant:
    """One kfuse update a param group can run.

    `source`: a file name in the optimizer library ("adamw.mlir"), a path,
    or IR text. `states`: (key in optimizer.state[p], IR state name) pairs.
    `hypers`: (IR hyper name, function of the group giving its value).
    `step`: None (the IR has no "step"), "exposed" (the count is
    optimizer.state[p]['step'], as torch's Adam keeps it) or "hidden" (kept
    by the optimizer only: SGD's first step differs, torch keeps no count).
    `optimizer_hypers`: IR hypers the optimizer sends at every step, not
    from a group's options (LAMB's global grad norm).
    `tensor_states`: the IR names, among `states`, of per-tensor states
    (ArgInfo.level "tensor"): state[p] keeps each as a one-element float32
    tensor. `group_states`: IR names of per-tensor states kept outside
    state[p], per param group, which the optimizer hands to the plan
    (KfuseOptimizer._kfuse_group_states; FusedNovoGrad keeps exp_avg_sq in
    its param groups, as Apex does).
    """

    def __init__(self, name, source, states=(), hypers=(), step=None,
                 optimizer_hypers=(), tensor_states=(), group_states=(),
                 matrices=None):
        if step not in (None, "exposed", "hidden"):
            raise ValueError(f"variant step {step!r}")
        # The variant that updates the group's 2-D params (a 2-D update:
        # Adafactor's factored second moment), or None: this one takes all.
        self.matrices = matrices
        self.name = name
        self.source = source
        self.states = tuple(states)
        self.hypers = tuple(hypers)
        self.step = step
        self.optimizer_hypers = tuple(optimizer_hypers)
        self.tensor_states = frozenset(tensor_states)
        unknown = self.tensor_states - {ir for _, ir in self.states}
        if unknown:
            raise ValueError(f"variant {name}: tensor_states {sorted(unknown)}"
                             " are not among its states")
        self.group_states = tuple(group_states)

    def __repr__(self):
        return f"Variant({self.name!r})"

    @property
    def state_keys(self):
        """The keys optimizer.state[p] holds, in torch's order."""
        keys = ["step"] if self.step == "exposed" else []
        return keys + [key for key, _ in self.states]

    @property
    def hyper_names(self):
        return [name for name, _ in self.hypers]

    def resolve_source(self):
        """A path or IR text for kfuse.Update."""
        source = self.source
        if "\n" in source or "func.func" in source:
            return source
        path = pathlib.Path(source)
        if not path.is_absolute() and path.parent == pathlib.Path("."):
            path = optim_library_dir() / path
        return str(path)

    def plan_hypers(self, group):
        """(IR hyper name, value) pairs for `group`; numbers as floats,
        tensors as given."""
        values = []
        for name, get in self.hypers:
            try:
                value = get(group)
            except (KeyError, IndexError, TypeError) as error:
                raise ValueError(f"param group lacks the option for "
                                 f"hyperparameter '{name}' ({error!r})"
                                 ) from None
            values.append((name, hyper_number(value)))
        return values


class OptimizerSpec:
    """An optimizer: options with defaults, the variants it runs, and the
    option values kfuse does not implement.

    `choose(group)` names the variant a group runs (default: the only one).
    `unsupported`: (option, the one value allowed, why) triples, checked at
    construction, add_param_group, load_state_dict and every step.
    `forced`: options every group holds with this value (AdamW's
    decoupled_weight_decay, as torch.optim.AdamW sets it).
    `torch_class`: the name of the torch.optim class that runs the params
    kfuse's kernels do not take. `check_group(where, index, saved_group)`:
    checks a param group of a state dict before it loads (the states kept
    in param groups).
    """

    def __init__(self, name, defaults, variants, choose=None, unsupported=(),
                 forced=None, torch_class=None, check_group=None,
                 fallback=None, fallback_state_keys=()):
        self.name = name
        # fallback(param): why torch's optimizer updates a param that kfuse
        # could otherwise take (Adafactor's matrices), or None; the state
        # keys torch's optimizer then keeps (one tuple per form).
        self.fallback = fallback
        self.fallback_state_keys = tuple(map(frozenset, fallback_state_keys))
        # The torch.optim class (its name) that updates the params kfuse
        # does not take (CPU, float64, non-contiguous); None: none exists.
        self.torch_class = torch_class
        self.defaults = dict(defaults)
        self.variants = dict(variants)
        self._choose = choose
        self.unsupported = tuple(unsupported)
        self.forced = dict(forced or {})
        self.check_group = check_group
        if choose is None and len(self.variants) != 1:
            raise ValueError(f"{name}: several variants need `choose`")

    def __repr__(self):
        return f"OptimizerSpec({self.name!r}, {sorted(self.variants)})"

    def variant(self, group):
        if self._choose is None:
            return next(iter(self.variants.values()))
        return self.variants[self._choose(group)]

    def check_supported(self, group):
        """Raises NotImplementedError for an option value kfuse lacks."""
        for option, allowed, why in self.unsupported:
            value = group.get(option, allowed)
            if value is allowed or value == allowed:
                continue
            raise NotImplementedError(
                f"{prefixed(self.name)}: {option}={value!r} is not "
                f"implemented ({why})")

    def group_defaults(self, group):
        """`group` with the spec's defaults filled in and forced values set
        (a new dict; REQUIRED stays where nothing was given)."""
        merged = dict(self.defaults)
        merged.update(group)
        merged.update(self.forced)
        return merged

    def constructor_defaults(self, args, options):
        """The defaults dict of a generated optimizer's constructor, from
        positional `args` (in option order) and keyword `options`."""
        names = list(self.defaults)
        positional = [n for n in names if n not in _RESERVED_OPTIONS]
        if len(args) > len(positional):
            raise TypeError(f"{self.name}() takes at most {len(positional)} "
                            f"positional options ({', '.join(positional)}), "
                            f"got {len(args)}")
        given = dict(zip(positional, args))
        for key, value in options.items():
            if key not in self.defaults:
                raise TypeError(f"{self.name}() got an unexpected option "
                                f"'{key}'; it takes " + ", ".join(names))
            if key in given:
                raise TypeError(f"{self.name}() got option '{key}' twice")
            given[key] = value
        defaults = dict(self.defaults)
        defaults.update(given)
        defaults.update(self.forced)
        return defaults


_UNSUPPORTED_COMMON = (
    ("differentiable", False,
     "a kfuse step is an in-place fused kernel autograd cannot see"),
)


def _adam_variant(name, source, amsgrad=False):
    states = (("exp_avg", "exp_avg"), ("exp_avg_sq", "exp_avg_sq"))
    if amsgrad:
        states += (("max_exp_avg_sq", "max_exp_avg_sq"),)
    return Variant(name, source,
                   states=states,
                   hypers=(("lr", _option("lr")),
                           ("beta1", _element("betas", 0)),
                           ("beta2", _element("betas", 1)),
                           ("eps", _option("eps")),
                           ("weight_decay", _option("weight_decay"))),
                   step="exposed")


def _adam_defaults(weight_decay, decoupled):
    # torch.optim.Adam's defaults, in its order (torch >= 2.6 adds
    # decoupled_weight_decay; AdamW is Adam with it set).
    return dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                weight_decay=weight_decay, amsgrad=False, maximize=False,
                foreach=None, capturable=False, differentiable=False,
                fused=None, decoupled_weight_decay=decoupled)


_ADAM_VARIANTS = {
    "adam": _adam_variant("adam", "adam.mlir"),
    "adamw": _adam_variant("adamw", "adamw.mlir"),
    "adam_amsgrad": _adam_variant("adam_amsgrad", "adam_amsgrad.mlir",
                                  amsgrad=True),
    "adamw_amsgrad": _adam_variant("adamw_amsgrad", "adamw_amsgrad.mlir",
                                   amsgrad=True),
    # timm's AdamW(caution=True): an explicit option of kfuse's AdamW.
    "cautious_adamw": _adam_variant("cautious_adamw", "cautious_adamw.mlir")}
_ADAM_UNSUPPORTED = _UNSUPPORTED_COMMON


def _adam_choose(group):
    name = "adamw" if group.get("decoupled_weight_decay") else "adam"
    if group.get("caution"):
        if name != "adamw" or group.get("amsgrad"):
            raise NotImplementedError(
                f"{prefixed('AdamW')}: caution=True with "
                f"{'amsgrad' if group.get('amsgrad') else 'L2 decay'} is not "
                "implemented (cautious_adamw.mlir is decoupled AdamW)")
        return "cautious_adamw"
    return name + "_amsgrad" if group.get("amsgrad") else name


ADAM = OptimizerSpec("Adam", _adam_defaults(0, False), _ADAM_VARIANTS,
                     choose=_adam_choose, unsupported=_ADAM_UNSUPPORTED,
                     torch_class="Adam")
ADAMW = OptimizerSpec("AdamW", _adam_defaults(1e-2, True), _ADAM_VARIANTS,
                      choose=_adam_choose, unsupported=_ADAM_UNSUPPORTED,
                      forced={"decoupled_weight_decay": True},
                      torch_class="AdamW")


def _choose_by_momentum(name):
    """The variant chooser of an optimizer that keeps a momentum buffer only
    with momentum: `name`, or `name`_plain at momentum 0."""
    def choose(group):
        momentum = group["momentum"]
        plain = isinstance(momentum, numbers.Real) and momentum == 0
        return name + "_plain" if plain else name
    return choose


SGD = OptimizerSpec(
    "SGD",
    # torch.optim.SGD's defaults, in its order.
    dict(lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
         maximize=False, foreach=None, differentiable=False, fused=None),
    {"sgd": Variant("sgd", "sgd.mlir",
                    states=(("momentum_buffer", "momentum_buffer"),),
                    hypers=(("lr", _option("lr")),
                            ("momentum", _option("momentum")),
                            ("dampening", _option("dampening")),
                            ("weight_decay", _option("weight_decay")),
                            ("nesterov", _option("nesterov"))),
                    step="hidden"),
     "sgd_plain": Variant("sgd_plain", SGD_PLAIN_IR,
                          hypers=(("lr", _option("lr")),
                                  ("weight_decay", _option("weight_decay"))))},
    choose=_choose_by_momentum("sgd"), unsupported=_UNSUPPORTED_COMMON,
    torch_class="SGD")

ADAGRAD = OptimizerSpec(
    "Adagrad",
    # torch.optim.Adagrad's defaults, in its order.
    dict(lr=1e-2, lr_decay=0, eps=1e-10, weight_decay=0,
         initial_accumulator_value=0, foreach=None, maximize=False,
         differentiable=False, fused=None),
    {"adagrad": Variant("adagrad", "adagrad.mlir", states=(("sum", "sum"),),
                        hypers=(("lr", _option("lr")),
                                ("lr_decay", _option("lr_decay")),
                                ("weight_decay", _option("weight_decay")),
                                ("eps", _option("eps"))),
                        step="exposed")},
    unsupported=_UNSUPPORTED_COMMON, torch_class="Adagrad")


def _rmsprop_variant(centered, momentum):
    name = ("rmsprop" + ("_centered" if centered else "") +
            ("_momentum" if momentum else ""))
    states = (("square_avg", "square_avg"),)
    if momentum:
        states += (("momentum_buffer", "momentum_buffer"),)
    if centered:
        states += (("grad_avg", "grad_avg"),)
    hypers = (("lr", _option("lr")), ("alpha", _option("alpha")),
              ("eps", _option("eps")),
              ("weight_decay", _option("weight_decay")))
    if momentum:
        hypers += (("momentum", _option("momentum")),)
    return name, Variant(name, name + ".mlir", states=states, hypers=hypers,
                         step="exposed")


def _rmsprop_choose(group):
    momentum = group["momentum"]
    has_momentum = not (isinstance(momentum, numbers.Real) and momentum == 0)
    return ("rmsprop" + ("_centered" if group["centered"] else "") +
            ("_momentum" if has_momentum else ""))


RMSPROP = OptimizerSpec(
    "RMSprop",
    # torch.optim.RMSprop's defaults, in its order.
    dict(lr=1e-2, momentum=0, alpha=0.99, eps=1e-8, centered=False,
         weight_decay=0, capturable=False, foreach=None, maximize=False,
         differentiable=False),
    dict(_rmsprop_variant(centered, momentum)
         for centered in (False, True) for momentum in (False, True)),
    choose=_rmsprop_choose, unsupported=_UNSUPPORTED_COMMON,
    torch_class="RMSprop")

# Machine epsilon by param dtype: torch's Adafactor takes eps1 = None as
# torch.finfo(dtype).eps of the first param it steps.
_MACHINE_EPSILON = {"torch.float32": 2.0 ** -23, "torch.bfloat16": 2.0 ** -7,
                    "torch.float16": 2.0 ** -10, "torch.float64": 2.0 ** -52}


def _adafactor_eps1(group):
    eps1 = group["eps"][0]
    if eps1 is not None:
        return eps1
    dtype = str(group["params"][0].dtype)
    if dtype not in _MACHINE_EPSILON:
        raise ValueError(f"{prefixed('Adafactor')}: eps1 = None for params "
                         f"of {dtype}, which has no machine epsilon here")
    return _MACHINE_EPSILON[dtype]


def _adafactor_fallback(param):
    if param.dim() > 2:
        return (f"{param.dim()} dimensions: kfuse's factored Adafactor takes "
                "matrices (torch's factors the last two dimensions of each "
                "leading index)")
    return None


_ADAFACTOR_HYPERS = (("lr", _option("lr")),
                     ("beta2_decay", _option("beta2_decay")),
                     ("eps1", _adafactor_eps1),
                     ("eps2", _element("eps", 1)),
                     ("d", _option("d")),
                     ("weight_decay", _option("weight_decay")))

ADAFACTOR = OptimizerSpec(
    "Adafactor",
    # torch.optim.Adafactor's defaults, in its order.
    dict(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
         weight_decay=0.0, foreach=None, maximize=False),
    {"adafactor_vector": Variant(
        "adafactor_vector", "adafactor_vector.mlir",
        states=(("variance", "variance"),), hypers=_ADAFACTOR_HYPERS,
        step="exposed",
        matrices=Variant(
            "adafactor", "adafactor.mlir",
            states=(("row_var", "row_var"), ("col_var", "col_var")),
            hypers=_ADAFACTOR_HYPERS, step="exposed"))},
    torch_class="Adafactor", fallback=_adafactor_fallback,
    fallback_state_keys=(("step", "row_var", "col_var"),))


def check_adafactor_args(lr, beta2_decay, eps, d, weight_decay):
    """torch.optim.Adafactor's constructor checks, with its messages."""
    if not 0.0 <= lr:
        raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
    if not 0.0 >= beta2_decay:
        raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
    if eps[0] is not None and not 0.0 <= eps[0]:
        raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
    if not 0.0 <= eps[1]:
        raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
    if not 1.0 <= d:
        raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"weight_decay should be >= 0 but is: "
                         f"{weight_decay}")


LION = OptimizerSpec(
    "Lion",
    dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0),
    {"lion": Variant("lion", "lion.mlir", states=(("exp_avg", "exp_avg"),),
                     hypers=(("lr", _option("lr")),
                             ("beta1", _element("betas", 0)),
                             ("beta2", _element("betas", 1)),
                             ("weight_decay", _option("weight_decay"))))})

_LARS_RATIO_HYPERS = (("lr", _option("lr")),
                      ("weight_decay", _option("weight_decay")),
                      ("trust_coeff", _option("trust_coeff")),
                      ("eps", _option("eps")),
                      ("trust_clip", _option("trust_clip")),
                      ("always_adapt", _option("always_adapt")))


# timm.optim.Lars: its defaults, in its order.
LARS = OptimizerSpec(
    "Lars",
    dict(lr=1.0, momentum=0, dampening=0, weight_decay=0, nesterov=False,
         trust_coeff=0.001, eps=1e-8, trust_clip=False, always_adapt=False),
    {"lars": Variant("lars", "lars.mlir",
                     states=(("momentum_buffer", "momentum_buffer"),),
                     hypers=_LARS_RATIO_HYPERS + (
                         ("momentum", _option("momentum")),
                         ("dampening", _option("dampening")),
                         ("nesterov", _option("nesterov"))),
                     step="hidden"),
     # timm's Lars keeps no state without momentum, and neither does this.
     "lars_plain": Variant("lars_plain", "lars_plain.mlir",
                           hypers=_LARS_RATIO_HYPERS)},
    choose=_choose_by_momentum("lars"))


# Apex's FusedLAMB: its param group options, in its order. adam_w_mode,
# use_nvlamb, the global grad norm and max_grad_norm (the defaults' value, as
# Apex reads it) are per optimizer, sent at every step (FusedLAMB).
FUSED_LAMB = OptimizerSpec(
    "FusedLAMB",
    dict(lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-6,
         weight_decay=0.01, grad_averaging=True, max_grad_norm=1.0),
    {"lamb": Variant("lamb", "lamb.mlir",
                     states=(("exp_avg", "exp_avg"),
                             ("exp_avg_sq", "exp_avg_sq")),
                     hypers=(("lr", _option("lr")),
                             ("beta1", _element("betas", 0)),
                             ("beta2", _element("betas", 1)),
                             ("eps", _option("eps")),
                             ("weight_decay", _option("weight_decay")),
                             ("bias_correction", _option("bias_correction")),
                             ("grad_averaging", _option("grad_averaging"))),
                     step="hidden",
                     optimizer_hypers=("adam_w_mode", "use_nvlamb",
                                       "global_grad_norm", "max_grad_norm"))})


def novograd_slot(dtype_name):
    """The entry of a FusedNovoGrad group's 'exp_avg_sq' ([half, float32],
    Apex's layout) holding the norms of params of `dtype_name` ("float16",
    "bfloat16" or "float32"): 0 for the 16-bit ones, 1 for float32."""
    return 1 if dtype_name == "float32" else 0


def _check_novograd_group(where, index, group):
    check_novograd_args(group.get("norm_type", 2))
    norms = group.get("exp_avg_sq")
    if norms is None:
        return  # saved before the first step: initialized at the next one
    if not isinstance(norms, (list, tuple)) or len(norms) != 2:
        raise ValueError(f"{where}: param group {index}: 'exp_avg_sq' must be "
                         "Apex's [16-bit norms, float32 norms], got "
                         f"{type(norms).__name__} {norms!r:.60}")
    count = 0
    for slot, entry in enumerate(norms):
        dims = getattr(entry, "dim", None)
        if dims is None or dims() != 1 or not entry.is_floating_point():
            raise ValueError(f"{where}: param group {index}: exp_avg_sq[{slot}] "
                             "must be a 1-D float tensor (one norm per param), "
                             f"got {type(entry).__name__} {entry!r:.60}")
        count += entry.numel()
    params = len(group.get("params", ()))
    if count > params:
        raise ValueError(f"{where}: param group {index}: exp_avg_sq holds "
                         f"{count} norms for {params} params")


# Apex's FusedNovoGrad: its param group options, in its order.
# reg_inside_moment is per optimizer (Apex's moment_mode), and init_from_norm
# is 1 at the step that creates a group's norms unless init_zero; both are
# sent at every step (FusedNovoGrad). exp_avg_sq, one norm per tensor, lives
# in the param group, as Apex keeps it.
FUSED_NOVOGRAD = OptimizerSpec(
    "FusedNovoGrad",
    dict(lr=1e-3, bias_correction=True, betas=(0.9, 0.999), eps=1e-8,
         weight_decay=0.0, grad_averaging=True, norm_type=2, init_zero=False),
    {"novograd": Variant("novograd", "novograd.mlir",
                         states=(("exp_avg", "exp_avg"),),
                         hypers=(("lr", _option("lr")),
                                 ("beta1", _element("betas", 0)),
                                 ("beta2", _element("betas", 1)),
                                 ("eps", _option("eps")),
                                 ("weight_decay", _option("weight_decay")),
                                 ("bias_correction",
                                  _option("bias_correction")),
                                 ("grad_averaging", _option("grad_averaging")),
                                 ("norm_type", _option("norm_type"))),
                         step="hidden",
                         optimizer_hypers=("reg_inside_moment",
                                           "init_from_norm"),
                         group_states=("exp_avg_sq",))},
    check_group=_check_novograd_group)


# -- constructor argument checks (torch.optim's messages) --------------------

def _nonnegative(value, what):
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


def _betas(betas):
    if len(betas) != 2:
        raise ValueError(f"betas must hold two values, got {betas!r}")
    for index, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: "
                             f"{beta}")


def check_adam_args(lr, betas, eps, weight_decay):
    _nonnegative(lr, "learning rate")
    _nonnegative(eps, "epsilon value")
    _betas(betas)
    _nonnegative(weight_decay, "weight_decay value")


def check_sgd_args(lr, momentum, dampening, weight_decay, nesterov):
    _nonnegative(lr, "learning rate")
    _nonnegative(momentum, "momentum value")
    _nonnegative(weight_decay, "weight_decay value")
    if nesterov and (momentum <= 0 or dampening != 0):
        raise ValueError("Nesterov momentum requires a momentum and zero "
                         "dampening")


def check_adagrad_args(lr, lr_decay, weight_decay, initial_accumulator_value,
                       eps):
    _nonnegative(lr, "learning rate")
    _nonnegative(lr_decay, "lr_decay value")
    _nonnegative(weight_decay, "weight_decay value")
    _nonnegative(initial_accumulator_value, "initial_accumulator_value")
    _nonnegative(eps, "epsilon value")


def check_rmsprop_args(lr, alpha, eps, weight_decay, momentum):
    _nonnegative(lr, "learning rate")
    _nonnegative(eps, "epsilon value")
    _nonnegative(momentum, "momentum value")
    _nonnegative(weight_decay, "weight_decay value")
    _nonnegative(alpha, "alpha value")


def check_lion_args(lr, betas, weight_decay):
    _nonnegative(lr, "learning rate")
    _betas(betas)
    _nonnegative(weight_decay, "weight_decay value")


def check_novograd_args(norm_type, amsgrad=False):
    """Apex's FusedNovoGrad's refusals, with its messages."""
    if amsgrad:
        raise RuntimeError("FusedNovoGrad does not support the AMSGrad "
                           "variant.")
    if isinstance(norm_type, bool) or norm_type not in (0, 2):
        raise RuntimeError("FusedNovoGrad only support l2/inf norm now.")


# -- optimizers from IR -------------------------------------------------------

def spec_from_ir(args, name, state_names=None, hyper_map=None, source=None):
    """An OptimizerSpec for an update's arguments (kfuse.Update.args:
    name, role, default).

    Hyperparameters become param-group options named as in the IR, with
    the IR defaults; "step" is the step count, kept as state[p]['step'].
    `hyper_map` {option: IR hyper name, or a tuple of them} renames or
    bundles hyperparameters (e.g. {"betas": ("beta1", "beta2")}).
    `state_names`: None (the IR's state names), a list of them (the order
    state[p] holds them in) or a dict {IR state name: state key}. A
    per-tensor state (ArgInfo.level "tensor") is kept in state[p] as a
    one-element float32 tensor.
    """
    where = f"optimizer_from_ir({name})"
    roles = {}
    for arg in args:
        roles.setdefault(arg.role, []).append(arg)
    unknown_roles = sorted(set(roles) - {"param", "grad", "state", "hyper"})
    if unknown_roles:
        raise ValueError(f"{where}: arguments with role(s) "
                         f"{', '.join(unknown_roles)} are not supported "
                         "(param, grad, state and hyper are)")
    for role in ("param", "grad"):
        count = len(roles.get(role, []))
        if count != 1:
            raise ValueError(f"{where}: the update needs exactly one {role} "
                             f"argument, it has {count}")
    ir_states = [a.name for a in roles.get("state", [])]
    per_tensor = [a.name for a in roles.get("state", [])
                  if getattr(a, "level", "element") == "tensor"]
    hypers = {a.name: a for a in roles.get("hyper", [])}
    has_step = "step" in hypers

    # States: IR name -> key in optimizer.state[p].
    if state_names is None:
        states = [(n, n) for n in ir_states]
    elif isinstance(state_names, dict):
        if sorted(state_names) != sorted(ir_states):
            raise ValueError(f"{where}: state_names keys must be the IR's "
                             f"states ({', '.join(ir_states) or 'none'}); got "
                             f"{', '.join(map(str, state_names)) or 'none'}")
        states = [(state_names[n], n) for n in ir_states]
    else:
        order = list(state_names)
        if sorted(order) != sorted(ir_states) or len(set(order)) != len(order):
            raise ValueError(f"{where}: state_names must list the IR's states "
                             f"({', '.join(ir_states) or 'none'}) once each; "
                             f"got {', '.join(map(str, order)) or 'none'}")
        states = [(n, n) for n in order]
    keys = [key for key, _ in states]
    if len(set(keys)) != len(keys) or (has_step and "step" in keys):
        raise ValueError(f"{where}: state keys {keys} repeat a key or use "
                         "'step' (the step count's key)")

    # Options: each maps to one hyper or a tuple of hypers.
    hyper_map = dict(hyper_map or {})
    claimed = {}
    bundles = set()  # options mapped to a tuple of hypers (like "betas")
    for option, target in hyper_map.items():
        if isinstance(target, str):
            targets = (target,)
        else:
            targets = tuple(target)
            bundles.add(option)
        if not targets:
            raise ValueError(f"{where}: option '{option}' maps to no "
                             "hyperparameter")
        for hyper in targets:
            if hyper not in hypers:
                raise ValueError(
                    f"{where}: hyper_map['{option}'] names '{hyper}', which "
                    "is not a hyperparameter of the update; it has " +
                    ", ".join(hypers))
            if hyper == "step":
                raise ValueError(f"{where}: 'step' is the step count, not an "
                                 "option")
            if hyper in claimed:
                raise ValueError(f"{where}: hyperparameter '{hyper}' is "
                                 f"mapped by both '{claimed[hyper]}' and "
                                 f"'{option}'")
            claimed[hyper] = option
        hyper_map[option] = targets
    options = {}  # option -> tuple of hypers, in IR order of first member
    for hyper in hypers:
        if hyper == "step":
            continue
        option = claimed.get(hyper, hyper)
        if option not in options:
            options[option] = hyper_map.get(option, (hyper,))
    for option in options:
        if option in _RESERVED_OPTIONS:
            raise ValueError(f"{where}: option '{option}' clashes with a "
                             "torch.optim option; rename it with hyper_map")

    def default_of(hyper):
        value = hypers[hyper].default
        return REQUIRED if value is None else shortest_f32(value)

    defaults = {}
    variant_hypers = []
    for option, targets in options.items():
        if option in bundles:
            values = tuple(default_of(h) for h in targets)
            defaults[option] = (REQUIRED if REQUIRED in values else values)
            variant_hypers += [(h, _element(option, i))
                               for i, h in enumerate(targets)]
        else:
            defaults[option] = default_of(targets[0])
            variant_hypers.append((targets[0], _option(option)))
    defaults.update(maximize=False, foreach=None, capturable=False,
                    differentiable=False, fused=None)
    variant = Variant(name, source, states=states, hypers=variant_hypers,
                      step="exposed" if has_step else None,
                      tensor_states=per_tensor)
    return OptimizerSpec(name, defaults, {name: variant},
                         unsupported=_UNSUPPORTED_COMMON)


# -- state dicts --------------------------------------------------------------

def check_state_dict(spec, state_dict, group_sizes):
    """Checks a torch.optim state dict against an optimizer of `spec` whose
    param groups hold `group_sizes` params, before torch's loader runs:
    every saved state must hold the tensors its group's variant updates,
    and the saved options must be ones kfuse implements."""
    where = f"{prefixed(spec.name)}.load_state_dict"
    if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= \
            set(state_dict):
        raise ValueError(f"{where}: expected a torch.optim state dict (a dict "
                         "with 'state' and 'param_groups')")
    saved_groups = state_dict["param_groups"]
    if len(saved_groups) != len(group_sizes):
        raise ValueError(f"{where}: the state dict has {len(saved_groups)} "
                         f"param groups, the optimizer {len(group_sizes)}")
    states = state_dict["state"]
    for index, (saved, size) in enumerate(zip(saved_groups, group_sizes)):
        params = saved.get("params", [])
        if len(params) != size:
            raise ValueError(f"{where}: param group {index} has {len(params)} "
                             f"params in the state dict, {size} in the "
                             "optimizer")
        group = spec.group_defaults({k: v for k, v in saved.items()
                                     if k != "params"})
        spec.check_supported(group)
        if spec.check_group is not None:
            spec.check_group(where, index, dict(group, params=params))
        variant = spec.variant(group)
        for param in params:
            state = states.get(param)
            if not state or frozenset(state) in spec.fallback_state_keys:
                continue
            # A None momentum buffer is a fresh one; a None step is not.
            missing = [key for key in variant.state_keys
                       if key not in state or
                       (key == "step" and state[key] is None)]
            if missing:
                raise ValueError(
                    f"{where}: the state of param {param} (param group "
                    f"{index}) lacks {', '.join(map(repr, missing))}; "
                    f"{spec.name} keeps " +
                    ", ".join(map(repr, variant.state_keys)))
