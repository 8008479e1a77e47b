"""GPU tests of kfuse.torch.nn against torch.nn (plain script).

Run on a machine with a CUDA GPU and PyTorch:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/test_gpu_nn.py \
        [--json OUT] [-k NAME]
LayerNorm and RMSNorm forward and gradients (dx, dweight, dbias) against
torch run in float64 on the same (rounded) inputs, in f32, bf16 and f16,
with torch's own bf16/f16 error as the baseline; affine/bias variants,
multi-dim normalized_shape, eps; state dicts both ways with torch's modules;
replace_norms; autocast output dtypes; the torch fallbacks (float64 with
gradcheck, CPU, empty); a 20-step training run against torch's modules.
Prints one line per test and "N passed, M failed"; exits 1 on any failure,
0 with a SKIP line when PyTorch or a CUDA device is missing.
"""

import contextlib
import copy
import importlib
import importlib.util
import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

try:
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
except ImportError:
    torch = F = None

import _gpu_tests  # noqa: E402

SHAPES = [(4, 1), (3, 1000), (7, 5128), (2, 3, 12289), (65, 768)]
DTYPES = ["float32", "bfloat16", "float16"]
# float32: relative L2 error against float64. bf16/f16: at most twice
# torch's own error at that dtype plus SLACK, and never above CAP.
F32_TOLERANCE = 1e-5
SLACK = {"bfloat16": 1e-3, "float16": 1e-4}
CAP = {"bfloat16": 2e-2, "float16": 3e-3}
# An output stored in bf16 / f16 from float32 math (its rounding alone is
# about 2.3e-3 / 2.8e-4 RMS).
STORED = {"float32": 1e-5, "bfloat16": 1.2e-2, "float16": 2e-3}
LN_EPS = 1e-5
RMS_EPS = 1e-6
OURS = {"ln": "_LayerNormFunctionBackward", "rms": "_RMSNormFunctionBackward"}

TESTS = []

knn = None  # kfuse.torch.nn, imported in main() once torch and CUDA are known


def test(fn):
    TESTS.append(fn)
    return fn


def dt(name):
    return getattr(torch, name)


def dname(dtype):
    return str(dtype).replace("torch.", "")


def rand(shape, dtype, seed, scale=1.0, shift=0.0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    t = torch.empty(shape, device="cuda", dtype=torch.float32)
    t.normal_(generator=gen)
    return (t * scale + shift).to(dtype)


def rel_l2(out, ref, floor=0.0):
    """||out - ref|| / max(||ref||, floor) in float64 (absolute when both
    are zero). `floor`, a number or a tensor (its norm), is the size of the
    terms a result is made of: results that cancel to about zero (dx of a
    one-column norm, dweight and y of a one-column LayerNorm) are judged
    against it, not against their own rounding residue."""
    out, ref = out.detach().double(), ref.detach().double()
    assert out.numel() == ref.numel(), (tuple(out.shape), tuple(ref.shape))
    out = out.reshape(ref.shape)
    if isinstance(floor, torch.Tensor):
        floor = floor.double().norm().item()
    num = (out - ref).norm().item()
    den = max(ref.norm().item(), floor)
    return num / den if den > 0 else num


def close(what, out, ref, tolerance, floor=0.0):
    assert torch.isfinite(out.detach().float()).all(), \
        f"{what}: non-finite values"
    error = rel_l2(out, ref, floor)
    assert error <= tolerance, \
        f"{what}: relative error {error:.3e} > {tolerance:.1e}"
    return error


def rounded(errors):
    return {k: float(f"{v:.3e}") for k, v in errors.items()}


def prod(shape):
    return math.prod(shape)


def torch_rms_norm(x, shape, weight, eps):
    """torch's F.rms_norm (its composite before torch 2.4)."""
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, shape, weight, eps)
    dims = tuple(range(-len(shape), 0))
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    xu = x.to(wide)
    eps = torch.finfo(wide).eps if eps is None else eps
    y = xu * torch.rsqrt(xu.pow(2).mean(dims, keepdim=True) + eps)
    return (y * weight if weight is not None else y).to(x.dtype)


def make_norm(kind, shape, dtype, affine=True, bias=True, eps=None,
              seed=0, **extra):
    """A kfuse module with random parameters (not ones and zeros)."""
    if kind == "ln":
        m = knn.LayerNorm(shape, eps=LN_EPS if eps is None else eps,
                          elementwise_affine=affine, bias=bias,
                          device="cuda", dtype=dtype, **extra)
    else:
        m = knn.RMSNorm(shape, eps=RMS_EPS if eps is None else eps,
                        elementwise_affine=affine, device="cuda", dtype=dtype,
                        **extra)
    with torch.no_grad():
        for index, p in enumerate(m.parameters()):
            shift = 1.0 if index == 0 and affine else 0.0
            p.copy_(rand(p.shape, p.dtype, seed + 100 + index, 0.1, shift))
    return m


def functional(kind, m, params):
    """torch's functional form of module m with parameters `params`."""
    shape = tuple(m.normalized_shape)
    if kind == "ln":
        return lambda x: F.layer_norm(x, shape, params.get("weight"),
                                      params.get("bias"), m.eps)
    return lambda x: torch_rms_norm(x, shape, params.get("weight"), m.eps)


def run(fn, x, dy, params):
    """y = fn(x), y.backward(dy): {"y", "dx", "dweight", "dbias"} (present
    ones) and the name of y's grad_fn."""
    x = x.detach().clone().requires_grad_()
    y = fn(x)
    grad_fn = type(y.grad_fn).__name__
    y.backward(dy)
    out = {"y": y.detach(), "dx": x.grad}
    for name, p in params.items():
        out["d" + name] = p.grad
    return out, grad_fn


