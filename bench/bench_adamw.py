"""AdamW on one flat 2^30-element tensor: kfuse against torch.optim.AdamW.

Runs on the GPU machine:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/bench_adamw.py --out DIR
Method (see the device notes): CUDA events around each step, warm-up first,
median of >= 30 timed steps on random data; bandwidth counts the fewest bytes
an update must move, against a measured device-to-device copy.
Writes DIR/bench_adamw.json and prints a table last.
"""

import argparse
import datetime
import json
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import kfuse  # noqa: E402
from _measure import free, time_ms  # noqa: E402
from _measure import commit as _commit  # noqa: E402

ADAMW = REPO / "library" / "optim" / "adamw.mlir"
HP = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)
GB = 1e9


def random_tensor(n, dtype, nonneg=False):
    t = torch.empty(n, device="cuda", dtype=torch.float32)
    if nonneg:
        t.uniform_(0.0, 1e-3)
    else:
        t.normal_()
    return t if dtype == torch.float32 else t.to(dtype)


def copy_bandwidth(n, warmup, repeats):
    src = random_tensor(n, torch.float32)
    dst = torch.empty_like(src)
    timing = time_ms(lambda: dst.copy_(src), warmup, repeats)
    bytes_moved = 2 * src.numel() * src.element_size()
    del src, dst
    free()
    return bytes_moved / (timing["ms"] * 1e-3) / GB, timing


def bench_kfuse(n, param_dtype, state_dtype, warmup, repeats):
    update = kfuse.Update(str(ADAMW))
    p = random_tensor(n, param_dtype)
    g = random_tensor(n, param_dtype)
    m = random_tensor(n, state_dtype)
    v = random_tensor(n, state_dtype, nonneg=True)
    step = [0]

    def run():
        step[0] += 1
        update(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step[0], **HP)

    timing = time_ms(run, warmup, repeats)
    ok = bool(torch.isfinite(p[: 1 << 20].float()).all())
    del p, g, m, v
    free()
    return timing, ok


def bench_torch(n, param_dtype, warmup, repeats, **impl):
    p = torch.nn.Parameter(random_tensor(n, param_dtype))
    p.grad = random_tensor(n, param_dtype)
    opt = torch.optim.AdamW([p], lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]),
                            eps=HP["eps"], weight_decay=HP["weight_decay"], **impl)
    opt.step()  # creates the states
    state = opt.state[p]
    state["exp_avg"].normal_()
    state["exp_avg_sq"].uniform_(0.0, 1e-3)
    timing = time_ms(opt.step, warmup, repeats)
    state_dtype = state["exp_avg"].dtype
    ok = bool(torch.isfinite(p.detach()[: 1 << 20].float()).all())
    del opt, state, p
    free()
    return timing, ok, state_dtype


def bytes_per_element(param_dtype, state_dtype):
    ps = torch.tensor([], dtype=param_dtype).element_size()
    ss = torch.tensor([], dtype=state_dtype).element_size()
    # Read param, grad, two states; write param and two states.
    return 2 * ps + 2 * ss + ps + 2 * ss


