"""GPU tests of kfuse.torch.optim under torch.distributed (plain script).

    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/test_gpu_dist.py \
        [--json OUT] [-k NAME]

Each test spawns its ranks as processes (torch.multiprocessing) and trains
two copies of one small MLP side by side, from the same init and on the
same batches: one stepped by kfuse's AdamW, one by torch's fused AdamW,
both wrapped alike. Its ranks write their results to files the parent
reads. Tests:
  fsdp2_one_rank: fully_shard over a one-rank NCCL mesh: the params are
    DTensors (Shard(0)); the kfuse optimizer updates their local shards,
    keeps DTensor states placed like the params, and its
    get_optimizer_state_dict matches torch's in keys and placements.
  ddp_two_ranks_one_gpu: DistributedDataParallel over two gloo ranks on the
    one GPU, each rank its own batches: the params stay equal across ranks
    and match torch's.
Two ranks of FSDP2 need two GPUs: NCCL refuses two ranks on one device, and
FSDP2 over gloo on CUDA tensors crashed a rank (SIGSEGV, torch 2.11). On one
GPU these check correctness only.
Exit 1 on any failure; SKIP without PyTorch, CUDA or torch.distributed.
"""

import os
import pathlib
import socket
import sys
import tempfile
import traceback

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

import _gpu_tests  # noqa: E402

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as error:
    sys.exit(_gpu_tests.skip("bench/test_gpu_dist.py",
                             f"PyTorch with torch.distributed is needed "
                             f"({error})", None))

STEPS = 20
# Params, relative L2, f32: two AdamW implementations round apart, and at
# lr 1e-2 the difference grows to about 1e-6 in 20 steps.
TOLERANCE = 5e-6
# FSDP2 splits a param's rows over the ranks: every size divides by 2.
SIZES = (64, 128, 128, 16)
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mlp(sizes=SIZES):
    torch.manual_seed(0)
    layers = []
    for index, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if index + 2 < len(sizes):
            layers.append(torch.nn.GELU())
    return torch.nn.Sequential(*layers).cuda()


def batches(rank, count=STEPS):
    gen = torch.Generator(device="cuda").manual_seed(100 + rank)
    return [(torch.randn(32, SIZES[0], device="cuda", generator=gen),
             torch.randn(32, SIZES[-1], device="cuda", generator=gen))
            for _ in range(count)]


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def full(tensor):
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def train(model, opt, data):
    for x, target in data:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), target).backward()
        opt.step()


def compare(kfuse_model, torch_model):
    worst = 0.0
    for a, b in zip(kfuse_model.parameters(), torch_model.parameters()):
        worst = max(worst, rel_l2(full(a.detach()), full(b.detach())))
    return worst


# -- ranks --------------------------------------------------------------------

def as_rank(rank, world, port, backend, out_dir, body):
    """Runs body(rank, world, result) as rank `rank` of a process
    group on GPU 0; writes out_dir/rank{rank}.txt: the repr'd result dict,
    with the traceback under "error" when body raised."""
    result = {}
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.cuda.set_device(0)
        dist.init_process_group(backend, rank=rank, world_size=world)
        body(rank, world, result)
    except BaseException:  # noqa: BLE001 - reported to the parent
        result["error"] = traceback.format_exc()
    finally:
        (pathlib.Path(out_dir) / f"rank{rank}.txt").write_text(repr(result))
        if dist.is_initialized():
            dist.destroy_process_group()


