"""kfuse's norm kernels as PyTorch operators, for torch.compile.

    y, stats = torch.ops.kfuse.layer_norm_fwd(x, weight, bias, cols, eps,
                                              out_dtype)
    dx, dweight, dbias = torch.ops.kfuse.layer_norm_bwd(dy, x, stats, weight,
                                                        bias, cols)
    y, rstd = torch.ops.kfuse.rms_norm_fwd(x, weight, cols, eps, out_dtype)
    dx, dweight = torch.ops.kfuse.rms_norm_bwd(dy, x, rstd, weight, cols)

kfuse.torch.nn calls these while torch.compile traces (eager calls launch
directly: the dispatcher would add host time to every call). Each operator
is functional (new outputs, no input written), has a CUDA kernel and a fake
implementation (shapes, dtypes and strides without running), and the
forwards have their backward registered, so that dynamo and AOTAutograd
trace a model with kfuse's norms into one graph, and CUDA graphs
(mode="reduce-overhead") capture the launches.

x has rows * cols elements (its last dimensions hold the cols); stats is
mean and rstd as one (2, rows) float32 tensor, rstd (rows,) float32; y and
dx are contiguous, y in out_dtype, dx in x's dtype; dweight and dbias take
the shapes and dtypes of weight and bias, or are float32 columns of cols
when those are None. Registering needs torch.library's Library; tracing
through the backward needs torch >= 2.4 (register_autograd): before, the
eager path runs under torch.compile as before, with graph breaks.
"""

import torch

from . import nn as _nn

__all__ = []

_SCHEMAS = {
    "layer_norm_fwd": "layer_norm_fwd(Tensor x, Tensor? weight, Tensor? bias, "
                      "int cols, float eps, ScalarType out_dtype) "
                      "-> (Tensor, Tensor)",
    "layer_norm_bwd": "layer_norm_bwd(Tensor dy, Tensor x, Tensor stats, "
                      "Tensor? weight, Tensor? bias, int cols) "
                      "-> (Tensor, Tensor, Tensor)",
    "rms_norm_fwd": "rms_norm_fwd(Tensor x, Tensor? weight, int cols, "
                    "float eps, ScalarType out_dtype) -> (Tensor, Tensor)",
    "rms_norm_bwd": "rms_norm_bwd(Tensor dy, Tensor x, Tensor rstd, "
                    "Tensor? weight, int cols) -> (Tensor, Tensor)",
}


def _check(op, x, cols, columns, out_dtype=None):
    """What the kernels need, for direct calls of the operators (the
    modules check before they call): ValueError otherwise."""
    if not _nn._kfuse_takes(x, *columns):
        raise ValueError(f"kfuse::{op}: {_nn._why_torch_runs(x)}; the "
                         "operator takes non-empty float32, bfloat16 or "
                         "float16 CUDA tensors on one device")
    if cols <= 0 or x.numel() % cols:
        raise ValueError(f"kfuse::{op}: cols={cols} does not divide the "
                         f"{x.numel()} elements of x")
    for column in columns:
        if column is not None and column.numel() != cols:
            raise ValueError(f"kfuse::{op}: a per-column tensor has "
                             f"{column.numel()} elements, not cols={cols}")
    if out_dtype is not None and out_dtype not in _nn._KFUSE_DTYPES:
        raise ValueError(f"kfuse::{op}: out_dtype {out_dtype} is not "
                         "float32, bfloat16 or float16")


def _check_sized(op, x, named):
    """The backward's other tensors, {name: (tensor, elements expected)}:
    readable by the kernels, on x's device, of the size the kernels read
    (a smaller one would be read past its end)."""
    for name, (tensor, numel) in named.items():
        takes = _nn._kfuse_takes(tensor)
        if takes and tensor.device == x.device and tensor.numel() == numel:
            continue
        got = (f"{tensor.numel()} elements of {tensor.dtype} on "
               f"{tensor.device}" if isinstance(tensor, torch.Tensor)
               else type(tensor).__name__)
        raise ValueError(f"kfuse::{op}: {name} must be a float32, bfloat16 "
                         f"or float16 tensor of {numel} elements on "
                         f"{x.device}; got {got}")


# -- CUDA kernels -------------------------------------------------------------

def _layer_norm_fwd(x, weight, bias, cols, eps, out_dtype):
    _check("layer_norm_fwd", x, cols, (weight, bias), out_dtype)
    y, _, stats = _nn._layer_norm_forward(x, weight, bias, cols, eps,
                                          out_dtype)
    return y, stats


