"""The seed article's staged benchmark with kfuse's kernels: a GPT trained
step by step with (1) Adam FP32, (2) a fused AdamW, (3) + a fused LayerNorm,
(4) + BF16 autocast, against PyTorch's own best at each stage.

Runs on the GPU machine:
    KFUSE_LIBRARY=build/lib/libkfuse.so python3 bench/seed_stages.py \
        --out $OUT/seed_stages.json [--steps 200] [--iters 20] \
        [--stages 1,2,3,4 | 2.kfuse,4.torch ...]

The model is the peers' anchor GPT (shared/anchors/seed_stages_torch.py):
vocab 32000, d 768, 12 heads, 12 layers, T 512, batch 16, 134.6 M params,
pre-LN blocks, untied head; built on the CPU after torch.manual_seed(0) in
the anchor's module order, so every row starts from the anchor's weights.
TF32 is off (matmuls and convolutions in IEEE fp32 outside autocast).

Rows (case, impl):
    seed.stage1 kfuse  torch.optim.AdamW(foreach=False, fused=False), fp32:
                       the article's baseline (plain torch, same harness)
    seed.stage2 kfuse  kfuse.torch.optim.AdamW, fp32
    seed.stage2 torch  torch.optim.AdamW(fused=True), fp32
    seed.stage3 kfuse  + kfuse.torch.nn.replace_norms (kfuse LayerNorm)
    seed.stage4 kfuse  + torch.autocast(bf16)
    seed.stage4 torch  fused AdamW + nn.LayerNorm + bf16 autocast
    seed.stage4 torch_foreach
                       torch.optim.AdamW(foreach=True) + bf16 autocast: a
                       second correct bf16 run, how far two implementations
                       drift apart (the yardstick for kfuse's stage 4 curve)
seed.stage3 torch is not run: torch's nn.LayerNorm is already one native
kernel, so it would be seed.stage2 torch again (listed under "omitted").
Every row: lr 1e-4, AdamW's other defaults (betas 0.9/0.999, eps 1e-8,
weight decay 1e-2), the same init and the same data.

Data: a fixed stream of 8 batches generated once on the GPU from a seeded
torch.Generator and cycled: token sequences of a random bigram chain (each
next token is nxt[previous], nxt a seeded random map, with probability
0.75, else uniform), so the model can learn the map and the loss falls from
ln(32000) = 10.4 (the floor of this stream is about 3.2).

Per row, on one fresh model:
  1. loss_curve: --steps training steps from the init over the stream, the
     loss of each step kept on the device (no host sync inside the run) and
     read once at the end; loss = loss_curve[-1] (the loss of the forward of
     step --steps, before its update). Step 1 (which builds kfuse's plans and
     compiles its kernels) is timed apart as first_step_s; the others run
     under torch.cuda.set_sync_debug_mode("warn") and host_syncs counts the
     synchronizing torch calls it reports (0 expected everywhere; a sync
     inside libkfuse itself is not seen); other warnings caught there are
     kept in "warnings".
  2. iter_ms: --warmup more steps, then --iters steps back to back, each
     between two CUDA events (no sync until the last); median, min, max;
     iter_mean_ms = first start to last end / iters (the anchor's number).
     host_ms: the host's time to queue a step; near iter_ms, the step is
     bound by the host (Python, launches) rather than by the GPU.
     peak_GiB: torch.cuda.max_memory_allocated over these steps, after a
     reset. iter_times_ms / host_times_ms: every timed step's GPU time and
     host time (the spread of a host-bound step lives there). host_probe:
     what the host did meanwhile (HostProbe: Python's garbage collections
     and their time, the process's CPU time and context switches over all
     threads, its OS and Python threads, cgroup CPU throttling), per step.
  3. opt_ms: opt.step() alone on fixed random grads (seeded generator),
     each call between CUDA events and synchronized (bench/_measure.time_ms,
     3 warm-up calls), median, min, max over max(--iters, 10) calls;
     opt_back_to_back_ms: as many calls back to back between two events
     (each call's host work overlaps the previous call's kernels).
     step_cost_in_iter_ms (bf16 rows): what the step costs the training
     iteration: STEP_COST_ROUNDS rounds, each a block of --iters steps with
     opt.step() and a block without (forward, backward, zero_grad), every
     step between CUDA events; the median with minus the median without
     (iter_with_step_ms, iter_without_step_ms). Paired in one model and
     interleaved, so drift between rows does not enter.
     opt_gpu_ms: the GPU's time alone per call (time_ms fed: a spin
     kernel queued first hides the host's launch time). opt_copy_floor_ms:
     a device copy moving the step's bytes (opt_traffic_bytes: params read
     and written, grads read, states read and written), timed alike in the
     same run: the floor for any kernel moving those bytes; opt_pct_of_copy
     = floor / opt_gpu_ms.

Knobs for finding where a host-bound step's time goes (recorded in
"config"; the defaults change nothing): --gc off disables Python's garbage
collector during the curve and the timed steps (one gc.collect() before),
--switch-interval S sets sys.setswitchinterval (CPython's GIL hand-over
interval, 5 ms by default).

Top level: speedup_stage4_kfuse_vs_torch (torch iter_ms / kfuse iter_ms),
opt_ratio_stage2_torch_over_kfuse and its back-to-back twin,
opt_gpu_ratio_stage{2,4}_torch_over_kfuse (GPU time alone) and
opt_ceiling_ratio_stage{2,4}_torch_over_copy (torch's GPU time over the copy
floor: the largest ratio any kernel moving the same bytes could reach),
step_cost_in_iter_ratio_stage4_torch_over_kfuse (the step's cost inside the
training iteration, torch's over kfuse's),
speedup_vs_stage1 per row, loss_diff_* (max |a - b| and max |a - b| / |b|
over the two curves; the stage1 vs torch stage2 pair is two torch fp32
AdamWs and the stage 4 torch_foreach vs torch pair two torch bf16 runs: the
noise floors for the kfuse pairs),
peak_GiB_compare per stage. One failing row records "error" (and whatever it
measured before) and the others still run; the JSON is rewritten after
every row; exit 1 if any row failed. Without torch or CUDA: SKIP, exit 0.

Expected on an H200 at the defaults: about 2.5-3 minutes (the four fp32
rows ~140 ms a step, ~30 s each; the bf16 rows ~26 ms a step).
"""

