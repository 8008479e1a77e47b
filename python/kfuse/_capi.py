"""ctypes bindings of runtime/kfuse.h."""

import ctypes
import os
import pathlib
import sys

OK = 0
STATUS_NAMES = {
    0: "OK",
    1: "INVALID_ARGUMENT",
    2: "PARSE",
    3: "COMPILE",
    4: "NO_DRIVER",
    5: "NO_DEVICE",
    6: "LAUNCH",
    7: "INTERNAL",
    8: "NOT_READY",
}

F32, BF16, F16 = 0, 1, 2
ROLE_NAMES = {0: "param", 1: "grad", 2: "state", 3: "hyper", 4: "model",
              5: "input", 6: "output"}
# kfuse_arg_info.level: a tensor of the param's shape, one f32 per tensor (a
# per-tensor state such as NovoGrad's running grad norm), or in a 2-D update
# one value per row or per column (Adafactor's factored second moment).
LEVEL_NAMES = {0: "element", 1: "tensor", 2: "row", 3: "column"}
KIND_NAMES = {0: "update", 1: "norm"}


class KfuseError(RuntimeError):
    """A failure reported by libkfuse; `status` names its category."""

    def __init__(self, message, status="INTERNAL"):
        super().__init__(message)
        self.status = status


class ArgInfoStruct(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("role", ctypes.c_int32),
        ("has_default", ctypes.c_int32),
        ("default_value", ctypes.c_double),
        # Absent from libraries before per-tensor states: they leave it 0.
        ("level", ctypes.c_int32),
    ]


class HostArgStruct(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.POINTER(ctypes.c_double)),
        ("numel", ctypes.c_int64),
        ("dtype", ctypes.c_int32),
        ("value", ctypes.c_double),
    ]


class CompileInfoStruct(ctypes.Structure):
    _fields_ = [("cache", ctypes.c_int32), ("ms", ctypes.c_double)]


class ArgStruct(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("numel", ctypes.c_int64),
        ("dtype", ctypes.c_int32),
        ("value", ctypes.c_double),
    ]


def _candidates():
    env = os.environ.get("KFUSE_LIBRARY")
    if env:
        yield pathlib.Path(env)
        return
    here = pathlib.Path(__file__).resolve().parent
    yield here / "libkfuse.so"  # the wheel's
    # python/kfuse/ in a checkout: the repository's build/lib.
    yield here.parent.parent / "build" / "lib" / "libkfuse.so"


_NVRTC = "libnvrtc.so.13"


def _nvrtc_candidates():
    """Where libnvrtc may be when the loader does not find it: the CUDA
    toolkit, then the nvidia-cuda-nvrtc wheel that PyTorch's CUDA wheels
    install (nvidia/cu13/lib, or nvidia/cuda_nvrtc/lib) on sys.path."""
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            yield pathlib.Path(os.environ[env]) / "lib64" / _NVRTC
    yield pathlib.Path("/usr/local/cuda/lib64") / _NVRTC
    for entry in sys.path:
        nvidia = pathlib.Path(entry or ".") / "nvidia"
        if nvidia.is_dir():
            yield from sorted(nvidia.glob(f"*/lib/{_NVRTC}"))


