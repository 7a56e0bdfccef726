#!/usr/bin/env python3
"""Metamorphic checks of ddpsim's predictions: relations a user relies on
without checking, swept over the shipped topologies and models.

Not a test (make test does not run it): a relation can fail for a real
effect of a modelled mechanism, which the docs then describe. Each violation
is printed with the command(s) that reproduce it; the summary gives, per
relation, the cases compared and the violations.

  python3 bench/metamorphic.py [--bin bin/ddpsim] [--only NAME,...] [--quick]
      [--topos SUBSTR,...] [--models NAME,...] [--limit N]

Relations (names as --only takes them):
  batch        a larger --batch never gives a shorter iteration (iter_ms);
               batch_dp the same with --strategy dp (DataParallel)
  gpu_flops    the GPU's peak FLOP rates x2 (a gpus.yaml beside a copy of the
               topology replacing the shipped entry) never slows an iteration
  gpu_membw    the same with mem_bw x2
  world_bytes  every rank all-reduces the same gradient bytes S per iteration
               at every --world-size, and its all-reduce time is at least
               the ring's 2(N-1)/N * S over the GPU's egress bound (--algo ring)
  bucket       --bucket-mb larger: n_buckets never more; with --no-overlap
               (every all-reduce after backward, one after the other) never
               a longer iteration: fewer calls, same bytes
  dtype        --dtype fp16 / bf16 never slower than fp32 where the GPU has
               tensor cores for that type (the GPU table's fp16 / bf16 key);
               --amp as dtype_amp, with each row's host exposed time (autocast's
               casts cost host time, which a host-bound iteration pays)
  bucket_view  --grad-as-bucket-view never slower
  coll_size    ddpsim collective: a larger size never a shorter time, per
               op, algo and proto (auto included)
  coll_busbw   busbw never above the bottleneck ddpsim topo prints (the
               plain ring's bound, NCCL's channel total, a GPU's links),
               for the algorithms whose every rank moves 2(N-1)/N*S
               (ring kinds); tree, nvls and hierarchical (across nodes a NIC
               carries 2(M-1)/M S/G) are reported apart
  coll_auto    --algo auto within AUTO_TOL of the best forced
               (algo, proto) NCCL could pick (ring, tree, nvls x LL, LL128,
               Simple); and auto's nccl_model_us is the least of theirs
  coll_chain_busbw  broadcast and reduce (one chain per rail, S/K each,
               sim/coll/coll_chain_rails.c) never above K x the least rail's
               bottleneck (under a protocol NCCL's searched rings where ddpsim
               topo prints them) nor, under a protocol, above NCCL's view of a
               GPU's links (the root sends or receives all of S)
  coll_root    broadcast and reduce take the same time from every --root
               where every GPU is alike (one node on one NVSwitch, nothing
               else); elsewhere the spread over roots is printed as notes
  coll_bcast_ag  plain broadcast of S never slower than N/(N-1) x the plain
               ring all-gather of S plus the chain's pipeline fill (N-2) P/B
               and its N-1 hop latencies (P = min(512 KiB, S/K), B the least
               rail's bottleneck, coll_chain.c's formulas)
  coll_links   a link one more strand (count + 1) never slows a collective
               (topologies with explicit links: their first 16, on 16 ranks);
               more links are also how NCCL's search finds more channels
  determinism  same inputs and seed: byte-identical output with --jobs 1
               and --jobs 2 (a jittered sweep with several samples)
"""
import argparse
import csv
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Relative slack for "never": the CSV's printed precision (iter_ms has 6
# decimals, time_us 3), so a tie that prints one unit apart is no violation.
REL_EPS = 1e-6
ABS_EPS_MS = 2e-6
ABS_EPS_US = 2e-3

# --algo auto runs what NCCL's cost model (v2.30.7's constants) predicts
# fastest, not what the simulation finds fastest: the simulation adds what
# NCCL's model leaves out (launch, Simple's slice syncs, the NVLS pipeline),
# so near a switch between protocols NCCL's pick can be the slower one here
# (docs/collectives.md, "Auto is NCCL's pick"). That part is checked exactly
# (coll_auto_model: auto's nccl_model_us is the least of the candidates'); the
# time ratio is only flagged beyond 1.5x, where a user of real NCCL would lose
# a third of the call to the pick and should hear of it; the largest ratios
# found are printed as notes either way.
AUTO_TOL = 0.5


def topologies():
    files = sorted(glob.glob(os.path.join(ROOT, "topologies", "*.yaml")))
    files += sorted(glob.glob(os.path.join(ROOT, "validation", "topologies", "*.yaml")))
    return [f for f in files if os.path.basename(f) != "gpus.yaml"]


def models():
    return sorted(glob.glob(os.path.join(ROOT, "models", "*.yaml")))


def rel(path):
    return os.path.relpath(path, ROOT)


