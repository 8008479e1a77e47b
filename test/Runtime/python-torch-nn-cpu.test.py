"""Driver of python-torch-nn-cpu.test (see there)."""

import torch

import kfuse
import kfuse.torch.nn as knn

# On the CPU, _kfuse_takes sends every input to torch's own functions. For
# the plumbing checks it takes all but float64, and _run computes in float64
# what the kernels would, into the (flat) tensors it is handed.
real_takes = knn._kfuse_takes
launched = []


def fake_kernels(name, rows, cols, *values):
    launched.append(name)
    t, eps = {}, None
    order = knn._ORDERS[name]
    assert len(values) == len(order), (name, len(values))
    for item, value in zip(order, values):
        if isinstance(item, tuple):  # one tensor of equal parts
            assert value.is_contiguous(), (name, item)
            assert tuple(value.shape) == (len(item), rows), (name, item)
            t.update(zip(item, value.unbind(0)))
        elif item == "eps":
            eps = value
        else:
            assert value.is_contiguous(), (name, item)
            assert value.numel() in (rows * cols, rows, cols), (name, item)
            t[item] = value
    with torch.no_grad():
        compute(name, rows, cols, eps, t)


def flat(tensor, *shape):
    return tensor.detach().reshape(*shape).double()


def compute(name, rows, cols, eps, t):
    x = flat(t["x"], rows, cols)
    w = flat(t["weight"], cols)
    if name == "layernorm_fwd":
        mean, var = x.mean(1), x.var(1, unbiased=False)
        rstd = (var + eps).rsqrt()
        y = (x - mean[:, None]) * rstd[:, None] * w + flat(t["bias"], cols)
        t["y"].view(rows, cols).copy_(y)
        t["mean"].copy_(mean)
        t["rstd"].copy_(rstd)
    elif name == "rmsnorm_fwd":
        rstd = (x.pow(2).mean(1) + eps).rsqrt()
        t["y"].view(rows, cols).copy_(x * rstd[:, None] * w)
        t["rstd"].copy_(rstd)
    else:
        with torch.enable_grad():
            x.requires_grad_()
            w.requires_grad_()
            if name == "layernorm_bwd":
                mean, var = x.mean(1), x.var(1, unbiased=False)
                # eps as the forward had it: 1 / rstd^2 - var.
                eps = (flat(t["rstd"], rows).pow(-2) - var.detach()).mean()
                y = (x - mean[:, None]) * (var + eps).rsqrt()[:, None] * w
            else:
                eps = (flat(t["rstd"], rows).pow(-2) -
                       x.detach().pow(2).mean(1)).mean()
                y = x * (x.pow(2).mean(1) + eps).rsqrt()[:, None] * w
            dy = flat(t["dy"], rows, cols)
            y.backward(dy)
        t["dx"].view(rows, cols).copy_(x.grad)
        t["dweight"].view(-1).copy_(w.grad)
        if "dbias" in t:
            t["dbias"].view(-1).copy_(dy.sum(0))


knn._kfuse_takes = lambda x, *columns: x.dtype != torch.float64
knn._current_device = lambda: -1  # a CPU tensor's get_device()
knn._run = fake_kernels
default_min_bytes = knn.set_eager_min_bytes(0)  # the kernels' path


def rel(a, b):
    return ((a - b).norm() / max(b.norm().item(), 1.0)).item()


def reference_rms(shape, eps):
    class Reference(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(shape))

        def forward(self, x):
            dims = tuple(range(-len(shape), 0))
            return x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) +
                                   eps) * self.weight
    return Reference()


cases = 0
for shape, normalized in [((4, 1), (1,)), ((3, 1000), (1000,)),
                          ((2, 3, 64), (64,)), ((5, 4, 256), (4, 256))]:
    for kind in ("layer", "rms"):
        for affine in (True, False):
            torch.manual_seed(cases)
            x = torch.randn(*shape, requires_grad=True)
            if kind == "layer":
                module = knn.LayerNorm(normalized, elementwise_affine=affine)
                reference = torch.nn.LayerNorm(normalized,
                                               elementwise_affine=affine)
            else:
                module = knn.RMSNorm(normalized, eps=1e-6,
                                     elementwise_affine=affine)
                reference = reference_rms(normalized, 1e-6)
                if not affine:
                    reference.weight.requires_grad_(False)
            with torch.no_grad():
                if affine:
                    module.weight.uniform_(0.5, 1.5)
                    reference.weight.copy_(module.weight)
                    if kind == "layer":
                        module.bias.uniform_(-1, 1)
                        reference.bias.copy_(module.bias)
            x_ref = x.detach().clone().requires_grad_()
            y, y_ref = module(x), reference(x_ref)
            assert y.shape == y_ref.shape and y.dtype == y_ref.dtype
            dy = torch.randn_like(y)
            y.backward(dy)
            y_ref.backward(dy)
            pairs = [(y, y_ref), (x.grad, x_ref.grad)]
            if affine:
                pairs.append((module.weight.grad, reference.weight.grad))
                if kind == "layer":
                    pairs.append((module.bias.grad, reference.bias.grad))
            for a, b in pairs:
                error = rel(a.detach(), b.detach())
                assert error < 1e-4, (kind, shape, affine, error)
            cases += 1
