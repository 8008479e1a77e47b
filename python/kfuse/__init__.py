"""kfuse: fused optimizer updates compiled at run time.

    import kfuse
    adamw = kfuse.Update("library/optim/adamw.mlir")
    adamw(param=p, grad=g, exp_avg=m, exp_avg_sq=v, lr=1e-3, step=1)

    # A whole parameter list in one launch a step (see _multi_tensor.py):
    opt = kfuse.multi_tensor(adamw, params=ps, states={"exp_avg": ms,
                             "exp_avg_sq": vs}, lr=1e-3)
    opt.step()

Tensors are PyTorch CUDA tensors; PyTorch is imported only when an update is
called.
"""

import ctypes

from ._capi import CACHE_SOURCES, CompileInfoStruct, compile_lib  # noqa: F401
from ._capi import F32, BF16, F16
from ._capi import ArgStruct
from ._capi import KfuseError, check, hyper_value, lib, library_dir
from ._checks import check_device_tensor, check_per_tensor
from ._kernel import ArgInfo, Kernel
from ._version import __version__

__all__ = ["__version__", "Kernel", "Update", "ArgInfo", "KfuseError",
           "MultiTensorUpdate", "multi_tensor", "device_arch", "library_path",
           "library_dir", "doctor",
           "Norm", "norm_library_dir", "library_norm",
           "layer_norm_fwd", "layer_norm_bwd", "rms_norm_fwd", "rms_norm_bwd",
           "add_layer_norm_fwd"]

def library_path():
    """The path of the loaded libkfuse.so."""
    return lib()._name


def device_arch():
    """The current CUDA device's arch, e.g. "sm_90"."""
    buf = ctypes.create_string_buffer(32)
    check(lib().kfuse_device_arch(buf, len(buf)))
    return buf.value.decode()


def _dtype_code(torch, tensor, name):
    codes = {torch.float32: F32, torch.bfloat16: BF16, torch.float16: F16}
    if tensor.dtype not in codes:
        raise KfuseError(
            f"tensor '{name}' has unsupported dtype {tensor.dtype} "
            "(float32, bfloat16 or float16)", "INVALID_ARGUMENT")
    return codes[tensor.dtype]


