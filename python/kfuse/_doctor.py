"""kfuse.doctor(): what this installation finds and whether its kernels work.

    python -m kfuse doctor [--json]

Reports the package, native library and IR library paths, the versions of
kfuse, NVRTC, the CUDA driver and PyTorch, and the GPU; compiles the
library's AdamW for the GPU's arch (sm_90 without one) and, with a GPU and
PyTorch, runs it on the GPU against kfuse's reference interpreter on the
host. Given a model or an optimizer, it also lists which modules and param
groups run on kfuse's kernels and which do not, and why.

A check that cannot run here (no GPU) is skipped, not failed: the exit
status is 1 only when a check that ran failed.
"""

import ctypes
import json
import os
import random
import sys

from . import _capi
from ._version import __version__

_CHECK_NUMEL = 4099  # odd: the vector loop and its scalar tail both run


def _try(call):
    """(value, None) or (None, the reason it failed)."""
    try:
        return call(), None
    except Exception as error:  # noqa: BLE001 - a report, not a crash
        return None, f"{type(error).__name__}: {error}".replace("\n", " ")


def _environment(report):
    lib, why = _try(_capi.lib)
    report["package"] = os.path.dirname(os.path.abspath(__file__))
    report["library"] = lib._name if lib else None
    if not lib:
        report["library_error"] = why
        return None
    missing = getattr(lib, "kfuse_missing", [])
    report["library_version"] = (lib.kfuse_version().decode()
                                 if "kfuse_version" not in missing else
                                 "unknown (built before kfuse_version)")
    ir, why = _try(_capi.library_dir)
    report["ir_library"] = str(ir) if ir else None
    if not ir:
        report["ir_library_error"] = why
    major, minor = ctypes.c_int(), ctypes.c_int()
    if "kfuse_nvrtc_version" not in missing and \
            lib.kfuse_nvrtc_version(ctypes.byref(major), ctypes.byref(minor)) == 0:
        report["nvrtc"] = f"{major.value}.{minor.value}"
    report["nvrtc_file"] = _capi.loaded_path("libnvrtc.so")
    version = ctypes.c_int()
    if "kfuse_driver_version" not in missing and \
            lib.kfuse_driver_version(ctypes.byref(version)) == 0:
        report["driver"] = f"{version.value // 1000}.{version.value % 1000 // 10}"
    else:
        report["driver"] = None
    buf = ctypes.create_string_buffer(32)
    if lib.kfuse_device_arch(buf, len(buf)) == 0:
        report["arch"] = buf.value.decode()
    else:
        report["arch"] = None
        report["gpu_error"] = lib.kfuse_last_error().decode()
    return lib


def _torch(report):
    try:
        import torch
    except ImportError:
        report["torch"] = None
        return None
    report["torch"] = torch.__version__
    report["torch_cuda"] = torch.version.cuda
    if report.get("arch") and torch.cuda.is_available():
        report["gpu"] = torch.cuda.get_device_name()
    return torch


def _check_compile(report, checks):
    from . import Update
    arch = report.get("arch") or "sm_90"
    name = f"compile adamw for {arch}"
    adamw, why = _try(lambda: Update(_capi.library_dir("optim") / "adamw.mlir"))
    if not adamw:
        checks.append({"check": name, "status": "failed", "detail": why})
        return None
    info = _capi.CompileInfoStruct()
    lib = _capi.lib()
    status = lib.kfuse_update_compile_for_arch(
        adamw._handle, arch.encode(), 1, ctypes.byref(info))
    if status != 0:
        checks.append({"check": name, "status": "failed",
                       "detail": lib.kfuse_last_error().decode()})
        return None
    checks.append({"check": name, "status": "ok",
                   "detail": f"{_capi.CACHE_SOURCES[info.cache]}, "
                             f"{info.ms:.0f} ms"})
    return adamw


def _check_launch(report, checks, torch, adamw):
    """AdamW on the GPU against the interpreter on the host, same inputs."""
    name = "launch adamw on the GPU against the interpreter"
    if adamw is None or torch is None or not report.get("arch") or \
            not torch.cuda.is_available():
        why = ("no GPU" if not report.get("arch") else
               "PyTorch is not installed" if torch is None else
               "no compiled kernel" if adamw is None else
               "PyTorch sees no CUDA device")
        checks.append({"check": name, "status": "skipped", "detail": why})
        return
    generator = random.Random(7)
    host = {}
    for info in adamw.args:
        if info.role != "hyper":
            scale = 0.01 if info.name.endswith("sq") else 1.0
            host[info.name] = [abs(generator.gauss(0, scale))
                               if info.name.endswith("sq") else
                               generator.gauss(0, scale)
                               for _ in range(_CHECK_NUMEL)]
    hypers = {"step": 3.0}
    device = {name: torch.tensor(values, dtype=torch.float32, device="cuda")
              for name, values in host.items()}
    _, why = _try(lambda: adamw(**device, **hypers))
    if why:
        checks.append({"check": name, "status": "failed", "detail": why})
        return
    torch.cuda.synchronize()
    args = (_capi.HostArgStruct * len(adamw.args))()
    arrays = []
    for index, info in enumerate(adamw.args):
        if info.role == "hyper":
            args[index].value = hypers.get(info.name, info.default or 0.0)
            continue
        # The GPU read float32: start the reference from the same values.
        values = [float(v) for v in torch.tensor(host[info.name],
                                                 dtype=torch.float32)]
        array = (ctypes.c_double * _CHECK_NUMEL)(*values)
        arrays.append(array)
        args[index].data = array
        args[index].numel = _CHECK_NUMEL
        args[index].dtype = _capi.F32
    lib = _capi.lib()
    if lib.kfuse_update_interpret(adamw._handle, args, len(args)) != 0:
        checks.append({"check": name, "status": "failed",
                       "detail": lib.kfuse_last_error().decode()})
        return
    worst = 0.0
    for index, info in enumerate(adamw.args):
        if info.role not in ("param", "state"):
            continue
        expected = torch.tensor(args[index].data[:_CHECK_NUMEL],
                                dtype=torch.float64)
        actual = device[info.name].double().cpu()
        scale = max(expected.abs().max().item(), 1e-30)
        worst = max(worst, (actual - expected).abs().max().item() / scale)
    ok = worst <= 1e-6
    checks.append({"check": name, "status": "ok" if ok else "failed",
                   "detail": f"max relative error {worst:.1e} over "
                             f"{_CHECK_NUMEL} elements"})


