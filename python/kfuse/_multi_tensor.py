"""Multi-tensor updates: one launch a step for a whole parameter list.

    import kfuse
    adamw = kfuse.Update("library/optim/adamw.mlir")
    opt = kfuse.multi_tensor(adamw, params=ps, grads=[p.grad for p in ps],
                             states={"exp_avg": ms, "exp_avg_sq": vs},
                             lr=1e-3, weight_decay=1e-2)
    opt.step()                      # one kernel launch for every tensor

Groups are split by device and dtype signature into one plan each (the usual
case is one plan). A per-tensor state (an argument whose ArgInfo.level is
"tensor", e.g. NovoGrad's exp_avg_sq) is one float32 element a group: pass
views norms[i:i+1] of one float32 tensor per list. Such an update always
runs as a multi-tensor plan. A plan binds the tensors it was built on. Grads read from
the params (the default of `multi_tensor`) follow the params: when backward
allocated new ones (after zero_grad(set_to_none=True)), `step` points the
plan's table at them (one small upload, no rebuild). Every other tensor must
stay where it was: `step` checks first and raises KfuseError("stale plan:
...") when one moved; call `rebuild()` then. `check_stale` picks the checks:
  True     every tensor's data_ptr(), every step (the default; host time
           grows with the number of tensors, ~0.1 us each);
  "grads"  only whether the params' .grad objects changed (a new grad is
           rebound; a param or state moved in place goes unseen);
  False    nothing: the tensors, grads included, never move (CUDA graphs).

Hyperparameters live in device memory, in a float64 torch tensor the plan is
bound to: `hyper_tensor("lr")` is a 0-dim view of its slot, so a captured
CUDA graph reads whatever was written there last (e.g. `t.fill_(lr)` or
`t.copy_(lr_tensor)` before a replay, or inside the graph). `set_hyper`
writes a slot from the host, ordered on the current stream (not while
capturing). A "step" hyper counts the steps taken: it starts at 0 unless
given, and each step computes with step + 1 and stores it.
"""

import array
import ctypes
import itertools
import operator
import weakref

from ._capi import F32, ArgInfoStruct, ArgStruct, KfuseError, ROLE_NAMES
from ._capi import check, hyper_value, lib
from ._checks import check_device_tensor, check_per_tensor
from ._checks import invalid as _invalid

__all__ = ["MultiTensorUpdate", "multi_tensor"]

_data_ptr = None  # torch.Tensor.data_ptr, bound on first use


# kfuse_plan_create flags and kfuse_plan_step_phases phases (runtime/kfuse.h).
_GRAD_SCALING = 1
_MASTER_WEIGHTS = 2
_CLIP_GRAD_NORM = 4
_CLIP_EXTERNAL_NORM = 16
_STEP_ZERO_FOUND_INF = 1
_STEP_SCAN = 2
_STEP_UPDATE = 4

_get_grad = operator.attrgetter("grad")


def _stream_handle(torch, stream, device):
    if stream is None:
        stream = torch.cuda.current_stream(device)
    raw = stream.cuda_stream if hasattr(stream, "cuda_stream") else stream
    return ctypes.c_void_p(raw or None)