def _preload_nvrtc():
    """Loads libnvrtc (RTLD_GLOBAL) where the loader alone would not find
    it, so that libkfuse.so's dependency resolves; quiet when it fails (the
    load of libkfuse.so then says what is missing)."""
    try:
        ctypes.CDLL(_NVRTC, mode=ctypes.RTLD_GLOBAL)
        return
    except OSError:
        pass
    for path in _nvrtc_candidates():
        if path.is_file():
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def loaded_path(name):
    """The file of the shared library `name` (e.g. "libnvrtc.so") this
    process has mapped, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith(name):
                    return path
    except OSError:
        pass
    return None


def _load():
    tried = []
    _preload_nvrtc()
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            try:
                return ctypes.CDLL(str(path))
            except OSError as error:
                hint = ("; install the CUDA 13 toolkit or PyTorch's "
                        "nvidia-cuda-nvrtc wheel, or set CUDA_HOME"
                        if "libnvrtc" in str(error) else "")
                raise KfuseError(
                    f"cannot load libkfuse from {path}: {error}{hint}",
                    "NO_DRIVER") from error
    raise KfuseError(
        "libkfuse.so not found (set KFUSE_LIBRARY); tried: " + ", ".join(tried),
        "INTERNAL",
    )


def library_dir(kind=None):
    """kfuse's IR library (the folder holding optim/ and norm/), or its
    `kind` subfolder: $KFUSE_LIBRARY_DIR, else the wheel's copy beside the
    package, else library/ in the checkout holding python/kfuse."""
    here = pathlib.Path(__file__).resolve().parent
    env = os.environ.get("KFUSE_LIBRARY_DIR")
    candidates = ([pathlib.Path(env)] if env else
                  [here / "library", here.parent.parent / "library"])
    for root in candidates:
        if (root / (kind or "optim")).is_dir():
            return root / kind if kind else root
    raise KfuseError(
        f"kfuse's IR library{' (' + kind + '/)' if kind else ''} not found "
        "(set KFUSE_LIBRARY_DIR to the folder holding optim/ and norm/); "
        "tried: " + ", ".join(str(c) for c in candidates), "INVALID_ARGUMENT")


_lib = None


def lib():
    """The loaded library, with argument types declared (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    handle = _load()
    status = ctypes.c_int
    update_p = ctypes.c_void_p
    handle.kfuse_update_create.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(update_p)]
    handle.kfuse_update_create.restype = status
    handle.kfuse_update_create_from_file.argtypes = [
        ctypes.c_char_p, ctypes.POINTER(update_p)]
    handle.kfuse_update_create_from_file.restype = status
    handle.kfuse_update_destroy.argtypes = [update_p]
    handle.kfuse_update_destroy.restype = None
    handle.kfuse_update_num_args.argtypes = [update_p]
    handle.kfuse_update_num_args.restype = ctypes.c_size_t
    handle.kfuse_update_arg_info.argtypes = [
        update_p, ctypes.c_size_t, ctypes.POINTER(ArgInfoStruct)]
    handle.kfuse_update_arg_info.restype = status
    handle.kfuse_update_launch.argtypes = [
        update_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t, ctypes.c_void_p,
        ctypes.c_int]
    handle.kfuse_update_launch.restype = status
    plan_p = ctypes.c_void_p
    kernel_p = ctypes.c_void_p
    u64 = ctypes.c_uint64
    signatures = {
        "kfuse_plan_create": (status, [
            update_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(plan_p)]),
        "kfuse_plan_create_matrix": (status, [
            update_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
            ctypes.POINTER(plan_p)]),
        "kfuse_update_is_matrix": (ctypes.c_int, [update_p]),
        "kfuse_update_row_length": (ctypes.c_int64, [update_p]),
        "kfuse_plan_destroy": (None, [plan_p]),
        "kfuse_plan_step": (status, [plan_p, ctypes.c_void_p]),
        "kfuse_plan_step_phases": (status, [
            plan_p, ctypes.c_int, ctypes.c_void_p]),
        "kfuse_plan_rebind": (status, [
            plan_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
            ctypes.c_void_p]),
        "kfuse_plan_matches": (ctypes.c_int, [
            plan_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_size_t]),
        "kfuse_plan_set_hyper": (status, [
            plan_p, ctypes.c_char_p, ctypes.c_double]),
        "kfuse_plan_set_hyper_async": (status, [
            plan_p, ctypes.c_char_p, ctypes.c_double, ctypes.c_void_p]),
        "kfuse_plan_get_hyper": (status, [
            plan_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_double)]),
        "kfuse_plan_hyper_pointer": (status, [
            plan_p, ctypes.c_char_p, ctypes.POINTER(u64)]),
        "kfuse_plan_found_inf_pointer": (status, [
            plan_p, ctypes.POINTER(u64)]),
        "kfuse_plan_bind_hypers": (status, [
            plan_p, u64, ctypes.c_size_t, ctypes.c_void_p]),
        "kfuse_plan_bind_found_inf": (status, [plan_p, u64]),
        "kfuse_plan_total_slot": (status, [
            plan_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_size_t)]),
        "kfuse_plan_bind_totals": (status, [plan_p, u64, ctypes.c_size_t]),
        "kfuse_plan_num_args": (ctypes.c_size_t, [plan_p]),
        "kfuse_plan_arg_info": (status, [
            plan_p, ctypes.c_size_t, ctypes.POINTER(ArgInfoStruct)]),
        "kfuse_plan_num_launches": (ctypes.c_size_t, [plan_p]),
        "kfuse_plan_num_launches_in": (ctypes.c_size_t,
                                       [plan_p, ctypes.c_int]),
        "kfuse_plan_num_chunks": (ctypes.c_int64, [plan_p]),
        "kfuse_plan_bytes_per_step": (status, [plan_p, ctypes.POINTER(u64)]),
        "kfuse_version": (ctypes.c_char_p, []),
        "kfuse_nvrtc_version": (status, [ctypes.POINTER(ctypes.c_int)] * 2),
        "kfuse_driver_version": (status, [ctypes.POINTER(ctypes.c_int)]),
        "kfuse_update_compile_for_arch": (status, [
            update_p, ctypes.c_char_p, ctypes.c_int,
            ctypes.POINTER(CompileInfoStruct)]),
        "kfuse_update_interpret": (status, [
            update_p, ctypes.POINTER(HostArgStruct), ctypes.c_size_t]),
        "kfuse_update_interpret_matrix": (status, [
            update_p, ctypes.POINTER(HostArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64]),
        "kfuse_kernel_create": (status, [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(kernel_p)]),
        "kfuse_kernel_create_from_file": (status, [
            ctypes.c_char_p, ctypes.POINTER(kernel_p)]),
        "kfuse_kernel_destroy": (None, [kernel_p]),
        "kfuse_kernel_get_kind": (ctypes.c_int, [kernel_p]),
        "kfuse_kernel_num_args": (ctypes.c_size_t, [kernel_p]),
        "kfuse_kernel_arg_info": (status, [
            kernel_p, ctypes.c_size_t, ctypes.POINTER(ArgInfoStruct)]),
        "kfuse_kernel_update": (ctypes.c_void_p, [kernel_p]),
        "kfuse_kernel_norm": (ctypes.c_void_p, [kernel_p]),
        "kfuse_kernel_launch": (status, [
            kernel_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]),
        "kfuse_kernel_compile": (status, [
            kernel_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64,
            ctypes.POINTER(CompileInfoStruct)]),
    }
    # An older library (KFUSE_LIBRARY) still serves what it has.
    handle.kfuse_missing = []
    for name, (restype, argtypes) in signatures.items():
        try:
            function = getattr(handle, name)
        except AttributeError:
            handle.kfuse_missing.append(name)
            continue
        function.restype = restype
        function.argtypes = argtypes
    handle.kfuse_device_arch.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    handle.kfuse_device_arch.restype = status
    handle.kfuse_last_error.argtypes = []
    handle.kfuse_last_error.restype = ctypes.c_char_p
    _lib = handle
    return _lib