def twin_params(m, dtype=None):
    return {name: p.detach().clone().to(dtype or p.dtype).requires_grad_()
            for name, p in m.named_parameters()}


def floors(kind, x, dy, m):
    """rel_l2 floors per output: 1e-3 of the size of y (unit entries) and
    of the column sums' terms (sum over rows of |dy|), and for dx the size
    of its terms, dy * w * rstd. They only matter where a result cancels."""
    cols = prod(m.normalized_shape)
    column = 1e-3 * dy.double().abs().reshape(-1, cols).sum(0).norm().item()
    return {"y": 1e-3 * math.sqrt(x.numel()), "dx": dx_scale(kind, x, dy, m),
            "dweight": column, "dbias": column}


def dx_scale(kind, x, dy, m):
    """dy * w * rstd in float64: the size of the terms dx is made of."""
    cols = prod(m.normalized_shape)
    xd = x.double().reshape(-1, cols)
    if kind == "ln":
        xd = xd - xd.mean(1, keepdim=True)
    eps = m.eps if m.eps is not None else torch.finfo(torch.float32).eps
    rstd = 1.0 / torch.sqrt((xd * xd).mean(1, keepdim=True) + eps)
    w = (m.weight.double().reshape(1, -1) if m.weight is not None else 1.0)
    return dy.double().reshape(-1, cols) * w * rstd


def compare(kind, m, x, dy, baseline=True):
    """Our module against torch in float64 and, for bf16/f16, torch at x's
    dtype: {quantity: (our error, torch's error or None)}."""
    ours, grad_fn = run(m, x, dy, dict(m.named_parameters()))
    assert grad_fn == OURS[kind], f"kfuse path not taken (grad_fn {grad_fn})"
    assert ours["y"].dtype == x.dtype and ours["dx"].dtype == x.dtype, (
        ours["y"].dtype, ours["dx"].dtype)
    for name, p in m.named_parameters():
        g = ours["d" + name]
        assert g.dtype == p.dtype and g.shape == p.shape, (name, g.dtype,
                                                           g.shape)
    ref_params = twin_params(m, torch.float64)
    ref, _ = run(functional(kind, m, ref_params), x.double(), dy.double(),
                 ref_params)
    theirs = None
    if baseline and x.dtype != torch.float32:
        torch_params = twin_params(m)
        theirs, _ = run(functional(kind, m, torch_params), x, dy,
                        torch_params)
    floor = floors(kind, x, dy, m)
    result = {}
    for key in ours:
        mine = rel_l2(ours[key], ref[key], floor[key])
        base = rel_l2(theirs[key], ref[key], floor[key]) if theirs else None
        assert math.isfinite(mine), f"{key}: non-finite error"
        result[key] = (mine, base)
    return result


def judge(result, dtype, what):
    """Asserts the errors of compare() are within the tolerances."""
    name = dname(dtype)
    for key, (mine, base) in result.items():
        if name == "float32":
            limit = F32_TOLERANCE
        elif base is None:
            limit = CAP[name]
        else:
            limit = min(2.0 * base + SLACK[name], CAP[name])
        assert mine <= limit, (
            f"{what} {key}: relative error {mine:.3e} > {limit:.1e}"
            + (f" (torch's own {base:.3e})" if base is not None else ""))


def sweep(cases):
    """Runs (label, dtype, fn -> compare() result) cases; returns the worst
    error per quantity and dtype (ours, and torch's as '.torch')."""
    worst, failures = {}, []
    for label, dtype, fn in cases:
        try:
            result = fn()
            judge(result, dtype, label)
        except AssertionError as error:
            failures.append(f"{label}: {error}")
            continue
        for key, (mine, base) in result.items():
            k = f"{key}.{dname(dtype)}"
            worst[k] = max(worst.get(k, 0.0), mine)
            if base is not None:
                worst[k + ".torch"] = max(worst.get(k + ".torch", 0.0), base)
    assert not failures, f"{len(failures)} failures: " + "; ".join(
        failures[:4])
    return rounded(worst)


def inputs(shape, dtype, seed):
    return (rand(shape, dtype, seed, scale=2.0, shift=0.5),
            rand(shape, dtype, seed + 1))


class Launches:
    """Counts kfuse norm launches (by library norm name) while active."""

    def __enter__(self):
        self.names = []
        self._saved = knn._run

        def counting(name, *args, **values):
            self.names.append(name)
            return self._saved(name, *args, **values)
        knn._run = counting
        return self

    def __exit__(self, *exc):
        knn._run = self._saved
        return False


# -- parity with torch in float64 ---------------------------------------------

def parity_cases(kind, **module_args):
    cases = []
    seed = 0
    for name in DTYPES:
        for shape in SHAPES:
            seed += 10

            def fn(shape=shape, name=name, seed=seed):
                m = make_norm(kind, shape[-1:], dt(name), seed=seed,
                              **module_args)
                x, dy = inputs(shape, dt(name), seed)
                return compare(kind, m, x, dy)
            cases.append((f"{shape} {name}", dt(name), fn))
    return cases


@test
def layernorm_matches_torch():
    return sweep(parity_cases("ln"))


@test
def rmsnorm_matches_torch():
    return sweep(parity_cases("rms"))


@test
def layernorm_without_affine_or_bias():
    cases = []
    for variant in (dict(affine=False), dict(bias=False)):
        for name in DTYPES:
            for shape in ((4, 1), (3, 1000), (2, 3, 12289), (65, 768)):
                def fn(shape=shape, name=name, variant=variant):
                    m = make_norm("ln", shape[-1:], dt(name), seed=7,
                                  **variant)
                    expect = {"weight", "bias"} if not variant else {"weight"}
                    if variant.get("affine") is False:
                        expect = set()
                    got = {n for n, _ in m.named_parameters()}
                    assert got == expect, (got, expect)
                    x, dy = inputs(shape, dt(name), 8)
                    return compare("ln", m, x, dy)
                cases.append((f"{variant} {shape} {name}", dt(name), fn))
    return sweep(cases)


