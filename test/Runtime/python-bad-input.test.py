import os
import pathlib
import sys

import kfuse
from kfuse._capi import hyper_value

library = pathlib.Path(sys.argv[1])


def attempt(what, make):
    try:
        print(f"{what}: {make()}")
    except kfuse.KfuseError as error:
        print(f"{what}: {error.status} {error}".replace("\n", " "))


attempt("scalar params", lambda: kfuse.Update(
    "func.func @u(%a: f32 {kfuse.role = #kfuse.role<param>}, "
    "%b: f32 {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {\n"
    "  return\n}\n"))
attempt("rank-0 norm input", lambda: kfuse.Norm(
    "func.func @n(%x: tensor<f32> {kfuse.role = #kfuse.role<input>}) "
    "attributes {kfuse.norm} { return }"))
depth = 8000
attempt("deep nesting", lambda: kfuse.Update(
    "func.func @u() attributes {x = " + "[" * depth + "]" * depth +
    "} { return }\n"))
big = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"kfuse-big-{os.getpid()}.mlir"
big.write_text("// " + "x" * (1 << 20) + "\n")
try:
    attempt("huge source", lambda: kfuse.Update(big))
finally:
    big.unlink()

attempt("update from a Path", lambda: " ".join(
    f"{a.name}:{a.role}" for a in kfuse.Update(library / "optim/adamw.mlir").args
    if a.name == "lr"))
attempt("norm from a Path", lambda: " ".join(
    f"{a.name}:{a.role}"
    for a in kfuse.Norm(library / "norm/layernorm_fwd.mlir").args
    if a.name == "x"))
attempt("update from an int", lambda: kfuse.Update(42))
attempt("missing file", lambda: kfuse.Update("no/such.mlir"))

for what, value in [("1e-3", 1e-3), ("True", True), ("str", "fast"),
                    ("complex", 1 + 2j), ("huge int", 10**400),
                    ("None", None)]:
    attempt(f"hyper {what}", lambda: hyper_value("lr", value))

norm = kfuse.Norm(library / "norm/layernorm_fwd.mlir")
attempt("bytes", lambda: norm.bytes(2, 4096))
attempt("bytes overflow", lambda: norm.bytes(2**62, 2**62))
attempt("bytes huge rows", lambda: norm.bytes(2**70, 8))
attempt("bytes float cols", lambda: norm.bytes(8, 1.5))
print("alive")
