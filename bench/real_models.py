"""Training iterations of Hugging Face models with kfuse against torch's best,
in one process.

    python3 bench/real_models.py [--models gpt2,bert,llama]
        [--impls torch,kfuse,torch_compile,kfuse_compile] [--rounds 7]
        [--steps 10] [--loss-steps 100] [--max-grad-norm 1.0]
        [--out results.json]

Models come from transformers configs with random init and random tokens
(no downloads), B=8 x T=512, bf16 autocast, f32 master params:
  model.gpt2   GPT2LMHeadModel (GPT-2 small, 124 M), dropout as configured
  model.bert   BertForMaskedLM (BERT-base, 110 M), dropout as configured
  model.llama  LlamaForCausalLM, 12 layers of width 2048 (~0.75 B params)
Implementations:
  torch          torch.optim.AdamW(fused=True), the model's own norms
  kfuse          kfuse.torch.optim.AdamW, kfuse.torch.nn.replace_norms
  torch_compile  torch's, the model under torch.compile
  kfuse_compile  kfuse's, the model under torch.compile (kfuse's norm
                 modules traced as torch's norms, the default of
                 kfuse.torch.nn.set_compiled_norms: inductor generates
                 them and fuses them with their neighbours)
  kfuse_ops_compile  as kfuse_compile with set_compiled_norms("kfuse"):
                 the norms run kfuse's kernels as kfuse:: operators
  *_ro           as * with mode="reduce-overhead" (CUDA graphs)
Every implementation of a model starts from the same weights and reads the
same batches. The timed rounds alternate the implementations (these hosts
are noisy where the step is bound by the host): each round runs every
implementation for --steps iterations, in reverse order every other round,
one CUDA event pair around each; a row's ms is the median of its rounds'
medians, with every round's median kept, and a ratio row's ratio is the
median of the per-round ratios (the host's speed drifts between rounds and
moves both implementations of a round alike). peak_GiB is the peak of
allocated memory during the timed steps above
what was allocated before them. opt_ms is the GPU time of optimizer.step()
alone (events around it, in separate iterations) and opt_host_ms the wall
time of the call; host_phases_ms the host's time in the forward, backward
and optimizer step of a timed iteration (medians); allocator_calls the
cudaMalloc/cudaFree calls and retries of the caching allocator during the
timed rounds; kernel_ms, norm_share
and top_kernels come from one profiled iteration (its kernel time, the
fraction of it in norm kernels, its largest kernels), and gpu_idle_ms is
ms - kernel_ms, the time the host holds an iteration up.
The compiled rows report graph_breaks (torch._dynamo.explain on one
forward). loss rows train each model --loss-steps steps from one init with
torch's fused and foreach AdamW, kfuse, and kfuse's optimizer alone
(kfuse_opt, the model's own norms), and report the largest relative
difference of each from the fused losses, and of kfuse from kfuse_opt (the
norms' share).

Writes one JSON object: {"device", "commit", "torch", "transformers", "rows"}.
"""

import argparse
import copy
import json
import pathlib
import statistics
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _measure import commit, free  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

BATCH, SEQ = 8, 512


def build(name, seed):
    import transformers as tf
    torch.manual_seed(seed)
    if name == "gpt2":
        config = tf.GPT2Config()
        model = tf.GPT2LMHeadModel(config)
    elif name == "bert":
        config = tf.BertConfig()
        model = tf.BertForMaskedLM(config)
    elif name == "llama":
        config = tf.LlamaConfig(hidden_size=2048, intermediate_size=5632,
                                num_hidden_layers=12, num_attention_heads=16,
                                num_key_value_heads=16, vocab_size=32000,
                                max_position_embeddings=SEQ)
        model = tf.LlamaForCausalLM(config)
    else:
        raise ValueError(f"unknown model {name}")
    return model.to("cuda"), config.vocab_size


def batches(vocab, count, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randint(0, vocab, (BATCH, SEQ), device="cuda",
                          generator=gen) for _ in range(count)]


# --max-grad-norm: clip the grads by their global norm every step, as
# torch.nn.utils.clip_grad_norm_(foreach=True) before torch's step and as
# kfuse's max_grad_norm= (inside its step).
MAX_GRAD_NORM = None


def make_optimizer(impl, params):
    if impl.startswith("kfuse"):
        import kfuse.torch
        return kfuse.torch.optim.AdamW(params, lr=1e-4,
                                       max_grad_norm=MAX_GRAD_NORM)
    if impl == "foreach":
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    return torch.optim.AdamW(params, lr=1e-4, fused=True)