@test
def rmsnorm_without_affine():
    cases = []
    for name in DTYPES:
        for shape in ((4, 1), (7, 5128), (65, 768)):
            def fn(shape=shape, name=name):
                m = make_norm("rms", shape[-1:], dt(name), affine=False)
                assert m.weight is None
                x, dy = inputs(shape, dt(name), 9)
                return compare("rms", m, x, dy)
            cases.append((f"{shape} {name}", dt(name), fn))
    return sweep(cases)


@test
def multi_dim_normalized_shape():
    cases = []
    for kind in ("ln", "rms"):
        for name in ("float32", "bfloat16"):
            for shape, ns in (((5, 7, 3, 40), (3, 40)),
                              ((4, 2, 3, 64), (2, 3, 64)),
                              ((6, 12289), (12289,))):
                def fn(kind=kind, shape=shape, ns=ns, name=name):
                    m = make_norm(kind, ns, dt(name), seed=11)
                    assert tuple(m.weight.shape) == ns
                    x, dy = inputs(shape, dt(name), 12)
                    return compare(kind, m, x, dy)
                cases.append((f"{kind} {shape}/{ns} {name}", dt(name), fn))
    return sweep(cases)


@test
def bf16_input_with_f32_parameters():
    """x in bf16, parameters in f32 (no autocast): y and dx in bf16, the
    parameter grads in f32."""
    errors = {}
    for kind in ("ln", "rms"):
        m = make_norm(kind, (2048,), torch.float32, seed=13)
        x, dy = inputs((333, 2048), torch.bfloat16, 14)
        ours, grad_fn = run(m, x, dy, dict(m.named_parameters()))
        assert grad_fn == OURS[kind], grad_fn
        assert ours["y"].dtype == torch.bfloat16
        assert ours["dx"].dtype == torch.bfloat16
        assert ours["dweight"].dtype == torch.float32
        ref_params = twin_params(m, torch.float64)
        ref, _ = run(functional(kind, m, ref_params), x.double(),
                     dy.double(), ref_params)
        floor = floors(kind, x, dy, m)
        for key in ours:
            f32_out = ours[key].dtype == torch.float32
            errors[f"{kind}.{key}"] = close(
                f"{kind} {key}", ours[key], ref[key],
                1e-4 if f32_out else STORED["bfloat16"], floor[key])
    return rounded(errors)


@test
def eps_is_respected():
    errors = {}
    for kind in ("ln", "rms"):
        for name in ("float32", "bfloat16"):
            m = make_norm(kind, (1000,), dt(name), eps=0.5, seed=15)
            # Small rows, so that eps = 0.5 moves the result a lot.
            x = rand((64, 1000), dt(name), 16, scale=0.3)
            dy = rand((64, 1000), dt(name), 17)
            result = compare(kind, m, x, dy)
            judge(result, dt(name), f"{kind} eps=0.5 {name}")
            errors[f"{kind}.{name}"] = max(e for e, _ in result.values())
            default = make_norm(kind, (1000,), dt(name), seed=15)
            with torch.no_grad():
                far = rel_l2(m(x), default(x))
            assert far > 0.1, f"{kind}: eps=0.5 barely changes y ({far:.2e})"
    return rounded(errors)


@test
def rmsnorm_eps_none_is_float32_epsilon():
    """eps=None: torch computes float32/bf16/f16 inputs with float32's
    machine epsilon. Rows of size ~1e-4 (mean square 1e-8 < eps ~1.2e-7) make
    eps dominate, so another eps would show."""
    eps = torch.finfo(torch.float32).eps
    errors = {}
    for name in DTYPES:
        m = knn.RMSNorm(5128, device="cuda", dtype=dt(name))
        assert m.eps is None
        x = rand((7, 5128), dt(name), 18, scale=1e-4)
        with torch.no_grad():
            y = m(x)
            y_fn = knn.rms_norm(x, (5128,))
            theirs = torch_rms_norm(x, (5128,), m.weight, None)
        xd = x.double()
        ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps)
        tol = STORED[name]
        errors[f"ref.{name}"] = close("y vs float64 with float32 eps", y,
                                      ref, tol)
        errors[f"torch.{name}"] = close("y vs torch's eps=None", y, theirs,
                                        2 * tol)
        assert torch.equal(y, y_fn), "module and functional differ"
    return rounded(errors)


@test
def non_contiguous_input():
    errors = {}
    for kind in ("ln", "rms"):
        m = make_norm(kind, (768,), torch.float32, seed=19)
        x = rand((768, 65), torch.float32, 20).t()  # (65, 768), a view
        assert not x.is_contiguous()
        dy = rand((65, 768), torch.float32, 21)
        result = compare(kind, m, x, dy)
        judge(result, torch.float32, kind)
        errors[kind] = max(e for e, _ in result.values())
    return rounded(errors)


# -- autograd plumbing --------------------------------------------------------

