"""Cold start of the JIT: AdamW from IR text to a loadable cubin, against
NVRTC's own time for a trivial one-line kernel, and a disk-cache hit.
(`kfuse compile`'s path; the runtime hands direct PTX to the driver instead,
whose cold start bench/bench_load.py measures on a GPU.)

    python3 bench/bench_compile.py [--kfuse build/bin/kfuse] [--out DIR]

Runs anywhere NVRTC does (no GPU needed). Each cold compile is a fresh
`kfuse compile --emit=cubin --stats` process with an empty KFUSE_CACHE_DIR;
its `total_ms` counts IR text in to cubin out (parse, passes, emit, NVRTC,
cache store). Each hit is the same command over the filled directory. The
trivial kernel is compiled in this process through ctypes with the options
kfuse passes to NVRTC for a cubin (cold_over_trivial), and with NVRTC's
defaults, only the arch (cold_over_trivial_default_options). Those
trivial compiles follow a first, untimed one, while a fresh kfuse process
pays NVRTC's once-per-process start-up; two ratios compare like with like:
cold_over_trivial_first_in_process (the trivial kernel's first compile in a
fresh process) and cold_warm_nvrtc_over_trivial (`kfuse compile
--warm-nvrtc`, which starts NVRTC untimed first). The AdamW kernel is the
one the runtime compiles for a dynamic count that is a multiple of 8
(--numel-multiple, most tensors); cold_warm_nvrtc_tail_* is the kernel for
a count of unknown divisibility, with a scalar tail loop. Each of
--repeats rounds takes every measurement in turn, trivial and kfuse, so a
drift of the host's speed moves both: times are medians of the rounds,
ratios medians of the rounds' ratios. Writes DIR/bench_compile.json (one
JSON object a line):
one row per code generator (--codegen, default both): `ptx` (direct PTX
linked by nvJitLink; its warm-up also links a trivial PTX) and `cuda`
(the CUDA source through NVRTC). "compiler" says what made the cubin.
"""

import argparse
import ctypes
import ctypes.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent

TRIVIAL = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] += 1.0f; }'


def nvrtc_library():
    for name in ["libnvrtc.so.13", "libnvrtc.so"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    for path in ["/usr/local/cuda/lib64/libnvrtc.so"]:
        if os.path.exists(path):
            return ctypes.CDLL(path)
    raise SystemExit("bench_compile: no libnvrtc found")


def nvrtc_ms(lib, source, options):
    program = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"k.cu",
                              0, None, None):
        raise SystemExit("nvrtcCreateProgram failed")
    argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    start = time.perf_counter()
    status = lib.nvrtcCompileProgram(program, len(options), argv)
    ms = (time.perf_counter() - start) * 1e3
    lib.nvrtcDestroyProgram(ctypes.byref(program))
    if status:
        raise SystemExit(f"nvrtc failed ({status}) with {options}")
    return ms


