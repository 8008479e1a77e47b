"""torch.nn drop-ins over kfuse's fused norm kernels: LayerNorm and RMSNorm.

    import kfuse.torch
    ln = kfuse.torch.nn.LayerNorm(768, device="cuda")     # as nn.LayerNorm
    rms = kfuse.torch.nn.RMSNorm(4096, device="cuda")     # as nn.RMSNorm
    y = kfuse.torch.nn.layer_norm(x, (768,), weight, bias, eps=1e-5)
    kfuse.torch.nn.replace_norms(model)   # every nn.LayerNorm / nn.RMSNorm

LayerNorm and RMSNorm subclass nn.LayerNorm and nn.RMSNorm (RMSNorm: a
module of the same make on torch before 2.4) and override only forward:
the constructor arguments, the parameters (`weight`, `bias`),
reset_parameters, extra_repr and the state dict are torch's, so checkpoints
load both ways and isinstance(m, nn.LayerNorm) holds. layer_norm() and
rms_norm() mirror F.layer_norm and F.rms_norm. Each forward is one kernel
launch (kfuse.library_norm("layernorm_fwd") / "rmsnorm_fwd") that saves the
f32 row statistics; each backward is one launch of the matching *_bwd norm
(two kernels: dx and the per-block column partials, then the fixed-order
column sums, so dweight and dbias have the same bits every run). Eager
inputs under set_eager_min_bytes() (64 MiB) run torch's fused native norm
instead, where kfuse's host cost outweighs its GPU time.

Shapes: kfuse norms run over the last dimension, so a normalized_shape of
several dimensions is flattened: x is read as x.reshape(-1,
prod(normalized_shape)). x's trailing dimensions must equal
normalized_shape, and weight and bias must have that shape, else ValueError
(torch raises RuntimeError for the same mistakes). A non-contiguous x is
copied once. RMSNorm's eps=None is, as in torch's kernels, the float32
machine epsilon for float32, bfloat16 and float16 inputs (torch documents
torch.finfo(x.dtype).eps, but computes in float32 and uses its epsilon).

Precision: x, y, dy and dx may each be float32, bfloat16 or float16, and
weight and bias any of those too (kfuse reads each tensor in its own dtype
and computes in float32). y and dx take x's dtype, dweight and dbias the
dtypes of weight and bias, as in torch.

Autocast: torch runs layer_norm under CUDA autocast in float32 (it casts
its inputs up and returns float32); rms_norm has no autocast policy and
returns x's dtype. By default these modules and functions return the same
dtypes, reading x as given (no cast kernel: the kernels compute in float32
whatever they read). autocast_output=True (a constructor and functional
keyword, and replace_norms') instead writes y in the autocast dtype
(torch.get_autocast_dtype("cuda")) while CUDA autocast is enabled: where y
feeds only a matmul, which would cast it to that dtype anyway, that saves
the cast kernel and half of the output bytes and computes the same; where
y feeds a residual add or a loss, it changes what the model computes. dx
comes back in x's dtype. Nothing inside the autograd Functions is an
autocast op (they only allocate, reshape and launch), so they need no
custom_fwd / custom_bwd; the backward takes dy in y's dtype.

Fallbacks: an input kfuse cannot take runs torch.nn.functional.layer_norm /
rms_norm instead, unchanged: a tensor that is not on a CUDA device (CPU
models), float64 (so torch.autograd.gradcheck works) or complex, an empty
tensor (numel 0), a sparse or nested tensor, or a weight or bias that is not
a float32/bfloat16/float16 tensor on x's device. Those calls behave, and
fail, exactly as torch's.

Not implemented: double backward (the backward is once_differentiable and
raises when differentiated), forward-mode AD (jvp) and torch.func
transforms (vmap, grad), TorchScript. replace_norms() converts modules whose
type is exactly nn.LayerNorm or nn.RMSNorm, or a class registered by name
(the Hugging Face families, register_norm()), not other subclasses nor
look-alikes (call layer_norm() in their forward instead). With
elementwise_affine=False (or bias=False) the kernels still read a ones
(zeros) column made per call and compute the column sums that are then
dropped.

torch.compile (torch >= 2.4): these modules and functions trace without a
graph break. What they trace is set_compiled_norms()'s choice: torch's own
norm over the same columns (the default; inductor fuses it with its
neighbours) or the kfuse:: operators of kfuse.torch._ops (kfuse's kernels,
captured by CUDA graphs under mode="reduce-overhead").
"""

import inspect
import numbers

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from kfuse._capi import log_info
from kfuse._norm import library_norm