class Runner:
    def __init__(self, binary):
        self.binary = binary
        self.refused = 0
        self.runs = 0
        self.cache = {}

    def cmd_text(self, args):
        return " ".join([rel(self.binary) if os.path.isabs(self.binary) else self.binary]
                        + [rel(a) if os.path.isabs(a) and a.startswith(ROOT) else a for a in args])

    def raw(self, args):
        self.runs += 1
        p = subprocess.run([self.binary] + args, cwd=ROOT, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def rows(self, args):
        """CSV rows of a run, or None where ddpsim refuses the combination;
        a run already made is answered from memory (the checks share runs)."""
        key = tuple(args)
        if key not in self.cache:
            self.cache[key] = self._rows(args)
        return self.cache[key]

    def _rows(self, args):
        rc, out, err = self.raw(args + ["--format", "csv"])
        if rc == 2:
            self.refused += 1
            return None
        if rc != 0:
            raise RuntimeError("%s: exit %d: %s" % (self.cmd_text(args), rc, err.strip()[-300:]))
        lines = [l for l in out.splitlines() if l and not l.startswith("#")]
        return list(csv.DictReader(io.StringIO("\n".join(lines))))


class Report:
    def __init__(self):
        self.cases = {}
        self.violations = {}
        self.printed = set()

    def case(self, name, n=1):
        self.cases[name] = self.cases.get(name, 0) + n

    def violation(self, name, text, cmds):
        self.violations.setdefault(name, []).append((text, cmds))

    def print(self, limit):
        """Prints the relations not printed yet (after each check, so a long
        sweep shows its first answers early)."""
        for name in self.cases:
            if name in self.printed:
                continue
            self.printed.add(name)
            vs = self.violations.get(name, [])
            print("== %s: %d cases, %d violations" % (name, self.cases[name], len(vs)))
            for text, cmds in vs[:limit]:
                print("  " + text)
                for c in cmds:
                    print("    $ " + c)
            if len(vs) > limit:
                print("  ... %d more" % (len(vs) - limit))


def worse(a, b, abs_eps):
    """True when b is strictly larger than a beyond printing precision."""
    return b > a * (1 + REL_EPS) + abs_eps


def train_base(topo, model):
    args = ["--topo", topo, "--model", model, "--jobs", "1"]
    if "512x8" in topo:
        args += ["--world-size", "64"]  # 4096 ranks: 3 s a run; the relations do not need them
    return args


def check_batch(r, rep, topos, mods):
    """DDP (the default) as batch; DataParallel as batch_dp: its replicate
    broadcasts and gradient reduces run the rails' chains, its scatter and
    gather grow with the batch, none shrinks."""
    for t in topos:
        for m in mods:
            for name, extra in (("batch", []), ("batch_dp", ["--strategy", "dp"])):
                args = train_base(t, m) + extra + ["--batch", "1,2,4,8,16,32,64"]
                rows = r.rows(args)
                if rows is None:
                    continue
                for a, b in zip(rows, rows[1:]):
                    rep.case(name)
                    ta, tb = float(a["iter_ms"]), float(b["iter_ms"])
                    if worse(tb, ta, ABS_EPS_MS):
                        rep.violation(name, "%s %s: batch %s %.6f ms > batch %s %.6f ms"
                                      % (rel(t), os.path.basename(m), a["batch_per_gpu"], ta,
                                         b["batch_per_gpu"], tb), [r.cmd_text(args)])


def gpu_entry(table_text, name):
    """The shipped table's lines of one GPU entry."""
    lines = table_text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "- name: " + name)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("  - name: ")),
               len(lines))
    return lines[start:end]


def scaled_topo(tmp, topo, keys, factor):
    """A copy of topo's folder in tmp with a gpus.yaml whose entry for its GPU
    has `keys` (rates like 19.5TFLOPS, 2039GBps) multiplied by factor."""
    text = open(topo).read()
    gpu = re.search(r"^gpu:\s*(\S+)", text, re.M).group(1)
    table = open(os.path.join(ROOT, "topologies", "gpus.yaml")).read()
    entry = gpu_entry(table, gpu)
    out = []
    for line in entry:
        m = re.match(r"^(\s+)(\w+): ([0-9.]+)(TFLOPS|GBps)\s*$", line)
        if m and m.group(2) in keys:
            line = "%s%s: %g%s" % (m.group(1), m.group(2), float(m.group(3)) * factor, m.group(4))
        out.append(line)
    d = os.path.join(tmp, "%s-%s" % (os.path.basename(topo)[:-5], "-".join(keys)))
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(os.path.dirname(topo), d,
                    ignore=lambda _d, names: [n for n in names if n == "gpus.yaml"])
    with open(os.path.join(d, "gpus.yaml"), "w") as f:
        f.write("schema_version: 1\ngpus:\n" + "\n".join(out) + "\n")
    return os.path.join(d, os.path.basename(topo)), gpu


def check_gpu(r, rep, topos, mods, tmp, name, keys):
    precisions = (["--dtype", "fp32"], ["--dtype", "fp16"], ["--amp", "fp16"])
    for t in topos:
        fast, gpu = scaled_topo(tmp, t, keys, 2.0)
        for m, extra in ((m, e) for m in mods for e in precisions):
            base = r.rows(train_base(t, m) + extra)
            quick = r.rows(train_base(fast, m) + extra)
            if base is None or quick is None:
                continue
            rep.case(name)
            ta, tb = float(base[0]["iter_ms"]), float(quick[0]["iter_ms"])
            if worse(ta, tb, ABS_EPS_MS):
                rep.violation(name, "%s %s %s: %s x2 %.6f ms > shipped %.6f ms"
                              % (rel(t), os.path.basename(m), " ".join(extra), "/".join(keys), tb, ta),
                              [r.cmd_text(train_base(t, m) + extra),
                               r.cmd_text(train_base(fast, m) + extra)
                               + "   # %s's gpus.yaml: %s x2" % (gpu, "/".join(keys))])


_bounds = {}


def topo_bounds(r, topo, n):
    """busbw bounds ddpsim topo prints for the first n GPUs (GB/s)."""
    if (topo, n) not in _bounds:
        _bounds[(topo, n)] = _topo_bounds(r, topo, n)
    return _bounds[(topo, n)]