def kfuse_nvrtc_options(lib, arch):
    """The options kfuse passes NVRTC for a cubin of `arch`, as
    runtime/Nvrtc.cpp's nvrtcCommandLine builds them."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    version = (major.value, minor.value)
    options = ["--std=c++17", "-default-device"]
    if version >= (12, 4):
        options.append("-minimal")
    options += [f"-arch={arch}", "--ptxas-options=-v"]
    if version >= (12, 9):
        options.append("--no-cache")
    return options


def kfuse_stats(kfuse, ir, cache_dir, arch, warm=False, multiple=1,
                heap_pad=True, codegen="auto", multi_tensor=False):
    env = dict(os.environ, KFUSE_CACHE_DIR=cache_dir, KFUSE_CODEGEN=codegen)
    env.pop("KFUSE_CACHE", None)
    if not heap_pad:
        env["KFUSE_HEAP_PAD_MB"] = "0"
    command = [kfuse, "compile", str(ir), "--emit=cubin", f"--arch={arch}",
               "-o", os.devnull, "--stats", f"--numel-multiple={multiple}"]
    if warm:
        command.append("--warm-nvrtc")
    if multi_tensor:
        command.append("--multi-tensor")
    out = subprocess.run(command, env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def trivial_subprocess_ms(options, heap_pad=False):
    """The trivial kernel in a fresh process: its first compile, with NVRTC's
    once-per-process start-up, as a fresh `kfuse compile` pays; or, with
    heap_pad, a second compile after the malloc setting kfuse's runtime
    applies (runtime/HeapRetention.h), as `kfuse compile --warm-nvrtc`."""
    pad = ("import ctypes; ctypes.CDLL('libc.so.6').mallopt(-2, 64 << 20); "
           if heap_pad else "")  # M_TOP_PAD
    again = (f"b.nvrtc_ms(lib, b.TRIVIAL, {options!r}); " if heap_pad else "")
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r}); {pad}"
            "import bench_compile as b; lib = b.nvrtc_library(); "
            f"{again}print(b.nvrtc_ms(lib, b.TRIVIAL, {options!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def commit():
    """KFUSE_COMMIT (a copy without .git), else git."""
    if os.environ.get("KFUSE_COMMIT"):
        return os.environ["KFUSE_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                              cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - no git is fine
        return "unknown"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kfuse", default=str(REPO / "build/bin/kfuse"))
    parser.add_argument("--ir", default=str(REPO / "library/optim/adamw.mlir"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--numel-multiple", type=int, default=8,
                        help="the kernel the runtime compiles for a count "
                        "that is a multiple of this (8: most tensors; 1: "
                        "unknown, with the scalar tail loop)")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--codegen", action="append", choices=["ptx", "cuda"],
                        help="code generators to measure (default: both)")
    parser.add_argument("--multi-tensor", action="store_true",
                        help="the multi-tensor plan's kernel, which "
                        "kfuse.torch.optim and kfuse.multi_tensor compile "
                        "(CUDA only: no direct PTX for it)")
    options = parser.parse_args()

    lib = nvrtc_library()
    arch_options = kfuse_nvrtc_options(lib, options.arch)
    plain_options = [f"-arch={options.arch}"]
    nvrtc_ms(lib, TRIVIAL, arch_options)  # loads NVRTC's own libraries
    nvrtc_ms(lib, TRIVIAL, plain_options)
    codegens = options.codegen or ["ptx", "cuda"]
    multiple = options.numel_multiple

    def run(codegen, cache_dir, **kw):
        return kfuse_stats(options.kfuse, options.ir, cache_dir, options.arch,
                           codegen=codegen, multi_tensor=options.multi_tensor,
                           **kw)

    def kfuse_sample(codegen):
        """One of each kfuse measurement, each a fresh process."""
        sample = {}
        with tempfile.TemporaryDirectory() as cache_dir:
            warm = run(codegen, cache_dir, warm=True, multiple=multiple)
            assert warm["cache"] == "miss", warm
            sample["warm"] = warm["total_ms"]
        with tempfile.TemporaryDirectory() as cache_dir:
            # What the heap pad buys: the same without it.
            plain = run(codegen, cache_dir, warm=True, multiple=multiple,
                        heap_pad=False)
            assert plain["cache"] == "miss", plain
            sample["warm_no_pad"] = plain["total_ms"]
        with tempfile.TemporaryDirectory() as cache_dir:
            # The kernel for a count of unknown divisibility (a tail loop).
            tail = run(codegen, cache_dir, warm=True)
            assert tail["cache"] == "miss", tail
            sample["warm_tail"] = tail["total_ms"]
        with tempfile.TemporaryDirectory() as cache_dir:
            first = run(codegen, cache_dir, multiple=multiple)
            assert first["cache"] == "miss", first
            second = run(codegen, cache_dir, multiple=multiple)
            assert second["cache"] == "hit-disk", second
            sample["cold"] = first["total_ms"]
            sample["hit"] = second["total_ms"]
            sample["stages"] = first
        return sample

    # The host's speed drifts by tens of percent over seconds (the H200's
    # shared host CPU), so each repeat takes every measurement, the trivial
    # kernel's and kfuse's, one after another, and the ratios are medians
    # of the per-repeat ratios.
    trivial, trivial_plain, trivial_first, trivial_pad = [], [], [], []
    samples = {codegen: [] for codegen in codegens}
    for _ in range(options.repeats):
        trivial.append(nvrtc_ms(lib, TRIVIAL, arch_options))
        trivial_plain.append(nvrtc_ms(lib, TRIVIAL, plain_options))
        trivial_first.append(trivial_subprocess_ms(arch_options))
        trivial_pad.append(trivial_subprocess_ms(arch_options, heap_pad=True))
        for codegen in codegens:
            samples[codegen].append(kfuse_sample(codegen))

    median = statistics.median

    def ratio(values, references):
        return median(v / r for v, r in zip(values, references))

    def row(codegen):
        series = samples[codegen]
        pick = lambda key: [s[key] for s in series]  # noqa: E731
        cold, warm, hits = pick("cold"), pick("warm"), pick("hit")
        warm_tail, warm_no_pad = pick("warm_tail"), pick("warm_no_pad")
        stages = pick("stages")
        median_stage = {key: median(s[key] for s in stages)
                        for key in ["parse_ms", "passes_ms", "emit_ms",
                                    "nvrtc_ms", "cache_ms"]}
        return {"case": "compile." + pathlib.Path(options.ir).stem +
                ("_multi_tensor" if options.multi_tensor else ""),
                "codegen": codegen,
                "compiler": stages[0]["compiler"], "arch": options.arch,
                "numel_multiple": multiple,
                "trivial_nvrtc_ms": median(trivial),
                "cold_total_ms": median(cold),
                "cold_over_trivial": ratio(cold, trivial),
                "trivial_nvrtc_default_options_ms": median(trivial_plain),
                "cold_over_trivial_default_options":
                    ratio(cold, trivial_plain),
                "trivial_options": arch_options,
                # Like with like: both first compiles of a fresh process, and
                # both after NVRTC has started (kfuse compile --warm-nvrtc).
                "trivial_first_in_process_ms": median(trivial_first),
                "cold_over_trivial_first_in_process":
                    ratio(cold, trivial_first),
                "cold_warm_nvrtc_total_ms": median(warm),
                "cold_warm_nvrtc_over_trivial": ratio(warm, trivial),
                # Without kfuse's heap pad (KFUSE_HEAP_PAD_MB=0), and the
                # trivial kernel with it: like with like, the allocator tuned
                # on both.
                "cold_warm_nvrtc_no_heap_pad_total_ms": median(warm_no_pad),
                "trivial_nvrtc_heap_pad_ms": median(trivial_pad),
                "cold_warm_nvrtc_over_trivial_heap_pad":
                    ratio(warm, trivial_pad),
                # The same with a count of unknown divisibility
                # (--numel-multiple 1): one more copy of the body, the scalar
                # tail loop.
                "cold_warm_nvrtc_tail_total_ms": median(warm_tail),
                "cold_warm_nvrtc_tail_over_trivial": ratio(warm_tail, trivial),
                "disk_hit_total_ms": median(hits),
                "disk_hit_over_cold": ratio(hits, cold),
                "cold_stages_ms": median_stage,
                "repeats": options.repeats, "interleaved": True,
                "commit": commit(), "host": os.uname().nodename}

    rows = [row(codegen) for codegen in codegens]
    pathlib.Path(options.out).mkdir(parents=True, exist_ok=True)
    with open(pathlib.Path(options.out) / "bench_compile.json", "w") as out:
        for row in rows:
            print(json.dumps(row))
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
