"""Multi-tensor plans through the direct PTX against the same plans through
NVRTC: the same bits after 20 steps, the step time, the first step's time.

    python3 bench/ptx_plans.py [--out DIR] [--steps 20]

Runs itself twice (KFUSE_CODEGEN=ptx, then cuda), each with an empty
KFUSE_CACHE_DIR, over GPT-2 small's parameter list plus two odd tensors (a
length of 1003, and one at an element offset, whose chunks take the scalar
loop). Each drop-in of kfuse.torch.optim whose plan the direct PTX covers
steps with the same grads; the two processes' params and states must agree
bit for bit (both images compute the uniform values with codegen/
UniformMath.h's pow, the same operations). Writes DIR/ptx_plans.json.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))

CASES = [
    ("adamw", "AdamW", {"lr": 1e-3, "weight_decay": 0.01}),
    ("adam", "Adam", {"lr": 1e-3}),
    ("lion", "Lion", {"lr": 1e-4, "weight_decay": 0.01}),
    ("adagrad", "Adagrad", {"lr": 1e-2}),
    ("rmsprop", "RMSprop", {"lr": 1e-3, "momentum": 0.9, "centered": True}),
    ("sgd", "SGD", {"lr": 1e-2, "momentum": 0.9, "nesterov": True,
                    "weight_decay": 1e-4}),
]


def worker(path, steps):
    import torch
    from bench_multi_tensor import gpt2_shapes
    import kfuse.torch.optim as optim

    results = {"codegen": os.environ["KFUSE_CODEGEN"], "cases": []}
    states = {}
    for dtype_name, dtype in (("f32", torch.float32),
                              ("bf16", torch.bfloat16)):
        for name, cls, kwargs in CASES:
            if dtype == torch.bfloat16 and name not in ("adamw", "lion"):
                continue
            gen = torch.Generator(device="cuda").manual_seed(0)
            params = [torch.nn.Parameter(
                torch.randn(s, device="cuda", generator=gen).to(dtype))
                for s in gpt2_shapes()]
            params.append(torch.nn.Parameter(
                torch.randn(1003, device="cuda", generator=gen).to(dtype)))
            base = torch.randn(2049, device="cuda", generator=gen).to(dtype)
            params.append(torch.nn.Parameter(base[1:2048]))  # offset 1
            opt = getattr(optim, cls)(params, **kwargs)

            def set_grads(step):
                g = torch.Generator(device="cuda").manual_seed(1000 + step)
                for p in params:
                    p.grad = torch.randn(p.shape, device="cuda",
                                         generator=g).to(dtype)

            set_grads(0)
            torch.cuda.synchronize()
            start = time.perf_counter()
            opt.step()
            torch.cuda.synchronize()
            first_ms = 1e3 * (time.perf_counter() - start)
            for step in range(1, steps):
                set_grads(step)
                opt.step()
            torch.cuda.synchronize()
            key = f"{name}.{dtype_name}"
            states[key] = {
                "params": [p.detach().cpu() for p in params],
                "states": [{k: v.detach().cpu() for k, v in opt.state[p].items()
                            if torch.is_tensor(v)} for p in params],
            }
            # The step alone, grads fixed.
            times = []
            for _ in range(35):
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                opt.step()
                end.record()
                end.synchronize()
                times.append(begin.elapsed_time(end))
            results["cases"].append({
                "case": f"{key}.gpt2s", "first_step_ms": first_ms,
                "step_ms": statistics.median(times[5:]),
                "numel": sum(p.numel() for p in params)})
    torch.save(states, path + ".pt")
    with open(path + ".json", "w") as f:
        json.dump(results, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--worker")
    options = parser.parse_args()
    if options.worker:
        worker(options.worker, options.steps)
        return 0

    import torch
    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for codegen in ("ptx", "cuda"):
            env = dict(os.environ, KFUSE_CODEGEN=codegen,
                       KFUSE_CACHE_DIR=os.path.join(tmp, "cache-" + codegen))
            path = os.path.join(tmp, codegen)
            subprocess.run([sys.executable, __file__, "--worker", path,
                            "--steps", str(options.steps)], env=env,
                           check=True)
            with open(path + ".json") as f:
                runs[codegen] = json.load(f)
            runs[codegen]["tensors"] = torch.load(path + ".pt")
    report = {"steps": options.steps, "device": torch.cuda.get_device_name(),
              "rows": []}
    failed = False
    for ptx_case, cuda_case in zip(runs["ptx"]["cases"],
                                   runs["cuda"]["cases"]):
        key = ptx_case["case"].rsplit(".", 1)[0]
        a, b = runs["ptx"]["tensors"][key], runs["cuda"]["tensors"][key]
        differing, total, max_rel = 0, 0, 0.0
        for x, y in zip(a["params"] + [v for s in a["states"]
                                       for v in s.values()],
                        b["params"] + [v for s in b["states"]
                                       for v in s.values()]):
            x, y = x.float(), y.float()
            same = (x == y) | (x.isnan() & y.isnan())
            differing += int((~same).sum())
            total += x.numel()
            if not bool(same.all()):
                rel = ((x - y).abs() / y.abs().clamp_min(1e-30))[~same]
                max_rel = max(max_rel, float(rel.max()))
        row = {"case": ptx_case["case"], "numel": ptx_case["numel"],
               "ptx_step_ms": ptx_case["step_ms"],
               "cuda_step_ms": cuda_case["step_ms"],
               "ptx_over_cuda": ptx_case["step_ms"] / cuda_case["step_ms"],
               "ptx_first_step_ms": ptx_case["first_step_ms"],
               "cuda_first_step_ms": cuda_case["first_step_ms"],
               "values": total, "values_differing": differing,
               "max_rel_diff": max_rel}
        report["rows"].append(row)
        failed |= differing > 0
        print(json.dumps(row))
    with open(out / "ptx_plans.json", "w") as f:
        json.dump(report, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
