"""Normalization kernels: LayerNorm and RMSNorm, forward and backward.

    import kfuse
    y, mean, rstd = kfuse.layer_norm_fwd(x, weight, bias, eps=1e-5)
    dx, dweight, dbias = kfuse.layer_norm_bwd(dy, x, mean, rstd, weight)
    y, rstd = kfuse.rms_norm_fwd(x, weight)
    dx, dweight = kfuse.rms_norm_bwd(dy, x, rstd, weight)
    h, y, mean, rstd = kfuse.add_layer_norm_fwd(x, residual, weight, bias)

    # Any norm function (library/norm/*.mlir or your own), by argument name:
    ln = kfuse.Norm("library/norm/layernorm_fwd.mlir")
    ln(x=x, weight=w, bias=b, y=y, mean=mean, rstd=rstd, eps=1e-5)

A norm runs over the last dimension: `cols` is the last dimension of the
full tensors (x, y, dy, ...) and `rows` the product of the others. Per-row
tensors (mean, rstd) have `rows` elements, per-column tensors (weight,
bias, dweight, dbias) `cols`. Every tensor is a contiguous CUDA tensor of
float32, bfloat16 or float16, each with its own dtype. Per-column outputs
are sums over the rows, computed in a fixed order: the same bits every run
on one device for one number of rows.

PyTorch is imported only when a norm is called.
"""

import ctypes
import struct
import threading

from ._capi import CACHE_SOURCES, CompileInfoStruct, compile_lib
from ._checks import check_device_tensor
from ._kernel import Kernel
from ._checks import invalid as _invalid
from ._capi import F32, BF16, F16
from ._capi import ArgStruct, KfuseError
from ._capi import check_norm, hyper_value, library_dir, norm_lib, OK

__all__ = ["Norm", "norm_library_dir", "library_norm",
           "layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd",
           "rms_norm_bwd", "add_layer_norm_fwd"]


_DTYPE_CODES = {"float32": F32, "bfloat16": BF16, "float16": F16,
                "f32": F32, "bf16": BF16, "f16": F16}


def _dtype_code(dtype, name):
    """The kfuse dtype code of a torch dtype or a name ("bf16")."""
    key = str(dtype).replace("torch.", "")
    if key not in _DTYPE_CODES:
        raise _invalid(f"tensor '{name}' has unsupported dtype {dtype} "
                       "(float32, bfloat16 or float16)")
    return _DTYPE_CODES[key]


_TORCH_DTYPE_CODES = None


def _torch_dtype_codes(torch):
    global _TORCH_DTYPE_CODES
    if _TORCH_DTYPE_CODES is None:
        _TORCH_DTYPE_CODES = {torch.float32: F32, torch.bfloat16: BF16,
                              torch.float16: F16}
    return _TORCH_DTYPE_CODES


def _current_stream_function(torch):
    """A function of no arguments returning the current device's current
    CUDA stream as an int (0 for the default stream)."""
    internals = getattr(torch, "_C", None)  # absent from stand-ins of torch
    raw = getattr(internals, "_cuda_getCurrentRawStream", None)
    device = getattr(internals, "_cuda_getDevice", None)
    if raw is not None and device is not None:
        # An int, without making a Stream object.
        return lambda: raw(device())

    def from_stream_object():
        stream = torch.cuda.current_stream()
        return getattr(stream, "cuda_stream", stream) or 0
    return from_stream_object


def _current_stream(torch):
    """The current device's current CUDA stream as a raw handle."""
    return ctypes.c_void_p(_current_stream_function(torch)() or None)


def _stream_handle(torch, stream, device):
    if stream is None:
        stream = torch.cuda.current_stream(device)
    raw = stream.cuda_stream if hasattr(stream, "cuda_stream") else stream
    return ctypes.c_void_p(raw or None)


# One kfuse_arg as struct lays it out (runtime/kfuse.h: data, numel, dtype,
# value; 32 bytes on x86-64 and AArch64 alike).
_ARG_LAYOUT = "Qqi4xd"
_ARG_FIELDS = 4