def _layer_norm_bwd(dy, x, stats, weight, bias, cols):
    _check("layer_norm_bwd", x, cols, (weight, bias))
    _check_sized("layer_norm_bwd", x, {
        "dy": (dy, x.numel()), "stats": (stats, 2 * (x.numel() // cols))})
    return _nn._layer_norm_backward(dy, _nn._contiguous(x),
                                    _nn._contiguous(stats), weight, bias,
                                    cols)


def _rms_norm_fwd(x, weight, cols, eps, out_dtype):
    _check("rms_norm_fwd", x, cols, (weight,), out_dtype)
    y, _, rstd = _nn._rms_norm_forward(x, weight, cols, eps, out_dtype)
    return y, rstd


def _rms_norm_bwd(dy, x, rstd, weight, cols):
    _check("rms_norm_bwd", x, cols, (weight,))
    _check_sized("rms_norm_bwd", x, {
        "dy": (dy, x.numel()), "rstd": (rstd, x.numel() // cols)})
    return _nn._rms_norm_backward(dy, _nn._contiguous(x),
                                  _nn._contiguous(rstd), weight, cols)


# -- fake implementations: what the kernels return, without running -----------
# The kernels' own allocations (kfuse.torch.nn), on fake or meta tensors.

def _layer_norm_fwd_fake(x, weight, bias, cols, eps, out_dtype):
    return _nn._forward_outputs(x, cols, out_dtype, 2)


def _layer_norm_bwd_fake(dy, x, stats, weight, bias, cols):
    return _nn._backward_outputs(x, cols, weight, bias)


def _rms_norm_fwd_fake(x, weight, cols, eps, out_dtype):
    return _nn._forward_outputs(x, cols, out_dtype, 1)


def _rms_norm_bwd_fake(dy, x, rstd, weight, cols):
    return _nn._backward_outputs(x, cols, weight)


# -- autograd: the forwards' backward is the bwd operator ---------------------

def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, cols = inputs[:4]
    ctx.save_for_backward(x, output[1], weight, bias)
    ctx.cols = cols


def _layer_norm_backward(ctx, dy, _dstats):
    x, stats, weight, bias = ctx.saved_tensors
    dx, dweight, dbias = torch.ops.kfuse.layer_norm_bwd(dy, x, stats, weight,
                                                        bias, ctx.cols)
    return (dx, None if weight is None else dweight,
            None if bias is None else dbias, None, None, None)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, cols = inputs[:3]
    ctx.save_for_backward(x, output[1], weight)
    ctx.cols = cols


def _rms_norm_backward(ctx, dy, _drstd):
    x, rstd, weight = ctx.saved_tensors
    dx, dweight = torch.ops.kfuse.rms_norm_bwd(dy, x, rstd, weight, ctx.cols)
    return dx, None if weight is None else dweight, None, None, None


_KERNELS = {
    "layer_norm_fwd": (_layer_norm_fwd, _layer_norm_fwd_fake),
    "layer_norm_bwd": (_layer_norm_bwd, _layer_norm_bwd_fake),
    "rms_norm_fwd": (_rms_norm_fwd, _rms_norm_fwd_fake),
    "rms_norm_bwd": (_rms_norm_bwd, _rms_norm_bwd_fake),
}
_AUTOGRAD = {
    "layer_norm_fwd": (_layer_norm_backward, _layer_norm_setup),
    "rms_norm_fwd": (_rms_norm_backward, _rms_norm_setup),
}


def _define(lib, schema):
    tag = getattr(getattr(torch, "Tag", None), "pt2_compliant_tag", None)
    if tag is not None:
        try:
            lib.define(schema, tags=(tag,))
            return
        except TypeError:  # pragma: no cover - define without tags
            pass
    lib.define(schema)


def _register():
    """Defines the kfuse:: operators, with their backward where torch can
    register it (kfuse.torch.nn._TRACEABLE)."""
    library = torch.library
    lib = library.Library("kfuse", "DEF")
    register_fake = (getattr(library, "register_fake", None) or
                     getattr(library, "impl_abstract", None))
    for name, schema in _SCHEMAS.items():
        _define(lib, schema)
        kernel, fake = _KERNELS[name]
        lib.impl(name, kernel, "CUDA")
        lib.impl(name, kernel, "CPU")  # refused by _check, with the reason
        if register_fake is not None:
            register_fake(f"kfuse::{name}", fake, lib=lib)
        else:  # torch < 2.2: meta tensors, as fake ones use them
            lib.impl(name, fake, "Meta")
        if name in _AUTOGRAD and _nn._TRACEABLE:
            backward, setup = _AUTOGRAD[name]
            library.register_autograd(f"kfuse::{name}", backward,
                                      setup_context=setup, lib=lib)
    return lib


_LIB = _register()
