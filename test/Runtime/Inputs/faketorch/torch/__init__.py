"""A stand-in for the few torch APIs kfuse's Python layer touches, so that
CPU tests drive the tensor paths (argument packing, launches, compiles) down
to the C API without PyTorch or a GPU. Tensors carry fake device addresses
that nothing dereferences: with no driver every call stops at NO_DRIVER."""

import contextlib


class dtype:  # noqa: N801 - torch's name
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", 4)
bfloat16 = dtype("bfloat16", 2)
float16 = dtype("float16", 2)
float64 = dtype("float64", 8)


class device:  # noqa: N801
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __repr__(self):
        return f"{self.type}:{self.index}"


_next_address = [0x10000000]


class Tensor:
    def __init__(self, *shape, dtype=float32, contiguous=True):
        self.shape, self.dtype, self._contiguous = shape, dtype, contiguous
        self.device = device("cuda", 0)
        self.is_cuda = True
        count = 1
        for size in shape:
            count *= size
        self._numel = count
        self._address = _next_address[0]
        _next_address[0] += (count * dtype.size + 255) // 256 * 256 + 256

    def numel(self):
        return self._numel

    def dim(self):
        return len(self.shape)

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._address if self._numel else 0

    def element_size(self):
        return self.dtype.size

    def item(self):
        raise TypeError("a fake tensor has no value")


def empty(*shape, dtype=float32):
    return Tensor(*shape, dtype=dtype)


class _Cuda:
    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def current_stream(where=None):
        return None

    @staticmethod
    @contextlib.contextmanager
    def device(where):
        yield


cuda = _Cuda()
