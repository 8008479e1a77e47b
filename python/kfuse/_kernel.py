"""kfuse.Kernel: any kernel source, an update or a norm, parsed once.

kfuse.Kernel(path_or_text) makes the object of the kind the source holds
(a kfuse.Update or a kfuse.Norm, both Kernels); kfuse.Update(...) and
kfuse.Norm(...) take only their own kind. Each holds one kfuse_kernel handle
of the C API and uses the update or norm handle inside it.
"""

from ._capi import lib, open_kernel


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

    def __del__(self):
        handle = getattr(self, "_kernel", None)
        if handle:
            try:
                lib().kfuse_kernel_destroy(handle)
            except Exception:  # noqa: BLE001 - interpreter exit
                pass
            self._kernel = None