def check(status):
    """Raises KfuseError with the library's message unless `status` is OK."""
    if status == OK:
        return
    message = lib().kfuse_last_error()
    raise KfuseError(
        message.decode("utf-8", "replace") if message else "unknown error",
        STATUS_NAMES.get(status, str(status)),
    )


_logged = set()


def log_info(message):
    """Writes "kfuse: <message>" to stderr once per process where
    KFUSE_LOG=info, as the native runtime logs its compiles."""
    if os.environ.get("KFUSE_LOG") != "info" or message in _logged:
        return
    _logged.add(message)
    print(f"kfuse: {message}", file=sys.stderr, flush=True)


def read_source(path_or_text, default_name, what):
    """(text, name) when `path_or_text` is IR text, else (None, path) for a
    file: a str holding IR (a newline or "func.func") or a path, or any
    os.PathLike. Anything else, or a missing file, is a KfuseError."""
    if isinstance(path_or_text, os.PathLike):
        path_or_text = os.fspath(path_or_text)
        if isinstance(path_or_text, bytes):
            path_or_text = os.fsdecode(path_or_text)
    elif not isinstance(path_or_text, str):
        raise KfuseError(
            f"kfuse.{what.capitalize()} takes a path or IR text, got "
            f"{type(path_or_text).__name__}", "INVALID_ARGUMENT")
    elif "\n" in path_or_text or "func.func" in path_or_text:
        return path_or_text, default_name
    if not os.path.isfile(path_or_text):
        raise KfuseError(f"no such {what} file '{path_or_text}'",
                         "INVALID_ARGUMENT")
    return None, path_or_text


def hyper_value(name, value):
    """`value` (a real number, or a one-element tensor) as the float the C
    API takes for hyperparameter `name`; a KfuseError naming it otherwise."""
    if hasattr(value, "numel") and hasattr(value, "item"):
        if value.numel() != 1:
            raise KfuseError(
                f"hyperparameter '{name}' must be a number or a one-element "
                f"tensor, got a tensor of {value.numel()} elements",
                "INVALID_ARGUMENT")
        value = value.item()
    if isinstance(value, (str, bytes, complex)) or not hasattr(
            value, "__float__"):
        raise KfuseError(
            f"hyperparameter '{name}' must be a real number, got "
            f"{type(value).__name__} {value!r:.40}", "INVALID_ARGUMENT")
    try:
        return float(value)
    except (OverflowError, ValueError, TypeError) as error:
        raise KfuseError(
            f"hyperparameter '{name}' = {value!r:.40} is not a float: {error}",
            "INVALID_ARGUMENT") from None


