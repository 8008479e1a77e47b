"""torch.optim drop-ins over kfuse's multi-tensor plans.

    import kfuse.torch
    opt = kfuse.torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()                 # one kernel launch for the whole group

AdamW, Adam, SGD, Adagrad, RMSprop and Lion take torch.optim's constructor
arguments and defaults (Lion: lr=1e-4, betas=(0.9, 0.99),
weight_decay=0.0), keep optimizer.state[p] under torch's keys and read and
write torch's state dict format, so a checkpoint moves between
torch.optim.AdamW and this AdamW both ways. FusedLAMB and FusedNovoGrad
are Apex's (signature, param groups with group['step'], state; NovoGrad's
per-tensor norms in group['exp_avg_sq'] as Apex keeps them), Lars timm's.
optimizer_from_ir() makes such a class from any update in the dialect (a
per-tensor state of the IR is kept in state[p] as one float32 element).

How a step runs
---------------
Each param group runs a kfuse.MultiTensorUpdate over its params that have a
grad: one launch per step per dtype signature. The plan for a group is
(re)built lazily, at the first step and whenever the params with a grad
change, a param group is added, a state dict is loaded, or a param or state
tensor moved (`p.data = ...`); building syncs the device. Params whose step
counts differ (one got grads later) get plans of their own, so every param
keeps torch's own count. Grads that backward reallocates
(zero_grad(set_to_none=True)) are followed without a rebuild.

Hyperparameters live on the device: every step compares the group's options
(lr, betas, ...) with the values last sent and writes only those that
changed, so LR schedulers cost one small copy and never a recompile. A CUDA
tensor option (lr=torch.tensor(1e-3, device="cuda")) is copied on the
device every step, which a captured CUDA graph replays.

Step counts: the plan counts steps on the device, and while a plan runs,
optimizer.state[p]['step'] is a view of that count: a 0-dim float64 tensor
on the param's device, current after every step (a step GradScaler skips
included) with no host synchronization; reading its value (float(),
.item()) synchronizes, as reading any CUDA tensor does. state_dict() holds
torch's form instead (float32, on the CPU unless the group is capturable
or fused), as do the states after a plan is retired (a rebuild, a loaded
state dict).

GradScaler: these optimizers set _step_supports_amp_scaling, so
scaler.step(opt) calls opt.step(grad_scaler=scaler) (torch warns once that
it will move to attributes; both protocols work). The step then reads
1 / scale on the device into the plans' "inv_scale", scans the grads for
inf/NaN into one found_inf flag shared by every plan of the optimizer, skips
the whole step on the device when it is set (step counts included), and
hands the flag to the scaler for scaler.update(). Nothing syncs the host.
The first scaled step rebuilds the plans with the scan (one more read of the
grads per step from then on). Params of one optimizer on several devices are
refused with grad scaling.

CUDA graphs: step() is capturable once the plans exist (after one eager
step) and the grads stay where they are: zero them with
zero_grad(set_to_none=False) around capture, as backward then accumulates in
place. A rebuild, or a grad to rebind, raises during capture. A captured
graph keeps using the plans it captured: loading a state dict or changing
which params have grads afterwards invalidates it.

maximize=True (a param group option, as torch's) builds that group's plans
with the grad multiplier grad scaling uses and sends it -1 (with a
GradScaler, -1/scale): the grad is negated as it is read, exactly as torch
negates it first, with no extra pass over it. Adam and AdamW with
amsgrad=True run library/optim/adam_amsgrad.mlir / adamw_amsgrad.mlir and
keep state[p]['max_exp_avg_sq'] as torch does.

Params kfuse's kernels do not take (on the CPU, float64 or complex, not
contiguous) are updated by torch.optim's class of the same name (AdamW,
Adam, SGD) over the same optimizer.state, said once at KFUSE_LOG=info and
listed by optimizer.fallbacks and kfuse.doctor(optimizer=...); Lion and
optimizers from IR, which torch lacks, refuse them (NotImplementedError), as
they refuse them with GradScaler. Adafactor's params of more than two
dimensions go to torch.optim.Adafactor the same way (its matrices run
kfuse's factored form). Not implemented (NotImplementedError):
differentiable=True. Sparse grads raise RuntimeError.
"""

import inspect
import operator
import os
import pathlib
import threading
from itertools import repeat

import torch

import kfuse
from kfuse import KfuseError
from kfuse import _multi_tensor as _mt
from kfuse._capi import check, lib, log_info

from . import _spec
from ._spec import REQUIRED, prefixed

try:
    from torch.optim.optimizer import required as _torch_required
except ImportError:  # pragma: no cover - older torch
    _torch_required = REQUIRED

__all__ = ["KfuseOptimizer", "AdamW", "Adam", "SGD", "Adagrad", "RMSprop",
           "Adafactor", "FusedLAMB", "FusedNovoGrad", "Lars", "Lion",
           "optimizer_from_ir"]

_get_grad = operator.attrgetter("grad")
_SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Options torch's optimizer chooses itself for the params kfuse leaves it.
_TORCH_OWN_OPTIONS = ("params", "foreach", "fused", "capturable",
                      "differentiable")
# Marks a hyper last written from a CUDA tensor: copied again every step.
_FOLLOWS_TENSOR = object()



# -- DTensor params (FSDP2, tensor parallelism) -------------------------------
# A DTensor param is updated through its local shard: every update here is
# elementwise, so the shards of a param, its grad and its states, placed
# alike, update independently. States stay DTensors in optimizer.state (and
# so in the state dict), placed like their params, as torch.optim keeps
# them.

def _local(tensor):
    """The tensor a kernel updates: a DTensor's local shard, else itself."""
    local = getattr(tensor, "_local_tensor", None)
    return tensor if local is None else local


def _is_dtensor(tensor):
    return getattr(tensor, "_local_tensor", None) is not None


class _LocalGradOf:
    """A DTensor param's grad as its local shard: MultiTensorUpdate reads
    `.grad` of these at every step (FSDP2 hands each backward's grads over
    as new DTensors)."""

    __slots__ = ("param",)

    def __init__(self, param):
        self.param = param

    @property
    def grad(self):
        grad = self.param.grad
        return None if grad is None else _local(grad)


def _placement_text(tensor):
    if not _is_dtensor(tensor):
        return "a plain tensor"
    return (f"a DTensor placed {tuple(tensor.placements)} on mesh "
            f"{tensor.device_mesh}")


def _tensor_text(value, dtype=False):
    """How an error names a state's value: shape (and dtype) and device, or
    the type of what is not a tensor."""
    if not isinstance(value, torch.Tensor):
        return type(value).__name__
    return (f"{tuple(value.shape)} " + (f"{value.dtype} " if dtype else "") +
            f"on {value.device}")