@test
def gradients_only_where_needed():
    """Frozen parameters get no grad; an input without requires_grad gets
    none either; no grad needed at all runs the forward alone."""
    for kind in ("ln", "rms"):
        m = make_norm(kind, (1000,), torch.float32, seed=22)
        x, dy = inputs((17, 1000), torch.float32, 23)
        ref_params = twin_params(m, torch.float64)
        ref, _ = run(functional(kind, m, ref_params), x.double(),
                     dy.double(), ref_params)
        # Frozen parameters: dx only.
        for p in m.parameters():
            p.requires_grad_(False)
        xg = x.clone().requires_grad_()
        y = m(xg)
        assert type(y.grad_fn).__name__ == OURS[kind], y.grad_fn
        y.backward(dy)
        assert all(p.grad is None for p in m.parameters())
        close(f"{kind} dx (frozen)", xg.grad, ref["dx"], F32_TOLERANCE,
              dx_scale(kind, x, dy, m))
        # Input without grad: parameter grads only.
        for p in m.parameters():
            p.requires_grad_(True)
        y = m(x)
        y.backward(dy)
        for name, p in m.named_parameters():
            close(f"{kind} d{name}", p.grad, ref["d" + name], F32_TOLERANCE)
        # Nothing needs a grad: the forward kernel alone, same bits.
        with Launches() as launches, torch.no_grad():
            y0 = m(x)
        assert launches.names == [kind.replace("ln", "layernorm").replace(
            "rms", "rmsnorm") + "_fwd"], launches.names
        assert y0.grad_fn is None and not y0.requires_grad
        assert torch.equal(y0, y.detach()), "no-grad forward differs"


@test
def kfuse_runs_and_fallbacks_do_not():
    counts = {}
    m = make_norm("ln", (768,), torch.float32)
    x, dy = inputs((65, 768), torch.float32, 24)
    with Launches() as launches:
        y = m(x.requires_grad_())
        y.backward(dy)
    assert launches.names == ["layernorm_fwd", "layernorm_bwd"], \
        launches.names
    r = make_norm("rms", (768,), torch.float32)
    with Launches() as launches:
        r(x).backward(dy)
    assert launches.names == ["rmsnorm_fwd", "rmsnorm_bwd"], launches.names
    fallbacks = {
        "float64": lambda: knn.layer_norm(x.double(), (768,)),
        "cpu": lambda: knn.layer_norm(x.detach().cpu(), (768,)),
        "empty": lambda: knn.layer_norm(x[:0], (768,)),
        "rms float64": lambda: knn.rms_norm(x.double(), (768,)),
        "rms cpu": lambda: knn.rms_norm(x.detach().cpu(), (768,)),
    }
    for name, fn in fallbacks.items():
        with Launches() as launches:
            y = fn()
        assert not launches.names, f"{name}: kfuse ran {launches.names}"
        counts[name] = str(y.dtype)
    return counts


@test
def small_eager_norms_run_torchs_kernel():
    """Under set_eager_min_bytes' count the converted modules run
    torch's fused native norm, with torch's output dtypes and gradients;
    from the count on, and for weights of another dtype than x, kfuse's
    kernels."""
    previous = knn.set_eager_min_bytes(1 << 18)
    try:
        result = {}
        for kind in ("ln", "rms"):
            m = make_norm(kind, (256,), torch.float32)
            small, dy_small = inputs((255, 256), torch.float32, 31)
            large, dy_large = inputs((256, 256), torch.float32, 32)
            with Launches() as launches:
                y = m(small.requires_grad_())
                y.backward(dy_small)
            assert not launches.names, launches.names
            with Launches() as launches:
                m(large.requires_grad_()).backward(dy_large)
            assert len(launches.names) == 2, launches.names
            with torch.autocast("cuda", dtype=torch.bfloat16):
                with Launches() as launches:
                    y_autocast = m(small.detach())
            assert not launches.names, launches.names
            assert y_autocast.dtype == torch.float32, (kind, y_autocast.dtype)
            result[kind] = str(y_autocast.dtype)
            m16 = make_norm(kind, (256,), torch.bfloat16)
            with Launches() as launches:
                m16.float()(small.detach().bfloat16())
            assert len(launches.names) == 1, \
                f"{kind}: f32 weight, bf16 x: {launches.names}"
        result["default"] = previous
        return result
    finally:
        knn.set_eager_min_bytes(previous)


@test
def double_backward_is_refused():
    m = make_norm("ln", (64,), torch.float32)
    x = rand((8, 64), torch.float32, 25).requires_grad_()
    g, = torch.autograd.grad(m(x).pow(2).sum(), x, create_graph=True)
    try:
        g.sum().backward()
    except RuntimeError as error:
        return {"error": str(error)[:60]}
    raise AssertionError("double backward through the kfuse norm ran")


@test
def bad_shapes_raise_value_error():
    messages = {}
    x = rand((4, 768), torch.float32, 26)
    cases = {
        "trailing dims": lambda: knn.LayerNorm(769, device="cuda")(x),
        "multi-dim": lambda: knn.layer_norm(x.view(4, 3, 256), (4, 256)),
        "weight shape": lambda: knn.layer_norm(
            x, (768,), torch.ones(767, device="cuda")),
        "rms weight": lambda: knn.rms_norm(
            x, (768,), torch.ones(2, 384, device="cuda")),
    }
    for name, fn in cases.items():
        try:
            fn()
        except ValueError as error:
            messages[name] = str(error)[:70]
        else:
            raise AssertionError(f"{name}: no ValueError")
    return messages


# -- modules: state dicts, repr, replace_norms --------------------------------