__all__ = ["LayerNorm", "RMSNorm", "layer_norm", "rms_norm",
           "replace_norms", "register_norm", "norm_status",
           "set_compiled_norms", "set_eager_min_bytes"]

# torch.compile traces the kfuse:: operators, backward included, from
# torch 2.4 (register_autograd); before, these modules run eagerly under it
# and break the graph.
_TRACEABLE = hasattr(torch.library, "register_autograd")
# True while torch.compile traces.
_is_compiling = torch.compiler.is_compiling if _TRACEABLE else \
    (lambda: False)
_KFUSE_DTYPES = frozenset((torch.float32, torch.bfloat16, torch.float16))
_CONTIGUOUS = torch.contiguous_format
_F32_EPS = torch.finfo(torch.float32).eps
_TorchRMSNorm = getattr(torch.nn, "RMSNorm", None)  # torch >= 2.4

# CUDA autocast state: torch >= 2.4 takes a device type; before, the
# argument-free forms meant CUDA.
if hasattr(torch, "get_autocast_dtype"):
    def _autocast_dtype():
        """The CUDA autocast dtype while CUDA autocast is on, else None."""
        if torch.is_autocast_enabled("cuda"):
            return torch.get_autocast_dtype("cuda")
        return None
else:  # pragma: no cover - torch < 2.4
    def _autocast_dtype():
        if torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
        return None


# -- argument checks ----------------------------------------------------------

def _shape_tuple(normalized_shape):
    if type(normalized_shape) is tuple:  # the modules' own, fast
        shape = normalized_shape
    elif isinstance(normalized_shape, numbers.Integral):
        shape = (int(normalized_shape),)
    else:
        shape = tuple(int(s) for s in normalized_shape)
    if not shape:
        raise ValueError("normalized_shape must have at least one dimension, "
                         "got ()")
    return shape


def _kfuse_takes(x, *columns):
    """Whether kfuse's kernels take x and its per-column tensors (weight,
    bias; None allowed); otherwise torch's own functions run."""
    if (not isinstance(x, torch.Tensor) or not x.is_cuda or
            x.dtype not in _KFUSE_DTYPES or x.layout is not torch.strided or
            x.is_nested or x.numel() == 0):
        return False
    index = x.get_device()  # an int: cheaper than comparing torch.device
    for column in columns:
        if column is None:
            continue
        if (not isinstance(column, torch.Tensor) or
                column.dtype not in _KFUSE_DTYPES or
                column.layout is not torch.strided or
                column.get_device() != index):
            return False
    return True


def _why_torch_runs(x):
    """Why _kfuse_takes refused: for the KFUSE_LOG=info line."""
    if not isinstance(x, torch.Tensor):
        return f"the input is a {type(x).__name__}"
    if not x.is_cuda:
        return f"the input is on {x.device}"
    if x.dtype not in _KFUSE_DTYPES:
        return f"the input is {x.dtype}"
    if x.numel() == 0:
        return "the input is empty"
    if x.layout is not torch.strided or x.is_nested:
        return "the input is not a strided tensor"
    return "a weight or bias kfuse does not read (dtype, device or layout)"


def _torch_runs(what, x):
    """Logs once, at KFUSE_LOG=info, that torch's function runs, and why."""
    log_info(f"{what}: torch's function runs ({_why_torch_runs(x)})")


def _columns(what, x, shape, weight, bias=None):
    """The number of columns (prod(shape)) after checking x's trailing
    dimensions and the weight and bias shapes."""
    k = len(shape)
    if k == 1:  # the common case, checked with the fewest calls
        cols = shape[0]
        if (x.shape[-1:] == shape and
                (weight is None or weight.shape == shape) and
                (bias is None or bias.shape == shape)):
            return cols
    if x.dim() < k or x.shape[x.dim() - k:] != shape:
        raise ValueError(
            f"{what}: given normalized_shape={list(shape)}, expected input "
            f"with shape [*, {', '.join(str(s) for s in shape)}], but got "
            f"input of size {list(x.shape)}")
    for name, column in (("weight", weight), ("bias", bias)):
        if column is not None and column.shape != shape:
            raise ValueError(
                f"{what}: expected {name} of the shape of normalized_shape "
                f"{list(shape)}, but got {name} of shape "
                f"{list(column.shape)}")
    if k == 1:
        return shape[0]
    cols = 1
    for size in shape:
        cols *= size
    return cols


def _output_dtype(x, autocast_output, autocast_float32):
    """torch's output dtype: x's, or under CUDA autocast float32 where torch
    runs the op in float32 (layer_norm; rms_norm has no autocast policy and
    keeps x's); with autocast_output, the autocast dtype."""
    autocast = _autocast_dtype()
    if autocast is None:
        return x.dtype
    if autocast_output and autocast in _KFUSE_DTYPES:
        return autocast
    return torch.float32 if autocast_float32 else x.dtype


