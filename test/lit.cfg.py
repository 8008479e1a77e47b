# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "kfuse"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kfuse_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "unit", "Inputs"]

config.substitutions.append(("%library", os.path.join(config.kfuse_src_root, "library")))
config.substitutions.append(("%kfuse_src", config.kfuse_src_root))
config.substitutions.append(("%kfuse_obj", config.kfuse_obj_root))
config.substitutions.append(("%kfuse_lib", os.path.join(config.kfuse_obj_root, "lib", "libkfuse.so")))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["kfuse-opt", "kfuse", "kfuse-fuzz-replay"],
                                   [config.kfuse_tools_dir])
llvm_config.add_tool_substitutions(["FileCheck", "not", "count"], [config.llvm_tools_dir])

# GPU-dependent expectations: a machine with a loadable CUDA driver is "gpu".
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("gpu")
except OSError:
    config.available_features.add("no-gpu")

# PyTorch for the tests of kfuse.torch on the CPU (any version: Debian's in
# CI, which scripts/test.sh installs for the system python3): the first
# interpreter that imports it is %torch_python.
import subprocess
for python in ["python3", "/usr/bin/python3"]:
    try:
        found = subprocess.run([python, "-c", "import torch"],
                               capture_output=True).returncode == 0
    except OSError:
        found = False
    if found:
        config.available_features.add("torch")
        config.substitutions.append(("%torch_python", python))
        break

# Compiles go through the disk kernel cache: keep it inside the build tree,
# never the user's, and quiet (the tests that test it set their own).
config.environment["KFUSE_CACHE_DIR"] = os.path.join(config.test_exec_root, "kernel-cache")
config.environment.pop("KFUSE_LOG", None)