import argparse
import datetime
import gc
import json
import math
import os
import pathlib
import resource
import statistics
import sys
import threading
import time
import traceback
import warnings

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as _error:
    print(f"SKIP: seed_stages needs PyTorch ({_error})")
    sys.exit(0)

from _measure import commit, free, time_ms  # noqa: E402

VOCAB, D_MODEL, HEADS, LAYERS, SEQ, BATCH = 32000, 768, 12, 12, 512, 16
LR = 1e-4
INIT_SEED = 0
DATA_SEED = 1234
OPT_GRAD_SEED = 7
N_BATCHES = 8
P_FOLLOW = 0.75

# (stage, impl) -> what the row runs: optimizer, LayerNorm, autocast.
ROWS = [
    (1, "kfuse", "torch_plain", "torch", False),
    (2, "kfuse", "kfuse", "torch", False),
    (2, "torch", "torch_fused", "torch", False),
    (3, "kfuse", "kfuse", "kfuse", False),
    (4, "kfuse", "kfuse", "kfuse", True),
    (4, "torch", "torch_fused", "torch", True),
    # A second correct bf16 run (torch's multi-tensor AdamW, not fused): how
    # far bf16 training drifts between two implementations, the yardstick
    # for kfuse's stage 4 curve against torch's.
    (4, "torch_foreach", "torch_foreach", "torch", True),
]
OPTIMIZERS = {
    "torch_plain": "torch.optim.AdamW(foreach=False, fused=False)",
    "torch_fused": "torch.optim.AdamW(fused=True)",
    "torch_foreach": "torch.optim.AdamW(foreach=True, fused=False)",
    "kfuse": "kfuse.torch.optim.AdamW",
}
LAYERNORMS = {"torch": "torch.nn.LayerNorm",
              "kfuse": "kfuse.torch.nn.LayerNorm (replace_norms, "
                       "autocast_output=True)"}
OMITTED = [{"case": "seed.stage3", "impl": "torch",
            "why": "torch's nn.LayerNorm is already one native kernel: the "
                   "row would be seed.stage2 torch again"}]


# -- the model: the anchor's GPT, module for module --------------------------

class Block(nn.Module):
    """Pre-LN transformer block: causal SDPA attention, GELU MLP (4 d)."""

    def __init__(self, d, heads):
        super().__init__()
        # Creation order is the anchor's (ln1, ln2, qkv, proj, fc1, fc2): it
        # decides which draws of the seeded generator each weight gets.
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, layers=LAYERS,
                 seq=SEQ):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.emb(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.lnf(x))