def _placed_alike(a, b):
    if _is_dtensor(a) != _is_dtensor(b):
        return False
    return not _is_dtensor(a) or (a.device_mesh == b.device_mesh and
                                  tuple(a.placements) == tuple(b.placements))


_updates = {}  # resolved source -> kfuse.Update, parsed once per process
_updates_lock = threading.Lock()


def _update_for(variant):
    source = variant.resolve_source()
    with _updates_lock:
        update = _updates.get(source)
        if update is None:
            update = _updates[source] = kfuse.Update(source, name=variant.name)
    return update


# -- MultiTensorUpdate, step by parts ----------------------------------------
# MultiTensorUpdate.step checks and launches in one call. An optimizer must
# check every param group before it launches any (a stale group is rebuilt
# first) and, with grad scaling, scan every plan before any updates (one
# found_inf for the optimizer: GradScaler skips a step whole). These adapters
# use _multi_tensor's internals for that.

def _prepare(mtu):
    """MultiTensorUpdate.step's checks without its launch: points the plans
    at the params' current grads and returns why a param or state moved, or
    None."""
    mode = mtu.check_stale
    if not mode:
        return None
    if mtu._grads_of is not None:
        mtu._follow_grads(torch, None, by_pointer=mode != "grads")
    return mtu.stale_reason() if mode != "grads" else None


_cuda_available = None


def _capturing():
    global _cuda_available
    if _cuda_available is None:
        _cuda_available = torch.cuda.is_available()
    return _cuda_available and torch.cuda.is_current_stream_capturing()


def _stream(plan):
    return _mt._stream_handle(torch, None, plan.device)


def _launch(plans, scaling):
    """One step of `plans`; with `scaling` (GradScaler), every plan's grads
    are scanned for inf/NaN before any plan updates. Otherwise each plan
    runs its update phase alone: the whole step of a plan without a scan,
    and no scan for one built with the grad multiplier for maximize=True
    (its found_inf stays 0)."""
    if not scaling:
        for plan in plans:
            check(lib().kfuse_plan_step_phases(plan.handle, _mt._STEP_UPDATE,
                                               _stream(plan)))
        return
    if len(plans) == 1:
        # A whole step: where the first phase scans the grads itself, no
        # scan kernel runs.
        check(lib().kfuse_plan_step(plans[0].handle, _stream(plans[0])))
        return
    for position, plan in enumerate(plans):
        phases = _mt._STEP_SCAN | (_mt._STEP_ZERO_FOUND_INF if position == 0
                                   else 0)
        check(lib().kfuse_plan_step_phases(plan.handle, phases, _stream(plan)))
    for plan in plans:
        check(lib().kfuse_plan_step_phases(plan.handle, _mt._STEP_UPDATE,
                                           _stream(plan)))


def _maximizes(group):
    return bool(group.get("maximize"))


def _bind_found_inf(plan, flag):
    check(lib().kfuse_plan_bind_found_inf(plan.handle, flag.data_ptr()))
    plan.found_inf = flag


class _Cohort:
    """The params of a group that share a step count, and their plans."""

    __slots__ = ("mtu", "params")

    def __init__(self, mtu, params):
        self.mtu = mtu
        self.params = params


class _GroupRuntime:
    """The plans of one param group, built over the params that had a grad
    (`pattern`), and the hyperparameter values last sent to them.
    `multiplier`: the plans multiply the grads by "inv_scale" (grad scaling,
    or -1 for maximize=True)."""

    __slots__ = ("group", "variant", "params", "pattern", "multiplier",
                 "cohorts", "sent", "fallback", "torch_optimizer", "key")

    def __init__(self, group, variant, params, pattern, multiplier, key=()):
        self.group = group
        self.variant = variant
        self.params = list(params)
        self.pattern = pattern
        self.multiplier = multiplier
        # The objects outside state[p] the plans were built on (the per-tensor
        # states a group holds): a new one means a new plan.
        self.key = key
        self.cohorts = []
        self.sent = {}
        # (position, param, why) of the params torch's optimizer updates,
        # and that optimizer, made at the first step that needs it.
        self.fallback = []
        self.torch_optimizer = None

    def matches(self, group, variant, params, pattern, multiplier, key=()):
        return (group is self.group and variant is self.variant and
                multiplier == self.multiplier and
                len(params) == len(self.params) and
                all(map(operator.is_, params, self.params)) and
                pattern == self.pattern and len(key) == len(self.key) and
                all(map(operator.is_, key, self.key)))

    def plans(self):
        return [plan for cohort in self.cohorts for plan in cohort.mtu.plans]

    def write(self, name, value, capturing):
        """Writes a hyper into every plan: a CUDA tensor by a device copy, a
        number by set_hyper, or by a fill kernel while capturing (a host
        write cannot be captured; the fill replays the value)."""
        for cohort in self.cohorts:
            mtu = cohort.mtu
            if isinstance(value, torch.Tensor):
                source = value.detach().reshape(())
                for slot in mtu.hyper_tensors(name):
                    slot.copy_(source)
            elif capturing:
                for slot in mtu.hyper_tensors(name):
                    slot.fill_(value)
            else:
                mtu.set_hyper(name, value)

    def sync(self, name, value, capturing):
        """Sends `value` when it differs from the last one sent."""
        if isinstance(value, torch.Tensor):
            if value.device.type == "cuda":
                self.write(name, value, capturing)
                self.sent[name] = _FOLLOWS_TENSOR
                return
            value = float(value)  # a CPU tensor: no device sync
        if self.sent.get(name, _FOLLOWS_TENSOR) != value:
            self.write(name, value, capturing)
            self.sent[name] = value