def _topo_bounds(r, topo, n):
    rc, out, _ = r.raw(["topo", topo, "--world-size", str(n)])
    if rc != 0:
        return None
    b = {}
    # direct and p2p send to every peer at once, each over its own route:
    # GPU 0's routes' bottlenecks summed bound its egress from above (routes
    # sharing a link only lower it; symmetric topologies assumed)
    egress = 0.0
    for k in range(1, n):
        rc, route, _ = r.raw(["topo", topo, "--from", "0", "--to", str(k)])
        m = re.search(r"bottleneck ([0-9.]+) GB/s", route) if rc == 0 else None
        if m:
            egress += float(m.group(1))
    if egress:
        b["peer_routes"] = egress
    m = re.search(r"plain ring all-reduce: busbw at most ([0-9.]+) GB/s", out)
    if m:
        b["ring"] = float(m.group(1))
    m = re.search(r"channels x [0-9.]+ GB/s = ([0-9.]+) GB/s", out)
    if m:
        b["nccl"] = float(m.group(1))
    m = re.search(r"a GPU's links: ([0-9.]+) GB/s", out)
    if m:
        b["gpu_links"] = float(m.group(1))
    return b


def n_gpus(topo):
    text = open(topo).read()
    nodes = int(re.search(r"^nodes:\s*(\d+)", text, re.M).group(1))
    per = int(re.search(r"^gpus_per_node:\s*(\d+)", text, re.M).group(1))
    return nodes * per


def trace_rows(r, args):
    fd, path = tempfile.mkstemp(suffix=".csv")
    os.close(fd)
    try:
        rc, _, err = r.raw(args + ["--trace", path, "--format", "csv"])
        if rc == 2:
            r.refused += 1
            return None
        if rc != 0:
            raise RuntimeError("%s: %s" % (r.cmd_text(args), err[-300:]))
        lines = [l for l in open(path) if not l.startswith("#")]
        return list(csv.DictReader(lines))
    finally:
        os.unlink(path)


def check_world_bytes(r, rep, topos, mods):
    for t in topos:
        total = min(n_gpus(t), 64)
        sizes = sorted({n for n in (2, 3, 4, 8, 16, 32, 64) if n <= total} | {total})
        for m in mods:
            seen = {}
            for n in sizes:
                args = train_base(t, m)
                args = [a for a in args]
                if "--world-size" in args:
                    i = args.index("--world-size")
                    del args[i:i + 2]
                args += ["--world-size", str(n), "--algo", "ring"]
                rows = trace_rows(r, args)
                if rows is None:
                    continue
                last = max(int(x["iter"]) for x in rows)
                per_rank = {}
                time_us = {}
                for x in rows:
                    if x["kind"] == "allreduce" and int(x["iter"]) == last:
                        per_rank[x["rank"]] = per_rank.get(x["rank"], 0) + int(x["bytes"])
                        time_us[x["rank"]] = time_us.get(x["rank"], 0.0) + \
                            float(x["end_us"]) - float(x["start_us"])
                if not per_rank:
                    continue
                rep.case("world_bytes")
                if len(set(per_rank.values())) != 1 or len(per_rank) != n:
                    rep.violation("world_bytes", "%s %s N=%d: ranks all-reduce unequal bytes %s"
                                  % (rel(t), os.path.basename(m), n, sorted(set(per_rank.values()))),
                                  [r.cmd_text(args) + " --trace T.csv"])
                s = next(iter(per_rank.values()))
                seen[n] = s
                bounds = topo_bounds(r, t, n) or {}
                bound = max(bounds.values()) if bounds else None
                if bound:
                    # every rank of a ring sends 2(N-1)/N*S; no faster than its egress
                    need_us = 2.0 * (n - 1) / n * s / (bound * 1e9) * 1e6
                    fastest = min(time_us.values())
                    if fastest < need_us * (1 - 1e-6) - 1e-3:
                        rep.violation("world_bytes", "%s %s N=%d: all-reduces took %.3f us < "
                                      "2(N-1)/N*S/bw = %.3f us (S %d B, bw %.1f GB/s)"
                                      % (rel(t), os.path.basename(m), n, fastest, need_us, s, bound),
                                      [r.cmd_text(args) + " --trace T.csv"])
            if len(set(seen.values())) > 1:
                rep.violation("world_bytes", "%s %s: S per rank changes with N: %s"
                              % (rel(t), os.path.basename(m), seen), [])


def check_bucket(r, rep, topos, mods):
    """n_buckets never grows with the cap; the iteration never lengthens
    with it where nothing pipelines against the all-reduces: --no-overlap
    (all after backward) with --grad-as-bucket-view (no copy out of a bucket
    to overlap the next bucket's all-reduce). --no-overlap alone is reported
    as bucket_copies: there each bucket's copy back into the gradients runs
    beside the next bucket's all-reduce, which one big bucket cannot do."""
    caps = "1,2,5,10,25,50,100,200,1000"
    variants = (("bucket", []), ("bucket", ["--no-overlap", "--grad-as-bucket-view"]),
                ("bucket_copies", ["--no-overlap"]))
    for t in topos:
        for m in mods:
            for name, extra in variants:
                args = train_base(t, m) + ["--bucket-mb", caps] + extra
                rows = r.rows(args)
                if rows is None:
                    continue
                for a, b in zip(rows, rows[1:]):
                    rep.case(name)
                    if int(b["n_buckets"]) > int(a["n_buckets"]):
                        rep.violation(name, "%s %s %s: %s MiB %s buckets < %s MiB %s buckets"
                                      % (rel(t), os.path.basename(m), " ".join(extra), a["bucket_mb"],
                                         a["n_buckets"], b["bucket_mb"], b["n_buckets"]),
                                      [r.cmd_text(args)])
                    ta, tb = float(a["iter_ms"]), float(b["iter_ms"])
                    if extra and worse(ta, tb, ABS_EPS_MS):
                        rep.violation(name, "%s %s %s: %s MiB %.6f ms > %s MiB %.6f ms"
                                      % (rel(t), os.path.basename(m), " ".join(extra), b["bucket_mb"],
                                         tb, a["bucket_mb"], ta), [r.cmd_text(args)])