# kfuse_norm_launch with its argument array passed as bytes: one struct.pack
# instead of a ctypes array filled field by field. Two bindings: one that
# keeps the GIL (as torch's own launches do) for kfuse_norm_launch_if_ready,
# and one that drops it for kfuse_norm_launch, which may compile for seconds.
# Dropping and taking back the GIL around every launch costs a host-bound
# step ~20 us a norm (forward and backward) on the H100 hosts.
_packed_launches = None
NOT_READY = 8


def _packed_launch_functions():
    """(launch_if_ready keeping the GIL, launch dropping it)."""
    global _packed_launches
    if _packed_launches is None:
        arguments = (ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                     ctypes.c_size_t, ctypes.c_int64, ctypes.c_int64,
                     ctypes.c_void_p)
        lib = norm_lib()
        _packed_launches = (
            ctypes.PYFUNCTYPE(*arguments)(("kfuse_norm_launch_if_ready", lib)),
            ctypes.CFUNCTYPE(*arguments)(("kfuse_norm_launch", lib)))
    return _packed_launches


class Norm(Kernel):
    """One norm function, parsed from a .mlir file path or from IR text."""

    kind = "norm"

    def __init__(self, path_or_text, name=None):
        # Kernel.__new__ parsed the source; the norm handle is the kernel's.
        lib = norm_lib()
        handle = ctypes.c_void_p(self._kind_handle())
        self._handle = handle
        self.source = name or self._source
        self.args = self._read_args()
        self._names = [arg.name for arg in self.args]
        self._name_set = frozenset(self._names)
        self._tensor_slots = [(i, a.name, a.level)
                              for i, a in enumerate(self.args)
                              if a.role != "hyper"]
        self._hyper_slots = [(i, a.name, a.default)
                             for i, a in enumerate(self.args)
                             if a.role == "hyper"]
        # Kernels a call runs (1, or 2 with per-column outputs).
        self.launches = lib.kfuse_norm_num_launches(handle)

    def __repr__(self):
        return "kfuse.Norm(" + ", ".join(
            f"{a.name}: {a.role} {a.level}" for a in self.args) + ")"

    def bytes(self, rows, cols, dtypes=None):
        """The fewest bytes a call over rows x cols moves: every tensor read
        or written once. `dtypes` maps argument names to torch dtypes or
        "f32"/"bf16"/"f16"; unnamed tensors count as float32."""
        dtypes = dtypes or {}
        unknown = sorted(set(dtypes) - set(self._names))
        if unknown:
            raise _invalid("unknown argument(s) " + ", ".join(
                repr(u) for u in unknown) + "; the norm takes " +
                ", ".join(self._names))
        codes = (ctypes.c_int32 * len(self.args))()
        for index, info in enumerate(self.args):
            codes[index] = (_dtype_code(dtypes[info.name], info.name)
                            if info.name in dtypes else F32)
        for what, extent in (("rows", rows), ("cols", cols)):
            if not isinstance(extent, int) or not 0 <= extent < 1 << 63:
                raise _invalid(f"{what} must be an int from 0 to 2**63 - 1, "
                               f"got {extent!r:.40}")
        out = ctypes.c_uint64()
        check_norm(norm_lib().kfuse_norm_bytes(
            self._handle, codes, len(self.args), rows, cols,
            ctypes.byref(out)))
        return out.value

    def __call__(self, stream=None, **values):
        """Runs the norm once on the given tensors (outputs written).

        Tensors are contiguous CUDA tensors of one device: full tensors of
        any shape whose last dimension is cols (the first full argument
        sets rows and cols), per-row tensors of rows elements, per-column
        tensors of cols elements. Hyperparameters are numbers (or
        one-element tensors) and take the IR's default when omitted.
        `stream` is a torch.cuda.Stream or a raw CUstream handle (int); by
        default the current stream.
        """
        import torch

        args, rows, cols, device = self._pack(torch, values)
        if device.index is None or device.index == torch.cuda.current_device():
            # The raw handle of the current stream makes no Stream object.
            handle = (_current_stream(torch) if stream is None else
                      _stream_handle(torch, stream, device))
            check_norm(norm_lib().kfuse_norm_launch(
                self._handle, args, len(self.args), rows, cols, handle))
            return
        handle = _stream_handle(torch, stream, device)
        with torch.cuda.device(device):
            check_norm(norm_lib().kfuse_norm_launch(
                self._handle, args, len(self.args), rows, cols, handle))

    def _fill_hypers(self, torch, args, values):
        """Sets the hyperparameters of `args` from `values` (numbers or
        one-element tensors, by name), the IR's defaults where missing."""
        for index, name, default in self._hyper_slots:
            value = values.get(name)
            if value is None:
                if default is None:
                    raise _invalid(f"missing hyperparameter '{name}' (it has "
                                   "no default)")
                value = default
            args[index].value = hyper_value(name, value)

    def lean_launcher(self, order):
        """launch(rows, cols, *values): a launch on the current device's
        current stream for a caller that checks its arguments itself
        (kfuse.torch.nn), with `values` in the order of `order`.

        `order` names every argument of the norm once. A name takes a
        tensor, or a number for a hyperparameter; a tuple of k names takes
        one contiguous tensor of k equal parts, part i feeding name i (the
        row statistics in one allocation). Every tensor must be non-empty,
        contiguous, of a supported dtype and on the current CUDA device;
        behind this stand only the C API's size and dtype checks. Costs one
        struct.pack a call instead of __call__'s per-tensor checks, and
        keeps the GIL through the launch unless it has to compile.
        """
        import torch

        position = {name: i for i, name in enumerate(self._names)}
        roles = {a.name: a.role for a in self.args}
        named = [n for item in order
                 for n in (item if isinstance(item, tuple) else (item,))]
        unknown = [n for n in named if n not in position]
        if unknown or sorted(named) != sorted(self._names):
            raise _invalid(
                "a lean launcher names every argument once; got " +
                ", ".join(map(repr, named)) + " for " +
                ", ".join(map(repr, self._names)))
        count = len(self.args)
        layout = struct.Struct("<" + _ARG_LAYOUT * count)
        if layout.size != ctypes.sizeof(ArgStruct) * count:
            raise KfuseError("kfuse_arg is not laid out as "
                             f"{_ARG_LAYOUT!r} on this platform", "INTERNAL")
        # Straight-line code for this order (values v0, v1, ... in `order`'s
        # order; each argument's four kfuse_arg fields in argument order): a
        # loop over the values cost more than the launch's C side.
        fields = [["0", "0", str(F32), "0.0"] for _ in range(count)]
        lines, values = [], []
        for i, item in enumerate(order):
            value = f"v{i}"
            values.append(value)
            if isinstance(item, tuple):
                lines.append(f"    p{i} = {value}.data_ptr()\n"
                             f"    c{i} = codes[{value}.dtype]\n"
                             f"    n{i} = {value}.numel() // {len(item)}\n"
                             f"    s{i} = n{i} * {value}.element_size()\n")
                for part, name in enumerate(item):
                    fields[position[name]] = [
                        f"p{i} + {part} * s{i}" if part else f"p{i}",
                        f"n{i}", f"c{i}", "0.0"]
            elif roles[item] == "hyper":
                fields[position[item]][3] = value
            else:
                fields[position[item]] = [
                    f"{value}.data_ptr()", f"{value}.numel()",
                    f"codes[{value}.dtype]", "0.0"]
        source = (
            f"def launch(rows, cols, {', '.join(values)}):\n" +
            "".join(lines) +
            "    packed = pack(" + ", ".join(f for arg in fields for f in arg) +
            ")\n"
            "    stream = current_stream()\n"
            f"    status = if_ready(handle, packed, {count}, rows, cols, "
            "stream)\n"
            "    if status != OK:\n"
            "        if status == NOT_READY:\n"
            f"            status = compiling(handle, packed, {count}, rows, "
            "cols, stream)\n"
            "        if status != OK:\n"
            "            check_norm(status)\n")
        if_ready, compiling = _packed_launch_functions()
        namespace = {
            # The Norm stays alive with its launcher (its handle with it).
            "norm": self, "if_ready": if_ready, "compiling": compiling,
            "NOT_READY": NOT_READY, "handle": self._handle,
            "pack": layout.pack, "codes": _torch_dtype_codes(torch),
            "current_stream": _current_stream_function(torch), "OK": OK,
            "check_norm": check_norm}
        exec(compile(source, f"<kfuse lean launcher of {self.source}>", "exec"),
             namespace)
        return namespace["launch"]

    def compile(self, **values):
        """Compiles what a call with these arguments would run, without
        running it (a warm-up): {"cache": "miss" | "hit-memory" |
        "hit-disk", "ms": wall time}. Safe to call from several threads."""
        import torch

        args, rows, cols, device = self._pack(torch, values)
        info = CompileInfoStruct()
        with torch.cuda.device(device):
            check_norm(compile_lib().kfuse_norm_compile(
                self._handle, args, len(self.args), rows, cols,
                ctypes.byref(info)))
        return {"cache": CACHE_SOURCES[info.cache], "ms": info.ms}

    def _pack(self, torch, values):
        """The C arguments for `values`, rows, cols and the device."""
        # Kept lean: this runs once per launch, and a forward over 64K rows
        # of 1024 bf16 takes only ~70 us on the GPU.
        if not self._name_set.issuperset(values):
            unknown = sorted(set(values) - self._name_set)
            raise _invalid("unknown argument(s) " + ", ".join(
                repr(u) for u in unknown) + "; the norm takes " +
                ", ".join(self._names))
        codes = _torch_dtype_codes(torch)
        tensor_type = torch.Tensor
        args = (ArgStruct * len(self.args))()
        rows = cols = None
        shaped_by = device = None
        for index, name, level in self._tensor_slots:
            value = values.get(name)
            if value is None:
                raise _invalid(f"missing tensor '{name}'")
            if not isinstance(value, tensor_type):
                raise _invalid(f"'{name}' must be a torch.Tensor, got "
                               f"{type(value).__name__}")
            if level == "element":
                if value.dim() == 0:
                    raise _invalid(f"tensor '{name}' is 0-dimensional; a "
                                   "full tensor needs a last dimension "
                                   "(cols)")
                last = value.shape[-1]
                if cols is None:
                    cols, shaped_by = last, name
                    rows = value.numel() // cols if cols else 0
                elif last != cols:
                    raise _invalid(f"tensor '{name}' has last dimension "
                                   f"{last} but '{shaped_by}' has {cols}")
            device = check_device_tensor(torch, value, f"tensor '{name}'",
                                         device, "earlier tensors")
            code = codes.get(value.dtype)
            if code is None:
                raise _invalid(f"tensor '{name}' has unsupported dtype "
                               f"{value.dtype} (float32, bfloat16 or "
                               "float16)")
            arg = args[index]
            arg.data = value.data_ptr() or None
            arg.numel = value.numel()
            arg.dtype = code
        if cols is None:
            # No full tensor: rows and cols from the per-row and per-column
            # tensors.
            for _, name, level in self._tensor_slots:
                if level == "row" and rows is None:
                    rows = values[name].numel()
                elif level == "column" and cols is None:
                    cols = values[name].numel()
            if rows is None or cols is None:
                raise _invalid("cannot tell rows and cols from the "
                               "arguments of this norm")
        self._fill_hypers(torch, args, values)
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        return args, rows, cols, device