class KfuseOptimizer(torch.optim.Optimizer):
    """A torch.optim.Optimizer whose step is kfuse multi-tensor launches (see
    the module's documentation). Subclasses set `_kfuse_spec`; AdamW, Adam,
    SGD, Lion and optimizer_from_ir() make them.

    `check_stale` (keyword only) is MultiTensorUpdate's: True checks every
    tensor's address each step (a moved param or state triggers a rebuild),
    "grads" only follows reallocated grads, False checks nothing (the grads
    must then never move either: zero_grad(set_to_none=False)).

    `max_grad_norm` (keyword only; None: off) clips inside the step, as
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm) right before it
    would: the global norm over every grad is reduced in the step's first
    pass and the grads are scaled as the update reads them (they are not
    written). `grad_norm` is then the norm of the last step, a device
    tensor. Under a GradScaler the norm is of the unscaled grads. Where the
    params make several plans (param groups, dtypes, devices), the norm is
    torch's foreach norm over all their grads, which every plan then clips
    by, in the same launch as its update.
    """

    _kfuse_spec = None
    # GradScaler then hands this optimizer the scale instead of unscaling
    # and checking the grads itself.
    _step_supports_amp_scaling = True

    def __init__(self, params, defaults, check_stale=True,
                 max_grad_norm=None):
        spec = self._kfuse_spec
        if spec is None:
            raise TypeError("KfuseOptimizer has no update: use AdamW, Adam, "
                            "SGD, Lion or optimizer_from_ir()")
        if check_stale not in (True, False, "grads"):
            raise ValueError(f"check_stale={check_stale!r}; expected True, "
                             "False or \"grads\"")
        spec.check_supported(defaults)
        if max_grad_norm is not None and not max_grad_norm > 0:
            raise ValueError(f"Invalid max_grad_norm: {max_grad_norm}")
        self._kfuse_reset(check_stale)
        self._kfuse_max_grad_norm = max_grad_norm
        super().__init__(params, defaults)

    def _kfuse_reset(self, check_stale=True):
        self._kfuse_check_stale = check_stale
        self._kfuse_max_grad_norm = None
        # max_grad_norm over several plans: the norm by torch's foreach norm
        # over every grad, passed to each plan (set on the first step that
        # has several plans; the plans are rebuilt for it).
        self._kfuse_clip_external = False
        self._kfuse_last_norm = None
        self._kfuse_runtimes = []  # one per param group, built lazily
        self._kfuse_hidden_steps = {}  # param -> count ("hidden" variants)
        self._kfuse_grad_scaling = False
        self._kfuse_found_inf = {}  # device -> the flag every plan shares

    @property
    def _kfuse_name(self):
        return prefixed(self._kfuse_spec.name)

    # -- torch.optim.Optimizer ----------------------------------------------

    def add_param_group(self, param_group):
        if isinstance(param_group, dict):
            merged = dict(self.defaults)
            merged.update(param_group)
            self._kfuse_spec.check_supported(merged)
        super().add_param_group(param_group)

    def step(self, closure=None, *, grad_scaler=None):
        """Performs one optimization step: one kfuse launch per param group
        and dtype signature.

        closure: reevaluates the model and returns the loss (run under
        torch.enable_grad()). grad_scaler: passed by GradScaler.step.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with torch.no_grad():
            self._kfuse_step(grad_scaler)
        return loss

    def state_dict(self):
        """torch.optim's state dict, with the live step counts copied in
        torch's form (float32; on the CPU unless capturable or fused, one
        synchronizing copy per plan)."""
        packed = super().state_dict()
        # torch numbers the params in param group order.
        index = {}
        for group in self.param_groups:
            for param in group["params"]:
                index.setdefault(id(param), len(index))
        for runtime in self._kfuse_runtimes:
            if runtime is None or runtime.variant.step != "exposed":
                continue
            for cohort in runtime.cohorts:
                for plan in cohort.mtu.plans:
                    count = self._kfuse_step_tensor(
                        runtime.group, None, plan.hypers[plan.slot("step")])
                    for position in plan.indices:
                        key = index[id(cohort.params[position])]
                        # A new dict (torch's entries are optimizer.state's)
                        # and a tensor per param (torch's optimizers count
                        # each step tensor up in place).
                        packed["state"][key] = dict(packed["state"][key],
                                                    step=count.clone())
        return packed

    def load_state_dict(self, state_dict):
        """Loads a torch.optim state dict (from this class or its torch.optim
        peer); the plans are rebuilt at the next step."""
        _spec.check_state_dict(self._kfuse_spec, state_dict,
                               [len(g["params"]) for g in self.param_groups])
        super().load_state_dict(state_dict)
        self._kfuse_reload_tensor_states(state_dict)

    def _kfuse_reload_tensor_states(self, state_dict):
        """torch's loader casts states to their param's dtype: per-tensor
        states (one float32 each) are taken again from `state_dict`."""
        saved_states = state_dict["state"]
        for group, saved in zip(self.param_groups,
                                state_dict["param_groups"]):
            variant = self._kfuse_spec.variant(group)
            keys = [key for key, ir_name in variant.states
                    if ir_name in variant.tensor_states]
            if not keys:
                continue
            for param, saved_id in zip(group["params"], saved["params"]):
                state, old = self.state.get(param), saved_states.get(saved_id)
                for key in keys:
                    value = old.get(key) if old else None
                    if state and isinstance(value, torch.Tensor):
                        state[key] = value.detach().to(
                            device=param.device, dtype=torch.float32,
                            copy=True).reshape(-1)

    def __setstate__(self, state):
        # load_state_dict and unpickling land here: the plans were built on
        # the old state's tensors.
        for runtime in self.__dict__.get("_kfuse_runtimes") or []:
            if runtime is not None:
                self._kfuse_retire(runtime, flush=False)
        super().__setstate__(state)
        if "_kfuse_check_stale" not in self.__dict__:
            self._kfuse_reset()
        self._kfuse_runtimes = []
        self._kfuse_hidden_steps = {}
        spec = self._kfuse_spec
        for group in self.param_groups:
            for key, value in spec.defaults.items():
                if value is not REQUIRED:
                    group.setdefault(key, value)
            group.update(spec.forced)
            for param in group["params"]:
                state_of = self.state.get(param)
                if state_of and state_of.get("step") is not None and \
                        not torch.is_tensor(state_of["step"]):
                    state_of["step"] = self._kfuse_step_tensor(
                        group, param, float(state_of["step"]))

    # -- kfuse ----------------------------------------------------------------

    def sync_state(self):
        """Kept for code written before the step counts were live: they are
        (see the module's documentation), so this does nothing."""

    @property
    def launches_per_step(self):
        """Kernel launches a step makes with the plans built so far: with a
        GradScaler every phase, otherwise the update phase alone (see
        _launch)."""
        plans = [plan for runtime in self._kfuse_runtimes
                 if runtime is not None for plan in runtime.plans()]
        if not self._kfuse_grad_scaling:
            return sum(plan.update_launches for plan in plans)
        if len(plans) == 1:
            return plans[0].launches
        return sum(plan.launches_in_parts for plan in plans)

    def _kfuse_refuse_in_capture(self, capturing, why):
        if capturing:
            raise RuntimeError(
                f"{self._kfuse_name}: {why}, which cannot happen during CUDA "
                "graph capture; run an eager step first, with the same params "
                "having grads")

    def _kfuse_step(self, grad_scaler):
        spec = self._kfuse_spec
        capturing = _capturing()
        scale, scaler = self._kfuse_amp(grad_scaler)
        if scale is not None and not self._kfuse_grad_scaling:
            self._kfuse_refuse_in_capture(
                capturing, "the first grad-scaled step rebuilds the plans")
            self._kfuse_drop_runtimes()
            self._kfuse_grad_scaling = True

        groups = self.param_groups
        runtimes = self._kfuse_runtimes
        for runtime in runtimes[len(groups):]:
            if runtime is not None:
                self._kfuse_retire(runtime)
        del runtimes[len(groups):]
        runtimes.extend([None] * (len(groups) - len(runtimes)))

        active, fallbacks = [], []
        for index, group in enumerate(groups):
            spec.check_supported(group)
            variant = spec.variant(group)
            params = group["params"]
            grads = list(map(_get_grad, params))
            pattern = list(map(operator.is_not, grads, repeat(None)))
            multiplier = self._kfuse_grad_scaling or _maximizes(group)
            key = self._kfuse_runtime_key(group, variant)
            runtime = runtimes[index]
            if runtime is None or not runtime.matches(group, variant, params,
                                                      pattern, multiplier,
                                                      key):
                self._kfuse_refuse_in_capture(
                    capturing, f"param group {index} needs a new plan (first "
                    "step, other params with grads, a new state, or "
                    "maximize changed)")
                runtime = runtimes[index] = self._kfuse_build(
                    index, group, variant, params, grads, pattern, multiplier,
                    runtime)
            if runtime.cohorts:
                active.append(index)
            if runtime.fallback:
                self._kfuse_refuse_in_capture(
                    capturing, f"param group {index} has params torch's "
                    "optimizer updates (not captured here)")
                fallbacks.append(runtime)
        if not active:
            for runtime in fallbacks:
                self._kfuse_fallback_step(runtime)
            return

        # Every check before any launch: a stale group is rebuilt first.
        for index in active:
            reason = self._kfuse_prepare(runtimes[index], capturing)
            if reason is None:
                continue
            self._kfuse_refuse_in_capture(capturing,
                                          f"param group {index}: {reason}")
            group = groups[index]
            old = runtimes[index]
            grads = list(map(_get_grad, group["params"]))
            runtime = runtimes[index] = self._kfuse_build(
                index, group, old.variant, group["params"], grads, old.pattern,
                old.multiplier, old)
            reason = self._kfuse_prepare(runtime, capturing)
            if reason is not None:
                raise RuntimeError(f"{self._kfuse_name}: param group {index} "
                                   f"is stale right after a rebuild: {reason}")

        plans = [plan for index in active for plan in runtimes[index].plans()]
        if len(plans) > 1 and self._kfuse_max_grad_norm is not None and \
                not self._kfuse_clip_external:
            # Each plan would clip by the norm of its own grads: clip all by
            # one norm computed over every grad instead.
            self._kfuse_refuse_in_capture(
                capturing, f"max_grad_norm over {len(plans)} plans rebuilds "
                "them to share one norm")
            self._kfuse_clip_external = True
            self._kfuse_drop_runtimes()
            return self._kfuse_step(grad_scaler)
        scaling = self._kfuse_grad_scaling
        if scaling:
            devices = {plan.device for plan in plans}
            if len(devices) > 1:
                raise NotImplementedError(
                    f"{self._kfuse_name}: grad scaling over params on "
                    f"{len(devices)} devices ({', '.join(map(str, devices))})"
                    ": a skipped step must be skipped on all of them; use one "
                    "optimizer per device")
            if isinstance(scale, torch.Tensor):
                inv_scale = scale.detach().double().reciprocal()
            else:
                inv_scale = 1.0
        else:
            inv_scale = 1.0
        negated = None
        shared = self._kfuse_step_hypers(inv_scale if scaling else None)
        for index in active:
            runtime = runtimes[index]
            group = groups[index]
            for name, value in runtime.variant.plan_hypers(group):
                runtime.sync(name, value, capturing)
            for name, value in self._kfuse_group_hypers(index, group,
                                                        runtime).items():
                runtime.sync(name, value, capturing)
            for name, value in shared.items():
                runtime.sync(name, value, capturing)
            if not runtime.multiplier:
                continue
            # maximize=True: torch negates the (unscaled) grad first; the
            # plans multiply it by -inv_scale, exact as a negation.
            value = inv_scale
            if _maximizes(group):
                if negated is None:
                    negated = -inv_scale
                value = negated
            runtime.sync("inv_scale", value, capturing)
        _launch(plans, scaling)
        self._kfuse_launched(active)
        for runtime in fallbacks:
            self._kfuse_fallback_step(runtime)
        if scaler is not None:
            self._kfuse_report_found_inf(scaler, plans)

    # -- hooks of optimizers that keep state outside state[p] (FusedNovoGrad)

    def _kfuse_runtime_key(self, group, variant):
        """The objects outside state[p] a group's plans are built on (a
        tuple, compared by identity): when one changes, the plans are
        rebuilt."""
        return ()

    def _kfuse_group_states(self, index, group, variant, members):
        """{IR name: one tensor per member} for the variant's group_states
        (per-tensor states the optimizer keeps outside state[p])."""
        raise NotImplementedError(
            f"{self._kfuse_name}: the update keeps per-tensor states "
            f"{', '.join(variant.group_states)} outside state[p], and this "
            "optimizer does not provide them")

    def _kfuse_group_hypers(self, index, group, runtime):
        """Hypers of param group `index` at this step beyond its options
        ({IR name: number or CUDA tensor})."""
        return {}

    def _kfuse_launched(self, active):
        """Called after the launches of a step, with the indices of the
        param groups that ran."""

    def _kfuse_clip_mode(self, runtime, members):
        """kfuse.multi_tensor's clip_grad_norm for the plans of `members` (of
        `runtime`'s group): True where they reduce the global grad norm
        themselves, "external" where it comes from _kfuse_step_hypers (the
        norm of more grads than one plan's; the optimizer then computes it
        for every plan from here on), False without clipping."""
        if self._kfuse_max_grad_norm is None:
            return False
        if any(map(_is_dtensor, members)):
            raise NotImplementedError(
                f"{self._kfuse_name}: max_grad_norm with DTensor params: the "
                "norm must cover every rank's shards; use "
                "torch.nn.utils.clip_grad_norm_")
        # A 2-D update (Adafactor's matrices) clips by the caller's norm.
        matrices = runtime.variant.matrices is not None and any(
            p.dim() == 2 for p in members)
        one_plan = (len(self.param_groups) == 1 and not runtime.fallback and
                    not matrices and
                    len({(p.dtype, p.device) for p in members}) == 1)
        if one_plan and not self._kfuse_clip_external:
            return True
        self._kfuse_clip_external = True
        return "external"

    def _kfuse_global_norm(self, inv_scale):
        """The norm over the grads of every plan (torch's foreach norm), as
        clip_grad_norm_ computes it; unscaled by `inv_scale` (a CUDA tensor)
        when not None."""
        grads = [_local(p.grad) for runtime in self._kfuse_runtimes
                 if runtime is not None for cohort in runtime.cohorts
                 for p in cohort.params if p.grad is not None]
        if not grads:
            return None
        if len({grad.device for grad in grads}) > 1:
            raise NotImplementedError(
                f"{self._kfuse_name}: the global grad norm over params on "
                "several devices; use one optimizer per device")
        # As clip_grad_norm_(foreach=True): a foreach norm per dtype, then
        # the norm of those.
        by_dtype = {}
        for grad in grads:
            by_dtype.setdefault(grad.dtype, []).append(grad)
        norms = [norm for same in by_dtype.values()
                 for norm in torch._foreach_norm(same, 2.0)]
        norm = torch.linalg.vector_norm(torch.stack(norms)).float()
        if inv_scale is not None:
            norm = norm * inv_scale
        self._kfuse_last_norm = norm
        return norm

    def _kfuse_step_hypers(self, inv_scale):
        """Hypers every plan gets at this step beyond its group's options
        ({IR name: number or CUDA tensor}); `inv_scale` is GradScaler's
        (a CUDA tensor) or None."""
        if self._kfuse_max_grad_norm is None:
            return {}
        hypers = {"max_grad_norm": float(self._kfuse_max_grad_norm)}
        if self._kfuse_clip_external:
            norm = self._kfuse_global_norm(inv_scale)
            if norm is not None:
                hypers["global_grad_norm"] = norm
        return hypers

    @property
    def grad_norm(self):
        """With max_grad_norm: the global grad norm the last step clipped
        by (a 0-dim float32 CUDA tensor, no host sync), else None."""
        if self._kfuse_max_grad_norm is None:
            return None
        for runtime in self._kfuse_runtimes:
            if runtime is not None and runtime.cohorts:
                norm = runtime.cohorts[0].mtu.grad_norm
                if norm is not None:
                    return norm
        return self._kfuse_last_norm

    def _kfuse_prepare(self, runtime, capturing):
        for cohort in runtime.cohorts:
            try:
                reason = _prepare(cohort.mtu)
            except KfuseError as error:
                if capturing:
                    raise RuntimeError(
                        f"{self._kfuse_name}: {error}; during CUDA graph "
                        "capture the grads must be the tensors of the eager "
                        "steps before: zero them with "
                        "zero_grad(set_to_none=False), so that backward "
                        "accumulates into them in place") from error
                raise
            if reason is not None:
                return reason
        return None

    def _kfuse_amp(self, grad_scaler):
        """(scale, scaler to report found_inf to): scale is a tensor to
        unscale by, 1.0 (grads already unscaled) or None (no scaling)."""
        if grad_scaler is not None:
            state = grad_scaler._per_optimizer_states[id(self)]
            if getattr(state.get("stage"), "name", None) == "UNSCALED":
                # scaler.unscale_(opt) ran (e.g. for clipping): the grads are
                # unscaled and the scaler recorded found_inf itself.
                return 1.0, None
            scale = grad_scaler._get_scale_async()
            if scale is None:
                raise RuntimeError(f"{self._kfuse_name}: the GradScaler has "
                                   "no scale yet; call scaler.scale(loss) "
                                   "first")
            return scale, grad_scaler
        # GradScaler's newer protocol: it checked the grads itself and set
        # these attributes for the step (grad_scale None: already unscaled).
        attributes = self.__dict__
        if "grad_scale" in attributes or "found_inf" in attributes:
            grad_scale = attributes.get("grad_scale")
            return (1.0 if grad_scale is None else grad_scale), None
        return None, None

    def _kfuse_report_found_inf(self, scaler, plans):
        if hasattr(scaler, "_found_inf_per_device"):
            found = scaler._found_inf_per_device(self)
        else:
            found = scaler._per_optimizer_states[id(self)][
                "found_inf_per_device"]
        for plan in plans:
            # A copy: update() adds the flags of several optimizers into the
            # first one in place.
            found[plan.device] = plan.found_inf.reshape(()).clone()

    def _kfuse_flag(self, device):
        flag = self._kfuse_found_inf.get(device)
        if flag is None:
            flag = torch.zeros(1, dtype=torch.float32, device=device)
            self._kfuse_found_inf[device] = flag
        return flag

    # -- plans ----------------------------------------------------------------

    def _kfuse_build(self, index, group, variant, params, grads, pattern,
                     multiplier, old):
        if old is not None:
            self._kfuse_retire(old)
        runtime = _GroupRuntime(group, variant, params, pattern, multiplier,
                                self._kfuse_runtime_key(group, variant))
        chosen = [(position, param) for position, (param, grad)
                  in enumerate(zip(params, grads)) if grad is not None]
        if not chosen:
            return runtime
        kept = []
        for position, param in chosen:
            why = self._kfuse_check_param(index, position, param)
            if why is None:
                kept.append((position, param))
            else:
                runtime.fallback.append((position, param, why))
        if runtime.fallback:
            self._kfuse_make_fallback(index, runtime)
        chosen = kept
        if not chosen:
            return runtime
        initial = {}
        for name, value in variant.plan_hypers(group):
            initial[name] = float(value) if isinstance(value, torch.Tensor) \
                else value
        # A variant for matrices (a 2-D update) takes the 2-D params.
        parts = [(variant, chosen)]
        if variant.matrices is not None:
            parts = [(variant, [c for c in chosen if c[1].dim() < 2]),
                     (variant.matrices, [c for c in chosen if c[1].dim() == 2])]
        clip = self._kfuse_clip_mode(runtime, [p for _, p in chosen])
        for part_variant, part in parts:
            if part:
                self._kfuse_build_cohorts(index, group, part_variant, part,
                                          runtime, initial, multiplier, clip)
        runtime.sent = dict(initial)
        if multiplier:
            runtime.sent["inv_scale"] = 1.0
        return runtime

    def _kfuse_build_cohorts(self, index, group, variant, chosen, runtime,
                             initial, multiplier, clip):
        """The plans of `chosen` ((position, param) pairs) under `variant`,
        one per step count, into runtime.cohorts."""
        members = [param for _, param in chosen]
        steps = [self._kfuse_init_state(index, position, group, variant, param)
                 for position, param in chosen]
        update = _update_for(variant)
        group_states = {}
        if variant.group_states:
            group_states = self._kfuse_group_states(index, group, variant,
                                                    members)
            # The hook may have created them (the key then changes).
            runtime.key = self._kfuse_runtime_key(group, variant)
        for cohort in _spec.step_cohorts(steps):
            cohort_params = [members[i] for i in cohort]
            states = {ir_name: [_local(self.state[p][key])
                                for p in cohort_params]
                      for key, ir_name in variant.states}
            for ir_name, tensors in group_states.items():
                states[ir_name] = [tensors[i] for i in cohort]
            hypers = dict(initial)
            if variant.step is not None:
                hypers["step"] = steps[cohort[0]]
            # DTensor params update their local shards, grads read from the
            # DTensors at every step.
            grads_of = None
            if any(map(_is_dtensor, cohort_params)):
                grads_of = [_LocalGradOf(p) if _is_dtensor(p) else p
                            for p in cohort_params]
            if self._kfuse_max_grad_norm is not None:
                hypers["max_grad_norm"] = float(self._kfuse_max_grad_norm)
            mtu = kfuse.multi_tensor(update,
                                     params=list(map(_local, cohort_params)),
                                     states=states, grads_of=grads_of,
                                     grad_scaling=multiplier,
                                     check_stale=self._kfuse_check_stale,
                                     clip_grad_norm=clip, **hypers)
            if self._kfuse_grad_scaling:
                for plan in mtu.plans:
                    _bind_found_inf(plan, self._kfuse_flag(plan.device))
            if variant.step == "exposed":
                self._kfuse_show_steps(mtu, cohort_params)
            runtime.cohorts.append(_Cohort(mtu, cohort_params))

    def _kfuse_show_steps(self, mtu, params):
        """Makes state[p]['step'] of `params` views of their plans' device
        step counts."""
        for plan in mtu.plans:
            slot = plan.slot("step")
            for position in plan.indices:
                self.state[params[position]]["step"] = plan.hypers[slot]

    def _kfuse_check_param(self, index, position, param):
        """None where kfuse's kernels update `param`; why not where torch's
        optimizer does instead (CPU, float64, non-contiguous); raises for
        what neither can update (a grad that does not fit its param)."""
        where = f"{self._kfuse_name}: param {position} of param group {index}"
        grad = param.grad
        if grad.is_sparse:
            raise RuntimeError(f"{where} has a sparse grad; "
                               f"{self._kfuse_spec.name} does not support "
                               "sparse gradients")
        if grad.shape != param.shape or grad.device != param.device:
            raise RuntimeError(f"{where} is {tuple(param.shape)} on "
                               f"{param.device} but its grad is "
                               f"{tuple(grad.shape)} on {grad.device}")
        if param.device.type != "cuda":
            return f"on {param.device}"
        if param.dtype not in _SUPPORTED_DTYPES:
            return f"{param.dtype}"
        if grad.dtype not in _SUPPORTED_DTYPES:
            return f"a {grad.dtype} grad"
        if _is_dtensor(param) or _is_dtensor(grad):
            if not _placed_alike(param, grad):
                raise NotImplementedError(
                    f"{where} is {_placement_text(param)} but its grad is "
                    f"{_placement_text(grad)}; kfuse updates the local shards "
                    "of a param and a grad placed alike")
            if any(placement.is_partial() for placement in param.placements):
                raise NotImplementedError(
                    f"{where} has a Partial placement "
                    f"{tuple(param.placements)}: its local values are not "
                    "the param's; kfuse updates Shard and Replicate params")
        if not _local(param).is_contiguous() or \
                not _local(grad).is_contiguous():
            return "not contiguous (e.g. channels_last)"
        if self._kfuse_spec.fallback is not None:
            return self._kfuse_spec.fallback(param)
        return None

    # -- params kfuse does not take: torch's optimizer --------------------------

    def _kfuse_make_fallback(self, index, runtime):
        """Hands the group's params that kfuse's kernels do not take to
        torch's optimizer of the same name, sharing optimizer.state (the
        state keys are torch's already); says why once, at KFUSE_LOG=info."""
        spec = self._kfuse_spec
        whys = ", ".join(f"param {position} ({why})"
                         for position, _, why in runtime.fallback)
        if spec.torch_class is None:
            raise NotImplementedError(
                f"{self._kfuse_name}: param group {index}: {whys}: kfuse's "
                f"kernels update contiguous float32, bfloat16 and float16 "
                f"CUDA tensors, and {spec.name} has no torch.optim "
                "counterpart to update the others")
        if self._kfuse_max_grad_norm is not None:
            raise NotImplementedError(
                f"{self._kfuse_name}: param group {index}: {whys}, which "
                "torch's optimizer would update, with max_grad_norm: the clip "
                "norm must cover every grad")
        if runtime.group.get("caution"):
            raise NotImplementedError(
                f"{self._kfuse_name}: param group {index}: {whys}, which "
                "torch's optimizer would update, but torch's AdamW has no "
                "caution")
        if self._kfuse_grad_scaling:
            raise NotImplementedError(
                f"{self._kfuse_name}: param group {index}: {whys}, which "
                "torch's optimizer updates, with GradScaler: use one "
                "optimizer for the params kfuse takes and torch's for the "
                "others")
        torch_class = getattr(torch.optim, spec.torch_class, None)
        if torch_class is None:
            raise NotImplementedError(
                f"{self._kfuse_name}: param group {index}: {whys}, which "
                f"torch.optim.{spec.torch_class} would update, but this torch "
                f"({torch.__version__}) has no torch.optim.{spec.torch_class}")
        log_info(f"{self._kfuse_name}: param group {index}: torch.optim."
                 f"{spec.torch_class} updates {whys}")
        accepted = inspect.signature(torch_class.__init__).parameters
        options = {key: value for key, value in runtime.group.items()
                   if key in accepted and key not in _TORCH_OWN_OPTIONS}
        shadow = torch_class([p for _, p, _ in runtime.fallback], **options)
        shadow.state = self.state
        runtime.torch_optimizer = shadow

    def _kfuse_fallback_step(self, runtime):
        """torch's step over the group's params kfuse does not take, with
        the group's current options (foreach/fused/capturable left to
        torch's defaults for such params)."""
        shadow = runtime.torch_optimizer
        mirror = shadow.param_groups[0]
        for key, value in runtime.group.items():
            if key in mirror and key not in _TORCH_OWN_OPTIONS:
                mirror[key] = value
        shadow.step()

    @property
    def fallbacks(self):
        """{param group index: [(param position, why)]} of the params that
        torch's optimizer updates because kfuse's kernels do not take them
        (as of the last step; kfuse.doctor reports them)."""
        return {index: [(position, why) for position, _, why in
                        runtime.fallback]
                for index, runtime in enumerate(self._kfuse_runtimes)
                if runtime is not None and runtime.fallback}

    def _kfuse_init_state(self, index, position, group, variant, param):
        """Allocates the param's missing state (torch's lazy init) and
        returns its step count (None without one)."""
        if not variant.states and variant.step != "exposed":
            return None
        state = self.state[param]
        if variant.step == "exposed" and state.get("step") is None:
            state["step"] = self._kfuse_step_tensor(group, param, 0.0)
        created = False
        levels = {arg.name: arg.level for arg in _update_for(variant).args}
        for key, ir_name in variant.states:
            tensor = state.get(key)
            where = (f"{self._kfuse_name}: state '{key}' of param {position} "
                     f"of param group {index}")
            if ir_name in variant.tensor_states:
                # One float32 per tensor: the norm of a DTensor's shard is
                # not the param's.
                if _is_dtensor(param):
                    raise NotImplementedError(
                        f"{where} is per tensor, and the param is "
                        f"{_placement_text(param)}: a shard's reduction is "
                        "not the param's")
                if tensor is None:
                    state[key] = torch.zeros(1, dtype=torch.float32,
                                             device=param.device)
                    created = True
                elif not isinstance(tensor, torch.Tensor) or \
                        tensor.numel() != 1 or \
                        tensor.dtype != torch.float32 or \
                        tensor.device != param.device:
                    raise RuntimeError(
                        f"{where} is {_tensor_text(tensor, dtype=True)}; a "
                        "per-tensor state is one float32 element on the "
                        f"param's device ({param.device})")
                continue
            # A 2-D update's state per row is rows x 1, per column 1 x
            # columns, as torch's Adafactor keeps them.
            level = levels.get(ir_name, "element")
            shape = (param.shape if level == "element" else
                     (param.shape[0], 1) if level == "row" else
                     (1, param.shape[1]))
            if tensor is None:
                state[key] = torch.zeros_like(
                    param, memory_format=torch.preserve_format) \
                    if level == "element" else \
                    torch.zeros(shape, dtype=param.dtype, device=param.device)
                created = True
                continue
            if not isinstance(tensor, torch.Tensor) or \
                    tensor.shape != shape or \
                    tensor.device != param.device:
                raise RuntimeError(
                    f"{where} is {_tensor_text(tensor)}, the param "
                    f"{tuple(param.shape)} on {param.device}" +
                    ("" if level == "element" else
                     f"; a state per {level} is {tuple(shape)}"))
            if not _placed_alike(tensor, param):
                raise RuntimeError(
                    f"{where} is {_placement_text(tensor)}, the param "
                    f"{_placement_text(param)}; states are placed like their "
                    "params (a sharded state dict loads them so)")
            contiguous = _local(tensor).is_contiguous()
            if tensor.dtype not in _SUPPORTED_DTYPES or not contiguous:
                raise NotImplementedError(
                    f"{where} is {tensor.dtype}"
                    f"{'' if contiguous else ', not contiguous'}; "
                    "kfuse keeps contiguous float32, bfloat16 or float16 "
                    "states")
        if variant.step == "exposed":
            return _spec.step_value(state["step"])
        if variant.step == "hidden":
            # A fresh buffer takes the first step's form (SGD: buf = g); one
            # loaded or kept from before has taken steps.
            if created:
                self._kfuse_hidden_steps[param] = 0.0
            return self._kfuse_hidden_steps.setdefault(param, 1.0)
        return None

    def _kfuse_step_tensor(self, group, param, value):
        """state['step'] as torch keeps it: a float32 scalar, on the CPU
        unless the group is capturable or fused (then on the param's
        device). `value` is a float or a 0-dim CUDA tensor on the param's
        device (copied: on that device without a sync, to the CPU with
        one); `param` may be None for a tensor value."""
        fused = bool(group.get("fused"))
        dtype = (torch.float32 if fused or
                 torch.get_default_dtype() != torch.float64 else torch.float64)
        on_device = bool(group.get("capturable") or fused)
        if isinstance(value, torch.Tensor):
            device = value.device if on_device else "cpu"
            return value.detach().to(device=device, dtype=dtype, copy=True)
        if on_device:
            return torch.tensor(float(value), dtype=dtype, device=param.device)
        return torch.tensor(float(value), dtype=dtype)

    def _kfuse_flush(self, runtime):
        """Writes the plans' step counts back to the params' state in
        torch's form (a host sync) as the plans are retired: the live views
        of exposed counts become copies, hidden counts floats for the next
        build."""
        variant = runtime.variant
        group = runtime.group
        if variant.step is None or group is None:
            return
        for cohort in runtime.cohorts:
            value = cohort.mtu.get_hyper("step")
            for param in cohort.params:
                if variant.step == "exposed":
                    self.state[param]["step"] = self._kfuse_step_tensor(
                        group, param, value)
                else:
                    self._kfuse_hidden_steps[param] = value

    def _kfuse_retire(self, runtime, flush=True):
        if flush:
            self._kfuse_flush(runtime)
        runtime.group = None  # never matches again
        runtime.cohorts = []

    def _kfuse_drop_runtimes(self):
        for runtime in self._kfuse_runtimes:
            if runtime is not None:
                self._kfuse_retire(runtime)
        self._kfuse_runtimes = []


class Adam(KfuseOptimizer):
    """torch.optim.Adam over library/optim/adam.mlir (L2 weight decay added
    to the grad), or adamw.mlir with decoupled_weight_decay=True; with
    amsgrad=True their *_amsgrad.mlir twins. maximize is supported;
    differentiable raises NotImplementedError; foreach, fused and
    capturable are accepted (a step is one fused launch either way);
    capturable/fused keep state['step'] on the param's device, as torch."""

    _kfuse_spec = _spec.ADAM

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False,
                 fused=None, decoupled_weight_decay=False, check_stale=True,
                 max_grad_norm=None):
        _spec.check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable,
                        fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        if getattr(self, "_kfuse_caution", False):
            defaults["caution"] = True
        super().__init__(params, defaults, check_stale, max_grad_norm)