class Update(Kernel):
    """One update, parsed from a .mlir file path or from IR text."""

    kind = "update"

    def __init__(self, path_or_text, name=None):
        # Kernel.__new__ parsed the source; the update handle is the kernel's.
        handle = ctypes.c_void_p(self._kind_handle())
        self._handle = handle
        self.args = self._read_args()
        self._names = [arg.name for arg in self.args]
        # 2-D (params as matrices, states per row or per column): it runs
        # as a multi-tensor plan only, given each param's row length.
        is_matrix = getattr(lib(), "kfuse_update_is_matrix", None)
        self.is_matrix = bool(is_matrix(handle)) if is_matrix else False
        # A row length fixed by the argument types (tensor<?x256xf32>): its
        # plans take tensors of any shape whose size is a multiple of it,
        # as rows of it (blocks of a block-wise scheme); 0 when none.
        row_length = getattr(lib(), "kfuse_update_row_length", None)
        self.row_length = int(row_length(handle)) if row_length else 0

    def __repr__(self):
        return "kfuse.Update(" + ", ".join(
            f"{a.name}: {a.role}" + (" per tensor" if a.level == "tensor"
                                     else "") for a in self.args) + ")"

    def __call__(self, stream=None, fuse=True, **values):
        """Runs the update once in place on the given tensors.

        Tensor arguments are contiguous CUDA tensors of one device and size,
        but for per-tensor states (ArgInfo.level "tensor"): one-element
        float32 tensors; hyperparameters are numbers (or one-element tensors) and take the
        IR's default when omitted. `stream` is a torch.cuda.Stream or a raw
        CUstream handle (int); by default the current stream.
        """
        import torch

        if self.is_matrix:
            raise KfuseError(
                f"{self!r} is a 2-D update: it runs over a list of params "
                "with kfuse.multi_tensor, whose plan gives each param its row "
                "length, not as a launch over one tensor", "INVALID_ARGUMENT")
        args, device = self._pack(values)
        with torch.cuda.device(device):
            if stream is None:
                stream = torch.cuda.current_stream(device)
            raw = stream.cuda_stream if hasattr(stream, "cuda_stream") else stream
            check(lib().kfuse_update_launch(self._handle, args, len(self.args),
                                            ctypes.c_void_p(raw or None),
                                            1 if fuse else 0))

    def compile(self, fuse=True, **values):
        """Compiles what a call with these arguments would run, without
        running it (a warm-up): {"cache": "miss" | "hit-memory" |
        "hit-disk", "ms": wall time}. Safe to call from several threads;
        different kernels compile in parallel."""
        import torch

        args, device = self._pack(values)
        info = CompileInfoStruct()
        with torch.cuda.device(device):
            check(compile_lib().kfuse_update_compile(
                self._handle, args, len(self.args), 1 if fuse else 0,
                ctypes.byref(info)))
        return {"cache": CACHE_SOURCES[info.cache], "ms": info.ms}

    def _pack(self, values):
        """The C arguments for `values`, and the tensors' device."""
        import torch

        unknown = sorted(set(values) - set(self._names))
        if unknown:
            raise KfuseError(
                "unknown argument(s) " + ", ".join(repr(u) for u in unknown) +
                "; the update takes " + ", ".join(self._names),
                "INVALID_ARGUMENT")
        args = (ArgStruct * len(self.args))()
        device = None
        for index, info in enumerate(self.args):
            value = values.get(info.name)
            if info.role == "hyper":
                if value is None:
                    if info.default is None:
                        raise KfuseError(
                            f"missing hyperparameter '{info.name}' (it has no "
                            "default)", "INVALID_ARGUMENT")
                    value = info.default
                args[index].data = None
                args[index].numel = 0
                args[index].dtype = F32
                args[index].value = hyper_value(info.name, value)
                continue
            if value is None:
                raise KfuseError(f"missing tensor '{info.name}'",
                                 "INVALID_ARGUMENT")
            device = check_device_tensor(torch, value,
                                         f"tensor '{info.name}'", device,
                                         "earlier tensors")
            if info.level == "tensor":
                check_per_tensor(torch, value, f"tensor '{info.name}'")
            args[index].data = value.data_ptr() or None
            args[index].numel = value.numel()
            args[index].dtype = _dtype_code(torch, value, info.name)
            args[index].value = 0.0
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device())
        return args, device


from ._multi_tensor import MultiTensorUpdate, multi_tensor  # noqa: E402
from ._norm import Norm, norm_library_dir, library_norm  # noqa: E402
from ._norm import layer_norm_fwd, layer_norm_bwd, rms_norm_fwd  # noqa: E402
from ._norm import rms_norm_bwd, add_layer_norm_fwd  # noqa: E402
from ._doctor import doctor  # noqa: E402


def warmup(calls, threads=0):
    """Compiles many updates and norms at once, on `threads` worker threads
    (0: one per CPU), without running them. `calls` holds (update or norm,
    keyword arguments as for calling it) pairs; an update also takes
    `fuse`. All tensors must be on one device. Raises KfuseError naming the
    first call that failed."""
    import torch

    from ._capi import WarmupJobStruct
    from ._norm import Norm

    calls = list(calls)
    jobs = (WarmupJobStruct * len(calls))()
    keep, device = [], None
    for job, (target, values) in zip(jobs, calls):
        values = dict(values)
        if isinstance(target, Norm):
            args, rows, cols, where = target._pack(torch, values)
            job.norm, job.rows, job.cols = target._handle, rows, cols
        elif isinstance(target, Update):
            fuse = values.pop("fuse", True)
            args, where = target._pack(values)
            job.update, job.fuse = target._handle, 1 if fuse else 0
        else:
            raise KfuseError("warmup takes (Update or Norm, arguments) pairs, "
                             f"got {type(target).__name__}",
                             "INVALID_ARGUMENT")
        if device is None:
            device = where
        elif where != device:
            raise KfuseError(f"warmup calls on {device} and {where}; warm "
                             "up one device at a time", "INVALID_ARGUMENT")
        job.args, job.nargs = args, len(target.args)
        keep.append(args)
    if not calls:
        return
    with torch.cuda.device(device):
        check(compile_lib().kfuse_warmup(jobs, len(calls), threads, None))


def _capi_alive():
    # At interpreter exit the module globals may already be gone.
    try:
        return lib is not None and lib() is not None
    except Exception:
        return False