#
# The library norms and functional helpers over them.
#

_LIBRARY_LOCK = threading.Lock()
_LIBRARY_NORMS = {}


def norm_library_dir():
    """The folder of the library's norm functions (see _capi.library_dir)."""
    return library_dir("norm")


def library_norm(name):
    """The library norm `name` ("layernorm_fwd", ...), parsed once."""
    norm = _LIBRARY_NORMS.get(name)  # no lock once parsed: every launch asks
    if norm is not None:
        return norm
    with _LIBRARY_LOCK:
        norm = _LIBRARY_NORMS.get(name)
        if norm is None:
            path = norm_library_dir() / f"{name}.mlir"
            if not path.is_file():
                raise _invalid(f"no library norm '{name}' ({path})")
            norm = Norm(str(path))
            _LIBRARY_NORMS[name] = norm
        return norm


def _full(torch, tensor, name):
    if not isinstance(tensor, torch.Tensor):
        raise _invalid(f"'{name}' must be a torch.Tensor, got "
                       f"{type(tensor).__name__}")
    if tensor.dim() == 0:
        raise _invalid(f"tensor '{name}' is 0-dimensional; the norm runs "
                       "over its last dimension")
    return tensor.contiguous()


def _column(torch, tensor, like, fill, name):
    """A per-column tensor; `fill` (ones or zeros, float32) when None."""
    if tensor is None:
        make = torch.ones if fill == 1 else torch.zeros
        return make(like.shape[-1], device=like.device, dtype=torch.float32)
    if not isinstance(tensor, torch.Tensor):
        raise _invalid(f"'{name}' must be a torch.Tensor, got "
                       f"{type(tensor).__name__}")
    return tensor.contiguous()