# Norms (the kfuse_norm_* functions of runtime/kfuse.h): declared on first
# use, so that a library from before norms still serves updates.
def norm_lib():
    """lib() with the kfuse_norm_* prototypes declared."""
    handle = lib()
    if getattr(handle, "kfuse_norm_declared", False):
        return handle
    status = ctypes.c_int
    norm_p = ctypes.c_void_p
    signatures = {
        "kfuse_norm_create": (status, [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(norm_p)]),
        "kfuse_norm_create_from_file": (status, [
            ctypes.c_char_p, ctypes.POINTER(norm_p)]),
        "kfuse_norm_destroy": (None, [norm_p]),
        "kfuse_norm_num_launches": (ctypes.c_size_t, [norm_p]),
        "kfuse_norm_launch": (status, [
            norm_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]),
        "kfuse_norm_launch_if_ready": (status, [
            norm_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]),
        "kfuse_norm_bytes": (status, [
            norm_p, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_uint64)]),
    }
    for name, (restype, argtypes) in signatures.items():
        try:
            function = getattr(handle, name)
        except AttributeError:
            raise KfuseError(
                f"{handle._name} has no norm support (it lacks {name}); "
                "rebuild libkfuse", "INTERNAL") from None
        function.restype = restype
        function.argtypes = argtypes
    handle.kfuse_norm_declared = True
    return handle


def check_norm(status):
    """check() for kfuse_norm_* calls (declares them first)."""
    norm_lib()
    check(status)


CACHE_SOURCES = {0: "miss", 1: "hit-memory", 2: "hit-disk"}


class WarmupJobStruct(ctypes.Structure):
    _fields_ = [
        ("update", ctypes.c_void_p),
        ("norm", ctypes.c_void_p),
        ("args", ctypes.POINTER(ArgStruct)),
        ("nargs", ctypes.c_size_t),
        ("rows", ctypes.c_int64),
        ("cols", ctypes.c_int64),
        ("fuse", ctypes.c_int),
    ]


def compile_lib():
    """norm_lib() with the compile and warm-up prototypes declared."""
    handle = norm_lib()
    if getattr(handle, "kfuse_compile_declared", False):
        return handle
    status = ctypes.c_int
    signatures = {
        "kfuse_update_compile": (status, [
            ctypes.c_void_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int, ctypes.POINTER(CompileInfoStruct)]),
        "kfuse_norm_compile": (status, [
            ctypes.c_void_p, ctypes.POINTER(ArgStruct), ctypes.c_size_t,
            ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(CompileInfoStruct)]),
        "kfuse_warmup": (status, [
            ctypes.POINTER(WarmupJobStruct), ctypes.c_size_t, ctypes.c_int,
            ctypes.POINTER(ctypes.c_int)]),
    }
    for name, (restype, argtypes) in signatures.items():
        try:
            function = getattr(handle, name)
        except AttributeError:
            raise KfuseError(
                f"{handle._name} lacks {name}; rebuild libkfuse",
                "INTERNAL") from None
        function.restype = restype
        function.argtypes = argtypes
    handle.kfuse_compile_declared = True
    return handle


def open_kernel(path_or_text, name, kind):
    """A kfuse_kernel handle of the source `path_or_text` (see read_source),
    its kind ("update" or "norm") and its name (the path, or `name`);
    `kind`, where given, is the one it must hold (another is a KfuseError
    naming the class that takes it)."""
    handle = ctypes.c_void_p()
    text, source = read_source(path_or_text, name or f"<{kind or 'kernel'}>",
                               kind or "kernel")
    if text is not None:
        check(lib().kfuse_kernel_create(text.encode(), source.encode(),
                                        ctypes.byref(handle)))
    else:
        check(lib().kfuse_kernel_create_from_file(os.fsencode(source),
                                                  ctypes.byref(handle)))
    found = KIND_NAMES[lib().kfuse_kernel_get_kind(handle)]
    if kind is not None and found != kind:
        lib().kfuse_kernel_destroy(handle)
        raise KfuseError(
            f"'{source}' holds {'a norm' if found == 'norm' else 'an update'}"
            f"; kfuse.{'Norm' if found == 'norm' else 'Update'} (or "
            f"kfuse.Kernel) takes it, not kfuse.{kind.capitalize()}",
            "INVALID_ARGUMENT")
    return handle, found, source