def gpu_has(topo, key):
    text = open(topo).read()
    gpu = re.search(r"^gpu:\s*(\S+)", text, re.M).group(1)
    table = open(os.path.join(ROOT, "topologies", "gpus.yaml")).read()
    return any(re.match(r"^\s+%s: " % key, l) for l in gpu_entry(table, gpu))


def check_dtype(r, rep, topos, mods):
    """--dtype fp16/bf16 (the whole model in the half type) against fp32 as
    `dtype`; --amp (autocast: casts on the host and the GPU) as `dtype_amp`,
    whose rows say how host-bound each run is: autocast's casts add host
    work, which a host-bound iteration pays in full (docs/strategies.md)."""
    for t in topos:
        for m in mods:
            base = r.rows(train_base(t, m))
            if base is None:
                continue
            t32 = float(base[0]["iter_ms"])
            for half in ("fp16", "bf16"):
                if not gpu_has(t, half):
                    continue
                for name, opt in (("dtype", ["--dtype", half]), ("dtype_amp", ["--amp", half])):
                    args = train_base(t, m) + opt
                    rows = r.rows(args)
                    if rows is None:
                        continue
                    rep.case(name)
                    th = float(rows[0]["iter_ms"])
                    if worse(t32, th, ABS_EPS_MS):
                        rep.violation(name, "%s %s: %s %.6f ms > fp32 %.6f ms (host exposed %s ms "
                                      "against fp32's %s)"
                                      % (rel(t), os.path.basename(m), " ".join(opt), th, t32,
                                         rows[0]["host_exposed_ms"], base[0]["host_exposed_ms"]),
                                      [r.cmd_text(train_base(t, m)), r.cmd_text(args)])


def check_bucket_view(r, rep, topos, mods):
    for t in topos:
        for m in mods:
            for extra in ([], ["--no-overlap"], ["--dtype", "fp16"]):
                a = r.rows(train_base(t, m) + extra)
                b = r.rows(train_base(t, m) + extra + ["--grad-as-bucket-view"])
                if a is None or b is None:
                    continue
                rep.case("bucket_view")
                ta, tb = float(a[0]["iter_ms"]), float(b[0]["iter_ms"])
                if worse(ta, tb, ABS_EPS_MS):
                    rep.violation("bucket_view", "%s %s %s: --grad-as-bucket-view %.6f ms > %.6f ms"
                                  % (rel(t), os.path.basename(m), " ".join(extra), tb, ta),
                                  [r.cmd_text(train_base(t, m) + extra + ["--grad-as-bucket-view"])])


COLL_COMBOS = [
    ("allreduce", a, p) for a in ("ring", "tree") for p in ("none", "LL", "LL128", "Simple", "auto")
] + [("allreduce", "nvls", "auto"), ("allreduce", "direct", None),
     ("allreduce", "reduce-broadcast", None), ("allreduce", "hierarchical", None),
     ("allreduce", "auto", "auto")] + [
    (op, "ring", p) for op in ("broadcast", "reduce", "allgather", "reducescatter")
    for p in ("none", "LL", "LL128", "Simple", "auto")
] + [(op, None, p) for op in ("alltoall", "sendrecv", "gather", "scatter")
     for p in ("none", "LL", "Simple", "auto")]


P2P_MANY = ("alltoall", "gather", "scatter")


def coll_ranks(topo, op, ranks=None):
    """Ranks a collective runs on: every GPU, but 128 on the clusters (512
    and 4096 GPUs; 128 keeps the aggregated model, above 64, in the sweep at
    a second a run), and 16 for the ops with N^2 flows above 16 GPUs."""
    n = n_gpus(topo)
    if op in P2P_MANY:
        n = min(n, 16)
    n = min(n, 128)
    return min(n, ranks) if ranks else n


def coll_args(topo, op, algo, proto, lo="8", hi="1G", ranks=None):
    args = ["collective", "--topo", topo, "--op", op, "-b", lo, "-e", hi]
    if algo:
        args += ["--algo", algo]
    if proto:
        args += ["--proto", proto]
    n = coll_ranks(topo, op, ranks)
    if n != n_gpus(topo):
        args += ["-g", str(n)]
    return args


def check_coll_size(r, rep, topos):
    for t in topos:
        for op, algo, proto in COLL_COMBOS:
            args = coll_args(t, op, algo, proto)
            rows = r.rows(args)
            if rows is None:
                continue
            rows = [x for x in rows if int(x["count"]) > 0]
            for a, b in zip(rows, rows[1:]):
                rep.case("coll_size")
                ta, tb = float(a["time_us"]), float(b["time_us"])
                if worse(tb, ta, ABS_EPS_US):
                    rep.violation("coll_size", "%s %s %s/%s: %s B %.3f us > %s B %.3f us (%s/%s -> %s/%s)"
                                  % (rel(t), op, algo, proto, a["size_bytes"], ta, b["size_bytes"], tb,
                                     a["algo"], a["proto"], b["algo"], b["proto"]),
                                  [r.cmd_text(coll_args(t, op, algo, proto, a["size_bytes"],
                                                        b["size_bytes"]))])