def _row_stats(torch, x):
    return torch.empty(x.shape[:-1], device=x.device, dtype=torch.float32)


def layer_norm_fwd(x, weight=None, bias=None, eps=1e-5, stream=None):
    """LayerNorm over the last dimension of x, as F.layer_norm: returns
    (y, mean, rstd), y in x's dtype, mean and rstd float32 of shape
    x.shape[:-1] (rstd = 1 / sqrt(biased variance + eps)). weight and bias
    (cols elements, any supported dtype) default to ones and zeros."""
    import torch

    x = _full(torch, x, "x")
    weight = _column(torch, weight, x, 1, "weight")
    bias = _column(torch, bias, x, 0, "bias")
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    mean, rstd = _row_stats(torch, x), _row_stats(torch, x)
    library_norm("layernorm_fwd")(stream=stream, x=x, weight=weight,
                                  bias=bias, y=y, mean=mean, rstd=rstd,
                                  eps=eps)
    return y, mean, rstd


def layer_norm_bwd(dy, x, mean, rstd, weight=None, stream=None):
    """LayerNorm backward from the saved statistics: returns (dx, dweight,
    dbias), dx in x's dtype, dweight and dbias in weight's dtype and shape
    (float32 when weight is None, i.e. ones)."""
    import torch

    x = _full(torch, x, "x")
    dy = _full(torch, dy, "dy")
    weight = _column(torch, weight, x, 1, "weight")
    dx = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format)
    dbias = torch.empty_like(weight, memory_format=torch.contiguous_format)
    library_norm("layernorm_bwd")(stream=stream, dy=dy, x=x,
                                  mean=mean.contiguous(),
                                  rstd=rstd.contiguous(), weight=weight,
                                  dx=dx, dweight=dweight, dbias=dbias)
    return dx, dweight, dbias