class AdamW(Adam):
    """torch.optim.AdamW over library/optim/adamw.mlir (decoupled weight
    decay); see Adam for the options. `caution=True` (keyword only, not a
    torch option) runs Cautious AdamW instead, as timm's AdamW(caution=True):
    library/optim/cautious_adamw.mlir, two passes a step; the param groups
    then hold 'caution'."""

    _kfuse_spec = _spec.ADAMW

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2, amsgrad=False, *, maximize=False,
                 foreach=None, capturable=False, differentiable=False,
                 fused=None, check_stale=True, max_grad_norm=None,
                 caution=False):
        if caution and amsgrad:
            raise NotImplementedError(
                "kfuse.torch.optim.AdamW: caution=True with amsgrad is not "
                "implemented")
        self._kfuse_caution = bool(caution)
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True,
                         check_stale=check_stale, max_grad_norm=max_grad_norm)


class SGD(KfuseOptimizer):
    """torch.optim.SGD over library/optim/sgd.mlir (momentum, dampening,
    Nesterov, coupled L2 weight decay as torch's); momentum=0 runs a
    state-free update. state[p] holds 'momentum_buffer' when momentum is
    nonzero, as torch. maximize is supported; differentiable raises
    NotImplementedError."""

    _kfuse_spec = _spec.SGD

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0,
                 weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None,
                 check_stale=True, max_grad_norm=None):
        _spec.check_sgd_args(lr, momentum, dampening, weight_decay, nesterov)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults, check_stale, max_grad_norm)