class _Plan:
    """One libkfuse plan over the groups of one device and dtype signature."""

    def __init__(self, torch, update, arg_infos, groups, indices, hypers,
                 flags, first_tensor, found_inf=None):
        self.indices = indices
        self.device = groups[indices[0]][first_tensor].device
        nargs = len(arg_infos)
        args = (ArgStruct * (len(indices) * nargs))()
        for slot, index in enumerate(indices):
            group = groups[index]
            for position, info in enumerate(arg_infos):
                arg = args[slot * nargs + position]
                if info.role == "hyper":
                    arg.data = None
                    arg.numel = 0
                    arg.dtype = F32
                    arg.value = float(hypers[info.name])
                    continue
                tensor = group[info.name]
                arg.data = tensor.data_ptr() or None
                arg.numel = tensor.numel()
                arg.dtype = _dtype_code(torch, tensor, info.name, index)
                arg.value = 0.0
        self.handle = ctypes.c_void_p()
        with torch.cuda.device(self.device):
            if update.is_matrix:
                # Each group's row length: the one the update fixes, else
                # the last extent of its params.
                source = next(info.name for info in arg_infos
                              if info.role != "hyper" and
                              getattr(info, "level", "element") == "element")
                cols = (ctypes.c_int64 * len(indices))(*(
                    update.row_length or groups[index][source].shape[-1]
                    for index in indices))
                check(lib().kfuse_plan_create_matrix(
                    update._handle, args, len(indices), nargs, cols, flags,
                    ctypes.byref(self.handle)))
            else:
                check(lib().kfuse_plan_create(
                    update._handle, args, len(indices), nargs, flags,
                    ctypes.byref(self.handle)))
            self.arg_names = []
            for position in range(lib().kfuse_plan_num_args(self.handle)):
                info = ArgInfoStruct()
                check(lib().kfuse_plan_arg_info(self.handle, position,
                                                ctypes.byref(info)))
                self.arg_names.append((info.name.decode(),
                                       ROLE_NAMES[info.role]))
            # Hypers and found_inf in torch memory, so that views of them
            # are ordinary tensors (capturable, usable by schedulers).
            stream = torch.cuda.current_stream(self.device)
            self.hypers = torch.zeros(len(self.arg_names), dtype=torch.float64,
                                      device=self.device)
            check(lib().kfuse_plan_bind_hypers(
                self.handle, self.hypers.data_ptr(), len(self.arg_names),
                ctypes.c_void_p(stream.cuda_stream or None)))
            # The grad norm of clipping, a view of the totals in torch memory.
            self.grad_norm_sq = None
            if flags & _CLIP_GRAD_NORM and not flags & _CLIP_EXTERNAL_NORM:
                slot, floats = ctypes.c_size_t(), ctypes.c_size_t()
                check(lib().kfuse_plan_total_slot(
                    self.handle, b"grad_norm_sq", ctypes.byref(slot),
                    ctypes.byref(floats)))
                self.totals = torch.zeros(floats.value, dtype=torch.float32,
                                          device=self.device)
                check(lib().kfuse_plan_bind_totals(
                    self.handle, self.totals.data_ptr(), floats.value))
                self.grad_norm_sq = self.totals[slot.value]
            self.found_inf = None
            if flags & _GRAD_SCALING:
                # Plans that skip together share one flag.
                self.found_inf = found_inf if found_inf is not None else \
                    torch.zeros(1, dtype=torch.float32, device=self.device)
                check(lib().kfuse_plan_bind_found_inf(
                    self.handle, self.found_inf.data_ptr()))
            stream.synchronize()
        self.launches = lib().kfuse_plan_num_launches(self.handle)
        # The update part alone (_STEP_UPDATE), and a step in parts (the
        # scan part, then the update part, as plans sharing a flag run).
        self.update_launches = lib().kfuse_plan_num_launches_in(
            self.handle, _STEP_UPDATE)
        self.launches_in_parts = self.update_launches + \
            lib().kfuse_plan_num_launches_in(self.handle, _STEP_SCAN)
        self.num_chunks = lib().kfuse_plan_num_chunks(self.handle)
        value = ctypes.c_uint64()
        check(lib().kfuse_plan_bytes_per_step(self.handle, ctypes.byref(value)))
        self.bytes_per_step = value.value

    def arg_index(self, name):
        for position, (arg, role) in enumerate(self.arg_names):
            if arg == name and role != "hyper":
                return position
        raise _invalid(f"no tensor argument '{name}'")

    def slot(self, name):
        for position, (arg, role) in enumerate(self.arg_names):
            if arg == name and role == "hyper":
                return position
        raise _invalid(f"no hyperparameter '{name}'; the plan has " + ", ".join(
            arg for arg, role in self.arg_names if role == "hyper"))

    def destroy(self):
        if self.handle:
            lib().kfuse_plan_destroy(self.handle)
            self.handle = None