def rms_norm_fwd(x, weight=None, eps=1e-6, stream=None):
    """RMSNorm over the last dimension of x, as F.rms_norm with an explicit
    eps: returns (y, rstd), y in x's dtype, rstd float32 of shape
    x.shape[:-1]. weight defaults to ones."""
    import torch

    x = _full(torch, x, "x")
    weight = _column(torch, weight, x, 1, "weight")
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    rstd = _row_stats(torch, x)
    library_norm("rmsnorm_fwd")(stream=stream, x=x, weight=weight, y=y,
                                rstd=rstd, eps=eps)
    return y, rstd


def rms_norm_bwd(dy, x, rstd, weight=None, stream=None):
    """RMSNorm backward from the saved rstd: returns (dx, dweight), dx in
    x's dtype, dweight in weight's dtype and shape."""
    import torch

    x = _full(torch, x, "x")
    dy = _full(torch, dy, "dy")
    weight = _column(torch, weight, x, 1, "weight")
    dx = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format)
    library_norm("rmsnorm_bwd")(stream=stream, dy=dy, x=x,
                                rstd=rstd.contiguous(), weight=weight, dx=dx,
                                dweight=dweight)
    return dx, dweight


def add_layer_norm_fwd(x, residual, weight=None, bias=None, eps=1e-5,
                       stream=None):
    """h = x + residual; y = layer_norm(h), in one pass: returns (h, y,
    mean, rstd), h in residual's dtype (the residual stream keeps its
    precision), y in x's dtype, mean and rstd float32."""
    import torch

    x = _full(torch, x, "x")
    residual = _full(torch, residual, "residual")
    weight = _column(torch, weight, x, 1, "weight")
    bias = _column(torch, bias, x, 0, "bias")
    h = torch.empty(residual.shape, device=x.device, dtype=residual.dtype)
    y = torch.empty(x.shape, device=x.device, dtype=x.dtype)
    mean, rstd = _row_stats(torch, x), _row_stats(torch, x)
    library_norm("add_layernorm_fwd")(stream=stream, x=x, residual=residual,
                                      weight=weight, bias=bias, h=h, y=y,
                                      mean=mean, rstd=rstd, eps=eps)
    return h, y, mean, rstd