class Adagrad(KfuseOptimizer):
    """torch.optim.Adagrad over library/optim/adagrad.mlir: coupled L2
    weight decay, lr / (1 + (step - 1) * lr_decay), state[p] holding 'step'
    and 'sum', created at construction as torch does ('sum' filled with
    initial_accumulator_value). maximize is supported; differentiable raises
    NotImplementedError; foreach and fused are accepted (a step is one
    fused launch either way)."""

    _kfuse_spec = _spec.ADAGRAD

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *,
                 maximize=False, differentiable=False, fused=None,
                 check_stale=True, max_grad_norm=None):
        _spec.check_adagrad_args(lr, lr_decay, weight_decay,
                                 initial_accumulator_value, eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps,
                        weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults, check_stale, max_grad_norm)
        for group in self.param_groups:
            for param in group["params"]:
                state = self.state[param]
                state["step"] = self._kfuse_step_tensor(group, param, 0.0)
                state["sum"] = torch.full_like(
                    param, group["initial_accumulator_value"],
                    memory_format=torch.preserve_format)


class RMSprop(KfuseOptimizer):
    """torch.optim.RMSprop over library/optim/rmsprop*.mlir (one file per
    combination of centered and momentum > 0, as torch keeps grad_avg and
    momentum_buffer only then): state[p] holds 'step', 'square_avg' and
    those, under torch's names. maximize is supported; differentiable
    raises NotImplementedError; capturable and foreach are accepted (a step
    is one fused launch either way)."""

    _kfuse_spec = _spec.RMSPROP

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0,
                 momentum=0, centered=False, capturable=False, foreach=None,
                 maximize=False, differentiable=False, *, check_stale=True,
                 max_grad_norm=None):
        _spec.check_rmsprop_args(lr, alpha, eps, weight_decay, momentum)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                        centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults, check_stale, max_grad_norm)