def make_data(device):
    """N_BATCHES (inputs, targets) pairs of BATCH x SEQ tokens of a seeded
    random bigram chain, generated on the device once."""
    gen = torch.Generator(device=device)
    gen.manual_seed(DATA_SEED)
    rows = N_BATCHES * BATCH
    nxt = torch.randint(0, VOCAB, (VOCAB,), generator=gen, device=device)
    noise = torch.randint(0, VOCAB, (rows, SEQ + 1), generator=gen,
                          device=device)
    follow = torch.rand((rows, SEQ + 1), generator=gen, device=device)
    follow = follow < P_FOLLOW
    seq = torch.empty((rows, SEQ + 1), dtype=torch.long, device=device)
    seq[:, 0] = noise[:, 0]
    for t in range(1, SEQ + 1):
        seq[:, t] = torch.where(follow[:, t], nxt[seq[:, t - 1]], noise[:, t])
    seq = seq.view(N_BATCHES, BATCH, SEQ + 1)
    return [(seq[i, :, :-1].contiguous(), seq[i, :, 1:].contiguous())
            for i in range(N_BATCHES)]


def build(opt_kind, norm_kind, row):
    """A fresh model from the seeded init and its optimizer."""
    torch.manual_seed(INIT_SEED)
    model = GPT().to("cuda")
    row["params_M"] = round(sum(p.numel() for p in model.parameters())
                            / 1e6, 1)
    if norm_kind == "kfuse":
        import kfuse.torch.nn as knn
        before = [id(p) for p in model.parameters()]
        # The study's kfuse stage 4 writes the norms' output in bf16 under
        # autocast (the next matmul's input), an explicit option: torch's
        # default is float32.
        model = knn.replace_norms(model, autocast_output=True)
        after = [id(p) for p in model.parameters()]
        replaced = sum(isinstance(m, knn.LayerNorm) for m in model.modules())
        left = sum(type(m) is nn.LayerNorm for m in model.modules())
        row["layernorms_replaced"] = replaced
        if replaced != 2 * LAYERS + 1 or left:
            raise RuntimeError(f"replace_norms left {left} nn.LayerNorm and "
                               f"made {replaced} kfuse LayerNorm "
                               f"(want {2 * LAYERS + 1} and 0)")
        if len(before) != len(after) or set(before) != set(after):
            raise RuntimeError("replace_norms changed the model's Parameters")
    if opt_kind == "torch_plain":
        opt = torch.optim.AdamW(model.parameters(), lr=LR, foreach=False,
                                fused=False)
    elif opt_kind == "torch_fused":
        opt = torch.optim.AdamW(model.parameters(), lr=LR, fused=True)
    elif opt_kind == "torch_foreach":
        opt = torch.optim.AdamW(model.parameters(), lr=LR, foreach=True,
                                fused=False)
    else:
        import kfuse.torch.optim as kopt
        opt = kopt.AdamW(model.parameters(), lr=LR)
    return model, opt


def _cgroup_throttling():
    """(periods throttled, microseconds throttled) of this cgroup's CPU
    quota, or None where the file is absent (cgroup v2, then v1)."""
    for path, key_us, scale in (("/sys/fs/cgroup/cpu.stat", "throttled_usec", 1),
                                ("/sys/fs/cgroup/cpu/cpu.stat",
                                 "throttled_time", 1e-3)):
        try:
            with open(path) as f:
                fields = dict(line.split() for line in f if line.strip())
        except (OSError, ValueError):
            continue
        return int(fields.get("nr_throttled", 0)), \
            float(fields.get(key_us, 0)) * scale
    return None


def _thread_cpu_ticks():
    """{thread id: (name, user + system clock ticks)} of this process's
    threads, from /proc (empty where there is none)."""
    ticks = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return ticks
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        ticks[tid] = (name, int(fields[11]) + int(fields[12]))
    return ticks


