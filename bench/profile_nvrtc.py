"""Where NVRTC's time goes on kfuse's generated AdamW kernel: its phases
(front end, NVVM, ptxas) from --fdevice-time-trace, and what each part of
the kernel costs, by variants of the source with that part taken out.

    python3 bench/profile_nvrtc.py [--kfuse build/bin/kfuse] [--out DIR]

Variants (text substitutions of `kfuse compile` output, so they follow the
emitter): `kfuse` as generated; `operators` with IEEE `/` and `sqrtf` (ptxas'
expansion) for kfuse_div_rn / kfuse_sqrt_rn; `noinline` with the helpers
compiled once and called; `approx` with the helpers a bare f64 rcp/rsqrt
(wrong results: the floor of any f64 helper); `no_math` with every division
and root a multiply; `skeleton` with the body three adds (the loop and the
vector accesses alone); and the trivial one-line kernel. Each variant is
compiled --repeats times, interleaved, in this process with kfuse's NVRTC
options; medians. Writes DIR/profile_nvrtc.json. Runs anywhere NVRTC does.
"""

import argparse
import ctypes
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_compile  # noqa: E402  (nvrtc_library, TRIVIAL, commit)

REPO = pathlib.Path(__file__).resolve().parent.parent


def variants(source):
    helpers = re.search(r"static __device__ __forceinline__ float kfuse_div_rn"
                        r".*?\n}\n\nstatic __device__ __forceinline__ float "
                        r"kfuse_sqrt_rn.*?\n}\n", source, re.S)
    if not helpers:
        raise SystemExit("profile_nvrtc: no kfuse_div_rn/kfuse_sqrt_rn in the "
                         "generated source")

    def with_helpers(body):
        return source[:helpers.start()] + body + source[helpers.end():]

    out = {"kfuse": source}
    out["operators"] = with_helpers(
        "static __device__ __forceinline__ float kfuse_div_rn(float a, float b)"
        " { return a / b; }\n"
        "static __device__ __forceinline__ float kfuse_sqrt_rn(float a)"
        " { return sqrtf(a); }\n")
    out["noinline"] = source.replace(
        "static __device__ __forceinline__ float kfuse_div_rn",
        "static __device__ __noinline__ float kfuse_div_rn").replace(
        "static __device__ __forceinline__ float kfuse_sqrt_rn",
        "static __device__ __noinline__ float kfuse_sqrt_rn")
    out["approx"] = with_helpers(
        "static __device__ __forceinline__ float kfuse_div_rn(float a, float b)"
        " {\n  double r;\n  asm(\"rcp.approx.ftz.f64 %0, %1;\" : \"=d\"(r) : "
        "\"d\"((double)b));\n  return (float)(a * r);\n}\n"
        "static __device__ __forceinline__ float kfuse_sqrt_rn(float a) {\n"
        "  double r;\n  asm(\"rsqrt.approx.ftz.f64 %0, %1;\" : \"=d\"(r) : "
        "\"d\"((double)a));\n  return (float)(a * r);\n}\n")
    out["no_math"] = with_helpers(
        "static __device__ __forceinline__ float kfuse_div_rn(float a, float b)"
        " { return a * b; }\n"
        "static __device__ __forceinline__ float kfuse_sqrt_rn(float a)"
        " { return a * a; }\n")
    element = re.search(r"(static __device__ __forceinline__ void\n"
                        r"kfuse_\w+_element\(([^)]*)\) \{\n).*?\n}\n",
                        source, re.S)
    if element:
        outputs = re.findall(r"float &(\w+)", element.group(2))
        inputs = re.findall(r"float (\w+_in)", element.group(2))
        body = "".join(f"  {o} = {inputs[i % len(inputs)]} + "
                       f"{inputs[(i + 1) % len(inputs)]};\n"
                       for i, o in enumerate(outputs))
        out["skeleton"] = (source[:element.start()] + element.group(1) + body
                           + "}\n" + source[element.end():])
    out["trivial"] = bench_compile.TRIVIAL
    return out


def compile_ms(lib, source, options):
    return bench_compile.nvrtc_ms(lib, source, options)


def phases(lib, source, options):
    """Top-level phase times (ms) of one compile from NVRTC's time trace."""
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace")
        compile_ms(lib, source, options + [f"--fdevice-time-trace={trace}"])
        path = next((os.path.join(folder, f) for f in os.listdir(folder)),
                    None)
        if not path:
            return {}
        text = open(path).read()
    try:
        events = json.loads(text)
    except json.JSONDecodeError:
        return {}
    events = events.get("traceEvents", []) if isinstance(events, dict) \
        else events
    wanted = {"CUDA C++ Front-End": "front_end_ms", "LibNVVM": "nvvm_ms",
              "NVVM Module Linker": "nvvm_link_ms",
              "NVVM Optimizer": "nvvm_optimizer_ms",
              "NVVM CodeGen": "nvvm_codegen_ms",
              "Total PTXAS Time": "ptxas_ms",
              "PTX parsing and setup time": "ptxas_setup_ms",
              "Optimizing compilation unit": "ptxas_optimize_ms"}
    out = {}
    for event in events:
        key = wanted.get(event.get("name"))
        if key and event.get("ph") == "X":
            out[key] = out.get(key, 0.0) + event.get("dur", 0) / 1e3
    return {k: round(v, 2) for k, v in sorted(out.items())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kfuse", default=str(REPO / "build/bin/kfuse"))
    parser.add_argument("--ir", default=str(REPO / "library/optim/adamw.mlir"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()

    source = subprocess.run(
        [args.kfuse, "compile", args.ir, "--emit=cuda", f"--arch={args.arch}",
         "--numel-multiple=8"], capture_output=True, text=True,
        check=True).stdout
    lib = bench_compile.nvrtc_library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    options = ["--std=c++17", "-default-device", "-minimal",
               f"-arch={args.arch}", "--no-cache"]
    cases = variants(source)
    for text in cases.values():  # NVRTC's start-up, and a check they compile
        compile_ms(lib, text, options)
    times = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, text in cases.items():
            times[name].append(compile_ms(lib, text, options))
    rows = []
    trivial = statistics.median(times["trivial"])
    for name, text in cases.items():
        median = statistics.median(times[name])
        rows.append({"variant": name, "median_ms": round(median, 2),
                     "min_ms": round(min(times[name]), 2),
                     "over_trivial": round(median / trivial, 2),
                     "phases": phases(lib, text, options)})
        print(f"{name:10s} {median:7.1f} ms  {median / trivial:5.2f}x  "
              f"{rows[-1]['phases']}")
    result = {"case": "profile_nvrtc.adamw", "nvrtc": f"{major.value}."
              f"{minor.value}", "options": options, "repeats": args.repeats,
              "rows": rows, "commit": bench_compile.commit(),
              "date": time.strftime("%Y-%m-%d"), "host": os.uname().nodename,
              "cpu": next((line.split(":", 1)[1].strip() for line in
                           open("/proc/cpuinfo") if
                           line.startswith("model name")), "unknown"),
              "cpus": os.cpu_count()}
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(pathlib.Path(args.out) / "profile_nvrtc.json", "w") as out:
        json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()
