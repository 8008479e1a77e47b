"""kfuse.Kernel: any kernel source, an update or a norm, parsed once.

kfuse.Kernel(path_or_text) makes the object of the kind the source holds
(a kfuse.Update or a kfuse.Norm, both Kernels); kfuse.Update(...) and
kfuse.Norm(...) take only their own kind. Each holds one kfuse_kernel handle
of the C API and uses the update or norm handle inside it.
"""

from collections import namedtuple
import ctypes

from ._capi import ArgInfoStruct, LEVEL_NAMES, ROLE_NAMES, check, lib
from ._capi import open_kernel

# One argument of any kernel. role: param, grad, state, hyper, model (an
# update's) or input, output, hyper (a norm's). level: "element" (a tensor
# of the param's shape, a norm's full tensors; hypers too), "tensor" (an
# update's state of one f32 per tensor: each call or tensor group passes a
# one-element float32 tensor), "row" or "column" (one value per row or per
# column: a 2-D update's factored states, a norm's row statistics and its
# weights).
ArgInfo = namedtuple("ArgInfo", ["name", "role", "default", "level"],
                     defaults=("element",))


class Kernel:
    """A parsed kernel source; `kind` is "update" or "norm"."""

    kind = None  # set by the subclasses

    def __new__(cls, path_or_text, name=None):
        handle, kind, source = open_kernel(path_or_text, name, cls.kind)
        if cls is Kernel:
            from . import Update, Norm  # the kinds, defined after this base
            cls = Update if kind == "update" else Norm
        self = object.__new__(cls)
        self._kernel = handle
        self._source = source
        return self

    def _kind_handle(self):
        """The kfuse_update or kfuse_norm handle of this kernel's kind."""
        if self.kind == "update":
            return lib().kfuse_kernel_update(self._kernel)
        return lib().kfuse_kernel_norm(self._kernel)

    def _read_args(self):
        """The kernel's arguments as ArgInfo, in call order."""
        args = []
        for index in range(lib().kfuse_kernel_num_args(self._kernel)):
            info = ArgInfoStruct()
            check(lib().kfuse_kernel_arg_info(self._kernel, index,
                                              ctypes.byref(info)))
            default = info.default_value if info.has_default else None
            args.append(ArgInfo(info.name.decode(), ROLE_NAMES[info.role],
                                default,
                                LEVEL_NAMES.get(info.level, "element")))
        return args

    def __del__(self):
        handle = getattr(self, "_kernel", None)
        if handle:
            try:
                lib().kfuse_kernel_destroy(handle)
            except Exception:  # noqa: BLE001 - interpreter exit
                pass
            self._kernel = None
