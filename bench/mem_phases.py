#!/usr/bin/env python3
"""Where a training iteration's memory peaks: the caching allocator's live and
peak bytes at each phase of one warm iteration, for ddpsim's `peak memory`
line (docs/strategies.md, "Peak memory") to be checked term by term rather
than against one number.

For each run (bench/torch_measure.py's names and models, no DDP), every
iteration is cut into phases, the allocator's peak reset at each phase's
start (torch.cuda.reset_peak_memory_stats), and the iteration after
`--warmup` ones is reported:

  base        live after zero_grad(set_to_none): parameters, optimizer state
  fwd_end     live once the loss is computed, the model's output still held
              (as `out = model(x); loss = crit(out, y)` holds it)
  fwd_peak    the most live during forward and loss
  bwd_peak    the most live during backward
  bwd_end     live after backward (gradients now, activations freed; the
              output and loss still held)
  step_peak   the most live during the optimizer step (GradScaler's under fp16),
              the output still held (bench/results/gpu-2026-11-26d-h200/call2 ran
              an earlier version that freed it before the step)

Each in GiB, with the parameters' and the optimizer state's bytes for
reference. --device cpu runs the loop as a dry run (no allocator: zeros).

    python3 bench/mem_phases.py --only gpt2-fp32-b8,bert-base-fp32-b32 --out mem.csv
"""

import argparse
import csv
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_measure  # noqa: E402  (its runs, models and losses)

GIB = float(2**30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", required=True, help="comma-separated torch_measure run names")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, help="override every run's batch (dry runs)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = True
    want = a.only.split(",")
    runs = {r["name"]: r for r in torch_measure.runs_for("full")}
    missing = [n for n in want if n not in runs or runs[n].get("ddp_cap") is not None]
    if missing:
        print("mem_phases: --only: not a plain torch_measure run (bench/torch_measure.py "
              "runs_for, no DDP): %s" % ", ".join(missing), file=sys.stderr)
        sys.exit(2)

    def mark():
        """Live and peak bytes (GiB) since the last mark; the peak is then reset."""
        if not cuda:
            return 0.0, 0.0
        torch.cuda.synchronize()
        now, most = torch.cuda.memory_allocated() / GIB, torch.cuda.max_memory_allocated() / GIB
        torch.cuda.reset_peak_memory_stats()
        return now, most

    cols = ["name", "model", "batch", "amp", "params_gib", "opt_state_gib", "base", "fwd_end",
            "fwd_peak", "bwd_peak", "bwd_end", "step_peak", "gpu"]
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for name in want:
            run = dict(runs[name])
            if a.batch:
                run["batch"] = a.batch
            torch.backends.cuda.matmul.allow_tf32 = bool(run.get("tf32_matmul"))
            model, x, meta = torch_measure.torch_models.MODELS[run["model"]](batch=run["batch"])
            model = model.to(dev)
            x = torch_measure.to_device(x, dev)
            if run.get("channels_last"):
                model = model.to(memory_format=torch.channels_last)
                x = x.to(memory_format=torch.channels_last)
            loss_of = torch_measure.make_loss(meta["loss"], x)
            opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
                   if meta["optimizer"] == "sgd"
                   else torch.optim.Adam(model.parameters(), lr=1e-5))
            amp = run.get("amp")
            scaler = torch.amp.GradScaler(dev.type) if amp == "fp16" else None
            dtype = torch.float16 if amp == "fp16" else torch.bfloat16
            r = {}
            for it in range(a.warmup + 1):
                opt.zero_grad(set_to_none=True)
                r["base"], _ = mark()
                with torch.autocast(dev.type, dtype=dtype, enabled=bool(amp)):
                    out = model(**x) if isinstance(x, dict) else model(x)
                    loss = loss_of(out)
                r["fwd_end"], r["fwd_peak"] = mark()
                (scaler.scale(loss) if scaler else loss).backward()
                r["bwd_end"], r["bwd_peak"] = mark()
                if scaler:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                _, r["step_peak"] = mark()
                del out, loss  # the loop holds the output through the step too
            pbytes = sum(p.numel() * p.element_size() for p in model.parameters())
            sbytes = sum(t.numel() * t.element_size() for s in opt.state.values()
                         for t in s.values() if torch.is_tensor(t) and t.dim() > 0)
            row = [name, run["model"], run["batch"], amp or "", "%.3f" % (pbytes / GIB),
                   "%.3f" % (sbytes / GIB)]
            row += ["%.3f" % r[k] for k in ("base", "fwd_end", "fwd_peak", "bwd_peak",
                                             "bwd_end", "step_peak")]
            row.append(torch.cuda.get_device_name(0) if cuda else "cpu")
            w.writerow(row)
            f.flush()
            print("  ".join("%s=%s" % kv for kv in zip(cols, row)), flush=True)
            del model, opt, x
            if cuda:
                torch.cuda.empty_cache()
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