def _requires_grad(*tensors):
    return any(t is not None and t.requires_grad for t in tensors)


def _contiguous(t):
    return t if t.is_contiguous() else t.contiguous()


def _column_or(t, cols, device, fill):
    """t made contiguous, or a float32 column of `fill` (1 or 0) for None."""
    if t is not None:
        return _contiguous(t)
    make = torch.ones if fill == 1 else torch.zeros
    return make(cols, device=device, dtype=torch.float32)


def _grad_like(t, cols, device):
    """A buffer for the column sums of t (t's shape and dtype), or a float32
    scratch column when t is None (the kernel writes it regardless)."""
    if t is not None:
        return torch.empty_like(t, memory_format=_CONTIGUOUS)
    return torch.empty(cols, device=device, dtype=torch.float32)


# -- kernels ------------------------------------------------------------------

_current_device = getattr(torch._C, "_cuda_getDevice", None) or \
    torch.cuda.current_device

# Each library norm's arguments in the order these functions pass them; a
# tuple is one tensor of that many equal parts (mean and rstd in one
# allocation).
_ORDERS = {
    "layernorm_fwd": ("x", "weight", "bias", "y", ("mean", "rstd"), "eps"),
    "layernorm_bwd": ("dy", "x", ("mean", "rstd"), "weight", "dx", "dweight",
                      "dbias"),
    "rmsnorm_fwd": ("x", "weight", "y", "rstd", "eps"),
    "rmsnorm_bwd": ("dy", "x", "rstd", "weight", "dx", "dweight"),
}
_launchers = {}


def _run(name, rows, cols, *values):
    """Launches library norm `name` on `values` (in _ORDERS[name]'s order),
    which these functions checked (CUDA, supported dtypes, contiguous,
    non-empty; full ones of any shape with rows * cols elements): the lean
    launcher where they are on the current device, Norm's checked call, on
    (rows, cols) views, otherwise."""
    launch = _launchers.get(name)
    if launch is None:
        launch = _launchers[name] = library_norm(name).lean_launcher(
            _ORDERS[name])
    if values[0].get_device() == _current_device():
        launch(rows, cols, *values)
        return
    norm = library_norm(name)
    levels = {arg.name: arg.level for arg in norm.args}
    named = {}
    for item, value in zip(_ORDERS[name], values):
        if isinstance(item, tuple):
            named.update(zip(item, value.view(len(item), -1).unbind(0)))
        elif levels[item] == "element":
            named[item] = value.view(rows, cols)
        else:
            named[item] = value
    norm(**named)


def _forward_outputs(x, cols, out_dtype, stats):
    """The forward's outputs for x (rows * cols elements): y (x's shape,
    out_dtype, contiguous) and the float32 row statistics, (stats, rows)
    for LayerNorm's mean and rstd in one tensor, (rows,) for RMSNorm's rstd
    (stats=1). The kfuse:: operators' fake implementations allocate with
    this too, so their shapes and strides are the kernels'."""
    rows = x.numel() // cols
    # empty_like costs the host less than new_empty or torch.empty.
    return (torch.empty_like(x, dtype=out_dtype, memory_format=_CONTIGUOUS),
            x.new_empty((stats, rows) if stats > 1 else (rows,),
                        dtype=torch.float32))


def _backward_outputs(x, cols, *columns):
    """dx (x's shape and dtype, contiguous) and a gradient per column tensor
    (see _grad_like)."""
    outputs = [torch.empty_like(x, memory_format=_CONTIGUOUS)]
    for column in columns:
        outputs.append(_grad_like(column, cols, x.device))
    return outputs


def _layer_norm_forward(x, weight, bias, cols, eps, out_dtype):
    """y (x's shape, out_dtype) and the contiguous x and row statistics
    (mean and rstd, float32, one (2, rows) tensor) that the backward
    reads."""
    x = _contiguous(x)
    y, stats = _forward_outputs(x, cols, out_dtype, 2)
    device = x.device
    _run("layernorm_fwd", stats.shape[1], cols, x,
         _column_or(weight, cols, device, 1),
         _column_or(bias, cols, device, 0), y, stats, eps)
    return y, x, stats


def _rms_norm_forward(x, weight, cols, eps, out_dtype):
    x = _contiguous(x)
    y, rstd = _forward_outputs(x, cols, out_dtype, 1)
    _run("rmsnorm_fwd", rstd.shape[0], cols, x,
         _column_or(weight, cols, x.device, 1), y, rstd, eps)
    return y, x, rstd