def check_coll_busbw(r, rep, topos):
    over_tree = {}
    for t in topos:
        for op, algo, proto in COLL_COMBOS:
            bounds = topo_bounds(r, t, coll_ranks(t, op))
            if not bounds:
                continue
            ring_bound = max(v for k, v in bounds.items() if k != "peer_routes")
            peer_bound = max(bounds.values())
            args = coll_args(t, op, algo, proto)
            rows = r.rows(args)
            if rows is None:
                continue
            for x in rows:
                if int(x["count"]) == 0:
                    continue
                bw = float(x["busbw_gbps"])
                bound = peer_bound if x["algo"] in ("direct", "p2p") else ring_bound
                # hierarchical: across nodes each NIC carries 2(M-1)/M S/G
                # (M nodes of G GPUs), less than a rail of the flat ring's
                # 2(N-1)/N S/K, so the ring's bound is not its bound
                if x["algo"] in ("tree", "nvls", "nvlstree", "hierarchical"):
                    key = (rel(t), x["algo"])
                    over_tree[key] = max(over_tree.get(key, 0), bw / bound)
                    continue
                rep.case("coll_busbw")
                if bw > bound * (1 + 1e-6) + 1e-6:
                    rep.violation("coll_busbw", "%s %s %s/%s %s B: busbw %.3f GB/s > bound %.1f %s"
                                  % (rel(t), op, x["algo"], x["proto"], x["size_bytes"], bw, bound,
                                     bounds), [r.cmd_text(coll_args(t, op, algo, proto,
                                                                    x["size_bytes"], x["size_bytes"]))])
    for (t, algo), ratio in sorted(over_tree.items()):
        if ratio > 1:
            print("note coll_busbw: %s %s busbw up to %.3fx the ring bound (not a ring: less "
                  "than a ring's 2(N-1)/N*S crosses the bottleneck)" % (t, algo, ratio))


def check_coll_auto(r, rep, topos):
    worst = []
    for t in topos:
        auto = r.rows(coll_args(t, "allreduce", "auto", "auto"))
        if auto is None:
            continue
        # NCCL leaves LL128 off by default where a ring crosses PCIe inside a
        # node (the text header says so): forcing it is NCCL_PROTO=LL128, not
        # a choice NCCL's tuner could make, so it is no candidate there
        _, text, _ = r.raw(coll_args(t, "allreduce", "auto", "auto"))
        protos = ("LL", "Simple") if "# LL128 off" in text else ("LL", "LL128", "Simple")
        forced = {}
        for algo in ("ring", "tree", "nvls"):
            for proto in protos:
                rows = r.rows(coll_args(t, "allreduce", algo, proto))
                if rows:
                    forced[(algo, proto)] = {x["size_bytes"]: x for x in rows}
        for x in auto:
            size = x["size_bytes"]
            cands = [(float(f[size]["time_us"]), k, f[size]) for k, f in forced.items() if size in f]
            if not cands:
                continue
            rep.case("coll_auto")
            rep.case("coll_auto_model")
            best_t, best_k, _ = min(cands)
            ta = float(x["time_us"])
            worst.append((ta / best_t, rel(t), size, x["algo"], x["proto"], best_k, ta, best_t))
            if ta > best_t * (1 + AUTO_TOL):
                rep.violation("coll_auto", "%s %s B: auto %s/%s %.3f us > %.1fx forced %s/%s %.3f us"
                              % (rel(t), size, x["algo"], x["proto"], ta, 1 + AUTO_TOL,
                                 best_k[0], best_k[1], best_t),
                              [r.cmd_text(coll_args(t, "allreduce", "auto", "auto", size, size)),
                               r.cmd_text(coll_args(t, "allreduce", best_k[0], best_k[1], size, size))])
            models = [float(c[2]["nccl_model_us"]) for c in cands if c[2]["nccl_model_us"]]
            if x["nccl_model_us"] and models and float(x["nccl_model_us"]) > min(models) * (1 + 1e-4) + 1e-3:
                rep.violation("coll_auto_model", "%s %s B: auto's NCCL model %s us > a forced one's %.3f us"
                              % (rel(t), size, x["nccl_model_us"], min(models)),
                              [r.cmd_text(coll_args(t, "allreduce", "auto", "auto", size, size))])
    worst.sort(reverse=True)
    for w in worst[:5]:
        print("note coll_auto: auto/best %.3f at %s %s B (auto %s/%s %.3f us, best %s %.3f us)"
              % (w[0], w[1], w[2], w[3], w[4], w[6], "/".join(w[5]), w[7]))


_topo_text = {}


def topo_text(r, topo, n):
    """What ddpsim topo prints for the first n GPUs ('' where it refuses)."""
    if (topo, n) not in _topo_text:
        rc, out, _ = r.raw(["topo", topo, "--world-size", str(n)])
        _topo_text[(topo, n)] = out if rc == 0 else ""
    return _topo_text[(topo, n)]


