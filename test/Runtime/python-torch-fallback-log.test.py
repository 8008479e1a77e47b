"""Driver of python-torch-fallback-log.test (see there)."""

import torch

import kfuse
import kfuse.torch

model = torch.nn.Sequential(torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
kfuse.torch.replace_norms(model)
opt = kfuse.torch.optim.AdamW(model.parameters())
steps = 0
for _ in range(3):  # the CPU model trains: each fallback said once
    opt.zero_grad()
    model(torch.randn(4, 8)).sum().backward()
    opt.step()
    steps += 1
report = kfuse.doctor(model=model, optimizer=opt, file=None)
for row in report["model"]:
    print(f"model {row['module']} ({row['class']}): kfuse {row['kfuse']} "
          f"{row['detail']}")
print("eager min bytes:", report["eager_min_bytes"])
for row in report["optimizer"]:
    print(f"optimizer group {row['param_group']}: kfuse {row['kfuse']} "
          f"{row['detail']}")
print("steps:", steps)