def _model_report(model):
    """Each norm-like module of `model`: on kfuse's kernels or not, and why
    (kfuse.torch.nn.norm_status), with where its parameters are."""
    from .torch.nn import norm_status
    rows = []
    for name, module in model.named_modules():
        status = norm_status(module)
        if status is None:
            continue
        kfuse, detail = status
        params = list(module.parameters(recurse=False))
        if kfuse and params and (params[0].device.type != "cuda" or
                                 params[0].is_floating_point() and
                                 params[0].element_size() == 8):
            kfuse, detail = False, (f"{params[0].dtype} parameters on "
                                    f"{params[0].device}: torch's forward "
                                    "runs")
        rows.append({"module": name or "(model)",
                     "class": type(module).__name__, "kfuse": kfuse,
                     "detail": detail})
    return rows


def _optimizer_report(optimizer):
    """Each param group of `optimizer`: on kfuse's kernels or not, and which
    params torch's optimizer updates instead, and why (as of its last
    step)."""
    from .torch.optim import KfuseOptimizer
    if not isinstance(optimizer, KfuseOptimizer):
        return [{"param_group": None, "kfuse": False,
                 "detail": f"{type(optimizer).__name__} is not a kfuse "
                           "optimizer (kfuse.torch.optim)"}]
    fallbacks = optimizer.fallbacks
    rows = []
    for index, group in enumerate(optimizer.param_groups):
        moved = fallbacks.get(index, [])
        detail = f"{len(group['params']) - len(moved)} of " \
                 f"{len(group['params'])} params on kfuse's kernels"
        if moved:
            detail += "; torch's optimizer updates " + ", ".join(
                f"param {position} ({why})" for position, why in moved)
        rows.append({"param_group": index, "kfuse": not moved,
                     "detail": detail})
    return rows


def doctor(model=None, optimizer=None, file=sys.stdout, as_json=False):
    """Reports this installation and, given them, what of `model` and
    `optimizer` runs on kfuse's kernels; returns the report (a dict whose
    "ok" says whether every check that ran passed)."""
    report = {"kfuse": __version__}
    checks = []
    report["checks"] = checks
    lib = _environment(report)
    torch = _torch(report)
    adamw = _check_compile(report, checks) if lib else None
    if lib:
        _check_launch(report, checks, torch, adamw)
    if model is not None:
        report["model"] = _model_report(model)
        from .torch import nn as knn
        report["compiled_norms"] = (
            knn._compiled_norms if knn._TRACEABLE else
            f"eager (torch {torch.__version__} cannot trace the operators)")
        report["eager_min_bytes"] = knn._eager_min_bytes
    if optimizer is not None:
        report["optimizer"] = _optimizer_report(optimizer)
    report["ok"] = lib is not None and all(
        c["status"] != "failed" for c in checks)
    if file is not None:
        if as_json:
            print(json.dumps(report, indent=1), file=file)
        else:
            _print(report, file)
    return report


def _print(report, file):
    def line(label, value):
        print(f"  {label:<11} {value}", file=file)
    print(f"kfuse {report['kfuse']}", file=file)
    line("package", report["package"])
    if report.get("library"):
        line("library", f"{report['library']} "
                        f"({report.get('library_version')})")
    else:
        line("library", f"not loaded: {report.get('library_error')}")
    line("IR library", report.get("ir_library") or
         f"not found: {report.get('ir_library_error')}")
    if report.get("library"):
        line("NVRTC", f"{report.get('nvrtc', '?')} "
                      f"({report.get('nvrtc_file') or 'file unknown'})")
        line("driver", report.get("driver") or "none (libcuda.so.1 not loaded)")
        gpu = report.get("gpu") or ""
        line("GPU", f"{gpu} {report['arch']}".strip() if report.get("arch")
             else f"none ({report.get('gpu_error')})")
    line("torch", f"{report['torch']} (CUDA {report.get('torch_cuda')})"
         if report.get("torch") else "not installed")
    for check in report["checks"]:
        print(f"{check['status']:>7}: {check['check']} ({check['detail']})",
              file=file)
    for row in report.get("model", []):
        print(f"  model {row['module']} ({row['class']}): "
              f"{'kfuse' if row['kfuse'] else 'torch'}, {row['detail']}",
              file=file)
    if "eager_min_bytes" in report:
        print(f"  eager LayerNorm/RMSNorm inputs under "
              f"{report['eager_min_bytes']} bytes run torch's fused kernel "
              "(kfuse.torch.nn.set_eager_min_bytes)", file=file)
    if "compiled_norms" in report:
        print(f"  under torch.compile the norms trace as: "
              f"{report['compiled_norms']} "
              "(kfuse.torch.nn.set_compiled_norms)", file=file)
    for row in report.get("optimizer", []):
        group = row["param_group"]
        print(f"  optimizer{'' if group is None else f' group {group}'}: "
              f"{'kfuse' if row['kfuse'] else 'torch'}, {row['detail']}",
              file=file)
    print("doctor: " + ("ok" if report["ok"] else "FAILED"), file=file)