def ring_rails(r, topo, n):
    """The ring's rails as ddpsim topo prints them: (K, the least rail's
    bottleneck in GB/s); a ring without rails is one rail, its bottleneck
    hop's. Above a few rails topo prints only their count and their total
    (the plain ring's bound, "the rails together"): the least is total/K."""
    text = topo_text(r, topo, n)
    rails = [float(x) for x in re.findall(r"^\s+rail \d+: .*; bottleneck ([0-9.]+) GB/s", text, re.M)]
    if rails:
        return len(rails), min(rails)
    m = re.search(r"^\s+rails\s+(\d+) rings?\b", text, re.M)
    total = re.search(r"plain ring all-reduce: busbw at most ([0-9.]+) GB/s", text)
    if m and total:
        return int(m.group(1)), float(total.group(1)) / int(m.group(1))
    m = re.search(r"^\s+ring\s+.*bottleneck hop .* at ([0-9.]+) GB/s", text, re.M)
    return (1, float(m.group(1))) if m else None


CHAIN_OPS = ("broadcast", "reduce")
# NCCL's piece of a plain chain (sim/coll/coll.h DS_CHAIN_CHUNK_BYTES)
CHAIN_PIECE_BYTES = 512 * 1024
CHAIN_PROTOS = ("none", "LL", "LL128", "Simple", "auto")


def searched_rings(r, topo, n):
    """NCCL's searched rings (ddpsim topo's channels line): how many and the
    bandwidth of each (GB/s), or None where the ring's rails are NCCL's."""
    m = re.search(r"NCCL's search: (\d+) rings? of ([0-9.]+) GB/s", topo_text(r, topo, n))
    return (int(m.group(1)), float(m.group(2))) if m else None


def check_coll_chain_busbw(r, rep, topos):
    """Broadcast and reduce run one chain per rail, S/K each (coll_chain_rails.c):
    every hop of rail k carries S/K, so T >= max_k (S/K)/B_k and busbw = S/T
    <= K min_k B_k; under a protocol the rails are NCCL's searched rings where
    ddpsim topo prints them (K rings of B), and the root sends (broadcast) or
    receives (reduce) all of S over NCCL's view of its links ("a GPU's links",
    which can be below the links themselves: a bound only under a protocol).
    Tighter than coll_busbw, which takes the largest of ddpsim topo's bounds
    for every ring kind."""
    for t in topos:
        for op in CHAIN_OPS:
            n = coll_ranks(t, op)
            rails = ring_rails(r, t, n)
            if not rails:
                continue
            links = topo_bounds(r, t, n).get("gpu_links")
            searched = searched_rings(r, t, n)
            for proto in CHAIN_PROTOS:
                args = coll_args(t, op, "ring", proto)
                rows = r.rows(args)
                if rows is None:
                    continue
                for x in rows:
                    if int(x["count"]) == 0:
                        continue
                    if x["proto"] != "none" and searched:
                        k, least, what = searched[0], searched[1], "NCCL's searched rings"
                    else:
                        k, least, what = rails[0], rails[1], "rails"
                    bound = k * least
                    # "a GPU's links" is what NCCL's search sees (h100pcie-2x-nvlink:
                    # 247.2 GB/s over one 300 GB/s link): a bound where NCCL's
                    # channels run, not for the plain chain on the links themselves
                    if links and x["proto"] != "none":
                        bound = min(bound, links)
                    rep.case("coll_chain_busbw")
                    bw = float(x["busbw_gbps"])
                    if bw > bound * (1 + 1e-6) + 1e-6:
                        rep.violation("coll_chain_busbw", "%s %s ring/%s %s B: busbw %.3f GB/s > "
                                      "%.1f GB/s (%d %s, least %.1f GB/s; a GPU's links %s)"
                                      % (rel(t), op, x["proto"], x["size_bytes"], bw, bound,
                                         k, what, least, links),
                                      [r.cmd_text(coll_args(t, op, "ring", proto, x["size_bytes"],
                                                            x["size_bytes"]))])


def symmetric(r, topo, n):
    """The first n GPUs on one NVSwitch and nothing else (ddpsim topo's
    devices line): every GPU alike, every ring hop the same two links."""
    return re.search(r"^\s+devices\s+\d+ gpu, 1 switch, 0 nic, 0 cpu\s+\(intra-node nvswitch\)$",
                     topo_text(r, topo, n), re.M) is not None


def check_coll_root(r, rep, topos):
    """Broadcast and reduce from (to) every root: on one NVSwitch (symmetric)
    the time must not depend on the root, the chain from root q being the
    chain from 0 relabelled; elsewhere the spread over the roots is printed
    as a note (the chain's slowest hop and the root's own links move with the
    root, a real effect)."""
    spread = []
    for t in topos:
        n = n_gpus(t)
        if n > 16:
            continue  # every root on 128 ranks: 128 runs per op and proto
        sym = symmetric(r, t, n)
        for op in CHAIN_OPS:
            for proto in ("none", "auto"):
                per_root = []
                for q in range(n):
                    args = coll_args(t, op, "ring", proto, "1K", "1G") + ["--root", str(q)]
                    rows = r.rows(args)
                    if rows is None:
                        break
                    per_root.append((q, rows))
                if len(per_root) < n:
                    continue
                base = per_root[0][1]
                for q, rows in per_root[1:]:
                    for a, b in zip(base, rows):
                        ta, tb = float(a["time_us"]), float(b["time_us"])
                        if not sym:
                            continue
                        rep.case("coll_root")
                        if worse(ta, tb, ABS_EPS_US) or worse(tb, ta, ABS_EPS_US):
                            rep.violation("coll_root", "%s %s ring/%s %s B: root %d %.3f us, root 0 "
                                          "%.3f us" % (rel(t), op, b["proto"], a["size_bytes"], q,
                                                       tb, ta),
                                          [r.cmd_text(coll_args(t, op, "ring", proto, a["size_bytes"],
                                                                a["size_bytes"]) + ["--root", str(q)])])
                if not sym:
                    for i, a in enumerate(base):
                        ts = [(float(rows[i]["time_us"]), q) for q, rows in per_root]
                        spread.append((max(ts)[0] / min(ts)[0], rel(t), op, proto, a["size_bytes"],
                                       min(ts), max(ts)))
    spread.sort(reverse=True)
    for s in spread[:5]:
        print("note coll_root: slowest/fastest root %.3f at %s %s ring/%s %s B (root %d %.3f us, "
              "root %d %.3f us; not one NVSwitch)" % (s[0], s[1], s[2], s[3], s[4], s[6][1], s[6][0],
                                                     s[5][1], s[5][0]))