@test
def state_dict_round_trips_with_torch():
    pairs = [
        (lambda: knn.LayerNorm((3, 40), device="cuda"),
         lambda: torch.nn.LayerNorm((3, 40), device="cuda")),
        (lambda: knn.LayerNorm(64, bias=False, device="cuda"),
         lambda: torch.nn.LayerNorm(64, bias=False, device="cuda")),
        (lambda: knn.LayerNorm(64, elementwise_affine=False, device="cuda"),
         lambda: torch.nn.LayerNorm(64, elementwise_affine=False,
                                    device="cuda")),
    ]
    if hasattr(torch.nn, "RMSNorm"):
        pairs += [
            (lambda: knn.RMSNorm(64, device="cuda"),
             lambda: torch.nn.RMSNorm(64, device="cuda")),
            (lambda: knn.RMSNorm(64, eps=1e-6, elementwise_affine=False,
                                 device="cuda"),
             lambda: torch.nn.RMSNorm(64, eps=1e-6, elementwise_affine=False,
                                      device="cuda")),
        ]
    for make_ours, make_theirs in pairs:
        ours, theirs = make_ours(), make_theirs()
        assert isinstance(ours, type(theirs)), (type(ours), type(theirs))
        assert repr(ours) == repr(theirs)[:-1] + ", kfuse)", \
            (repr(ours), repr(theirs))
        assert list(ours.state_dict()) == list(theirs.state_dict())
        with torch.no_grad():
            for p in ours.parameters():
                p.normal_()
        theirs.load_state_dict(ours.state_dict())  # strict
        for a, b in zip(ours.parameters(), theirs.parameters()):
            assert torch.equal(a, b)
        with torch.no_grad():
            for p in theirs.parameters():
                p.normal_()
        ours.load_state_dict(theirs.state_dict())
        for a, b in zip(ours.parameters(), theirs.parameters()):
            assert torch.equal(a, b)
        # Same parameters, same function (to f32 rounding).
        x = rand((9,) + tuple(ours.normalized_shape), torch.float32, 27)
        with torch.no_grad():
            close(repr(ours), ours(x), theirs(x), F32_TOLERANCE)
        ours.reset_parameters()
        theirs.reset_parameters()
        for a, b in zip(ours.parameters(), theirs.parameters()):
            assert torch.equal(a, b), "reset_parameters differs"
    import kfuse.torch
    assert kfuse.torch.LayerNorm is knn.LayerNorm
    assert kfuse.torch.RMSNorm is knn.RMSNorm
    assert kfuse.torch.nn is knn
    extra = repr(knn.LayerNorm(8, autocast_output=True))
    assert "kfuse, autocast_output=True" in extra, extra
    assert repr(knn.RMSNorm(8)).endswith("kfuse)"), repr(knn.RMSNorm(8))
    return {"pairs": len(pairs)}


class Block(torch.nn.Module if torch is not None else object):
    """GPT-like: pre-norm residual MLPs (each norm feeds a matmul), a final
    norm before the head."""

    def __init__(self, width=256, rms=False):
        super().__init__()
        norm = (torch.nn.RMSNorm if rms and hasattr(torch.nn, "RMSNorm")
                else torch.nn.LayerNorm)
        linear = torch.nn.Linear
        self.inp = linear(64, width)
        self.ln_1 = norm(width)
        self.fc_1, self.proj_1 = linear(width, width), linear(width, width)
        self.ln_2 = torch.nn.LayerNorm(width)
        self.fc_2, self.proj_2 = linear(width, width), linear(width, width)
        self.ln_f = norm(width)
        self.out = linear(width, 10)

    def forward(self, x):
        h = self.inp(x)
        h = h + self.proj_1(F.gelu(self.fc_1(self.ln_1(h))))
        h = h + self.proj_2(F.gelu(self.fc_2(self.ln_2(h))))
        return self.out(self.ln_f(h))


def block(seed, rms=False):
    torch.manual_seed(seed)
    model = Block(rms=rms).cuda()
    with torch.no_grad():  # norms away from ones and zeros
        for name, p in model.named_parameters():
            if name.startswith("ln_"):
                p.add_(torch.randn_like(p) * 0.1)
    return model


@test
def replace_norms_keeps_parameters():
    details = {}
    for rms in (False, True):
        model = block(30, rms)
        reference = copy.deepcopy(model)
        params = list(model.parameters())
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        assert knn.replace_norms(model) is model
        norms = [m for m in model.modules()
                 if isinstance(m, (knn.LayerNorm, knn.RMSNorm))]
        assert len(norms) == 3, [type(m) for m in model.modules()]
        assert not any(type(m) in (torch.nn.LayerNorm,
                                   getattr(torch.nn, "RMSNorm", None))
                       for m in model.modules())
        assert all(a is b for a, b in zip(params, model.parameters()))
        assert all(a is b for a, b in zip(opt.param_groups[0]["params"],
                                          model.parameters()))
        after = model.state_dict()
        assert list(after) == list(state)
        assert all(torch.equal(after[k], state[k]) for k in state)
        x = rand((32, 64), torch.float32, 31)
        dy = rand((32, 10), torch.float32, 32)
        y = model(x)
        y_ref = reference(x)
        y.backward(dy)
        y_ref.backward(dy)
        errors = {"y": close("y", y, y_ref, F32_TOLERANCE)}
        grads = [p.grad for p in model.parameters()]
        ref_grads = [p.grad for p in reference.parameters()]
        errors["grads"] = max(close("grad", g, r, 1e-4)
                              for g, r in zip(grads, ref_grads))
        opt.step()  # the optimizer built before updates the same tensors
        assert not torch.equal(params[0], reference.inp.weight)
        details["rms" if rms else "ln"] = rounded(errors)
    return details


# -- autocast -----------------------------------------------------------------