def fsdp_body(rank, world, result):
    from torch.distributed.checkpoint.state_dict import (
        get_optimizer_state_dict)
    from torch.distributed.device_mesh import init_device_mesh
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    import kfuse.torch.optim as kopt

    mesh = init_device_mesh("cuda", (world,))
    models = []
    for _ in range(2):
        model = mlp()
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        models.append(model)
    kfuse_model, torch_model = models
    kfuse_opt = kopt.AdamW(kfuse_model.parameters(), lr=1e-2,
                           weight_decay=0.1)
    torch_opt = torch.optim.AdamW(torch_model.parameters(), lr=1e-2,
                                  weight_decay=0.1, fused=True)
    data = batches(rank)
    train(kfuse_model, kfuse_opt, data)
    train(torch_model, torch_opt, data)
    result["max_rel_l2"] = compare(kfuse_model, torch_model)
    param = next(kfuse_model.parameters())
    state = kfuse_opt.state[param]
    result["param_placements"] = repr(tuple(param.placements))
    result["state_placements"] = repr(tuple(state["exp_avg"].placements))
    result["local_rows"] = param.to_local().shape[0]
    ours = get_optimizer_state_dict(kfuse_model, kfuse_opt)
    theirs = get_optimizer_state_dict(torch_model, torch_opt)
    result["state_keys_match"] = (sorted(ours["state"]) ==
                                  sorted(theirs["state"]))
    mismatched = []
    for key, entry in theirs["state"].items():
        for name, value in entry.items():
            mine = ours["state"][key][name]
            if type(mine) is not type(value) or (
                    hasattr(value, "placements") and
                    tuple(mine.placements) != tuple(value.placements)):
                mismatched.append(f"{key}.{name}")
    result["state_mismatched"] = mismatched
    # A round trip: torch's AdamW continues from kfuse's sharded state.
    torch_opt.load_state_dict(kfuse_opt.state_dict())
    result["loaded_into_torch"] = True


def ddp_body(rank, world, result):
    from torch.nn.parallel import DistributedDataParallel as DDP
    import kfuse.torch.optim as kopt

    kfuse_model, torch_model = DDP(mlp()), DDP(mlp())
    kfuse_opt = kopt.AdamW(kfuse_model.parameters(), lr=1e-2,
                           weight_decay=0.1)
    torch_opt = torch.optim.AdamW(torch_model.parameters(), lr=1e-2,
                                  weight_decay=0.1, fused=True)
    data = batches(rank)
    train(kfuse_model, kfuse_opt, data)
    train(torch_model, torch_opt, data)
    result["max_rel_l2"] = compare(kfuse_model, torch_model)
    flat = torch.cat([p.detach().reshape(-1)
                      for p in kfuse_model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    result["ranks_equal"] = all(torch.equal(g, gathered[0])
                                for g in gathered)


def fsdp_rank(rank, world, port, backend, out_dir):
    as_rank(rank, world, port, backend, out_dir, fsdp_body)


def ddp_rank(rank, world, port, backend, out_dir):
    as_rank(rank, world, port, backend, out_dir, ddp_body)


def spawn(fn, world, *args):
    """Runs fn(rank, world, port, *args, out_dir) on `world` processes; the
    ranks' result dicts."""
    import ast
    with tempfile.TemporaryDirectory() as out_dir:
        mp.spawn(fn, args=(world, free_port()) + args + (out_dir,),
                 nprocs=world, join=True)
        results = []
        for rank in range(world):
            path = pathlib.Path(out_dir) / f"rank{rank}.txt"
            if not path.exists():
                raise AssertionError(f"rank {rank} wrote no result")
            results.append(ast.literal_eval(path.read_text()))
    for rank, result in enumerate(results):
        if "error" in result:
            raise AssertionError(f"rank {rank}:\n{result['error']}")
    return results


def check_fsdp(results, world):
    for rank, r in enumerate(results):
        assert r["max_rel_l2"] <= TOLERANCE, (rank, r)
        assert r["state_keys_match"] and not r["state_mismatched"], r
        assert r["param_placements"] == r["state_placements"], r
        assert r["local_rows"] * world == SIZES[1], r
        assert r["loaded_into_torch"], r
    return results[0]


# -- tests --------------------------------------------------------------------

@test
def fsdp2_one_rank():
    return check_fsdp(spawn(fsdp_rank, 1, "nccl"), 1)


@test
def ddp_two_ranks_one_gpu():
    results = spawn(ddp_rank, 2, "gloo")
    for rank, r in enumerate(results):
        assert r["max_rel_l2"] <= TOLERANCE, (rank, r)
        assert r["ranks_equal"], r
    return results[0]


def main():
    options = _gpu_tests.parse_args()
    if not torch.cuda.is_available():
        return _gpu_tests.skip("bench/test_gpu_dist.py", "no CUDA device",
                               options.json)
    if not dist.is_available():
        return _gpu_tests.skip("bench/test_gpu_dist.py",
                               "torch.distributed is not available",
                               options.json)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    return _gpu_tests.run(TESTS, options.k, options.json)


if __name__ == "__main__":
    sys.exit(main())