class Run:
    """One implementation of one model: its module, optimizer and step."""

    def __init__(self, impl, model):
        self.impl = impl
        report = {}
        if impl.startswith("kfuse") and impl != "kfuse_opt":
            import kfuse.torch
            kfuse.torch.nn.replace_norms(model, report=report)
        self.compiled_norms = ("kfuse" if impl.startswith("kfuse_ops")
                               else "inductor")
        self.converted = report
        self.model = model
        self.optimizer = make_optimizer(impl, model.parameters())
        if impl.endswith("compile"):
            self.forward = torch.compile(model)
        elif impl.endswith("compile_ro"):
            self.forward = torch.compile(model, mode="reduce-overhead")
        else:
            self.forward = model

    def norms_traced(self):
        """The set_compiled_norms choice of this run, while tracing."""
        import contextlib
        if not self.impl.startswith("kfuse"):
            return contextlib.nullcontext()
        import kfuse.torch.nn as knn

        @contextlib.contextmanager
        def chosen():
            previous = knn.set_compiled_norms(self.compiled_norms)
            try:
                yield
            finally:
                knn.set_compiled_norms(previous)
        return chosen()

    def loss(self, tokens):
        with self.norms_traced(), \
                torch.autocast("cuda", dtype=torch.bfloat16):
            out = self.forward(input_ids=tokens, labels=tokens)
        return out.loss

    def optimizer_step(self):
        if MAX_GRAD_NORM is not None and not self.impl.startswith("kfuse"):
            torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                           MAX_GRAD_NORM, foreach=True)
        self.optimizer.step()

    def step(self, tokens, step=True):
        began = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss(tokens)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        if step:
            self.optimizer_step()
        # The host's time in each phase (the GPU runs behind it).
        self.phases = (forward - began, backward - forward,
                       time.perf_counter() - backward)
        return loss


def timed_round(run, tokens):
    """The median iteration (ms) and the median host time (ms) of its
    forward, backward and optimizer step."""
    times, phases = [], []
    for batch in tokens:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run.step(batch)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        phases.append(run.phases)
    return statistics.median(times), [
        1e3 * statistics.median(phase) for phase in zip(*phases)]


def opt_ms(run, tokens, repeats=5):
    """(GPU ms, host ms) of optimizer.step() alone: events around it, and
    the wall time of the call (the host's share, the GPU idle)."""
    times, host = [], []
    for batch in tokens[:repeats]:
        run.step(batch, step=False)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        began = time.perf_counter()
        run.optimizer_step()
        host.append(1e3 * (time.perf_counter() - began))
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), statistics.median(host)


