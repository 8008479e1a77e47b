import sys

import kfuse

update = kfuse.Update(sys.argv[1])
print("args: " + " ".join(
    f"{a.name}:{a.role}" + (f"={a.default:.3g}" if a.default is not None else "")
    for a in update.args))
try:
    kfuse.Update(sys.argv[2])
except kfuse.KfuseError as error:
    print("parse error:", error)
try:
    print("device:", kfuse.device_arch())
except kfuse.KfuseError as error:
    print("device: unavailable:", error)
