"""Apex's fused optimizers over kfuse plans: FusedLAMB and FusedNovoGrad
(kfuse.torch.optim re-exports them). They keep Apex's signatures and its
param-group state (group['step'], NovoGrad's group['exp_avg_sq'])."""

import torch

from . import _spec
from .optim import KfuseOptimizer, _is_dtensor, _local

class _ApexOptimizer(KfuseOptimizer):
    """What Apex's fused optimizers share: group['step'] counts the steps
    of each param group (a "hidden" count the plans keep on the device),
    and zero_grad sets the grads to None unless set_grad_none=False."""

    set_grad_none = True

    def zero_grad(self, set_to_none=None):
        if set_to_none is None and self.set_grad_none:
            set_to_none = True
        if set_to_none is None:
            super().zero_grad()
        else:
            super().zero_grad(set_to_none=set_to_none)

    def step(self, closure=None, *, grad_scaler=None):
        loss = super().step(closure, grad_scaler=grad_scaler)
        for group in self.param_groups:
            group["step"] = group.get("step", 0) + 1
        return loss

    def state_dict(self):
        if self._kfuse_grad_scaling:
            # Skipped steps were skipped on the device: read its counts.
            for runtime in self._kfuse_runtimes:
                if runtime is not None and runtime.cohorts:
                    count = runtime.cohorts[0].mtu.get_hyper("step")
                    runtime.group["step"] = int(count)
        return super().state_dict()

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            for param in group["params"]:
                if self.state.get(param):
                    self._kfuse_hidden_steps[param] = float(
                        group.get("step", 0))


class FusedLAMB(_ApexOptimizer):
    """Apex's FusedLAMB (apex.optimizers.FusedLAMB) over
    library/optim/lamb.mlir: Adam's direction scaled per tensor by the trust
    ratio ||p|| / ||r||, with the grads divided by
    max(1, ||g|| / max_grad_norm) over every grad of the optimizer. Same
    signature, param groups (group['step'] counts the steps) and state
    (exp_avg, exp_avg_sq). Each plan runs two launches per step (the second
    recomputes r from the stored moments). With one param group of one
    dtype and device, the global grad norm is reduced in the plan too: three
    phases (norm, moments, param) in one launch, the grads read twice (and
    the GradScaler's found-inf check done in the norm phase). Otherwise it
    is torch._foreach_norm and a norm of those, as Apex's l2norm kernels.
    `grad_norm` is the norm of the last step (a device tensor).
    Under GradScaler a skipped step is skipped on the device, and
    group['step'] is exact again at state_dict(). Unlike Apex, bf16 params
    and states are taken too."""

    _kfuse_spec = _spec.FUSED_LAMB

    def __init__(self, params, lr=1e-3, bias_correction=True,
                 betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 amsgrad=False, adam_w_mode=True, grad_averaging=True,
                 set_grad_none=True, max_grad_norm=1.0, use_nvlamb=False, *,
                 check_stale=True):
        if amsgrad:
            raise RuntimeError("FusedLAMB does not support the AMSGrad "
                               "variant.")
        _spec.check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas,
                        eps=eps, weight_decay=weight_decay,
                        grad_averaging=grad_averaging,
                        max_grad_norm=max_grad_norm)
        super().__init__(params, defaults, check_stale)
        self.adam_w_mode = 1 if adam_w_mode else 0
        self.set_grad_none = set_grad_none
        self.use_nvlamb = use_nvlamb

    def _kfuse_clip_mode(self, runtime, members):
        # The plan's norm covers its own grads: those must be all of them.
        # Otherwise lamb.mlir takes the norm as its hyper global_grad_norm.
        return (len(self.param_groups) == 1 and not runtime.fallback
                and not self._kfuse_clip_external
                and len({(p.dtype, p.device) for p in members}) == 1
                and not any(map(_is_dtensor, members)))

    def _kfuse_in_plan_norm(self):
        runtimes = [runtime for runtime in self._kfuse_runtimes
                    if runtime is not None and runtime.cohorts]
        if len(runtimes) == 1 and len(runtimes[0].cohorts) == 1 and \
                runtimes[0].cohorts[0].mtu.clip_grad_norm:
            return runtimes[0].cohorts[0].mtu
        return None

    @property
    def grad_norm(self):
        """The global grad norm the last step clipped by (a 0-dim float32
        CUDA tensor, no host sync), or None before the first step."""
        mtu = self._kfuse_in_plan_norm()
        if mtu is not None:
            return mtu.grad_norm
        return self._kfuse_last_norm

    def _kfuse_step_hypers(self, inv_scale):
        options = {"max_grad_norm": float(self.defaults["max_grad_norm"]),
                   "adam_w_mode": float(self.adam_w_mode),
                   "use_nvlamb": 1.0 if self.use_nvlamb else 0.0}
        if self._kfuse_in_plan_norm() is not None:
            return options
        grads = [p.grad for group in self.param_groups
                 for p in group["params"] if p.grad is not None]
        if not grads:
            return {}
        devices = {grad.device for grad in grads}
        if len(devices) > 1:
            raise NotImplementedError(
                f"{self._kfuse_name}: the global grad norm over params on "
                f"{len(devices)} devices; use one optimizer per device")
        grads = [_local(grad) for grad in grads]
        # Accumulated in float32, as Apex's l2norm kernels.
        wider = None if all(g.dtype == torch.float32 for g in grads) \
            else torch.float32
        norms = torch._foreach_norm(grads, 2, dtype=wider)
        norm = torch.linalg.vector_norm(torch.stack(norms))
        if inv_scale is not None:
            norm = norm * inv_scale
        self._kfuse_last_norm = norm
        return {"global_grad_norm": norm, **options}


