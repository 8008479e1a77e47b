"""GPU time per kernel of kfuse.torch.optim.Adafactor's step over GPT-2
small, each phase launched alone (KFUSE_SEPARATE_PHASES=1), and of the
matrices' plan over a few of GPT-2's shapes on their own, against a device
copy of the same bytes: where a step's time goes.

    python3 bench/profile_phases.py [--out DIR] [--steps N] [--cases A,B]
                                    [--name NAME]

Writes DIR/NAME.json (default profile_phases.json): per case, each kernel's mean device time
(torch.profiler) and launches per step.
"""

import argparse
import collections
import json
import os
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))

from bench_multi_tensor import (ADAFACTOR_HP, f32_params_with_grads,  # noqa
                                gpt2_shapes, separate_phases)
from kfuse.torch import optim as kopt  # noqa: E402


def kernel_times(step, steps):
    """Mean device ms per kernel name over `steps` calls of `step`."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    totals = collections.defaultdict(lambda: [0.0, 0])
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        entry = totals[event.name]
        entry[0] += event.device_time_total / 1e3
        entry[1] += 1
    return {name: {"ms": total / steps, "launches": count / steps}
            for name, (total, count) in sorted(totals.items())}


def copy_ms(numel, bytes_per_element, steps):
    """A device copy moving `bytes_per_element` per element (half read,
    half written)."""
    n = numel * bytes_per_element // 8
    src = torch.empty(n, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    dst.copy_(src)
    start.record()
    for _ in range(steps):
        dst.copy_(src)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--cases", default="",
                        help="comma-separated cases (default: all)")
    parser.add_argument("--name", default="profile_phases")
    args = parser.parse_args()
    result = {"device": torch.cuda.get_device_name(),
              "commit": os.environ.get("KFUSE_COMMIT", ""),
              "knobs": {k: v for k, v in os.environ.items()
                        if k.startswith("KFUSE_") and k != "KFUSE_LIBRARY"}}
    cases = {"gpt2s": gpt2_shapes(),
             "embedding": [(50304, 768)],
             "mlp_in": [(3072, 768)] * 12,
             "mlp_out": [(768, 3072)] * 12,
             "attn": [(768, 768)] * 12}
    chosen = [c for c in args.cases.split(",") if c] or list(cases)
    for name in chosen:
        shapes = cases[name]
        params = f32_params_with_grads(shapes)
        with separate_phases():
            opt = kopt.Adafactor(params, check_stale=False, **ADAFACTOR_HP)
            opt.step()
        kernels = kernel_times(opt.step, args.steps)
        numel = sum(p.numel() for p in params)
        total = sum(k["ms"] for k in kernels.values())
        result[name] = {"numel": numel, "total_ms": total,
                        "copy_24B_ms": copy_ms(numel, 24, args.steps),
                        "kernels": kernels}
        print(f"{name}: {numel} elements, {total:.3f} ms, copy of 24 B "
              f"{result[name]['copy_24B_ms']:.3f} ms", flush=True)
        for kernel, t in kernels.items():
            print(f"  {t['ms']:8.3f} ms x{t['launches']:.0f}  {kernel[:90]}",
                  flush=True)
        del opt, params
        torch.cuda.empty_cache()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