def check_coll_bcast_ag(r, rep, topos):
    """Plain broadcast (proto none) against the plain ring all-gather of the
    same S. Rail k's chain moves S/K in C pieces of P (NCCL's 512 KiB, or
    S/K whole; coll_chain.c): at most the latencies of its N-1 hops plus
    (S/K + (N-2) P) / B, B its slowest hop's bandwidth; the all-gather sends
    (N-1)/N S/K over that hop, at least (N-1)/N (S/K) / B. So
      T_bc - N/(N-1) T_ag <= (N-2) P / B + (N-1) a_max,
    the chain's pipeline fill and its hops' latencies (a_max: ddpsim topo's
    hop latency up to; on a uniform rail the difference is (N-2) P/B - a).
    B is the least rail's bottleneck from ddpsim topo."""
    worst = []
    for t in topos:
        n = coll_ranks(t, "broadcast")
        rails = ring_rails(r, t, n)
        lat = re.search(r"hop latency up to ([0-9.]+) us", topo_text(r, t, n))
        if not rails or not lat:
            continue
        k, b = rails[0], rails[1] * 1e9
        a_max = float(lat.group(1))
        bc = r.rows(coll_args(t, "broadcast", "ring", "none"))
        ag = r.rows(coll_args(t, "allgather", "ring", "none"))
        if bc is None or ag is None:
            continue
        ag = {x["size_bytes"]: x for x in ag if int(x["count"]) > 0}
        for x in bc:
            size = x["size_bytes"]
            if size not in ag or int(x["count"]) == 0:
                continue
            rep.case("coll_bcast_ag")
            piece = min(CHAIN_PIECE_BYTES, float(size) / k)
            fill_us = (n - 2) * piece / b * 1e6
            tb, ta = float(x["time_us"]), float(ag[size]["time_us"])
            limit = ta * n / (n - 1) + fill_us + (n - 1) * a_max
            worst.append((tb / limit, rel(t), size, tb, ta, fill_us, (n - 1) * a_max))
            if worse(limit, tb, ABS_EPS_US):
                rep.violation("coll_bcast_ag", "%s %s B: broadcast %.3f us > N/(N-1) x all-gather "
                              "%.3f us + fill (N-2) P/B %.3f us + (N-1) a_max %.3f us = %.3f us "
                              "(N %d, %d rails of %.1f GB/s)"
                              % (rel(t), size, tb, ta, fill_us, (n - 1) * a_max, limit, n, k, b / 1e9),
                              [r.cmd_text(coll_args(t, "broadcast", "ring", "none", size, size)),
                               r.cmd_text(coll_args(t, "allgather", "ring", "none", size, size))])
    worst.sort(reverse=True)
    for w in worst[:3]:
        print("note coll_bcast_ag: broadcast / bound %.3f at %s %s B (broadcast %.3f us, "
              "all-gather %.3f us, fill %.3f us, latencies %.3f us)" % w)

def check_coll_links(r, rep, topos, tmp):
    faster = [0]
    try:
        _check_coll_links(r, rep, topos, tmp, faster)
    finally:
        # a link the collective does not use changes nothing: how many rows
        # moved says how much the relation was tested
        print("note coll_links: %d of %d rows faster with the link added, the rest equal or flagged"
              % (faster[0], rep.cases.get("coll_links", 0)))


def _check_coll_links(r, rep, topos, tmp, faster):
    for t in topos:
        text = open(t).read()
        link_lines = [i for i, l in enumerate(text.splitlines()) if re.match(r"^\s*- \{from:", l)]
        if not link_lines:
            continue
        # abci-v lists 544 links: its first 16 (node 0's), on 16 ranks
        link_lines = link_lines[:16]
        ranks = 16
        base = {}
        combos = [("allreduce", "ring", "none"), ("allreduce", "auto", "auto"),
                  ("allgather", "ring", "Simple"), ("alltoall", None, "auto")]
        for c in combos:
            base[c] = r.rows(coll_args(t, c[0], c[1], c[2], "1K", "256M", ranks))
        for i in link_lines:
            lines = text.splitlines()
            line = lines[i]
            m = re.search(r"count: (\d+)", line)
            if m:
                line = line.replace(m.group(0), "count: %d" % (int(m.group(1)) + 1))
            else:
                line = line.replace("}", ", count: 2}", 1)
            lines[i] = line
            # a folder per variant: the runner answers a repeated command
            # from memory, so each variant needs a path of its own
            d = os.path.join(tmp, "links-%s-%d" % (os.path.basename(t)[:-5], i + 1))
            if os.path.exists(d):
                shutil.rmtree(d)
            shutil.copytree(os.path.dirname(t), d)
            path = os.path.join(d, os.path.basename(t))
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            for c in combos:
                if base[c] is None:
                    continue
                rows = r.rows(coll_args(path, c[0], c[1], c[2], "1K", "256M", ranks))
                if rows is None:
                    continue
                for a, b in zip(base[c], rows):
                    rep.case("coll_links")
                    ta, tb = float(a["time_us"]), float(b["time_us"])
                    if worse(tb, ta, ABS_EPS_US):
                        faster[0] += 1
                    if worse(ta, tb, ABS_EPS_US):
                        rep.violation("coll_links", "%s line %d (%s) one more link: %s %s/%s %s B "
                                      "%.3f us > %.3f us"
                                      % (rel(t), i + 1, line.strip(), c[0], b["algo"], b["proto"],
                                         a["size_bytes"], tb, ta),
                                      [r.cmd_text(coll_args(t, c[0], c[1], c[2], a["size_bytes"],
                                                            a["size_bytes"], ranks))
                                       + "   # then with that line's count + 1"])