@test
def autocast_output_in_autocast_dtype():
    """autocast_output=True: under CUDA autocast, y is written in the
    autocast dtype and equals torch's float32 result rounded to it; dx
    comes back in x's dtype, from the bf16/f16 dy."""
    errors = {}
    for kind in ("ln", "rms"):
        for cast in (torch.bfloat16, torch.float16):
            m = make_norm(kind, (768,), torch.float32, seed=33)
            m.autocast_output = True
            theirs = functional(kind, m, dict(m.named_parameters()))
            x = rand((65, 768), torch.float32, 34, 2.0, 0.5)
            xg = x.clone().requires_grad_()
            with torch.autocast("cuda", dtype=cast):
                y = m(xg)
                y_torch = theirs(x)
            assert y.dtype == cast, (kind, y.dtype)
            assert y_torch.dtype == torch.float32, (kind, y_torch.dtype)
            key = f"{kind}.{dname(cast)}"
            # Both round the float32 result once: near-ties aside, the same.
            errors[key + ".vs_torch_rounded"] = close(
                "y vs torch rounded", y, y_torch.to(cast), 1e-3)
            errors[key + ".vs_torch_f32"] = close(
                "y vs torch f32", y, y_torch, STORED[dname(cast)])
            dy = rand((65, 768), cast, 35)
            y.backward(dy)
            assert xg.grad.dtype == torch.float32, xg.grad.dtype
            assert m.weight.grad.dtype == torch.float32
            ref_params = twin_params(m, torch.float64)
            ref, _ = run(functional(kind, m, ref_params), x.double(),
                         dy.double(), ref_params)
            errors[key + ".dx"] = close("dx", xg.grad, ref["dx"],
                                        F32_TOLERANCE,
                                        dx_scale(kind, x, dy, m))
            assert type(y.grad_fn).__name__ == OURS[kind], y.grad_fn
            errors[key + ".dweight"] = close("dweight", m.weight.grad,
                                             ref["dweight"], F32_TOLERANCE)
    return rounded(errors)


@test
def default_output_dtypes_are_torchs():
    """By default the modules and functions return what torch's return:
    float32 under CUDA autocast (torch runs its norms in float32), x's dtype
    outside it; autocast_output=True writes the autocast dtype instead."""
    x = rand((65, 768), torch.float32, 36)
    xb = x.to(torch.bfloat16)
    errors = {}
    for kind in ("ln", "rms"):
        make = knn.LayerNorm if kind == "ln" else knn.RMSNorm
        mine = make(768, device="cuda")
        cast = make(768, device="cuda", autocast_output=True)
        fn = knn.layer_norm if kind == "ln" else knn.rms_norm
        theirs = functional(kind, mine, dict(mine.named_parameters()))
        for inp in (x, xb, xb.to(torch.float16)):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                want = theirs(inp).dtype
                assert mine(inp).dtype == want, (kind, inp.dtype, want)
                assert fn(inp, (768,)).dtype == want
                assert cast(inp).dtype == torch.bfloat16
            # Outside autocast torch's layer_norm refuses a bf16 x with f32
            # parameters (kfuse takes it, in x's dtype); same dtypes agree.
            same = make(768, device="cuda", dtype=inp.dtype)
            theirs_same = functional(kind, same, dict(same.named_parameters()))
            assert same(inp).dtype == theirs_same(inp).dtype == inp.dtype
            assert mine(inp).dtype == inp.dtype, (kind, inp.dtype)
        with torch.no_grad():
            ref = mine(x)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                got = cast(x)
                same = mine(xb)
        assert got.dtype == torch.bfloat16, got.dtype
        errors[kind] = close("cast vs float32", got, ref, STORED["bfloat16"])
        errors[kind + ".bf16_x"] = close("bf16 x", same, ref,
                                         STORED["bfloat16"])
    return rounded(errors)


@test
def autocast_training_step_matches_torch():
    """A block under bf16 autocast: kfuse norms (torch's f32 outputs by
    default) against torch's: losses and grads close, every grad finite."""
    model = block(40, rms=True)
    reference = copy.deepcopy(model)
    knn.replace_norms(model)
    x = rand((64, 64), torch.float32, 41)
    target = rand((64, 10), torch.float32, 42)
    losses = []
    for net in (model, reference):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = net(x)
        loss = F.mse_loss(out.float(), target)
        loss.backward()
        losses.append(loss.item())
    for p in model.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all()
    rel = abs(losses[0] - losses[1]) / abs(losses[1])
    assert rel < 1e-2, f"losses {losses}"
    grad_error = rel_l2(
        torch.cat([p.grad.flatten() for p in model.parameters()]),
        torch.cat([p.grad.flatten() for p in reference.parameters()]))
    assert grad_error < 3e-2, f"grads differ by {grad_error:.3e}"
    return {"loss_rel": float(f"{rel:.3e}"),
            "grad_rel_l2": float(f"{grad_error:.3e}")}


# -- model families -----------------------------------------------------------

# Where transformers keeps each norm class kfuse converts by name.
HF_NORMS = {
    "LlamaRMSNorm": "llama", "MistralRMSNorm": "mistral",
    "MixtralRMSNorm": "mixtral", "Qwen2RMSNorm": "qwen2",
    "Qwen2MoeRMSNorm": "qwen2_moe", "Qwen3RMSNorm": "qwen3",
    "Qwen3MoeRMSNorm": "qwen3_moe", "Phi3RMSNorm": "phi3",
    "GraniteRMSNorm": "granite", "DeepseekV3RMSNorm": "deepseek_v3",
    "GemmaRMSNorm": "gemma", "Gemma2RMSNorm": "gemma2",
    "Gemma3RMSNorm": "gemma3", "T5LayerNorm": "t5", "MT5LayerNorm": "mt5",
    "UMT5LayerNorm": "umt5", "LongT5LayerNorm": "longt5",
}


def hf_norm_class(name):
    try:
        module = importlib.import_module(
            f"transformers.models.{HF_NORMS[name]}.modeling_{HF_NORMS[name]}")
    except Exception:  # noqa: BLE001 - absent in this transformers
        return None
    return getattr(module, name, None)


