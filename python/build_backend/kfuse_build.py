"""The PEP 517 build backend of the kfuse wheel (python/pyproject.toml).

The wheel carries the Python package, the native library the CMake build
made (libkfuse.so) and the IR library (library/optim, library/norm), so that
an installed `import kfuse` needs no environment variable. It is written
with the standard library alone: `pip install ./python` and
`pip wheel ./python` work offline, with no setuptools or wheel package.

Where the native library comes from, first found:
  config setting `libkfuse=PATH` (pip --config-settings libkfuse=PATH),
  $KFUSE_WHEEL_LIBKFUSE, then ../build/lib/libkfuse.so beside python/.
The IR library: config setting `library=DIR`, $KFUSE_WHEEL_IR_LIBRARY, then
../library. Without either, the build fails and says what to build first.
"""

import base64
import hashlib
import io
import os
import pathlib
import re
import sysconfig
import tarfile
import zipfile

_HERE = pathlib.Path(__file__).resolve().parent.parent  # python/
_NAME = "kfuse"


def _version():
    text = (_HERE / "kfuse" / "_version.py").read_text()
    match = re.search(r'^__version__ = "([0-9]+\.[0-9]+\.[0-9]+)"$', text,
                      re.M)
    if not match:
        raise RuntimeError("no __version__ in python/kfuse/_version.py")
    return match.group(1)


def _setting(config_settings, key, env, default):
    value = (config_settings or {}).get(key) or os.environ.get(env)
    return pathlib.Path(value) if value else default


def _native_library(config_settings):
    path = _setting(config_settings, "libkfuse", "KFUSE_WHEEL_LIBKFUSE",
                    _HERE.parent / "build" / "lib" / "libkfuse.so")
    if not path.is_file():
        raise RuntimeError(
            f"libkfuse.so not found at {path}: build kfuse first "
            "(scripts/setup.sh), or name the library with "
            "--config-settings libkfuse=PATH or $KFUSE_WHEEL_LIBKFUSE")
    return path


def _ir_library(config_settings):
    root = _setting(config_settings, "library", "KFUSE_WHEEL_IR_LIBRARY",
                    _HERE.parent / "library")
    if not (root / "optim").is_dir() or not (root / "norm").is_dir():
        raise RuntimeError(
            f"kfuse's IR library (optim/, norm/) not found at {root}; name it "
            "with --config-settings library=DIR or $KFUSE_WHEEL_IR_LIBRARY")
    return root


def _package_files(config_settings):
    """(path in the wheel, bytes) of every file the wheel installs."""
    files = []
    for path in sorted((_HERE / _NAME).rglob("*.py")):
        files.append((path.relative_to(_HERE).as_posix(), path.read_bytes()))
    files.append((f"{_NAME}/libkfuse.so",
                  _native_library(config_settings).read_bytes()))
    root = _ir_library(config_settings)
    for path in sorted(root.rglob("*.mlir")):
        files.append((f"{_NAME}/library/{path.relative_to(root).as_posix()}",
                      path.read_bytes()))
    return files


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {_version()}\n"
            "Summary: Fused optimizer steps and norms compiled at run time "
            "from an MLIR dialect\nRequires-Python: >=3.8\n")


def _platform_tag():
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _wheel_info():
    return ("Wheel-Version: 1.0\nGenerator: kfuse_build\n"
            "Root-Is-Purelib: false\n"
            f"Tag: py3-none-{_platform_tag()}\n")


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{name},sha256={digest.rstrip(b'=').decode()},{len(data)}"


def _dist_info():
    return f"{_NAME}-{_version()}.dist-info"


# -- PEP 517 hooks -------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = pathlib.Path(metadata_directory) / _dist_info()
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    (info / "WHEEL").write_text(_wheel_info())
    return info.name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{_NAME}-{_version()}-py3-none-{_platform_tag()}.whl"
    files = _package_files(config_settings)
    files.append((f"{_dist_info()}/METADATA", _metadata().encode()))
    files.append((f"{_dist_info()}/WHEEL", _wheel_info().encode()))
    record = [_record_line(path, data) for path, data in files]
    record.append(f"{_dist_info()}/RECORD,,")
    files.append((f"{_dist_info()}/RECORD", ("\n".join(record) + "\n").encode()))
    target = pathlib.Path(wheel_directory) / name
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            # Executable for the native library; plain read for the rest.
            mode = 0o755 if path.endswith(".so") else 0o644
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(entry, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """The Python sources and this backend; the wheel still needs a CMake
    build (or libkfuse= and library=) where it is built."""
    base = f"{_NAME}-{_version()}"
    name = f"{base}.tar.gz"
    with tarfile.open(pathlib.Path(sdist_directory) / name, "w:gz") as sdist:
        for path in sorted(_HERE.rglob("*")):
            relative = path.relative_to(_HERE)
            if path.is_file() and "__pycache__" not in relative.parts:
                sdist.add(path, arcname=f"{base}/{relative.as_posix()}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