def parity_f32(n, steps):
    """kfuse against torch's fused AdamW and a float64 reference."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    p0 = torch.randn(n, device="cuda", generator=gen)
    grads = [torch.randn(n, device="cuda", generator=gen) for _ in range(steps)]
    torch_hp = dict(lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]),
                    eps=HP["eps"], weight_decay=HP["weight_decay"])

    def run_torch(dtype, **impl):
        p = torch.nn.Parameter(p0.to(dtype).clone())
        opt = torch.optim.AdamW([p], **torch_hp, **impl)
        for g in grads:
            p.grad = g.to(dtype)
            opt.step()
        return p.detach()

    ref64 = run_torch(torch.float64, foreach=False)
    fused = run_torch(torch.float32, fused=True)
    update = kfuse.Update(str(ADAMW))
    p, m, v = p0.clone(), torch.zeros_like(p0), torch.zeros_like(p0)
    for step, g in enumerate(grads, 1):
        update(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step, **HP)
    torch.cuda.synchronize()

    def errors(out, ref):
        out, ref = out.double(), ref.double()
        diff = (out - ref).abs()
        return {"rel_l2": ((out - ref).norm() / ref.norm()).item(),
                "max_abs": diff.max().item(),
                "max_rel": (diff / ref.abs().clamp_min(1e-6)).max().item()}

    result = {"numel": n, "steps": steps,
              "kfuse_vs_torch_fused": errors(p, fused),
              "kfuse_vs_f64": errors(p, ref64),
              "torch_fused_vs_f64": errors(fused, ref64)}
    result["goal_rel_l2_1e-6_met"] = result["kfuse_vs_torch_fused"]["rel_l2"] <= 1e-6
    return result


def parity_bf16p(n, steps):
    """bf16 params and grads with f32 states, against float64 math with the
    params rounded to bf16 after every step (what the storage forces)."""
    gen = torch.Generator(device="cuda").manual_seed(1)
    p0 = torch.randn(n, device="cuda", generator=gen).bfloat16()
    grads = [torch.randn(n, device="cuda", generator=gen).bfloat16()
             for _ in range(steps)]
    ref = torch.nn.Parameter(p0.double())
    opt = torch.optim.AdamW([ref], lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]),
                            eps=HP["eps"], weight_decay=HP["weight_decay"],
                            foreach=False)
    for g in grads:
        ref.grad = g.double()
        opt.step()
        with torch.no_grad():
            ref.copy_(ref.bfloat16().double())
    update = kfuse.Update(str(ADAMW))
    p = p0.clone()
    m = torch.zeros(n, device="cuda")
    v = torch.zeros(n, device="cuda")
    for step, g in enumerate(grads, 1):
        update(param=p, grad=g, exp_avg=m, exp_avg_sq=v, step=step, **HP)
    torch.cuda.synchronize()
    out, refd = p.double(), ref.detach()
    diff = (out - refd).abs()
    rel = diff / refd.abs().clamp_min(1e-6)
    ulp = torch.finfo(torch.bfloat16).eps
    return {"numel": n, "steps": steps,
            "max_abs": diff.max().item(), "max_rel": rel.max().item(),
            "frac_elements_off_by_more_than_1ulp": (rel > ulp).float().mean().item(),
            "note": "reference: float64 AdamW, params rounded to bf16 each step"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--log2n", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--parity-log2n", type=int, default=24)
    options = parser.parse_args()
    n = 1 << options.log2n
    w, r = options.warmup, options.repeats

    props = torch.cuda.get_device_properties(0)
    report = {"device": f"{props.name} ({props.multi_processor_count} SMs, "
                        f"{props.total_memory / 2**30:.0f} GiB)",
              "kfuse_arch": kfuse.device_arch(),
              "torch": torch.__version__, "commit": _commit(REPO),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "numel": n, "warmup": w, "repeats": r}
    copy_gbps, copy_timing = copy_bandwidth(n, w, r)
    report["copy_GBps"] = copy_gbps
    report["copy"] = copy_timing
    print(f"copy: {copy_gbps:.0f} GB/s ({copy_timing['ms']:.3f} ms)", flush=True)

    results = []

    def row(case, impl, timing, bpe, note=None, ok=True):
        gbps = bpe * n / (timing["ms"] * 1e-3) / GB
        entry = {"case": case, "impl": impl, "ms": timing["ms"], "GBps": gbps,
                 "pct_of_copy": 100.0 * gbps / copy_gbps,
                 "bytes_per_element": bpe, "min_ms": timing["min_ms"],
                 "max_ms": timing["max_ms"], "repeats": timing["repeats"],
                 "finite": ok}
        if note:
            entry["note"] = note
        results.append(entry)
        print(f"{case:26s} {impl:14s} {timing['ms']:8.3f} ms {gbps:7.0f} GB/s "
              f"{entry['pct_of_copy']:5.1f}% of copy", flush=True)

    cases = [("adamw.f32.flat1g", torch.float32, torch.float32),
             ("adamw.bf16p_f32s.flat1g", torch.bfloat16, torch.float32)]
    for case, pdt, sdt in cases:
        try:
            timing, ok = bench_kfuse(n, pdt, sdt, w, r)
            row(case, "kfuse", timing, bytes_per_element(pdt, sdt), ok=ok)
        except Exception as error:  # noqa: BLE001 - record and go on
            results.append({"case": case, "impl": "kfuse", "error": repr(error)})
            print(f"{case} kfuse FAILED: {error}", flush=True)
            free()
        for impl, kwargs in (("torch_fused", {"fused": True}),
                             ("torch_foreach", {"foreach": True})):
            try:
                timing, ok, torch_sdt = bench_torch(n, pdt, w, r, **kwargs)
                note = None
                if torch_sdt != sdt:
                    note = (f"torch keeps states in the param dtype ({torch_sdt}); "
                            "bytes counted for its own layout")
                row(case, impl, timing, bytes_per_element(pdt, torch_sdt), note, ok)
            except Exception as error:  # noqa: BLE001
                results.append({"case": case, "impl": impl, "error": repr(error)})
                print(f"{case} {impl} FAILED: {error}", flush=True)
                free()
    report["results"] = results

    pn = 1 << options.parity_log2n
    report["parity"] = {"f32": parity_f32(pn, 10), "bf16p_f32s": parity_bf16p(pn, 10)}
    print(json.dumps(report["parity"], indent=1), flush=True)

    out = pathlib.Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "bench_adamw.json", "w") as f:
        json.dump(report, f, indent=1)

    print(f"\n{'case':26s} {'impl':14s} {'ms':>8s} {'GB/s':>7s} {'%copy':>6s}")
    for e in results:
        if "error" in e:
            print(f"{e['case']:26s} {e['impl']:14s} ERROR")
        else:
            print(f"{e['case']:26s} {e['impl']:14s} {e['ms']:8.3f} "
                  f"{e['GBps']:7.0f} {e['pct_of_copy']:6.1f}")
    print(f"copy {copy_gbps:.0f} GB/s; parity f32 rel_l2 vs torch fused: "
          f"{report['parity']['f32']['kfuse_vs_torch_fused']['rel_l2']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
