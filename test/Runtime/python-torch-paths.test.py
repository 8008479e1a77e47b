import pathlib
import sys

import torch

import kfuse

library = pathlib.Path(sys.argv[1])
adamw = kfuse.Update(str(library / "optim/adamw.mlir"))
n = 4096
tensors = {name: torch.empty(n) for name in
           ("param", "grad", "exp_avg", "exp_avg_sq")}


def attempt(what, call):
    try:
        result = call()
        print(f"{what}: {result}")
    except kfuse.KfuseError as error:
        print(f"{what}: {error.status} {str(error)[:80]}")


attempt("update call", lambda: adamw(**tensors, lr=1e-3, step=1))
attempt("update compile", lambda: adamw.compile(**tensors, lr=1e-3, step=1))
missing = dict(tensors)
del missing["exp_avg_sq"]
attempt("update missing", lambda: adamw(**missing, lr=1e-3, step=1))

ln = kfuse.library_norm("layernorm_fwd")
rows, cols = 64, 1024
norm_args = dict(x=torch.empty(rows, cols), weight=torch.empty(cols),
                 bias=torch.empty(cols), y=torch.empty(rows, cols),
                 mean=torch.empty(rows), rstd=torch.empty(rows))
attempt("norm call", lambda: ln(**norm_args))
attempt("norm compile", lambda: ln.compile(**norm_args))
bad = dict(norm_args, x=torch.empty(rows, cols, dtype=torch.float64))
attempt("norm bad dtype", lambda: ln(**bad))
attempt("warmup", lambda: kfuse.warmup(
    [(adamw, dict(tensors, lr=1e-3, step=1)), (ln, norm_args)]))
attempt("warmup wrong target", lambda: kfuse.warmup([("adamw", {})]))
attempt("warmup empty", lambda: kfuse.warmup([]))