class Lion(KfuseOptimizer):
    """Lion (Chen et al., 2023) over library/optim/lion.mlir: decoupled
    weight decay, p -= lr * sign(beta1 * m + (1 - beta1) * g), then
    m = beta2 * m + (1 - beta2) * g. state[p] holds 'exp_avg'."""

    _kfuse_spec = _spec.LION

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0,
                 *, check_stale=True, max_grad_norm=None):
        _spec.check_lion_args(lr, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay)
        super().__init__(params, defaults, check_stale, max_grad_norm)


class Lars(KfuseOptimizer):
    """timm.optim.Lars over library/optim/lars.mlir: SGD whose grad (with
    weight decay added) is scaled per tensor by
    trust_coeff * ||p|| / (||g|| + weight_decay * ||p|| + eps), where
    weight_decay != 0 or always_adapt; trust_clip caps it at lr (LARC).
    Same signature and state (momentum_buffer only with momentum, as timm);
    two launches a step."""

    _kfuse_spec = _spec.LARS

    def __init__(self, params, lr=1.0, momentum=0, dampening=0,
                 weight_decay=0, nesterov=False, trust_coeff=0.001, eps=1e-8,
                 trust_clip=False, always_adapt=False, *, check_stale=True,
                 max_grad_norm=None):
        _spec.check_sgd_args(lr, momentum, dampening, weight_decay, nesterov)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov,
                        trust_coeff=trust_coeff, eps=eps,
                        trust_clip=trust_clip, always_adapt=always_adapt)
        super().__init__(params, defaults, check_stale, max_grad_norm)