class HostProbe:
    """What the host did during a timed region, per step: Python's garbage
    collections (by generation) and the time spent in them, the process's
    CPU time and context switches (all threads), the threads that used CPU
    (by name), its OS and Python threads, and cgroup CPU throttling. Cheap
    enough to stay on: one gc callback, /proc read at the ends."""

    def __enter__(self):
        self.gc_counts = [0, 0, 0]
        self.gc_ms = 0.0
        self.gc_max_ms = 0.0
        self._gc_start = None
        gc.callbacks.append(self._on_gc)
        self._usage = resource.getrusage(resource.RUSAGE_SELF)
        self._throttling = _cgroup_throttling()
        self._threads = _thread_cpu_ticks()
        self._wall = time.perf_counter()
        return self

    def _on_gc(self, phase, info):
        now = time.perf_counter()
        if phase == "start":
            self._gc_start = now
        elif self._gc_start is not None:
            took = (now - self._gc_start) * 1e3
            self.gc_ms += took
            self.gc_max_ms = max(self.gc_max_ms, took)
            generation = info.get("generation", 0)
            if 0 <= generation < len(self.gc_counts):
                self.gc_counts[generation] += 1
            self._gc_start = None

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._wall
        usage = resource.getrusage(resource.RUSAGE_SELF)
        throttling = _cgroup_throttling()
        threads = _thread_cpu_ticks()
        gc.callbacks.remove(self._on_gc)
        tick_ms = 1e3 / os.sysconf("SC_CLK_TCK")
        busy = []
        for tid, (name, ticks) in threads.items():
            used = (ticks - self._threads.get(tid, (name, 0))[1]) * tick_ms
            if used > 0:
                busy.append((used, name, tid == str(threading.get_native_id())))
        busy.sort(reverse=True)
        self.busy_threads = [{"name": name, "cpu_ms": round(used, 1),
                              "main": main}
                             for used, name, main in busy[:6]]
        self.wall_ms = wall * 1e3
        self.cpu_ms = ((usage.ru_utime - self._usage.ru_utime) +
                       (usage.ru_stime - self._usage.ru_stime)) * 1e3
        self.voluntary_switches = usage.ru_nvcsw - self._usage.ru_nvcsw
        self.involuntary_switches = usage.ru_nivcsw - self._usage.ru_nivcsw
        self.throttled = None
        if throttling is not None and self._throttling is not None:
            self.throttled = {
                "periods": throttling[0] - self._throttling[0],
                "ms": round((throttling[1] - self._throttling[1]) / 1e3, 3)}
        self.os_threads = len(threads) or None
        self.python_threads = threading.active_count()
        return False

    def report(self, steps):
        steps = max(steps, 1)
        return {"steps": steps,
                "gc_collections": self.gc_counts,
                "gc_ms_per_step": round(self.gc_ms / steps, 4),
                "gc_max_ms": round(self.gc_max_ms, 3),
                "cpu_ms_per_step": round(self.cpu_ms / steps, 3),
                "wall_ms_per_step": round(self.wall_ms / steps, 3),
                "voluntary_switches_per_step":
                    round(self.voluntary_switches / steps, 2),
                "involuntary_switches_per_step":
                    round(self.involuntary_switches / steps, 2),
                "cgroup_throttled": self.throttled,
                "os_threads": self.os_threads,
                "python_threads": self.python_threads,
                "busy_threads": self.busy_threads}