@test
def hf_norm_families_match_originals():
    """Every norm class kfuse converts by name, from the installed
    transformers: the converted module against the original, x and weight
    in float32 and bfloat16, with and without bf16 autocast: the same output
    dtype, y and the grads within the dtype's rounding, and the converted
    module's grad_fn is kfuse's."""
    if importlib.util.find_spec("transformers") is None:
        return {"skipped": "transformers is not installed"}
    details, absent = {}, []
    for name in HF_NORMS:
        cls = hf_norm_class(name)
        if cls is None:
            absent.append(name)
            continue
        worst = 0.0
        for w_dtype in (torch.float32, torch.bfloat16):
            for x_dtype in (torch.float32, torch.bfloat16):
                for cast in (None, torch.bfloat16):
                    original = cls(768, eps=1e-6).to("cuda", w_dtype)
                    with torch.no_grad():
                        original.weight.copy_(rand((768,), w_dtype, 61, 0.2,
                                                   0.5))
                    ours = copy.deepcopy(original)
                    report = {}
                    knn.replace_norms(ours, report=report)
                    assert report == {name: 1}, (name, report)
                    assert isinstance(ours, cls) and "kfuse" in repr(ours)
                    x = rand((33, 768), x_dtype, 62, 1.5, 0.3)
                    dy = rand((33, 768), torch.float32, 63)
                    outs = []
                    for net in (ours, original):
                        xg = x.clone().requires_grad_()
                        with (torch.autocast("cuda", dtype=cast) if cast
                              else contextlib.nullcontext()):
                            y = net(xg)
                        y.backward(dy.to(y.dtype))
                        outs.append((y, xg.grad, net.weight.grad))
                        net.weight.grad = None
                    (y, dx, dw), (y0, dx0, dw0) = outs
                    key = (f"{name} w {dname(w_dtype)} x {dname(x_dtype)}"
                           f"{' autocast' if cast else ''}")
                    assert y.dtype == y0.dtype, (key, y.dtype, y0.dtype)
                    assert dx.dtype == dx0.dtype and dw.dtype == dw0.dtype, key
                    assert type(y.grad_fn).__name__ == OURS["rms"], \
                        (key, y.grad_fn)
                    narrow = torch.bfloat16 in (w_dtype, x_dtype, y.dtype)
                    limit = 2e-2 if narrow else 1e-5
                    for label, a, b in (("y", y, y0), ("dx", dx, dx0),
                                        ("dweight", dw, dw0)):
                        error = rel_l2(a.float(), b.float())
                        assert error < limit, (key, label, error)
                        worst = max(worst, error)
        details[name] = float(f"{worst:.2e}")
    details["absent from this transformers"] = absent
    return details


# -- fallbacks ----------------------------------------------------------------

@test
def float64_falls_back_and_gradchecks():
    x = torch.randn(3, 5, 8, device="cuda", dtype=torch.float64,
                    requires_grad=True)
    w = torch.randn(8, device="cuda", dtype=torch.float64,
                    requires_grad=True)
    b = torch.randn(8, device="cuda", dtype=torch.float64,
                    requires_grad=True)
    m = knn.LayerNorm(8, device="cuda", dtype=torch.float64)
    y = m(x)
    assert type(y.grad_fn).__name__ not in OURS.values(), y.grad_fn
    assert torch.equal(y, F.layer_norm(x, (8,), m.weight, m.bias))
    assert torch.autograd.gradcheck(
        lambda x, w, b: knn.layer_norm(x, (8,), w, b), (x, w, b))
    assert torch.autograd.gradcheck(
        lambda x, w: knn.rms_norm(x, (8,), w, 1e-6), (x, w))
    assert torch.autograd.gradcheck(
        lambda x: knn.layer_norm(x, (5, 8)), (x,))
    r = knn.RMSNorm(8, device="cuda", dtype=torch.float64)
    assert torch.equal(r(x), torch_rms_norm(x, (8,), r.weight, None))


@test
def cpu_and_empty_inputs_fall_back():
    m = knn.LayerNorm(16)  # on the CPU
    r = knn.RMSNorm(16)
    x = torch.randn(4, 16, requires_grad=True)
    y = m(x)
    assert torch.equal(y, F.layer_norm(x, (16,), m.weight, m.bias))
    y.sum().backward()
    assert x.grad is not None
    assert torch.equal(r(x), torch_rms_norm(x, (16,), r.weight, None))
    g = knn.LayerNorm(16, device="cuda")
    empty = torch.empty(0, 16, device="cuda", requires_grad=True)
    y = g(empty)
    assert y.shape == (0, 16)
    y.sum().backward()
    assert empty.grad.shape == (0, 16)


# -- training -----------------------------------------------------------------

@test
def training_matches_torch_modules():
    """20 AdamW steps of a block with kfuse norms and of its copy with
    torch's, from the same init on the same batches."""
    details = {}
    for cast in (None, torch.bfloat16):
        model = block(50, rms=True)
        reference = copy.deepcopy(model)
        knn.replace_norms(model)
        opts = [torch.optim.AdamW(net.parameters(), lr=1e-3)
                for net in (model, reference)]
        gen = torch.Generator(device="cuda").manual_seed(51)
        worst = 0.0
        for _ in range(20):
            x = torch.randn(64, 64, device="cuda", generator=gen)
            target = torch.randn(64, 10, device="cuda", generator=gen)
            losses = []
            for net, opt in zip((model, reference), opts):
                opt.zero_grad(set_to_none=True)
                with (torch.autocast("cuda", dtype=cast) if cast else
                      contextlib.nullcontext()):
                    out = net(x)
                loss = F.mse_loss(out.float(), target)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            assert all(math.isfinite(v) for v in losses), losses
            worst = max(worst, abs(losses[0] - losses[1]) / abs(losses[1]))
        limit = 1e-4 if cast is None else 2e-2
        assert worst < limit, f"{cast}: losses differ by {worst:.3e}"
        details["f32" if cast is None else "autocast_bf16"] = \
            float(f"{worst:.3e}")
    return details


# -- torch.compile and the kfuse:: operators ----------------------------------

