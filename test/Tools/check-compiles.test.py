"""Runs check on every kernel source under library/ and test/Tools/Inputs/
and compile on each that passes; prints one line a file and a summary.

    python3 check-compiles.test.py SOURCE_ROOT BIN_DIR
"""

import glob
import os
import re
import subprocess
import sys


def main():
    source, binaries = sys.argv[1], sys.argv[2]
    tool = os.path.join(binaries, "kfuse")
    files = sorted(glob.glob(os.path.join(source, "library", "*", "*.mlir")))
    files += sorted(glob.glob(os.path.join(source, "test", "Tools", "Inputs",
                                           "*.mlir")))
    compiled = failed = broken = 0
    library = library_compiled = 0
    for path in files:
        name = os.path.relpath(path, source)
        in_library = name.startswith("library" + os.sep)
        library += in_library
        with open(path, errors="replace") as f:
            text = f.read()
        norm = "kfuse.norm" in text
        # A norm whose rows have a static length compiles only for it.
        static = re.search(r"tensor<\?x([0-9]+)x", text)
        check = [tool, "check", path]
        if not norm:
            check += ["--steps=2", "--tolerance=1e-4"]
        if subprocess.run(check, capture_output=True).returncode != 0:
            print(f"{name}: check fails")
            failed += 1
            continue
        build = [tool, "compile", path, "--emit=cuda"]
        if norm:
            build.append(f"--cols={static.group(1) if static else 1024}")
        result = subprocess.run(build, capture_output=True, text=True)
        if result.returncode != 0:
            print(f"{name}: check passes but does not compile: "
                  f"{result.stderr.strip()[:400]}")
            broken += 1
        else:
            print(f"{name}: check passes, compiles")
            compiled += 1
            library_compiled += in_library
    print(f"{compiled} pass check and compile, {failed} fail check, "
          f"{broken} pass check but do not compile")
    print(f"library: {library_compiled} of {library} pass check and compile")


if __name__ == "__main__":
    main()