def train_step(model, opt, x, y, amp, step=True):
    """Forward, backward, opt.step() (unless `step` is False) and
    zero_grad; returns the loss."""
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB).float(), y.view(-1))
    loss.backward()
    if step:
        opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def loss_curve(model, opt, data, amp, steps, row, options):
    """`steps` steps from the init; the losses stay on the device until the
    end. Step 1 (plans, compiles) is timed apart."""
    if steps <= 0:
        row["loss_curve"] = []
        return
    losses = torch.empty(steps, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    begin = time.perf_counter()
    losses[0].copy_(train_step(model, opt, *data[0], amp).detach())
    torch.cuda.synchronize()
    row["first_step_s"] = round(time.perf_counter() - begin, 3)
    begin = time.perf_counter()
    syncs = None
    with warnings.catch_warnings(record=True) as caught, \
            _GcMode(options.gc), HostProbe() as probe:
        warnings.simplefilter("always")
        debug = hasattr(torch.cuda, "set_sync_debug_mode")
        if debug:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            for i in range(1, steps):
                loss = train_step(model, opt, *data[i % len(data)], amp)
                losses[i].copy_(loss.detach())
        finally:
            if debug:
                torch.cuda.set_sync_debug_mode(0)
        messages = [str(w.message) for w in caught]
        if debug:
            syncs = [m for m in messages if "synchroniz" in m.lower()]
        other = sorted({m[:200] for m in messages
                        if "synchroniz" not in m.lower()})
        if other:
            row["warnings"] = other[:5]
    torch.cuda.synchronize()
    row["curve_host_probe"] = probe.report(steps - 1)
    if steps > 1:
        row["curve_ms_per_step"] = round(
            (time.perf_counter() - begin) * 1e3 / (steps - 1), 2)
    if syncs is not None:
        row["host_syncs"] = len(syncs)
        if syncs:
            row["host_sync_first"] = syncs[0][:300]
    row["loss_curve"] = [float(v) for v in losses.tolist()]
    row["loss"] = row["loss_curve"][-1]
    row["loss_steps"] = steps
    if not all(math.isfinite(v) for v in row["loss_curve"]):
        raise FloatingPointError("non-finite loss in the curve")


def time_iterations(model, opt, data, amp, options, row):
    """Back-to-back steps, each between two CUDA events; one sync at the
    end. Peak memory over these steps."""
    warmup, iters = options.warmup, options.iters
    for i in range(warmup):
        train_step(model, opt, *data[i % len(data)], amp)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    marks = [0.0] * (iters + 1)
    with _GcMode(options.gc), HostProbe() as probe:
        marks[0] = time.perf_counter()
        for i in range(iters):
            x, y = data[i % len(data)]
            starts[i].record()
            train_step(model, opt, x, y, amp)
            ends[i].record()
            marks[i + 1] = time.perf_counter()
        ends[-1].synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    host_times = [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]
    # The host's time to queue a step: near iter_ms, the step is bound by
    # the host (Python, launches), not by the GPU.
    host_ms = (marks[-1] - marks[0]) * 1e3 / iters
    row.update(iter_ms=round(statistics.median(times), 3),
               iter_min_ms=round(min(times), 3),
               iter_max_ms=round(max(times), 3),
               iter_mean_ms=round(starts[0].elapsed_time(ends[-1]) / iters, 3),
               host_ms=round(host_ms, 3),
               iters=iters, warmup=warmup,
               peak_GiB=round(torch.cuda.max_memory_allocated() / 2**30, 3),
               iter_times_ms=[round(t, 3) for t in times],
               host_times_ms=[round(t, 3) for t in host_times],
               host_probe=probe.report(iters))


STEP_COST_ROUNDS = 4


def time_step_cost(model, opt, data, options, row):
    """The step's cost inside the bf16 training iteration: blocks of steps
    with and without opt.step(), interleaved; medians of per-step event
    times."""
    def with_step(x, y):
        train_step(model, opt, x, y, True)

    def without_step(x, y):
        train_step(model, opt, x, y, True, step=False)

    times = {with_step: [], without_step: []}
    with _GcMode(options.gc):
        for _ in range(STEP_COST_ROUNDS):
            for fn in (with_step, without_step):
                fn(*data[0])  # the block's first step is not timed
                events = []
                for i in range(options.iters):
                    start = torch.cuda.Event(enable_timing=True)
                    end = torch.cuda.Event(enable_timing=True)
                    start.record()
                    fn(*data[i % len(data)])
                    end.record()
                    events.append((start, end))
                events[-1][1].synchronize()
                times[fn].extend(s.elapsed_time(e) for s, e in events)
    with_ms = statistics.median(times[with_step])
    without_ms = statistics.median(times[without_step])
    row.update(iter_with_step_ms=round(with_ms, 3),
               iter_without_step_ms=round(without_ms, 3),
               step_cost_in_iter_ms=round(with_ms - without_ms, 3))


class _GcMode:
    """--gc off: Python's collector disabled inside (after one collection),
    restored on exit; --gc on: nothing."""

    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        if self.mode == "off":
            gc.collect()
            gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()
        return False


def time_optimizer(model, opt, repeats, row):
    """opt.step() alone on fixed random grads, per-call events, median."""
    opt.zero_grad(set_to_none=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(OPT_GRAD_SEED)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen, device=p.device,
                             dtype=p.dtype)
    timing = time_ms(opt.step, 3, repeats)
    # Also the anchor's way: back-to-back steps between two events, so that
    # each step's host work overlaps the previous step's kernels.
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        opt.step()
    end.record()
    end.synchronize()
    # The step's GPU time alone (a spin kernel hides the first launch's host
    # time), and the same bytes moved by a device copy in this run: no
    # kernel that reads and writes what the step does can beat the copy.
    gpu = time_ms(opt.step, 3, repeats, fed=True)
    traffic = step_traffic_bytes(model, opt)
    copy = copy_ceiling(traffic, repeats)
    row.update(opt_ms=round(timing["ms"], 4),
               opt_min_ms=round(timing["min_ms"], 4),
               opt_max_ms=round(timing["max_ms"], 4),
               opt_repeats=timing["repeats"],
               opt_back_to_back_ms=round(start.elapsed_time(end) / repeats,
                                         4),
               opt_gpu_ms=round(gpu["ms"], 4),
               opt_traffic_bytes=traffic,
               opt_copy_floor_ms=round(copy["ms"], 4),
               opt_GBps=round(traffic / gpu["ms"] / 1e6, 1),
               opt_pct_of_copy=round(100 * copy["ms"] / gpu["ms"], 1))
    opt.zero_grad(set_to_none=True)


def step_traffic_bytes(model, opt):
    """The bytes an AdamW-like step must move: each param read and written,
    its grad read, each of its state tensors (exp_avg, exp_avg_sq: the
    param's shape) read and written."""
    total = 0
    for p in model.parameters():
        if p.grad is None:
            continue
        total += p.numel() * (2 * p.element_size() + p.grad.element_size())
        for value in opt.state.get(p, {}).values():
            if torch.is_tensor(value) and value.numel() == p.numel():
                total += 2 * value.numel() * value.element_size()
    return total


def copy_ceiling(traffic, repeats):
    """A device-to-device copy of traffic / 2 bytes (so traffic bytes read
    plus written), timed like the step's GPU time: the floor for any kernel
    moving the step's bytes on this GPU."""
    numel = traffic // 8
    src = torch.rand(numel, device="cuda")
    dst = torch.empty_like(src)
    try:
        return time_ms(lambda: dst.copy_(src), 3, repeats, fed=True)
    finally:
        del src, dst


def run_row(spec, data, options, row):
    _, _, opt_kind, norm_kind, amp = spec
    begin = time.perf_counter()
    model, opt = build(opt_kind, norm_kind, row)
    row["build_s"] = round(time.perf_counter() - begin, 2)
    loss_curve(model, opt, data, amp, options.steps, row, options)
    time_iterations(model, opt, data, amp, options, row)
    if amp:
        time_step_cost(model, opt, data, options, row)
    time_optimizer(model, opt, max(options.iters, 10), row)


# -- top-level comparisons ----------------------------------------------------

def find(results, stage, impl):
    for row in results:
        if (row["case"] == f"seed.stage{stage}" and row["impl"] == impl
                and "error" not in row):
            return row
    return None


def ratio(num, den):
    if num is None or den is None or not den:
        return None
    return round(num / den, 4)


def curve_diff(a, b):
    """max |a - b| and max |a - b| / |b| over two loss curves."""
    if a is None or b is None:
        return None
    ca, cb = a.get("loss_curve") or [], b.get("loss_curve") or []
    n = min(len(ca), len(cb))
    if not n:
        return None
    diffs = [abs(x - y) for x, y in zip(ca[:n], cb[:n])]
    rels = [d / abs(y) if y else d for d, y in zip(diffs, cb[:n])]
    worst = max(range(n), key=lambda i: rels[i])
    return {"max_abs": diffs[max(range(n), key=lambda i: diffs[i])],
            "max_rel": rels[worst], "max_rel_step": worst + 1,
            "final_abs": diffs[n - 1], "final_rel": rels[n - 1],
            "steps": n, "a": f"{a['case']} {a['impl']}",
            "b": f"{b['case']} {b['impl']}"}


def summarize(data):
    results = data["results"]
    get = lambda s, i, k: (find(results, s, i) or {}).get(k)  # noqa: E731
    data["speedup_stage4_kfuse_vs_torch"] = ratio(
        get(4, "torch", "iter_ms"), get(4, "kfuse", "iter_ms"))
    data["opt_ratio_stage2_torch_over_kfuse"] = ratio(
        get(2, "torch", "opt_ms"), get(2, "kfuse", "opt_ms"))
    data["opt_back_to_back_ratio_stage2_torch_over_kfuse"] = ratio(
        get(2, "torch", "opt_back_to_back_ms"),
        get(2, "kfuse", "opt_back_to_back_ms"))
    data["step_cost_in_iter_ratio_stage4_torch_over_kfuse"] = ratio(
        get(4, "torch", "step_cost_in_iter_ms"),
        get(4, "kfuse", "step_cost_in_iter_ms"))
    # GPU time alone, and the most any kernel moving the step's bytes could
    # gain on torch's fused step in this run (torch's GPU time over the
    # copy of the same bytes).
    for stage in (2, 4):
        data[f"opt_gpu_ratio_stage{stage}_torch_over_kfuse"] = ratio(
            get(stage, "torch", "opt_gpu_ms"),
            get(stage, "kfuse", "opt_gpu_ms"))
        data[f"opt_ceiling_ratio_stage{stage}_torch_over_copy"] = ratio(
            get(stage, "torch", "opt_gpu_ms"),
            get(stage, "torch", "opt_copy_floor_ms"))
    base = get(1, "kfuse", "iter_ms")
    data["speedup_vs_stage1"] = {
        f"{r['case']} {r['impl']}": ratio(base, r.get("iter_ms"))
        for r in results if "error" not in r}
    data["loss_diff_stage4_kfuse_vs_torch"] = curve_diff(
        find(results, 4, "kfuse"), find(results, 4, "torch"))
    data["loss_diff_stage2_kfuse_vs_torch"] = curve_diff(
        find(results, 2, "kfuse"), find(results, 2, "torch"))
    # Two torch fp32 AdamWs (for-loop vs fused): how far apart two correct
    # implementations drift, the yardstick for the kfuse pairs above.
    data["loss_diff_stage1_vs_torch_stage2"] = curve_diff(
        find(results, 1, "kfuse"), find(results, 2, "torch"))
    data["loss_diff_stage4_torch_foreach_vs_torch"] = curve_diff(
        find(results, 4, "torch_foreach"), find(results, 4, "torch"))
    compare = {}
    for stage in (1, 2, 3, 4):
        k, t = get(stage, "kfuse", "peak_GiB"), get(stage, "torch", "peak_GiB")
        if k is None and t is None:
            continue
        compare[f"seed.stage{stage}"] = {
            "kfuse": k, "torch": t,
            "kfuse_minus_torch": None if k is None or t is None
            else round(k - t, 3),
            "kfuse_over_torch": ratio(k, t)}
    data["peak_GiB_compare"] = compare


def _ms(row, key):
    """row[key] as milliseconds for the log, "-" where the row has none."""
    value = row.get(key)
    return "-" if value is None else f"{value:.3f}"


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    tmp.replace(path)


def selected(tokens):
    """--stages tokens ('1', '4', '2.torch', comma or space separated) ->
    the ROWS they name, in ROWS' order."""
    names = [t for token in tokens for t in token.split(",") if t]
    if not names:
        return list(ROWS)
    picked = []
    for spec in ROWS:
        stage, impl = spec[0], spec[1]
        if str(stage) in names or f"{stage}.{impl}" in names:
            picked.append(spec)
    known = {str(s[0]) for s in ROWS} | {f"{s[0]}.{s[1]}" for s in ROWS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--stages: unknown {unknown}; known: "
                         f"{sorted(known)}")
    return picked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_out = pathlib.Path(os.environ.get("OUT", ".")) / "seed_stages.json"
    parser.add_argument("--out", default=str(default_out),
                        help="JSON path (a directory: DIR/seed_stages.json)")
    parser.add_argument("--steps", type=int, default=200,
                        help="steps of the loss curve run (default 200)")
    parser.add_argument("--iters", type=int, default=20,
                        help="timed iterations (default 20)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="steps before the timed ones (default 3)")
    parser.add_argument("--stages", nargs="*", default=[],
                        help="rows to run: 1 2 3 4, or 2.kfuse 4.torch ...")
    parser.add_argument("--gc", choices=("on", "off"), default="on",
                        help="Python's garbage collector during the curve "
                             "and the timed steps (default on)")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="sys.setswitchinterval in seconds (CPython's "
                             "default is 0.005)")
    options = parser.parse_args()
    if options.switch_interval is not None:
        if options.switch_interval <= 0:
            parser.error("--switch-interval must be positive")
        sys.setswitchinterval(options.switch_interval)
    if options.iters < 1:
        parser.error("--iters must be at least 1")
    specs = selected(options.stages)
    out = pathlib.Path(options.out)
    if out.is_dir():
        out = out / "seed_stages.json"

    if not torch.cuda.is_available():
        print("SKIP: seed_stages needs a CUDA device")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    start = time.perf_counter()
    props = torch.cuda.get_device_properties(0)
    data = {
        "device": f"{props.name} ({props.multi_processor_count} SMs, "
                  f"{props.total_memory / 2**30:.0f} GiB)",
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": commit(REPO),
        "kfuse_library": None, "kfuse_arch": None,
        "config": {
            "model": "anchor GPT (pre-LN, causal SDPA, GELU MLP 4d)",
            "vocab": VOCAB, "d_model": D_MODEL, "heads": HEADS,
            "layers": LAYERS, "seq": SEQ, "batch": BATCH,
            "lr": LR, "optimizer": "AdamW, defaults otherwise",
            "tf32": False, "init_seed": INIT_SEED,
            "data": f"{N_BATCHES} batches cycled, bigram chain "
                    f"(p_follow {P_FOLLOW}), torch.Generator seed "
                    f"{DATA_SEED} on the GPU",
            "steps": options.steps, "iters": options.iters,
            "warmup": options.warmup,
            "gc": options.gc,
            "switch_interval_s": sys.getswitchinterval(),
            "opt_grads": f"torch.randn, generator seed {OPT_GRAD_SEED}"},
        "omitted": OMITTED, "results": [], "errors": []}
    try:
        import kfuse
        data["kfuse_library"] = kfuse.library_path()
        data["kfuse_arch"] = kfuse.device_arch()
    except Exception as error:  # noqa: BLE001 - the kfuse rows fail too
        data["kfuse_load_error"] = repr(error)
    write(out, data)

    stream = make_data("cuda")
    for spec in specs:
        stage, impl, opt_kind, norm_kind, amp = spec
        row = {"case": f"seed.stage{stage}", "impl": impl,
               "optimizer": OPTIMIZERS[opt_kind],
               "layernorm": LAYERNORMS[norm_kind],
               "autocast": "bf16" if amp else None}
        print(f"--- {row['case']} {impl}: {row['optimizer']}, "
              f"{row['layernorm']}, autocast {row['autocast']}", flush=True)
        begin = time.perf_counter()
        try:
            run_row(spec, stream, options, row)
        except Exception as error:  # noqa: BLE001 - record and go on
            traceback.print_exc()
            row["error"] = repr(error)
            data["errors"].append({"case": row["case"], "impl": impl,
                                   "error": repr(error)})
        row["wall_s"] = round(time.perf_counter() - begin, 1)
        data["results"].append(row)
        try:
            free()
        except Exception:  # noqa: BLE001 - a broken context stays broken
            pass
        if "error" in row:
            print(f"{row['case']} {impl} FAILED: {row['error']} "
                  f"({row['wall_s']} s)", flush=True)
        else:
            print(f"{row['case']} {impl}: iter {row['iter_ms']:.2f} ms "
                  f"[{row['iter_min_ms']:.2f}, {row['iter_max_ms']:.2f}] "
                  f"host {row['host_ms']:.2f} ms "
                  f"opt {_ms(row, 'opt_ms')} ms (back to back "
                  f"{_ms(row, 'opt_back_to_back_ms')}, GPU "
                  f"{_ms(row, 'opt_gpu_ms')} = {row.get('opt_pct_of_copy')}% "
                  f"of a copy's {_ms(row, 'opt_copy_floor_ms')}; in the "
                  f"iteration {_ms(row, 'step_cost_in_iter_ms')}) peak "
                  f"{row['peak_GiB']:.2f} "
                  f"GiB loss@{row.get('loss_steps', 0)} "
                  f"{row.get('loss', float('nan')):.4f} syncs "
                  f"{row.get('host_syncs')} first step "
                  f"{row.get('first_step_s')} s ({row['wall_s']} s)",
                  flush=True)
            probe = row["host_probe"]
            print(f"  host: gc {probe['gc_collections']} "
                  f"{probe['gc_ms_per_step']:.3f} ms/step (max "
                  f"{probe['gc_max_ms']:.2f}), cpu "
                  f"{probe['cpu_ms_per_step']:.2f} ms/step, switches "
                  f"{probe['voluntary_switches_per_step']}/"
                  f"{probe['involuntary_switches_per_step']} per step, "
                  f"threads {probe['os_threads']} (python "
                  f"{probe['python_threads']}), busy "
                  f"{[(t['name'], t['cpu_ms']) for t in probe['busy_threads']]}"
                  f", throttled "
                  f"{probe['cgroup_throttled']}; steps ms "
                  f"{sorted(row['iter_times_ms'])[::max(1, len(row['iter_times_ms']) // 8)]}",
                  flush=True)
        summarize(data)
        write(out, data)

    data["wall_s"] = round(time.perf_counter() - start, 1)
    summarize(data)
    write(out, data)
    print(f"\n{'case':12s} {'impl':13s} {'iter_ms':>8s} {'opt_ms':>8s} "
          f"{'peak_GiB':>8s} {'loss':>8s} {'x_stage1':>8s}")
    for r in data["results"]:
        if "error" in r:
            print(f"{r['case']:12s} {r['impl']:13s} ERROR {r['error']}")
            continue
        x = data["speedup_vs_stage1"].get(f"{r['case']} {r['impl']}")
        print(f"{r['case']:12s} {r['impl']:13s} {r['iter_ms']:8.2f} "
              f"{_ms(r, 'opt_ms'):>8s} {r['peak_GiB']:8.2f} "
              f"{r.get('loss', float('nan')):8.4f} "
              f"{x if x is not None else float('nan'):8.2f}")
    for key in ("speedup_stage4_kfuse_vs_torch",
                "opt_ratio_stage2_torch_over_kfuse",
                "opt_back_to_back_ratio_stage2_torch_over_kfuse",
                "opt_gpu_ratio_stage2_torch_over_kfuse",
                "opt_ceiling_ratio_stage2_torch_over_copy",
                "opt_gpu_ratio_stage4_torch_over_kfuse",
                "opt_ceiling_ratio_stage4_torch_over_copy",
                "step_cost_in_iter_ratio_stage4_torch_over_kfuse"):
        print(f"{key}: {data[key]}")
    for key in ("loss_diff_stage2_kfuse_vs_torch",
                "loss_diff_stage4_kfuse_vs_torch",
                "loss_diff_stage1_vs_torch_stage2",
                "loss_diff_stage4_torch_foreach_vs_torch"):
        d = data[key]
        if d:
            print(f"{key}: max_abs {d['max_abs']:.3e} max_rel "
                  f"{d['max_rel']:.3e} (step {d['max_rel_step']}) final_abs "
                  f"{d['final_abs']:.3e}")
    print(f"wall {data['wall_s']} s; wrote {out}")
    return 1 if data["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
