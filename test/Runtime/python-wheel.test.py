"""Driver of python-wheel.test.

  contents DIST PYDIR  what the wheel in DIST holds, against the package
                       folders under PYDIR, and its RECORD's hashes
  import               the installed package's version and paths
  doctor               python -m kfuse doctor, and its exit status
  version              python -m kfuse --version
"""

import base64
import hashlib
import pathlib
import subprocess
import sys
import zipfile


def run_module(*args):
    done = subprocess.run([sys.executable, "-m", "kfuse", *args],
                          capture_output=True, text=True)
    print(done.stdout + done.stderr, end="")
    print("exit", done.returncode)


if sys.argv[1] == "import":
    import kfuse
    from kfuse._capi import lib
    assert lib().kfuse_version().decode() == kfuse.__version__
    print(kfuse.__version__, kfuse.library_path(), kfuse.library_dir())
    sys.exit(0)
if sys.argv[1] == "doctor":
    run_module("doctor")
    sys.exit(0)
if sys.argv[1] == "version":
    run_module("--version")
    sys.exit(0)

wheel_path = next(pathlib.Path(sys.argv[2]).glob("kfuse-*.whl"))
print("wheel:", wheel_path.name)
wheel = zipfile.ZipFile(wheel_path)
names = wheel.namelist()
in_wheel = sorted({".".join(pathlib.PurePosixPath(n).parent.parts)
                   for n in names if n.endswith("/__init__.py")})
print("package folders in the wheel:", " ".join(in_wheel))
root = pathlib.Path(sys.argv[3])
in_tree = sorted(".".join(p.parent.relative_to(root).parts)
                 for p in root.glob("kfuse/**/__init__.py"))
print("package folders in python/:", " ".join(in_tree))
print("native:", " ".join(n for n in names if n.endswith(".so")))
ir = [n.split("library/", 1)[1] for n in names if "/library/" in n]
print("IR:", " ".join(n for n in ("optim/adamw.mlir", "norm/layernorm_fwd.mlir")
                      if n in ir))
record = next(n for n in names if n.endswith(".dist-info/RECORD"))
for line in wheel.read(record).decode().splitlines():
    path, digest, size = line.rsplit(",", 2)
    if not digest:
        continue
    data = wheel.read(path)
    expected = "sha256=" + base64.urlsafe_b64encode(
        hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == expected and int(size) == len(data), path
print("record verified")
