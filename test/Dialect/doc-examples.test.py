"""Driver of doc-examples.test (see there): argv = source root, tools dir."""

import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1])
OPT = pathlib.Path(sys.argv[2]) / "kfuse-opt"
BLOCK = re.compile(r"```mlir\n(.*?)```", re.S)
VALUE = re.compile(r"%[A-Za-z_][\w.$]*")


def split_types(text):
    """Top-level comma-separated types ("(a, b) -> c" gives a, b, c)."""
    text = text.replace("->", ",").replace(" to ", ",")
    text = text.replace("(", "").replace(")", "")
    return [t.strip() for t in text.split(",") if t.strip()]


def operand_types(line):
    """{value: type} for the operands of one op line, from its type list."""
    body = line.split("=", 1)[1] if re.match(r"\s*%[\w, %]*=", line) \
        else line
    if " : " not in body:
        return {}
    operands_text, types_text = body.split(" : ", 1)
    operands = VALUE.findall(operands_text)
    types = split_types(types_text.split("{")[0])
    if not operands or not types:
        return {}
    op = operands_text.split()[0]
    if op in ("kfuse.write",) or op.startswith("arith.") or \
            op.startswith("math."):
        return {v: types[0] for v in operands}
    return dict(zip(operands, types))


def wrap(fragment):
    """The fragment inside a function declaring what it uses undefined."""
    defined, used, types = set(), [], {}
    for line in fragment.splitlines():
        if "=" in line.split(":")[0]:
            defined.update(VALUE.findall(line.split("=", 1)[0]))
        if line.strip().startswith("^"):
            defined.update(VALUE.findall(line))
            continue
        types.update(operand_types(line))
        used += VALUE.findall(line.split("=", 1)[1] if "=" in
                              line.split(":")[0] else line)
    free = [v for v in dict.fromkeys(used) if v not in defined]
    missing = [v for v in free if v not in types]
    if missing:
        return None, f"cannot tell the types of {', '.join(missing)}"
    args = ", ".join(f"{v}: {types[v]}" for v in free)
    return f"func.func @example({args}) {{\n{fragment}  return\n}}\n", None


def parse(text, verify):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(text)
        f.flush()
        command = [str(OPT), f.name, "-o", "/dev/null"]
        if not verify:
            command.insert(1, "--mlir-very-unsafe-disable-verifier-on-parsing")
        done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode == 0, done.stderr.strip()


files = sorted(ROOT.glob("dialect/*.td")) + sorted(ROOT.glob("passes/*.td")) \
    + sorted(ROOT.glob("docs/*.md")) + [ROOT / "README.md"]
failures = 0
for path in files:
    blocks = BLOCK.findall(path.read_text())
    if not blocks:
        continue
    parsed = failed = elided = 0
    for block in blocks:
        # TableGen descriptions indent their examples.
        lines = block.splitlines()
        indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()),
                     default=0)
        block = "\n".join(l[indent:] for l in lines) + "\n"
        if "..." in block:
            elided += 1
            continue
        if "func.func" in block:
            ok, error = parse(block, verify=True)
        elif re.match(r"\s*%[\w.$]+\s*:", block):
            # An argument with its attributes (an attribute's example).
            ok, error = parse(f"func.func @example({block.strip()}) {{\n"
                              "  return\n}\n", verify=False)
        else:
            text, error = wrap(block)
            ok = text is not None and parse(text, verify=False)[0]
            if text is not None and not ok:
                error = parse(text, verify=False)[1]
        if ok:
            parsed += 1
        else:
            failed += 1
            print(f"FAILED {path.relative_to(ROOT)}:\n{block}{error}")
    failures += failed
    print(f"{path.relative_to(ROOT)}: {parsed} parsed, {failed} failed"
          + (f", {elided} elided" if elided else ""))
print("all examples parse" if not failures else f"{failures} failed")