def _layer_norm_backward(dy, x, stats, weight, bias, cols):
    """(dx, dweight, dbias) from the contiguous x and stats the forward
    saved: dx in x's dtype, dweight and dbias in the shapes and dtypes of
    weight and bias (float32 columns of `cols` for a None one: the kernel
    writes them regardless)."""
    dx, dweight, dbias = _backward_outputs(x, cols, weight, bias)
    _run("layernorm_bwd", x.numel() // cols, cols, _contiguous(dy), x, stats,
         _column_or(weight, cols, x.device, 1), dx, dweight, dbias)
    return dx, dweight, dbias


def _rms_norm_backward(dy, x, rstd, weight, cols):
    """(dx, dweight), as _layer_norm_backward."""
    dx, dweight = _backward_outputs(x, cols, weight)
    _run("rmsnorm_bwd", x.numel() // cols, cols, _contiguous(dy), x, rstd,
         _column_or(weight, cols, x.device, 1), dx, dweight)
    return dx, dweight


def _double_backward_guard(backward):
    """`backward`, run as once_differentiable runs it when the graph of the
    backward itself is being recorded (create_graph=True): a second
    differentiation then raises. Without that, one is_grad_enabled() call
    instead of once_differentiable's wrapper on every backward."""
    guarded = once_differentiable(backward)

    def run(ctx, dy):
        if torch.is_grad_enabled():
            return guarded(ctx, dy)
        return backward(ctx, dy)
    return run


class _LayerNormFunction(torch.autograd.Function):
    """y = layer_norm(x) over the last `cols` elements of each row; y in
    `out_dtype`, dx in x's dtype."""

    @staticmethod
    def forward(ctx, x, weight, bias, cols, eps, out_dtype):
        y, x, stats = _layer_norm_forward(x, weight, bias, cols, eps,
                                          out_dtype)
        ctx.save_for_backward(x, stats, weight, bias)
        ctx.cols = cols
        return y

    @staticmethod
    @_double_backward_guard
    def backward(ctx, dy):
        x, stats, weight, bias = ctx.saved_tensors
        dx, dweight, dbias = _layer_norm_backward(dy, x, stats, weight, bias,
                                                  ctx.cols)
        need_x, need_w, need_b, _, _, _ = ctx.needs_input_grad
        return (dx if need_x else None, dweight if need_w else None,
                dbias if need_b else None, None, None, None)


class _RMSNormFunction(torch.autograd.Function):
    """y = rms_norm(x) over the last `cols` elements of each row; y in
    `out_dtype`, dx in x's dtype."""

    @staticmethod
    def forward(ctx, x, weight, cols, eps, out_dtype):
        y, x, rstd = _rms_norm_forward(x, weight, cols, eps, out_dtype)
        ctx.save_for_backward(x, rstd, weight)
        ctx.cols = cols
        return y

    @staticmethod
    @_double_backward_guard
    def backward(ctx, dy):
        x, rstd, weight = ctx.saved_tensors
        dx, dweight = _rms_norm_backward(dy, x, rstd, weight, ctx.cols)
        need_x, need_w, _, _, _ = ctx.needs_input_grad
        return (dx if need_x else None, dweight if need_w else None, None,
                None, None)


# -- under torch.compile ------------------------------------------------------

_COMPILED_NORMS = ("inductor", "kfuse")
_compiled_norms = "inductor"


def set_compiled_norms(kind):
    """What torch.compile traces for kfuse's norm modules and functions
    (eager calls: set_eager_min_bytes), and returns the previous choice:
      "inductor"  (the default) torch's own norm over the same columns, in
                  the same output dtype: inductor generates it and fuses it
                  with the ops around it (the residual add, dropout, the
                  casts), which no separate kernel can match;
      "kfuse"     the kfuse:: operators (kfuse.torch._ops): kfuse's kernels,
                  one launch each, captured by CUDA graphs.
    Either way the model compiles without a graph break from kfuse (torch
    >= 2.4). Takes effect at the next compile (torch._dynamo.reset() or a
    new torch.compile)."""
    global _compiled_norms
    if kind not in _COMPILED_NORMS:
        raise ValueError(f"set_compiled_norms({kind!r}): expected one of "
                         f"{', '.join(map(repr, _COMPILED_NORMS))}")
    previous, _compiled_norms = _compiled_norms, kind
    return previous


def _flat(column):
    return None if column is None else column.reshape(-1)


# -- functional forms ---------------------------------------------------------