class Adafactor(KfuseOptimizer):
    """torch.optim.Adafactor: vector params (dim <= 1) over
    library/optim/adafactor_vector.mlir, matrices over
    library/optim/adafactor.mlir (the factored second moment, a 2-D update),
    one plan each a step (one cooperative launch each), with state[p]
    holding 'step' and 'variance', or 'step', 'row_var' (rows x 1) and
    'col_var' (1 x columns), as torch's does; maximize and a GradScaler
    work for both. Params of more than two dimensions are updated by
    torch.optim.Adafactor itself, sharing optimizer.state (`fallbacks`
    lists them). eps = (None, ...)
    takes the first param's machine epsilon, as torch does. foreach is
    accepted."""

    _kfuse_spec = _spec.ADAFACTOR

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3),
                 d=1.0, weight_decay=0.0, *, foreach=None, maximize=False,
                 check_stale=True, max_grad_norm=None):
        _spec.check_adafactor_args(lr, beta2_decay, eps, d, weight_decay)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults, check_stale, max_grad_norm)


# Apex's optimizers live in their own module; they build on KfuseOptimizer,
# defined above.
from ._apex_optim import FusedLAMB, FusedNovoGrad  # noqa: E402


def _class_name(path):
    stem = pathlib.Path(path).stem if "\n" not in path else ""
    name = "".join(part[:1].upper() + part[1:]
                   for part in stem.replace("-", "_").split("_") if part)
    return name if name.isidentifier() else "IrOptimizer"