def profile_step(run, batch, top=12):
    """One iteration under the profiler: the fraction of its kernel time in
    norm kernels, its total kernel time (ms) and its largest kernels."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run.step(batch)
        torch.cuda.synchronize()
    total = norm = 0.0
    kernels = []
    for event in prof.key_averages():
        cuda = getattr(event, "device_time_total", None)
        if cuda is None:
            cuda = getattr(event, "cuda_time_total", 0.0)
        if event.key.startswith("cuda") or event.key.startswith("Memcpy"):
            continue
        total += cuda
        kernels.append((cuda, event.count, event.key[:90]))
        key = event.key.lower()
        if "norm" in key and "kfuse_adamw" not in key:
            norm += cuda
    kernels.sort(reverse=True)
    return {"norm_share": norm / total if total else None,
            "kernel_ms": total / 1e3,
            "top_kernels": [{"us": round(us, 1), "count": count, "name": name}
                            for us, count, name in kernels[:top]]}


def graph_breaks(run, batch):
    import torch._dynamo as dynamo
    with run.norms_traced(), torch.autocast("cuda", dtype=torch.bfloat16):
        explained = dynamo.explain(run.model)(input_ids=batch, labels=batch)
    return explained.graph_break_count, [str(r.reason)[:200]
                                         for r in explained.break_reasons]


def measure_model(name, impls, rounds, steps, out_rows):
    base, vocab = build(name, seed=1)
    runs = []
    for impl in impls:
        runs.append(Run(impl, copy.deepcopy(base)))
    del base
    free()
    tokens = batches(vocab, steps, seed=2)
    for run in runs:  # warm-up: compiles, plans, autotuning
        for batch in tokens[:3]:
            run.step(batch)
    torch.cuda.synchronize()
    per_round = {run.impl: [] for run in runs}
    peaks = {run.impl: 0.0 for run in runs}
    host_phases = {run.impl: [] for run in runs}
    device_calls = {run.impl: {} for run in runs}
    for index in range(rounds):
        # Odd rounds run the implementations in reverse: whatever running
        # second in a round costs (the allocator's state after another
        # model, clocks) falls on each alike.
        for run in (runs if index % 2 == 0 else runs[::-1]):
            free()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            stats = torch.cuda.memory_stats()
            ms, phases = timed_round(run, tokens)
            after = torch.cuda.memory_stats()
            for key in ("num_device_alloc", "num_device_free",
                        "num_alloc_retries"):
                device_calls[run.impl][key] = device_calls[run.impl].get(
                    key, 0) + after.get(key, 0) - stats.get(key, 0)
            per_round[run.impl].append(ms)
            host_phases[run.impl].append(phases)
            peak = (torch.cuda.max_memory_allocated() - before) / 2**30
            peaks[run.impl] = max(peaks[run.impl], peak)
    for run in runs:
        row = {"case": f"model.{name}", "impl": run.impl,
               "ms": statistics.median(per_round[run.impl]),
               "round_ms": [round(t, 3) for t in per_round[run.impl]],
               "peak_GiB": round(peaks[run.impl], 3),
               "allocator_calls": device_calls[run.impl],
               "host_phases_ms": dict(zip(
                   ("forward", "backward", "step"),
                   (round(statistics.median(phase), 3) for phase in
                    zip(*host_phases[run.impl])))),
               **dict(zip(("opt_ms", "opt_host_ms"), opt_ms(run, tokens))),
               **profile_step(run, tokens[0]),
               "params": sum(p.numel() for p in run.model.parameters()),
               "norms_converted": run.converted}
        # The GPU's idle time in an iteration: where the host (Python,
        # launches, a sync inside the model's loss) holds the step up.
        row["gpu_idle_ms"] = row["ms"] - row["kernel_ms"]
        if "compile" in run.impl:
            row["graph_breaks"], row["break_reasons"] = graph_breaks(
                run, tokens[0])
        out_rows.append(row)
        print(json.dumps(row), flush=True)
    torch_ms = {row["impl"]: row["ms"] for row in out_rows
                if row["case"] == f"model.{name}"}
    for ours, theirs in (("kfuse", "torch"),
                         ("kfuse_compile", "torch_compile"),
                         ("kfuse_ops_compile", "torch_compile"),
                         ("kfuse_compile_ro", "torch_compile_ro"),
                         ("kfuse_ops_compile_ro", "torch_compile_ro")):
        if ours in torch_ms and theirs in torch_ms:
            paired = [a / b for a, b in zip(per_round[theirs],
                                            per_round[ours])]
            # The host's speed drifts between rounds (both impls of a round
            # move together), so the median of the paired per-round ratios
            # is the robust figure; ratio_of_medians is kept beside it.
            ratio = {"case": f"model.{name}", "impl": f"{theirs}/{ours}",
                     "ratio": statistics.median(paired),
                     "ratio_of_medians": torch_ms[theirs] / torch_ms[ours],
                     "round_ratios": [round(r, 4) for r in paired]}
            out_rows.append(ratio)
            print(json.dumps(ratio), flush=True)
    del runs
    free()


def measure_loss(name, steps, out_rows):
    base, vocab = build(name, seed=3)
    tokens = batches(vocab, steps, seed=4)
    losses = {}
    for impl in ("torch", "foreach", "kfuse", "kfuse_opt"):
        run = Run(impl, copy.deepcopy(base))
        torch.manual_seed(5)  # the same dropout masks for every impl
        losses[impl] = [run.step(batch).item() for batch in tokens]
        del run
        free()

    def worst(a, b):
        return max(abs(x - y) / abs(y) for x, y in zip(a, b))
    row = {"case": f"loss.{name}", "steps": steps,
           "kfuse_vs_fused_max_rel": worst(losses["kfuse"], losses["torch"]),
           "foreach_vs_fused_max_rel": worst(losses["foreach"],
                                             losses["torch"]),
           "kfuse_opt_vs_fused_max_rel": worst(losses["kfuse_opt"],
                                               losses["torch"]),
           "kfuse_vs_kfuse_opt_max_rel": worst(losses["kfuse"],
                                               losses["kfuse_opt"]),
           "final": {k: v[-1] for k, v in losses.items()}}
    out_rows.append(row)
    print(json.dumps(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="gpt2,bert,llama")
    parser.add_argument("--impls", default="torch,kfuse")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--loss-steps", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--max-grad-norm", type=float, default=None,
                        help="clip the grads by their global norm each step")
    args = parser.parse_args()
    global MAX_GRAD_NORM
    MAX_GRAD_NORM = args.max_grad_norm
    if not torch.cuda.is_available():
        print("real_models: no CUDA device; skipped")
        return 0
    import transformers
    torch.backends.cuda.matmul.allow_tf32 = True
    rows = []
    started = time.time()
    for name in args.models.split(","):
        if args.impls != "none":  # --impls none: the loss rows alone
            measure_model(name, args.impls.split(","), args.rounds,
                          args.steps, rows)
        if args.loss_steps:
            measure_loss(name, args.loss_steps, rows)
    result = {"device": torch.cuda.get_device_name(),
              "commit": commit(REPO), "torch": torch.__version__,
              "transformers": transformers.__version__,
              "batch": BATCH, "seq": SEQ, "max_grad_norm": MAX_GRAD_NORM,
              "wall_s": time.time() - started,
              "rows": rows}
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