def check_determinism(r, rep, topos, mods):
    for t in topos:
        for m in mods[:3]:
            base = train_base(t, m)
            i = base.index("--jobs")
            a1 = base[:i] + base[i + 2:] + ["--batch", "8,16", "--bucket-mb", "5,25", "--jitter",
                                             "0.05", "--samples", "3", "--seed", "7", "--format", "csv"]
            outs = []
            for jobs in ("1", "2"):
                rc, out, err = r.raw(a1 + ["--jobs", jobs])
                outs.append((rc, out, err))
            rep.case("determinism")
            if outs[0] != outs[1]:
                rep.violation("determinism", "%s %s: --jobs 1 and --jobs 2 differ" % (rel(t), os.path.basename(m)),
                              [r.cmd_text(a1 + ["--jobs", "1"]), r.cmd_text(a1 + ["--jobs", "2"])])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.environ.get("DDPSIM_BIN", os.path.join(ROOT, "bin", "ddpsim")))
    ap.add_argument("--only", default="")
    ap.add_argument("--quick", action="store_true", help="two models, the topologies/ folder only")
    ap.add_argument("--topos", default="", help="comma list: topologies whose path contains one")
    ap.add_argument("--models", default="", help="comma list of model names (resnet50,bert-base)")
    ap.add_argument("--limit", type=int, default=20, help="violations printed per relation")
    opt = ap.parse_args()
    binary = opt.bin if os.path.isabs(opt.bin) else os.path.join(ROOT, opt.bin)
    r = Runner(binary)
    rep = Report()
    topos = topologies()
    mods = models()
    if opt.quick:
        topos = [t for t in topos if "/validation/" not in t]
        mods = [m for m in mods if os.path.basename(m) in ("resnet50.yaml", "bert-base.yaml")]
    if opt.topos:
        topos = [t for t in topos if any(k in rel(t) for k in opt.topos.split(","))]
    if opt.models:
        mods = [m for m in mods if os.path.basename(m)[:-5] in opt.models.split(",")]
    only = set(opt.only.split(",")) if opt.only else None
    want = lambda n: only is None or n in only
    checks = [
        ("batch", lambda: check_batch(r, rep, topos, mods)),
        ("gpu_flops", lambda: check_gpu(r, rep, topos, mods, tmp, "gpu_flops",
                                        ("fp32", "tf32", "fp16", "bf16"))),
        ("gpu_membw", lambda: check_gpu(r, rep, topos, mods, tmp, "gpu_membw", ("mem_bw",))),
        ("world_bytes", lambda: check_world_bytes(r, rep, topos, mods)),
        ("bucket", lambda: check_bucket(r, rep, topos, mods)),
        ("dtype", lambda: check_dtype(r, rep, topos, mods)),
        ("bucket_view", lambda: check_bucket_view(r, rep, topos, mods)),
        ("coll_size", lambda: check_coll_size(r, rep, topos)),
        ("coll_busbw", lambda: check_coll_busbw(r, rep, topos)),
        ("coll_auto", lambda: check_coll_auto(r, rep, topos)),
        ("coll_chain_busbw", lambda: check_coll_chain_busbw(r, rep, topos)),
        ("coll_root", lambda: check_coll_root(r, rep, topos)),
        ("coll_bcast_ag", lambda: check_coll_bcast_ag(r, rep, topos)),
        ("coll_links", lambda: check_coll_links(r, rep, topos, tmp)),
        ("determinism", lambda: check_determinism(r, rep, topos, mods)),
    ]
    names = [name for name, _ in checks]
    unknown = sorted(only - set(names)) if only else []
    if unknown:
        print("metamorphic.py: --only %s: expected relation names from %s "
              "(dtype_amp is reported by dtype, batch_dp by batch, bucket_copies by bucket)" % (",".join(unknown), ",".join(names)),
              file=sys.stderr)
        sys.exit(2)
    tmp = tempfile.mkdtemp(prefix="ddpsim-mono-")
    try:
        for name, check in checks:
            if want(name):
                check()
                rep.print(opt.limit)
                sys.stdout.flush()
    finally:
        shutil.rmtree(tmp)
    rep.print(opt.limit)
    print("runs %d, refused combinations (exit 2) %d" % (r.runs, r.refused))
    return 1 if rep.violations else 0


if __name__ == "__main__":
    sys.exit(main())
