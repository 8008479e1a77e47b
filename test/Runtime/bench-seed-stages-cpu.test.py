"""Checks bench/seed_stages.py's pure parts on the CPU (see the .test)."""

import importlib.util
import pathlib
import sys

import torch

bench = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(bench))
spec = importlib.util.spec_from_file_location("seed_stages",
                                              bench / "seed_stages.py")
seed = importlib.util.module_from_spec(spec)
spec.loader.exec_module(seed)


def traffic_per_param(dtype):
    model = torch.nn.Sequential(torch.nn.Linear(10, 20),
                                torch.nn.Linear(20, 3)).to(dtype)
    opt = torch.optim.AdamW(model.parameters())
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    opt.step()
    numel = sum(p.numel() for p in model.parameters())
    return seed.step_traffic_bytes(model, opt) / numel


print(f"traffic adamw f32: {traffic_per_param(torch.float32):g} B/param")
print(f"traffic adamw all bf16: {traffic_per_param(torch.bfloat16):g} "
      "B/param")

model = torch.nn.Linear(4, 4)
opt = torch.optim.AdamW(model.parameters())
model.weight.grad = torch.randn(4, 4)
opt.step()
print("traffic params without grad: " +
      ("skipped" if seed.step_traffic_bytes(model, opt) == 16 * 28
       else str(seed.step_traffic_bytes(model, opt))))


def row(impl, **values):
    return dict(case="seed.stage4", impl=impl, peak_GiB=7.0, **values)


data = {"results": [
    row("kfuse", iter_ms=23.0, opt_gpu_ms=1.0, opt_copy_floor_ms=0.85,
        step_cost_in_iter_ms=0.2),
    row("torch", iter_ms=23.5, opt_gpu_ms=1.25, opt_copy_floor_ms=1.0625,
        step_cost_in_iter_ms=0.5),
]}
seed.summarize(data)
for key in ("opt_gpu_ratio_stage4_torch_over_kfuse",
            "opt_ceiling_ratio_stage4_torch_over_copy",
            "opt_gpu_ratio_stage2_torch_over_kfuse",
            "step_cost_in_iter_ratio_stage4_torch_over_kfuse"):
    print(key, data[key])
print("log placeholders:", seed._ms({}, "opt_ms"),
      seed._ms({"opt_ms": 1.23456}, "opt_ms"))
print("stage 4 rows:", " ".join(s[1] for s in seed.selected(["4"])))
try:
    seed.selected(["5"])
except SystemExit as error:
    print("unknown stage:", str(error).split(";")[0])

# The chart draws the copy floor and its line from such results.
import json  # noqa: E402
import tempfile  # noqa: E402

plot_spec = importlib.util.spec_from_file_location("plot_stages",
                                                   bench / "plot_stages.py")
plot = importlib.util.module_from_spec(plot_spec)
plot_spec.loader.exec_module(plot)
for r in data["results"]:
    r.update(opt_ms=r["opt_gpu_ms"], iter_min_ms=r["iter_ms"],
             iter_max_ms=r["iter_ms"], opt_traffic_bytes=3768834048)
data["results"] += [dict(r, case="seed.stage2") for r in data["results"]]
seed.summarize(data)
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp)
    (path / "r.json").write_text(json.dumps(data))
    plot.main(["plot", str(path / "r.json"), str(path / "r.png")])
    head = (path / "r.png").read_bytes()[:8]
print("chart:", "png" if head == b"\x89PNG\r\n\x1a\n" else head,
      "ceiling", data["opt_ceiling_ratio_stage2_torch_over_copy"])