# -- small eager norms ---------------------------------------------------------
#
# An eager kfuse norm costs the host more than torch's fused native one (a
# Python autograd Function, its allocations and two launches against C++:
# ~40 us more per forward and backward on the H100 hosts) and the GPU about
# half as much per byte. Below a size the host cost wins wherever the step
# waits on the host, as eager transformer training does at GPT-2's and
# BERT's sizes: in a chain of 25 norms (bench/norm_crossover.py, H100) kfuse
# was 0.48-0.65x torch up to 32 MiB of input and 1.11-1.96x from 64 MiB on,
# in float32 and bfloat16 alike. There nn.LayerNorm's and nn.RMSNorm's
# replacements run torch's own kernel, which computes the same function in
# the same dtypes. The norm families whose original forward is several
# kernels (replace_norms' converted classes) always run kfuse's.

_eager_min_bytes = 1 << 26


def set_eager_min_bytes(count):
    """Eager calls of LayerNorm, RMSNorm, layer_norm and rms_norm whose
    input has fewer than `count` bytes run torch's fused native norm instead
    of kfuse's kernels (0: kfuse's at every size); returns the previous
    value. The default, 2**26 (64 MiB, e.g. 8192 x 2048 float32), is where
    kfuse's kernels started to win in a chain of 25 norms on an H100
    (bench/norm_crossover.py). Calls whose weight or bias has another dtype
    than the input, calls with autocast_output=True (which asks for kfuse's
    output dtype) and everything under torch.compile (set_compiled_norms)
    are not affected."""
    global _eager_min_bytes
    count = int(count)
    if count < 0:
        raise ValueError(f"set_eager_min_bytes({count}): expected a count "
                         ">= 0")
    previous, _eager_min_bytes = _eager_min_bytes, count
    return previous


# Whether a tensor is on a CUDA device (the CPU tests stand CPU tensors in).
_is_cuda = torch.Tensor.is_cuda.__get__


def _torch_is_cheaper(x, autocast_output, *columns):
    """Whether this eager call runs torch's fused native norm: x is a CUDA
    tensor of fewer than _eager_min_bytes bytes, weight and bias have its
    dtype (torch then computes in the dtypes kfuse would), and the caller
    did not ask for kfuse's autocast output dtype. Asked first, so that such
    a call costs the host little more than torch's own."""
    if (autocast_output or not isinstance(x, torch.Tensor) or
            not _is_cuda(x) or _is_compiling() or
            x.numel() * x.element_size() >= _eager_min_bytes):
        return False
    dtype = x.dtype
    for column in columns:
        if column is not None and column.dtype is not dtype:
            return False
    return True


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *,
               autocast_output=False):
    """F.layer_norm over kfuse's kernels (see the module docstring for the
    autocast output dtype and the inputs that fall back to torch)."""
    shape = _shape_tuple(normalized_shape)
    if _torch_is_cheaper(input, autocast_output, weight, bias):
        return F.layer_norm(input, shape, weight, bias, eps)
    if not _kfuse_takes(input, weight, bias):
        _torch_runs("layer_norm", input)
        return F.layer_norm(input, shape, weight, bias, eps)
    cols = _columns("layer_norm", input, shape, weight, bias)
    out_dtype = _output_dtype(input, autocast_output, True)
    return _kfuse_layer_norm(input, weight, bias, cols, float(eps), out_dtype)


def _kfuse_layer_norm(x, weight, bias, cols, eps, out_dtype):
    """layer_norm on kfuse's kernels of arguments already checked: y in
    out_dtype, with autograd where it is needed. Eager calls launch
    directly (the least host time); under torch.compile, see
    set_compiled_norms."""
    if _is_compiling():
        if _compiled_norms == "kfuse":
            return torch.ops.kfuse.layer_norm_fwd(x, weight, bias, cols, eps,
                                                  out_dtype)[0]
        return F.layer_norm(x.reshape(-1, cols), (cols,), _flat(weight),
                            _flat(bias), eps).reshape(x.shape).to(out_dtype)
    if torch.is_grad_enabled() and _requires_grad(x, weight, bias):
        return _LayerNormFunction.apply(x, weight, bias, cols, eps, out_dtype)
    return _layer_norm_forward(x, weight, bias, cols, eps, out_dtype)[0]


def _torch_rms_norm(input, shape, weight, eps):
    """F.rms_norm, or its composite on torch < 2.4."""
    if hasattr(F, "rms_norm"):
        return F.rms_norm(input, shape, weight, eps)
    dims = tuple(range(-len(shape), 0))  # pragma: no cover - torch < 2.4
    wide = torch.float64 if input.dtype == torch.float64 else torch.float32
    x = input.to(wide)
    if eps is None:
        eps = torch.finfo(wide).eps
    y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    if weight is not None:
        y = y * weight
    return y.to(input.dtype)