print(f"plumbing: {cases} cases within 1e-4")
print("launches:", " ".join(dict.fromkeys(launched)))

# Eager calls under set_eager_min_bytes' count run torch's norm (same
# output, no kernel); weights of another dtype than x run the kernels.
knn.set_eager_min_bytes(4096)
knn._is_cuda = lambda x: True  # these CPU tensors stand in for CUDA ones
for label, rows, dtype in [("small", 15, torch.float32),
                           ("at the count", 16, torch.float32),
                           ("small, f64 weight", 15, torch.float64)]:
    launched.clear()
    module = knn.LayerNorm(64).to(dtype)
    x = torch.randn(rows, 64, requires_grad=True)
    module(x).sum().backward()
    print(f"eager min bytes, {label}:",
          " ".join(launched) or "torch's norm")
try:
    knn.set_eager_min_bytes(-1)
except ValueError as error:
    print("eager min bytes, negative:", error)
print("eager min bytes, default:", default_min_bytes)
knn.set_eager_min_bytes(0)
knn._is_cuda = torch.Tensor.is_cuda.__get__

# The real checks again: CPU tensors run torch's functions.
knn._kfuse_takes = real_takes
launched.clear()
x = torch.randn(3, 64)
module = knn.LayerNorm(64)
same = torch.equal(module(x), torch.nn.functional.layer_norm(
    x, (64,), module.weight, module.bias))
print("cpu falls back:", "exact" if same and not launched else "DIFFERS")
x64 = torch.randn(2, 8, dtype=torch.float64, requires_grad=True)
w64 = torch.randn(8, dtype=torch.float64, requires_grad=True)
print("float64 gradcheck:", torch.autograd.gradcheck(
    lambda a, b: knn.layer_norm(a, (8,), b), (x64, w64)))

ours, theirs = knn.LayerNorm(64), torch.nn.LayerNorm(64)
print("state dict keys:", " ".join(sorted(ours.state_dict())))
with torch.no_grad():
    ours.weight.uniform_()
theirs.load_state_dict(ours.state_dict())
ours.load_state_dict(torch.nn.LayerNorm(64).state_dict())
assert torch.equal(ours.weight, torch.ones(64))
print("load_state_dict both ways: ok")

model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64),
                            torch.nn.Linear(64, 64), torch.nn.LayerNorm(64))
before = [id(p) for p in model.parameters()]
knn.replace_norms(model)
converted = sum(isinstance(m, knn.LayerNorm) for m in model.modules())
kept = [id(p) for p in model.parameters()] == before
print(f"replace_norms: {converted} converted, parameters "
      f"{'kept' if kept else 'CHANGED'}")

knn._kfuse_takes = lambda x, *columns: True
for label, call in [
        ("bad shape", lambda: knn.layer_norm(torch.randn(3, 65), (64,))),
        ("bad weight", lambda: knn.rms_norm(torch.randn(3, 64), (64,),
                                            torch.ones(63)))]:
    try:
        call()
        print(f"{label}: no error")
    except ValueError as error:
        print(f"{label}: ValueError {error}")

# The lean launcher the modules use, through the real C API: sizes and
# dtypes are checked there before the driver is asked for (none here).
import kfuse._norm as knorm  # noqa: E402

knorm._current_stream_function = lambda torch_module: (lambda: 0)
forward = knorm.library_norm("layernorm_fwd")
try:
    forward.lean_launcher(("x", "weight", "bias", "y", "eps"))
except kfuse.KfuseError as error:
    print("lean launcher, names missing:", error.status, error)
launch = forward.lean_launcher(knn._ORDERS["layernorm_fwd"])
rows, cols = 5, 64
x, w, b = torch.randn(rows, cols), torch.ones(cols), torch.zeros(cols)
y = torch.empty(rows, cols, dtype=torch.bfloat16)
for label, stats, bias in [("sizes right", torch.empty(2, rows), b),
                           ("stats short", torch.empty(2, rows - 1), b),
                           ("bias short", torch.empty(2, rows), b[:-1])]:
    try:
        launch(rows, cols, x, w, bias, y, stats, 1e-5)
        print(f"lean launch, {label}: launched")
    except kfuse.KfuseError as error:
        print(f"lean launch, {label}: {error.status} {error}")
