"""Driver of python-torch-norm-families-cpu.test (see there)."""

import copy
import importlib.util
import pathlib

import torch

import kfuse.torch.nn as knn

# The fake kernels of python-torch-nn-cpu.test.py (float64 math).
spec = importlib.util.spec_from_file_location(
    "nn_cpu_fakes", pathlib.Path(__file__).with_name(
        "python-torch-nn-cpu.test.py"))


def load_fakes():
    # Only the helpers at the top of that driver, not its checks.
    text = spec.loader.get_source("nn_cpu_fakes")
    head = text.split("def rel(a, b):")[0]
    namespace = {}
    exec(compile(head, spec.origin, "exec"), namespace)
    return namespace


load_fakes()  # patches knn._kfuse_takes, knn._run: float64 stays torch's


class LlamaRMSNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance +
                                                    self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class GemmaRMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.eps}"


class T5LayerNorm(torch.nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1,
                                                               keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance +
                                                    self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states

    def extra_repr(self):
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class Qwen2RMSNorm(torch.nn.Module):  # a name kfuse knows, other attributes
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * self.weight


class MyNorm(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True) * self.scale

    def extra_repr(self):
        return f"{tuple(self.scale.shape)}"


torch.manual_seed(0)
n = 16
originals = {"llama": LlamaRMSNorm(n), "gemma": GemmaRMSNorm(n),
             "t5": T5LayerNorm(n)}
with torch.no_grad():
    for module in originals.values():
        module.weight.uniform_(-0.5, 1.5)
model = torch.nn.Sequential(torch.nn.LayerNorm(n), *copy.deepcopy(
    list(originals.values())), Qwen2RMSNorm(n), MyNorm(n))
params_before = [id(p) for p in model.parameters()]
state_before = {k: v.clone() for k, v in model.state_dict().items()}
# classes= converts only the classes named.
only = copy.deepcopy(model)
picked = {}
knn.replace_norms(only, classes=("LlamaRMSNorm",), report=picked)
print("classes=LlamaRMSNorm:", picked, type(list(only)[0]).__module__)
try:
    knn.replace_norms(only, classes=("LLamaRMSNorm",))
except ValueError as error:
    print("classes typo: ValueError", str(error)[:95])
report = {}
knn.replace_norms(model, report=report)
print("report:", report)
converted = dict(zip(("llama", "gemma", "t5"), list(model)[1:4]))
for key, module in converted.items():
    original_class = type(originals[key])
    print(f"{key}: class {type(module).__name__}, isinstance "
          f"{isinstance(module, original_class)}, params kept "
          f"{[id(p) for p in model.parameters()] == params_before}, repr "
          f"{module!r}")

x32 = torch.randn(5, n) * 3 + 1
for key, module in converted.items():
    for x_dtype, w_dtype in ((torch.float32, torch.float32),
                             (torch.bfloat16, torch.float32),
                             (torch.bfloat16, torch.bfloat16)):
        ours, theirs = copy.deepcopy(module), copy.deepcopy(originals[key])
        ours.to(w_dtype)
        theirs.to(w_dtype)
        x = x32.to(x_dtype)
        got, want = ours(x), theirs(x)
        tolerance = 1e-5 if got.dtype == torch.float32 and \
            x_dtype == torch.float32 else 2e-2
        close = torch.allclose(got.double(), want.double(), rtol=tolerance,
                               atol=tolerance)
        name = lambda t: str(t).replace("torch.", "")  # noqa: E731
        print(f"{key} {name(x_dtype)} x, {name(w_dtype)} weight: dtype "
              f"{name(got.dtype)} (original {name(want.dtype)}), close {close}")

ours, theirs = copy.deepcopy(converted["gemma"]), copy.deepcopy(
    originals["gemma"])
dy = torch.randn(5, n)
ours(x32).backward(dy)
theirs(x32).backward(dy)
print("gemma weight grad close", torch.allclose(ours.weight.grad,
                                                theirs.weight.grad, 1e-5,
                                                1e-5))

x64 = x32.double()
same = {key: torch.equal(copy.deepcopy(module).double()(x64),
                         copy.deepcopy(originals[key]).double()(x64))
        for key, module in converted.items()}
print("float64 runs the original:",
      " ".join(f"{k} {v}" for k, v in same.items()))
print("state dict unchanged:", all(torch.equal(state_before[k], v)
                                    for k, v in model.state_dict().items()))


def my_forward(self, x):
    return self._kfuse_original_forward(x)


knn.register_norm("MyNorm", my_forward, ("scale",))
knn.replace_norms(model)
print("registered MyNorm:", repr(list(model)[-1]))