def rms_norm(input, normalized_shape, weight=None, eps=None, *,
             autocast_output=False):
    """F.rms_norm over kfuse's kernels; eps=None is float32's machine
    epsilon, as torch computes it for float32/bfloat16/float16 inputs."""
    shape = _shape_tuple(normalized_shape)
    if _torch_is_cheaper(input, autocast_output, weight):
        return _torch_rms_norm(input, shape, weight, eps)
    if not _kfuse_takes(input, weight):
        _torch_runs("rms_norm", input)
        return _torch_rms_norm(input, shape, weight, eps)
    cols = _columns("rms_norm", input, shape, weight)
    out_dtype = _output_dtype(input, autocast_output, False)
    eps = _F32_EPS if eps is None else float(eps)
    return _kfuse_rms_norm(input, weight, cols, eps, out_dtype)


def _kfuse_rms_norm(x, weight, cols, eps, out_dtype):
    """rms_norm on kfuse's kernels of arguments already checked: y in
    out_dtype, with autograd where it is needed."""
    if _is_compiling():
        if _compiled_norms == "kfuse":
            return torch.ops.kfuse.rms_norm_fwd(x, weight, cols, eps,
                                                out_dtype)[0]
        return F.rms_norm(x.reshape(-1, cols), (cols,), _flat(weight),
                          eps).reshape(x.shape).to(out_dtype)
    if torch.is_grad_enabled() and _requires_grad(x, weight):
        return _RMSNormFunction.apply(x, weight, cols, eps, out_dtype)
    return _rms_norm_forward(x, weight, cols, eps, out_dtype)[0]


# -- modules ------------------------------------------------------------------

_LAYER_NORM_TAKES_BIAS = (
    "bias" in inspect.signature(torch.nn.LayerNorm.__init__).parameters)


class LayerNorm(torch.nn.LayerNorm):
    """nn.LayerNorm over kfuse's kernels: the same arguments, parameters and
    state dict. autocast_output (keyword): under CUDA autocast, write y in
    the autocast dtype (True) instead of torch's float32 (False)."""

    autocast_output = False  # also for modules converted by replace_norms

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True,
                 bias=True, device=None, dtype=None, *,
                 autocast_output=False):
        if _LAYER_NORM_TAKES_BIAS:
            super().__init__(normalized_shape, eps=eps,
                             elementwise_affine=elementwise_affine, bias=bias,
                             device=device, dtype=dtype)
        else:  # pragma: no cover - torch < 2.1
            super().__init__(normalized_shape, eps=eps,
                             elementwise_affine=elementwise_affine,
                             device=device, dtype=dtype)
            if elementwise_affine and not bias:
                self.bias = None
        self.autocast_output = bool(autocast_output)

    def forward(self, input):
        return layer_norm(input, self.normalized_shape, self.weight,
                          self.bias, self.eps,
                          autocast_output=self.autocast_output)

    def extra_repr(self):
        text = super().extra_repr()
        return text + (", kfuse, autocast_output=True"
                       if self.autocast_output else ", kfuse")


if _TorchRMSNorm is not None:
    _RMSNormBase = _TorchRMSNorm
