"""Checks of the tensors a launch takes, shared by single launches
(kfuse.Update), multi-tensor plans and norms: the same rule gives the same
message wherever a tensor comes in."""

from ._capi import KfuseError


def invalid(message):
    """A KfuseError with status INVALID_ARGUMENT."""
    return KfuseError(message, "INVALID_ARGUMENT")


def check_device_tensor(torch, value, where, device, others):
    """Raises unless `value` is a contiguous torch.Tensor on a CUDA device,
    on `device` when that is not None (else the first tensor's: `others`
    names the tensors that set it). Returns its device. `where` names the
    tensor in messages."""
    if not isinstance(value, torch.Tensor):
        raise invalid(f"{where} is a {type(value).__name__}, not a "
                      "torch.Tensor")
    if not value.is_cuda:
        raise invalid(f"{where} is on {value.device}, not a CUDA device")
    if device is not None and value.device != device:
        raise invalid(f"{where} is on {value.device} but {others} are on "
                      f"{device}")
    if not value.is_contiguous():
        raise invalid(f"{where} is not contiguous")
    return value.device


def check_per_tensor(torch, tensor, where):
    """Raises unless `tensor` can hold a per-tensor state: one float32
    element (any alignment: typically a view norms[i:i+1])."""
    if tensor.numel() != 1 or tensor.dtype != torch.float32:
        raise invalid(f"{where} is a per-tensor state: one float32 element "
                      f"(e.g. a view norms[i:i+1]), got {tensor.numel()} "
                      f"element(s) of {tensor.dtype}")