class FusedNovoGrad(_ApexOptimizer):
    """Apex's FusedNovoGrad (apex.optimizers.FusedNovoGrad) over
    library/optim/novograd.mlir: Adam-like moments whose second moment is
    one running norm per tensor (L2, or max-abs with norm_type=0). Same
    signature, param groups and state: group['step'] counts the steps,
    state[p]['exp_avg'] is the first moment, and group['exp_avg_sq'] is
    Apex's [16-bit norms, float32 norms], one float32 per param with a grad
    in param order (so state_dict carries it). On a group's first step the
    norms start from the grads' norms (unless init_zero), computed in the
    kernel: no host sync. One plan per param group and dtype, each one
    launch a step (the norms' phase and the update's).

    Unlike Apex, bfloat16 params are taken too; their norms are in slot 0,
    which one group cannot share between float16 and bfloat16 params.
    GradScaler works (a skipped step leaves the norms as they were, and a
    skipped first step still initializes them at the next one), and so does
    max_grad_norm= (keyword only, as the other drop-ins)."""

    _kfuse_spec = _spec.FUSED_NOVOGRAD

    def __init__(self, params, lr=1e-3, bias_correction=True,
                 betas=(0.9, 0.999), eps=1e-8, weight_decay=0.,
                 amsgrad=False, reg_inside_moment=False, grad_averaging=True,
                 norm_type=2, init_zero=False, set_grad_none=True, *,
                 check_stale=True, max_grad_norm=None):
        _spec.check_novograd_args(norm_type, amsgrad)
        _spec.check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, bias_correction=bias_correction, betas=betas,
                        eps=eps, weight_decay=weight_decay,
                        grad_averaging=grad_averaging, norm_type=norm_type,
                        init_zero=init_zero)
        super().__init__(params, defaults, check_stale, max_grad_norm)
        self.moment_mode = 0 if reg_inside_moment else 1
        self.set_grad_none = set_grad_none

    def _kfuse_reset(self, check_stale=True):
        super()._kfuse_reset(check_stale)
        # id(group) -> (group, init_from_norm): 1.0 until the first step
        # that creates the group's norms has run; under a GradScaler a
        # device flag instead, cleared by a step that was not skipped.
        self._kfuse_norms_pending = {}

    def add_param_group(self, param_group):
        if isinstance(param_group, dict):
            _spec.check_novograd_args(
                param_group.get("norm_type", self.defaults.get("norm_type")))
        super().add_param_group(param_group)

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._kfuse_norms_pending = {}
        # As Apex: the norms go to the params' device.
        for group in self.param_groups:
            norms = group.get("exp_avg_sq")
            if isinstance(norms, tuple):
                norms = group["exp_avg_sq"] = list(norms)
            if group["params"] and isinstance(norms, list):
                device = group["params"][0].device
                for slot, entry in enumerate(norms):
                    if isinstance(entry, torch.Tensor):
                        norms[slot] = entry.to(device=device,
                                               dtype=torch.float32)

    def state_dict(self):
        # Resolve the device flags of first steps (state_dict syncs anyway
        # under a GradScaler).
        for key, (group, flag) in list(self._kfuse_norms_pending.items()):
            if isinstance(flag, torch.Tensor) and float(flag) == 0.0:
                del self._kfuse_norms_pending[key]
        return super().state_dict()

    def _kfuse_runtime_key(self, group, variant):
        norms = group.get("exp_avg_sq")
        if norms is None:
            return ()
        return (norms,) + tuple(norms) if isinstance(norms, list) else \
            (norms,)

    def _kfuse_build(self, index, group, variant, params, grads, pattern,
                     multiplier, old):
        # One step count a group, as Apex's group['step']: the plans' count
        # (flushed as the old plans retire), or the group's before any.
        if old is not None:
            self._kfuse_retire(old)
        known = [self._kfuse_hidden_steps[p] for p in group["params"]
                 if p in self._kfuse_hidden_steps]
        self._kfuse_group_count = max(known) if known else \
            float(group.get("step", 0))
        return super()._kfuse_build(index, group, variant, params, grads,
                                    pattern, multiplier, None)

    def _kfuse_init_state(self, index, position, group, variant, param):
        super()._kfuse_init_state(index, position, group, variant, param)
        self._kfuse_hidden_steps[param] = self._kfuse_group_count
        return self._kfuse_group_count

    def _kfuse_group_states(self, index, group, variant, members):
        """Views norms[i:i+1] of the group's exp_avg_sq for `members` (the
        params with grads, in param order), created at the group's first
        step as Apex does: one norm per param, 16-bit ones in slot 0."""
        where = f"{self._kfuse_name}: param group {index}"
        if any(map(_is_dtensor, members)):
            raise NotImplementedError(
                f"{where} has DTensor params: a norm per tensor over a "
                "shard is not the param's norm")
        devices = {p.device for p in members}
        if len(devices) > 1:
            raise NotImplementedError(
                f"{where} has params on {len(devices)} devices; Apex's "
                "exp_avg_sq holds a group's norms in one tensor: use one "
                "param group per device")
        halves = {p.dtype for p in members if p.dtype != torch.float32}
        if len(halves) > 1:
            raise RuntimeError(
                f"{where} mixes float16 and bfloat16 params; exp_avg_sq "
                "keeps one list of norms for a group's 16-bit params (Apex's "
                "layout): put them in separate param groups")
        device = members[0].device
        slots = ([], [])
        for position, param in enumerate(members):
            slots[_spec.novograd_slot(str(param.dtype).split(".")[-1])
                  ].append(position)
        norms = group.get("exp_avg_sq")
        if norms is None:
            norms = group["exp_avg_sq"] = [
                torch.zeros(len(positions), dtype=torch.float32,
                            device=device) for positions in slots]
            if not group["init_zero"]:
                self._kfuse_norms_pending[id(group)] = (group, 1.0)
        elif not isinstance(norms, list) or len(norms) != 2:
            raise RuntimeError(f"{where}: exp_avg_sq must be Apex's list "
                               "[16-bit norms, float32 norms]")
        for slot, positions in enumerate(slots):
            entry = norms[slot]
            count = 0 if entry is None else entry.numel()
            if count != len(positions):
                raise RuntimeError(
                    f"{where}: exp_avg_sq[{slot}] holds {count} norms, but "
                    f"{len(positions)} "
                    f"{'float32' if slot else '16-bit'} params have grads; "
                    "FusedNovoGrad keeps one norm per param that had a grad "
                    "at the group's first step (as Apex)")
            if entry is None or entry.device != device or \
                    entry.dtype != torch.float32 or \
                    not entry.is_contiguous():
                norms[slot] = torch.zeros(0, dtype=torch.float32,
                                          device=device) if entry is None \
                    else entry.to(device=device, dtype=torch.float32,
                                  memory_format=torch.contiguous_format)
        views = [None] * len(members)
        for slot, positions in enumerate(slots):
            for row, position in enumerate(positions):
                views[position] = norms[slot][row:row + 1]
        return {"exp_avg_sq": views}

    def _kfuse_group_hypers(self, index, group, runtime):
        _spec.check_novograd_args(group["norm_type"])
        pending = self._kfuse_norms_pending.get(id(group))
        if pending is None or pending[0] is not group:
            return {"init_from_norm": 0.0}
        flag = pending[1]
        if self._kfuse_grad_scaling and not isinstance(flag, torch.Tensor):
            # A skipped first step must initialize at the next one: the
            # flag stays 1 on the device until a step is not skipped.
            flag = torch.ones((), dtype=torch.float32,
                              device=runtime.plans()[0].device)
            self._kfuse_norms_pending[id(group)] = (group, flag)
        return {"init_from_norm": flag}

    def _kfuse_launched(self, active):
        for index in active:
            group = self.param_groups[index]
            pending = self._kfuse_norms_pending.get(id(group))
            if pending is None:
                continue
            flag = pending[1]
            if isinstance(flag, torch.Tensor):
                found_inf = self._kfuse_runtimes[index].plans()[0].found_inf
                flag.logical_and_(found_inf.reshape(()))
            else:
                del self._kfuse_norms_pending[id(group)]

    def _kfuse_step_hypers(self, inv_scale):
        hypers = super()._kfuse_step_hypers(inv_scale)
        hypers["reg_inside_moment"] = 0.0 if self.moment_mode else 1.0
        return hypers