else:  # pragma: no cover - torch < 2.4
    class _RMSNormBase(torch.nn.Module):
        """nn.RMSNorm's parameters and state, for torch before 2.4."""

        __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

        def __init__(self, normalized_shape, eps=None,
                     elementwise_affine=True, device=None, dtype=None):
            super().__init__()
            if isinstance(normalized_shape, numbers.Integral):
                normalized_shape = (normalized_shape,)
            self.normalized_shape = tuple(normalized_shape)
            self.eps = eps
            self.elementwise_affine = elementwise_affine
            if elementwise_affine:
                self.weight = torch.nn.Parameter(torch.empty(
                    self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("weight", None)
            self.reset_parameters()

        def reset_parameters(self):
            if self.elementwise_affine:
                torch.nn.init.ones_(self.weight)

        def forward(self, x):
            return _torch_rms_norm(x, self.normalized_shape, self.weight,
                                   self.eps)

        def extra_repr(self):
            return ("{normalized_shape}, eps={eps}, "
                    "elementwise_affine={elementwise_affine}".format(
                        **self.__dict__))


class RMSNorm(_RMSNormBase):
    """nn.RMSNorm over kfuse's kernels: the same arguments, parameters and
    state dict. autocast_output (keyword): under CUDA autocast, write y in
    the autocast dtype (True) instead of torch's float32 (False)."""

    autocast_output = False  # also for modules converted by replace_norms

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True,
                 device=None, dtype=None, *, autocast_output=False):
        super().__init__(normalized_shape, eps=eps,
                         elementwise_affine=elementwise_affine,
                         device=device, dtype=dtype)
        self.autocast_output = bool(autocast_output)

    def forward(self, input):
        return rms_norm(input, self.normalized_shape, self.weight, self.eps,
                        autocast_output=self.autocast_output)

    def extra_repr(self):
        text = super().extra_repr()
        return text + (", kfuse, autocast_output=True"
                       if self.autocast_output else ", kfuse")


# -- conversions of other norm classes ----------------------------------------
#
# Norm classes of model families (Hugging Face's), known by class name so that
# transformers need not be imported: each gets a subclass, made once, whose
# forward computes what the original's does on kfuse's kernels (the same
# output dtype, the float32 math the original makes) and calls the original
# forward for inputs kfuse does not take. Instances change class in place, so
# parameters, state dicts, hooks and isinstance checks stay as they were. The
# rounding differs only where the original rounds twice (Llama's rounds the
# normalized x to x's dtype before the weight multiplies it; kfuse rounds the
# product once).


def _llama_rms_forward(self, hidden_states):
    """LlamaRMSNorm and its copies: weight * (x_f32 * rstd).to(x.dtype)."""
    weight = self.weight
    if not _kfuse_takes(hidden_states, weight):
        _torch_runs(type(self).__name__, hidden_states)
        return self._kfuse_original_forward(hidden_states)
    out = torch.promote_types(weight.dtype, hidden_states.dtype)
    cols = _columns(type(self).__name__, hidden_states, tuple(weight.shape),
                    weight)
    return _kfuse_rms_norm(hidden_states, weight, cols,
                           float(self.variance_epsilon), out)


def _gemma_rms_forward(self, x):
    """GemmaRMSNorm: (x_f32 * rstd * (1 + weight_f32)).type_as(x)."""
    weight = self.weight
    if not _kfuse_takes(x, weight):
        _torch_runs(type(self).__name__, x)
        return self._kfuse_original_forward(x)
    cols = _columns(type(self).__name__, x, tuple(weight.shape), weight)
    return _kfuse_rms_norm(x, weight.float() + 1.0, cols, float(self.eps),
                           x.dtype)


def _t5_rms_forward(self, hidden_states):
    """T5LayerNorm (RMS, no mean, no bias): weight * (x * rstd), in the
    weight's dtype when it is 16-bit, else float32."""
    weight = self.weight
    if not _kfuse_takes(hidden_states, weight):
        _torch_runs(type(self).__name__, hidden_states)
        return self._kfuse_original_forward(hidden_states)
    out = weight.dtype if weight.dtype in (torch.float16, torch.bfloat16) \
        else torch.promote_types(weight.dtype, torch.float32)
    cols = _columns(type(self).__name__, hidden_states, tuple(weight.shape),
                    weight)
    return _kfuse_rms_norm(hidden_states, weight, cols,
                           float(self.variance_epsilon), out)


# class name -> (forward, attributes an instance must have).
_FAMILIES = {}
for _name in ("LlamaRMSNorm", "MistralRMSNorm", "MixtralRMSNorm",
              "Qwen2RMSNorm", "Qwen2MoeRMSNorm", "Qwen3RMSNorm",
              "Qwen3MoeRMSNorm", "Phi3RMSNorm", "GraniteRMSNorm",
              "DeepseekV3RMSNorm"):
    _FAMILIES[_name] = (_llama_rms_forward, ("weight", "variance_epsilon"))
for _name in ("GemmaRMSNorm", "Gemma2RMSNorm", "Gemma3RMSNorm"):
    _FAMILIES[_name] = (_gemma_rms_forward, ("weight", "eps"))
for _name in ("T5LayerNorm", "MT5LayerNorm", "UMT5LayerNorm",
              "LongT5LayerNorm"):
    _FAMILIES[_name] = (_t5_rms_forward, ("weight", "variance_epsilon"))
del _name

_converted_classes = {}


def register_norm(class_name, forward, attributes=("weight",)):
    """Teaches replace_norms() a norm class by its name: instances that have
    every attribute in `attributes` get `forward(self, x)` (which should
    compute what the class's own forward does, on kfuse's kernels, and may
    call self._kfuse_original_forward(x) for what it does not take).
    Registering a name again replaces its entry."""
    _FAMILIES[class_name] = (forward, tuple(attributes))
    for cls in [c for c in _converted_classes if c.__name__ == class_name]:
        del _converted_classes[cls]


def _extra_repr_with_kfuse(self):
    text = self._kfuse_original_extra_repr()
    return f"{text}, kfuse" if text else "kfuse"


def _converted_class(cls, forward):
    """The subclass of `cls` running `forward`, made once per class."""
    made = _converted_classes.get(cls)
    if made is None:
        made = type(cls.__name__, (cls,), {
            "forward": forward,
            "_kfuse_original_forward": cls.forward,
            "_kfuse_original_extra_repr": cls.extra_repr,
            "extra_repr": _extra_repr_with_kfuse,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": f"{cls.__name__} on kfuse's norm kernels "
                       "(kfuse.torch.nn.replace_norms).",
        })
        _converted_classes[cls] = made
    return made


def norm_status(module):
    """(runs on kfuse, why) for a norm-like module: converted, or the reason
    it is not (no conversion for its class, missing attributes); None for a
    module that is not a norm."""
    cls = type(module)
    if isinstance(module, (LayerNorm, RMSNorm)) or \
            cls in _converted_classes.values():
        return True, "kfuse norm kernels"
    if cls is torch.nn.LayerNorm or cls is _TorchRMSNorm:
        return False, "not converted yet: kfuse.torch.nn.replace_norms does"
    entry = _FAMILIES.get(cls.__name__)
    if entry is not None:
        missing = [a for a in entry[1] if not hasattr(module, a)]
        if missing:
            return False, (f"a {cls.__name__} without {', '.join(missing)}: "
                           "not the class kfuse knows by that name")
        return False, "not converted yet: kfuse.torch.nn.replace_norms does"
    if "norm" in cls.__name__.lower() and not list(module.children()):
        return False, ("no kfuse conversion for this class (register one "
                       "with kfuse.torch.nn.register_norm)")
    return None


def replace_norms(module, *, autocast_output=False, report=None,
                  classes=None):
    """Makes the norms in `module` (itself included) run on kfuse's kernels,
    in place, and returns `module`: every nn.LayerNorm and nn.RMSNorm
    becomes a kfuse LayerNorm / RMSNorm, and every instance of a class
    registered by name (Hugging Face's Llama, Mistral, Qwen2/3, Phi-3,
    Gemma 1-3 and T5 norms, and register_norm()'s) a subclass of its own
    class with a kfuse forward.

    The modules stay the same objects and only change class, so they keep
    their Parameter objects (an optimizer built before still holds them),
    buffers, hooks and training mode, and the state dict is unchanged.
    Subclasses of nn.LayerNorm and nn.RMSNorm are left alone. `classes`,
    class names, converts only those (e.g. ("LlamaRMSNorm",): the norms
    torch runs as several kernels, leaving its fused nn.LayerNorm where a
    model waits on the host); unknown names raise ValueError. `report`, a
    dict, receives {class name: count} of what was converted (and under
    "not converted", {class name: reason} for norm-like modules that were
    not).
    """
    if classes is not None:
        classes = frozenset([classes] if isinstance(classes, str)
                            else classes)
        known = {"LayerNorm", "RMSNorm"} | set(_FAMILIES)
        unknown = sorted(classes - known)
        if unknown:
            raise ValueError(
                f"replace_norms(classes=...): unknown class name(s) "
                f"{', '.join(map(repr, unknown))}; kfuse converts "
                f"{', '.join(sorted(known))}")
    converted, skipped = {}, {}
    for sub in module.modules():
        kind = type(sub)
        if classes is not None and kind.__name__ not in classes:
            continue
        if kind is torch.nn.LayerNorm:
            sub.__class__ = LayerNorm
            sub.autocast_output = bool(autocast_output)
        elif _TorchRMSNorm is not None and kind is _TorchRMSNorm:
            sub.__class__ = RMSNorm
            sub.autocast_output = bool(autocast_output)
        elif kind.__name__ in _FAMILIES and kind not in \
                _converted_classes.values():
            forward, attributes = _FAMILIES[kind.__name__]
            if not all(hasattr(sub, a) for a in attributes):
                skipped[kind.__name__] = norm_status(sub)[1]
                continue
            sub.__class__ = _converted_class(kind, forward)
        else:
            status = norm_status(sub)
            if status is not None and not status[0]:
                skipped[kind.__name__] = status[1]
            continue
        converted[kind.__name__] = converted.get(kind.__name__, 0) + 1
    if report is not None:
        report.update(converted)
        if skipped:
            report["not converted"] = skipped
    return module


# The kfuse:: operators that torch.compile traces; registered last, as they
# run this module's kernels.
from . import _ops  # noqa: E402,F401