@test
def custom_ops_pass_opcheck():
    """torch.library.opcheck of every kfuse:: operator: schema, fake
    implementation against the kernel, autograd registration and
    AOTAutograd with dynamic shapes, in f32 and bf16, with and without
    weight and bias."""
    opcheck = getattr(torch.library, "opcheck", None)
    if opcheck is None:
        return {"skipped": f"torch {torch.__version__} has no opcheck"}
    ops = torch.ops.kfuse
    count = 0
    for dtype in (torch.float32, torch.bfloat16):
        for affine in (True, False):
            x = rand((6, 5, 96), dtype, 60)
            dy = rand((6, 5, 96), dtype, 61)
            w = rand((96,), torch.float32, 62, 0.1, 1.0) if affine else None
            b = rand((96,), dtype, 63) if affine else None
            xg, wg, bg = (None if t is None else
                          t.detach().clone().requires_grad_()
                          for t in (x, w, b))
            opcheck(ops.layer_norm_fwd.default,
                    (xg, wg, bg, 96, 1e-5, torch.float32))
            opcheck(ops.rms_norm_fwd.default, (xg, wg, 96, 1e-6, dtype))
            _, stats = ops.layer_norm_fwd(x, w, b, 96, 1e-5, dtype)
            _, rstd = ops.rms_norm_fwd(x, w, 96, 1e-6, dtype)
            opcheck(ops.layer_norm_bwd.default, (dy, x, stats, w, b, 96))
            opcheck(ops.rms_norm_bwd.default, (dy, x, rstd, w, 96))
            count += 4
    return {"opchecks": count}


def compiled_matches_eager(model, compiled, cast, steps=3):
    """Forward and backward of `compiled` against `model` (an identical
    copy run eagerly) on the same inputs: the worst rel. L2 of outputs and
    grads."""
    gen = torch.Generator(device="cuda").manual_seed(70)
    worst = 0.0
    for _ in range(steps):
        x = torch.randn(64, 64, device="cuda", generator=gen)
        outs = []
        for net in (compiled, model):
            net_params = list(getattr(net, "_orig_mod", net).parameters())
            for p in net_params:
                p.grad = None
            with (torch.autocast("cuda", dtype=cast) if cast else
                  contextlib.nullcontext()):
                out = net(x)
            out.float().square().mean().backward()
            outs.append([out.detach().clone()] +
                        [p.grad.clone() for p in net_params])
        for a, b in zip(*outs):
            worst = max(worst, rel_l2(a, b, 1e-3))
    return worst


@test
def compile_fullgraph_without_graph_breaks():
    """torch.compile(fullgraph=True) of a block with kfuse LayerNorm and
    RMSNorm, under each set_compiled_norms choice: no graph break; with
    "inductor" (the default) the compiled block runs no kfuse norm kernel,
    with "kfuse" every norm runs as a kfuse:: operator; outputs and grads
    match the eager kfuse block, in f32 and under bf16 autocast."""
    import torch._dynamo as dynamo
    details = {}
    for kind in ("inductor", "kfuse"):
        previous = knn.set_compiled_norms(kind)
        try:
            for cast in (None, torch.bfloat16):
                dynamo.reset()
                model = knn.replace_norms(block(71, rms=True))
                eager = copy.deepcopy(model)
                compiled = torch.compile(model, fullgraph=True)
                with Launches() as launches:
                    worst = compiled_matches_eager(eager, compiled, cast)
                x = torch.randn(8, 64, device="cuda")
                with (torch.autocast("cuda", dtype=cast) if cast else
                      contextlib.nullcontext()):
                    explained = dynamo.explain(model)(x)
                assert explained.graph_break_count == 0, \
                    explained.break_reasons
                limit = 1e-5 if cast is None else 2e-2
                assert worst < limit, (kind, cast, worst)
                # The eager copy: 3 norms x (fwd + bwd) x 3 steps.
                compiled_launches = len(launches.names) - 18
                expected = 0 if kind == "inductor" else 18
                assert compiled_launches == expected, (kind, launches.names)
                details[f"{kind}.{'f32' if cast is None else 'bf16'}"] = {
                    "rel_l2": float(f"{worst:.3e}"),
                    "graphs": explained.graph_count,
                    "kfuse_launches": compiled_launches}
        finally:
            knn.set_compiled_norms(previous)
    return details


@test
def compile_reduce_overhead_captures_the_norms():
    """mode="reduce-overhead" with set_compiled_norms("kfuse"): after
    warm-up, kfuse's norm kernels replay inside CUDA graphs (no Python
    launch runs), with the eager results."""
    import torch._dynamo as dynamo
    dynamo.reset()
    previous = knn.set_compiled_norms("kfuse")
    try:
        model = knn.replace_norms(block(72, rms=True))
        eager = copy.deepcopy(model)
        compiled = torch.compile(model, mode="reduce-overhead",
                                 fullgraph=True)
        compiled_matches_eager(eager, compiled, torch.bfloat16, steps=3)
        with Launches() as launches:
            worst = compiled_matches_eager(eager, compiled, torch.bfloat16,
                                           steps=3)
    finally:
        knn.set_compiled_norms(previous)
    # Launches counted are the eager copy's only: 3 norms, fwd and bwd, 3
    # steps.
    assert len(launches.names) == 3 * 2 * 3, launches.names
    assert worst < 2e-2, worst
    return {"rel_l2": float(f"{worst:.3e}"),
            "python_launches_in_replays": len(launches.names) - 18}


def main():
    global knn
    options = _gpu_tests.parse_args()
    if torch is None or not torch.cuda.is_available():
        why = "no PyTorch" if torch is None else "no CUDA device"
        return _gpu_tests.skip("test_gpu_nn", why, options.json)
    import kfuse.torch.nn as kfuse_nn
    knn = kfuse_nn
    # The tests check kfuse's kernels at small sizes too;
    # small_eager_norms_run_torchs_kernel checks the default.
    knn.set_eager_min_bytes(0)
    return _gpu_tests.run(TESTS, options.k, options.json)


if __name__ == "__main__":
    sys.exit(main())