def optimizer_from_ir(path, state_names=None, hyper_map=None, name=None):
    """A KfuseOptimizer class running the update in `path` (a .mlir file or
    IR text; one param and one grad argument).

    Its hyperparameters become param-group options with the IR's defaults
    (the shortest decimal of each f32 default), accepted as keywords or
    positionally in IR order; "step" is the step count, kept as
    state[p]['step']. `hyper_map` {option: IR hyper or tuple of hypers}
    renames or bundles them, e.g. {"betas": ("beta1", "beta2")};
    `state_names` orders ([...]) or renames ({IR name: key}) the states
    kept in state[p]. The class also takes capturable, foreach, fused,
    maximize (the grad negated as it is read) and differentiable=False, and
    check_stale.

        AdamW2 = kfuse.torch.optimizer_from_ir(
            "library/optim/adamw.mlir",
            hyper_map={"betas": ("beta1", "beta2")})
        opt = AdamW2(model.parameters(), lr=3e-4, betas=(0.9, 0.95))
    """
    path = os.fspath(path)
    is_text = "\n" in path or "func.func" in path
    source = path if is_text else os.path.abspath(path)
    class_name = name or _class_name(path)
    update = kfuse.Update(source, name=class_name)
    spec = _spec.spec_from_ir(update.args, class_name, state_names, hyper_map,
                              source=source)
    with _updates_lock:
        _updates.setdefault(spec.variant({}).resolve_source(), update)

    def __init__(self, params, *args, check_stale=True, max_grad_norm=None,
                 **options):
        defaults = spec.constructor_defaults(args, options)
        defaults = {key: (_torch_required if value is REQUIRED else value)
                    for key, value in defaults.items()}
        KfuseOptimizer.__init__(self, params, defaults, check_stale,
                                max_grad_norm)

    options = ", ".join(f"{key}={value!r}" for key, value in
                        spec.defaults.items())
    return type(class_name, (KfuseOptimizer,), {
        "__init__": __init__,
        "__module__": __name__,
        "__doc__": f"A kfuse optimizer over {path if not is_text else 'IR'}"
                   f"; options: {options}.",
        "_kfuse_spec": spec,
    })
