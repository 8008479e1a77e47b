"""Where a kfuse norm's host time goes: cProfile of kfuse.torch.nn.LayerNorm
forward and backward on a 64 x 1024 float32 CUDA input (the GPU's work is a
few microseconds, under the host's), beside the same calls of torch's
nn.LayerNorm timed alone.

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/profile_host_norm.py \
        [--out DIR]

Writes DIR/profile_host_norm.txt (the 25 largest entries by own time, and
by cumulative time) and prints it.
"""

import argparse
import cProfile
import io
import os
import pathlib
import pstats
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402

import kfuse.torch.nn as knn  # noqa: E402
from _measure import host_ms  # noqa: E402


def per_call_us(fn):
    return 1e3 * host_ms(fn, 100, 2000)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    options = parser.parse_args()
    x = torch.randn(64, 1024, device="cuda", requires_grad=True)
    dy = torch.randn(64, 1024, device="cuda")
    ours = knn.LayerNorm(1024, device="cuda")
    theirs = torch.nn.LayerNorm(1024, device="cuda")
    lines = []
    for name, module in (("kfuse", ours), ("torch", theirs)):
        fwd = per_call_us(lambda: module(x))
        fwdbwd = per_call_us(lambda: module(x).backward(dy))
        lines.append(f"{name} fwd {fwd:.1f} us, fwd+bwd {fwdbwd:.1f} us")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        ours(x).backward(dy)
    torch.cuda.synchronize()
    profile.disable()
    for key in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(key).print_stats(25)
        lines.append(text.getvalue())
    report = "\n".join(lines)
    print(report)
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "profile_host_norm.txt").write_text(report)


if __name__ == "__main__":
    main()
