"""Grid and chunk sweep of the multi-tensor AdamW kernel on the GPT-2-small
list: KFUSE_BLOCKS_PER_SM (read once per process) is set by the caller, the
chunk size here. Prints one JSON line per configuration.

    KFUSE_BLOCKS_PER_SM=4 python3 bench/sweep_multi_tensor.py
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_multi_tensor as b  # noqa: E402

shapes = b.gpt2_shapes()
n = b.numel_of(shapes)
for pdt in (torch.float32, torch.bfloat16):
    ps, gs, ms, vs = b.make_list(shapes, pdt, torch.float32)
    for chunk in (16384, 32768, 65536):
        os.environ["KFUSE_CHUNK_ELEMENTS"] = str(chunk)
        opt = b.kfuse_opt(ps, gs, ms, vs, check_stale=False)
        t = b.time_ms(opt.step, 5, 40)
        print(json.dumps({"param_dtype": str(pdt), "blocks_per_sm":
                          os.environ.get("KFUSE_BLOCKS_PER_SM", "512"),
                          "chunk_elements": chunk, "chunks": opt.num_chunks,
                          "ms": t["ms"],
                          "GBps": b.bpe(pdt, torch.float32) * n / t["ms"] / 1e6}),
              flush=True)
    del ps, gs, ms, vs, opt
    b.free()