def _dtype_code(torch, tensor, name, group):
    from . import _dtype_code as code_of
    try:
        return code_of(torch, tensor, name)
    except KfuseError as error:
        raise _invalid(f"tensor group {group}: {error}") from None


class MultiTensorUpdate:
    """An update over a list of tensor groups, one launch a step per plan.

    `update` is a kfuse.Update (or a path / IR text); `groups` a list of
    dicts {tensor argument name: CUDA tensor}, one per parameter; `hypers`
    the initial hyperparameters (IR defaults otherwise; "step" defaults to
    0 steps taken). With `grad_scaling`, grads are multiplied by the hyper
    "inv_scale" (1.0 at first) and a step with an inf or NaN grad changes
    nothing, decided on the device (`found_inf` shows the flag). With
    `clip_grad_norm`, the grads are scaled inside the update by
    min(max_grad_norm / (their global norm + 1e-6), 1), as
    torch.nn.utils.clip_grad_norm_ (the hyper "max_grad_norm", 1.0 unless
    given; the grads themselves are not written), and `grad_norm` is the
    norm of the last step, a device tensor. `clip_grad_norm="external"`
    takes the norm from the hyper "global_grad_norm" instead (a number or a
    0-dim CUDA tensor the caller computes; 0, no clipping, unless given),
    so that plans over several devices or dtypes clip by one norm.
    """

    def __init__(self, update, groups, hypers=None, grad_scaling=False,
                 check_stale=True, grads_of=None, master_weights=False,
                 clip_grad_norm=False):
        if getattr(lib(), "kfuse_missing", None):
            raise KfuseError(
                f"{lib()._name} predates multi-tensor plans (it lacks "
                f"{lib().kfuse_missing[0]}); rebuild libkfuse", "INTERNAL")
        import torch
        global _data_ptr
        _data_ptr = torch.Tensor.data_ptr
        from . import Update
        if not isinstance(update, Update):
            update = Update(update)
        self.update = update
        self.grad_scaling = bool(grad_scaling)
        self.master_weights = bool(master_weights)
        if clip_grad_norm not in (True, False, "external"):
            raise _invalid(f"clip_grad_norm={clip_grad_norm!r}; expected "
                           "True, False or \"external\"")
        self.clip_external_norm = clip_grad_norm == "external"
        self.clip_grad_norm = bool(clip_grad_norm)
        if check_stale not in (True, False, "grads"):
            raise _invalid(f"check_stale={check_stale!r}; expected True, "
                           "False or \"grads\"")
        self.check_stale = check_stale
        # With master weights, every group also holds "<param>_model", the
        # bf16/f16 model copy written in the same pass (f32 params).
        from . import ArgInfo
        self.args = list(update.args) + [
            ArgInfo(a.name + "_model", "model", None)
            for a in update.args if a.role == "param" and self.master_weights]
        self._tensor_names = [a.name for a in self.args if a.role != "hyper"]
        # Per-tensor states: one float32 element a group (a view
        # norms[i:i+1] of one tensor per list, typically).
        self._per_tensor = {a.name for a in self.args if a.level == "tensor"}
        self._element_names = {a.name for a in self.args
                               if a.role != "hyper" and a.level == "element"}
        groups = list(groups)
        if not groups:
            raise _invalid("no tensor groups: a multi-tensor update needs at "
                           "least one")
        self._groups = [self._checked_group(torch, g, i)
                        for i, g in enumerate(groups)]
        self._hypers = self._initial_hypers(torch, hypers or {})

        # One plan per device and dtype signature, in first-seen order.
        by_signature = {}
        for index, group in enumerate(self._groups):
            first = group[self._tensor_names[0]]
            key = (first.device,) + tuple(group[n].dtype
                                          for n in self._tensor_names)
            by_signature.setdefault(key, []).append(index)
        devices = {key[0] for key in by_signature}
        if self.clip_grad_norm and not self.clip_external_norm and \
                len(by_signature) > 1:
            raise _invalid(
                f"clip_grad_norm over {len(by_signature)} plans (devices or "
                "dtype signatures): the norm must cover every grad, and a "
                "plan reduces its own; give the update one device and one "
                "dtype per role, or compute the norm and pass it with "
                "clip_grad_norm=\"external\"")
        if self.grad_scaling and len(devices) > 1:
            raise _invalid(
                f"grad scaling over {len(devices)} devices: a step must be "
                "skipped on all of them at once, which needs one flag all "
                "devices read; make one multi-tensor update per device")
        self.plans = []
        shared_found_inf = None
        try:
            for indices in by_signature.values():
                flags = ((_GRAD_SCALING if self.grad_scaling else 0) |
                         (_MASTER_WEIGHTS if self.master_weights else 0) |
                         (_CLIP_GRAD_NORM if self.clip_grad_norm else 0) |
                         (_CLIP_EXTERNAL_NORM if self.clip_external_norm
                          else 0))
                self.plans.append(_Plan(torch, update, self.args,
                                        self._groups, indices, self._hypers,
                                        flags, self._tensor_names[0],
                                        shared_found_inf))
                shared_found_inf = self.plans[-1].found_inf
            if self._initial_inv_scale is not None:
                self.set_hyper("inv_scale", self._initial_inv_scale)
            if self._initial_max_grad_norm is not None:
                self.set_hyper("max_grad_norm", self._initial_max_grad_norm)
            if self._initial_global_grad_norm is not None:
                self.set_hyper("global_grad_norm",
                               self._initial_global_grad_norm)
        except BaseException:
            self._destroy()
            raise

        # Staleness: the tensors' data_ptr()s now, in group order. Grads read
        # from params are tracked apart: they are rebound, not refused.
        self._grads_of = None
        # A kernel over inputs and outputs (a norm written as an update)
        # has no grads.
        self._grad_name = next((a.name for a in update.args
                                if a.role == "grad"), None)
        untracked = ()
        if grads_of is not None:
            if self._grad_name is None:
                raise _invalid("grads_of needs an update with a grad "
                               "argument")
            self._grads_of = list(grads_of)
            if len(self._grads_of) != len(self._groups):
                raise _invalid(f"grads_of has {len(self._grads_of)} params "
                               f"for {len(self._groups)} groups")
            self._remember_grads([g[self._grad_name] for g in self._groups])
            untracked = (self._grad_name,)
        self._tracked_names = [n for n in self._tensor_names
                               if n not in untracked]
        self._tracked = [g[n] for g in self._groups
                         for n in self._tracked_names]
        self._pointers = list(map(_data_ptr, self._tracked))
        # Group positions per plan, for rebinding its slice of the grads.
        self._single_plan = len(self.plans) == 1

    def _checked_group(self, torch, group, index):
        if not isinstance(group, dict):
            raise _invalid(f"tensor group {index} is a {type(group).__name__},"
                           " expected a dict of tensors")
        unknown = sorted(set(group) - set(self._tensor_names))
        missing = [n for n in self._tensor_names if n not in group]
        if unknown or missing:
            raise _invalid(
                f"tensor group {index}: " +
                (f"unknown tensor(s) {', '.join(map(repr, unknown))}; "
                 if unknown else "") +
                (f"missing tensor(s) {', '.join(map(repr, missing))}; "
                 if missing else "") +
                "the update's tensors are " + ", ".join(self._tensor_names))
        device = None
        for name in self._tensor_names:
            tensor = group[name]
            where = f"tensor group {index}: tensor '{name}'"
            device = check_device_tensor(torch, tensor, where, device,
                                         "the group's other tensors")
            if name in self._per_tensor:
                check_per_tensor(torch, tensor, where)
            elif self.update.is_matrix and not self.update.row_length and \
                    name in self._element_names and tensor.dim() != 2:
                raise _invalid(f"{where} has shape {tuple(tensor.shape)}; "
                               "the update is 2-D, which takes matrices")
        return dict(group)

    def _initial_hypers(self, torch, given):
        names = [a.name for a in self.update.args if a.role == "hyper"]
        allowed = names + (["inv_scale"] if self.grad_scaling else []) + \
            (["max_grad_norm"] if self.clip_grad_norm else []) + \
            (["global_grad_norm"] if self.clip_external_norm else [])
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise _invalid("unknown hyperparameter(s) " +
                           ", ".join(map(repr, unknown)) + "; the update takes "
                           + ", ".join(allowed))
        values = {}
        for info in self.update.args:
            if info.role != "hyper":
                continue
            value = given.get(info.name)
            if value is None:
                if info.name == "step":
                    value = 0.0  # steps taken so far
                elif info.default is None:
                    raise _invalid(f"missing hyperparameter '{info.name}' (it "
                                   "has no default)")
                else:
                    value = info.default
            values[info.name] = hyper_value(info.name, value)
        self._initial_inv_scale = given.get("inv_scale")
        self._initial_max_grad_norm = given.get("max_grad_norm")
        self._initial_global_grad_norm = given.get("global_grad_norm") \
            if self.clip_external_norm else None
        return values

    # -- stepping -----------------------------------------------------------

    def stale_reason(self):
        """None when every tensor (grads read from params aside: they are
        rebound) is where the plans were built, else why."""
        pointers = list(map(_data_ptr, self._tracked))
        if pointers != self._pointers:
            for position, (now, then) in enumerate(zip(pointers,
                                                       self._pointers)):
                if now != then:
                    group, arg = divmod(position, len(self._tracked_names))
                    return (f"tensor '{self._tracked_names[arg]}' of group "
                            f"{group} moved (data_ptr {then:#x} -> {now:#x})")
        return None

    def _follow_grads(self, torch, stream, by_pointer):
        """Points the plans at the params' current grads when they changed:
        new grad objects (or, `by_pointer`, grads whose data moved)."""
        grads = list(map(_get_grad, self._grads_of))
        if by_pointer:
            if any(map(operator.is_, grads, itertools.repeat(None))):
                changed = True
            else:
                pointers = list(map(_data_ptr, grads))
                changed = pointers != self._grad_pointers
        else:
            changed = not all(ref() is grad for ref, grad
                              in zip(self._grad_refs, grads))
        if not changed:
            return
        missing = [i for i, g in enumerate(grads) if g is None]
        if missing:
            raise _invalid(f"stale plan: the params of groups {missing[:8]} "
                           "have no grad (set_to_none and no backward since?)")
        if not all(map(torch.Tensor.is_contiguous, grads)):
            group = next(i for i, g in enumerate(grads)
                         if not g.is_contiguous())
            raise _invalid(f"the grad of group {group} is not contiguous")
        pointers = list(map(_data_ptr, grads))
        for plan in self.plans:
            if self._single_plan:
                addresses = array.array("Q", pointers)
            else:
                addresses = array.array("Q", (pointers[i]
                                              for i in plan.indices))
            address, count = addresses.buffer_info()
            check(lib().kfuse_plan_rebind(
                plan.handle, plan.arg_index(self._grad_name), address, count,
                _stream_handle(torch, stream, plan.device)))
        self._remember_grads(grads, pointers)

    def _remember_grads(self, grads, pointers=None):
        """Notes which grads the plans point at, by weak reference and
        address: holding them would keep a whole set of grads alive after
        zero_grad(set_to_none=True), through the next backward."""
        self._grad_refs = [weakref.ref(grad) for grad in grads]
        self._grad_pointers = (list(map(_data_ptr, grads)) if pointers is None
                               else pointers)
        for group in self._groups:
            group[self._grad_name] = None

    def step(self, stream=None):
        """Launches one step on `stream` (default: the current stream)."""
        import torch
        if self.check_stale:
            if self._grads_of is not None:
                self._follow_grads(torch, stream,
                                   by_pointer=self.check_stale != "grads")
            if self.check_stale != "grads":
                reason = self.stale_reason()
                if reason is not None:
                    raise _invalid(f"stale plan: {reason}; rebuild() it")
        if len(self.plans) == 1 or not self.grad_scaling:
            for plan in self.plans:
                check(lib().kfuse_plan_step(
                    plan.handle, _stream_handle(torch, stream, plan.device)))
            return
        # One flag for all plans: every scan before any update.
        for position, plan in enumerate(self.plans):
            phases = _STEP_SCAN | (_STEP_ZERO_FOUND_INF if position == 0
                                   else 0)
            check(lib().kfuse_plan_step_phases(
                plan.handle, phases,
                _stream_handle(torch, stream, plan.device)))
        for plan in self.plans:
            check(lib().kfuse_plan_step_phases(
                plan.handle, _STEP_UPDATE,
                _stream_handle(torch, stream, plan.device)))

    def rebuild(self, groups=None):
        """New plans over `groups` (default: the same dicts, re-read; grads
        re-read from their params when built with grads_of), keeping the
        current hyperparameters, step included."""
        hypers = {name: self.get_hyper(name) for name in self.hyper_names}
        if groups is None:
            groups = self._groups
            if self._grads_of is not None:
                grad_name = next(a.name for a in self.update.args
                                 if a.role == "grad")
                groups = [dict(g, **{grad_name: p.grad})
                          for g, p in zip(groups, self._grads_of)]
        grads_of = self._grads_of
        self._destroy()
        self.__init__(self.update, groups, hypers, self.grad_scaling,
                      self.check_stale, grads_of, self.master_weights,
                      self.clip_grad_norm)

    # -- hyperparameters ----------------------------------------------------

    @property
    def hyper_names(self):
        return [n for n, role in self.plans[0].arg_names if role == "hyper"]

    def set_hyper(self, name, value, stream=None):
        """Writes a hyper in every plan, ordered on `stream` (default: the
        current stream). Not capturable: in a graph, write hyper_tensor()."""
        import torch
        value = hyper_value(name, value)
        for plan in self.plans:
            plan.slot(name)
            check(lib().kfuse_plan_set_hyper_async(
                plan.handle, name.encode(), value,
                _stream_handle(torch, stream, plan.device)))

    def get_hyper(self, name):
        """The value of a hyper (synchronizes the device)."""
        import torch
        plan = self.plans[0]
        slot = plan.slot(name)
        torch.cuda.synchronize(plan.device)
        return plan.hypers[slot].item()

    def hyper_tensor(self, name):
        """A 0-dim float64 CUDA tensor viewing the hyper's device slot (the
        plan reads it at every step, graph replays included). Exactly one
        plan: with several, use hyper_tensors()."""
        if len(self.plans) != 1:
            raise _invalid(f"{len(self.plans)} plans (one per dtype signature)"
                           ": use hyper_tensors(name)")
        return self.hyper_tensors(name)[0]

    def hyper_tensors(self, name):
        """hyper_tensor for every plan, in plan order."""
        return [plan.hypers[plan.slot(name)] for plan in self.plans]

    @property
    def grad_norm(self):
        """The global grad norm the last step clipped by (a 0-dim float32
        device tensor, computed without a host sync), or None without
        clip_grad_norm (or with an external norm, which the caller has)."""
        if not self.clip_grad_norm or self.clip_external_norm:
            return None
        return self.plans[0].grad_norm_sq.sqrt()

    @property
    def found_inf(self):
        """The found_inf flag (float32, 1 element; nonzero after a step that
        saw a non-finite grad), or None without grad scaling."""
        if not self.grad_scaling:
            return None
        return self.plans[0].found_inf

    # -- reporting ----------------------------------------------------------

    @property
    def launches_per_step(self):
        # step(): a whole step per plan, or with grad scaling over several
        # plans every scan part, then every update part.
        parts = self.grad_scaling and len(self.plans) > 1
        return sum(plan.launches_in_parts if parts else plan.launches
                   for plan in self.plans)

    @property
    def bytes_per_step(self):
        return sum(plan.bytes_per_step for plan in self.plans)

    @property
    def num_chunks(self):
        return sum(plan.num_chunks for plan in self.plans)

    def _destroy(self):
        for plan in getattr(self, "plans", []):
            plan.destroy()
        self.plans = []

    def __del__(self):
        try:
            if lib() is not None:
                self._destroy()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def multi_tensor(update, params, grads=None, states=None, grad_scaling=False,
                 check_stale=True, model_params=None, grads_of=None,
                 clip_grad_norm=False, **hypers):
    """A MultiTensorUpdate from parallel lists.

    `params`: the parameters; `grads`: their grads (default: each param's
    .grad, re-checked at every step so that a grad replaced by backward is
    caught); `states`: {state name: list of tensors} (for a per-tensor
    state, one-element float32 tensors, e.g. list(norms.split(1))); `hypers`: initial
    hyperparameters; `model_params`: with f32 master `params`, their
    bf16/f16 model copies, written in the same pass (master weights);
    `grads_of`: instead of `params`, the objects whose .grad is read at
    every step, one a param (kfuse.torch.optim passes the local shards of
    DTensor params, whose grads live on the DTensors); `clip_grad_norm`: see
    MultiTensorUpdate.
    """
    from . import Update
    if not isinstance(update, Update):
        update = Update(update)
    roles = {}
    for info in update.args:
        roles.setdefault(info.role, []).append(info.name)
    for role in ("param", "grad"):
        if len(roles.get(role, [])) != 1:
            raise _invalid(f"multi_tensor needs an update with one {role} "
                           f"argument, this one has {len(roles.get(role, []))}"
                           "; build the groups and use MultiTensorUpdate")
    params = list(params)
    if grads is None:
        grads_of = params if grads_of is None else list(grads_of)
        if len(grads_of) != len(params):
            raise _invalid(f"{len(params)} params but {len(grads_of)} "
                           "grads_of")
        missing = [i for i, p in enumerate(grads_of) if p.grad is None]
        if missing:
            raise _invalid(f"params {missing[:8]} have no .grad yet; run "
                           "backward first or pass grads=")
        grads = [p.grad for p in grads_of]
    elif grads_of is not None:
        raise _invalid("pass grads or grads_of, not both")
    grads = list(grads)
    states = {name: list(tensors) for name, tensors in (states or {}).items()}
    state_names = roles.get("state", [])
    unknown = sorted(set(states) - set(state_names))
    missing = [n for n in state_names if n not in states]
    if unknown or missing:
        raise _invalid("states must be exactly " + (", ".join(state_names) or
                       "(none)") + f"; got {', '.join(sorted(states))}")
    for name, tensors in [("grads", grads)] + list(states.items()):
        if len(tensors) != len(params):
            raise _invalid(f"{len(params)} params but {len(tensors)} {name}")
    groups = []
    for index, param in enumerate(params):
        # The param itself (not a detached alias): `param.data = ...` then
        # shows as a moved data_ptr.
        group = {roles["param"][0]: param, roles["grad"][0]: grads[index]}
        for name in state_names:
            group[name] = states[name][index]
        if model_params is not None:
            group[roles["param"][0] + "_model"] = model_params[index]
        groups.append(group)
    if model_params is not None and len(model_params) != len(params):
        raise _invalid(f"{len(params)} params but {len(model_params)} "
                       "model_params")
    return MultiTensorUpdate(update, groups, hypers, grad_scaling, check_stale,
                             grads_of, master_weights=model_params is not None,
                             clip_grad_norm=clip_grad_norm)
