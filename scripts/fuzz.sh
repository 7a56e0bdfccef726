#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/README.md): scripts/fuzz.sh BIN_DIR READER...
# Each reader runs for $FUZZ_SECONDS (default 60) on a corpus kept under
# build/fuzz/corpus/READER (it grows from run to run), seeded from the
# shipped files; an input that crashes, leaks, trips a sanitizer or takes
# more than 10 s is saved under tests/data/fuzz/READER/, where
# tests/test_fuzz_regress.c replays it in `make test` once it is committed.
# Exit 1 when any reader found something.
# The model reader runs in two passes: model-small (the small models:
# tests/data's, the embedding one below and scripts/fuzz_small_models.py's
# copies of the shipped models cut to a few layers, thousands of runs a
# second) for $FUZZ_MODEL_SMALL_PCT (default 80) per cent of its time, then
# model (the shipped models, 30-330 KB, a few dozen runs a second) for the
# rest; `model-small` alone runs the first pass for all of it. Both save
# findings under tests/data/fuzz/model/.
set -u
cd "$(dirname "$0")/.."
bin=$1
shift
secs=${FUZZ_SECONDS:-60}
seeds=build/fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"

# Seeds: what the readers are meant to read.
for r in topo model model-small calib schedule trace reference cli units import measured subcmd gpus analyze ddpreal; do
  mkdir -p "$seeds/$r"
done
for r in "$@"; do mkdir -p "build/fuzz/corpus/$r" "tests/data/fuzz/${r%-small}"; done
case " $* " in *" model "*) mkdir -p build/fuzz/corpus/model-small ;; esac
cp topologies/*.yaml tests/data/*.yaml "$seeds/topo/" 2>/dev/null
for f in topologies/gpus.yaml tests/data/gpus.yaml tests/data/oddname/gpus.yaml; do
  cp "$f" "$seeds/gpus/$(echo "$f" | tr / -)"
done
cp models/*.yaml tests/data/*model*.yaml "$seeds/model/" 2>/dev/null
# a small model with both embedding forms ([lookups per sample, D] and
# [0, D, lookups per step]: sim/train/model.c), which only the large shipped
# models have
cat >"$seeds/model/embedding.yaml" <<'EOF'
schema_version: 1
name: emb
sample: "one sequence of 4 tokens"
default_batch: 2
optimizer: sgd
layers:
  - name: word
    class: memory
    fwd_flops: 0
    bwd_flops: 0
    fwd_bytes: 4096
    act_bytes: 64
    embedding: [4, 16]
    params:
      - {name: word.weight, numel: 1600, shape: [100, 16]}
  - name: pos
    class: memory
    fwd_flops: 0
    bwd_flops: 0
    fwd_bytes: 256
    act_bytes: 64
    embedding: [0, 16, 4]
    params:
      - {name: pos.weight, numel: 128, shape: [8, 16]}
  - name: fc
    fwd_flops: 1000000
    bwd_flops: 2000000
    fwd_bytes: 0
    act_bytes: 64
    params:
      - {name: fc.weight, numel: 256}
EOF
# the small-seed pass: every small model above, and the shipped ones cut
# to a few layers each (every layer key kept; each loads)
cp tests/data/*model*.yaml "$seeds/model/embedding.yaml" "$seeds/model-small/"
python3 scripts/fuzz_small_models.py "$seeds/model-small" models/*.yaml
cp tests/data/*calib*.yaml validation/host_calibs/*.yaml bench/results/*/calib-*.yaml \
  "$seeds/calib/" 2>/dev/null
# every section and key of a calibration file (sim/train/calib.c), one value each
cat >"$seeds/calib/every-key.yaml" <<'EOF'
schema_version: 1
compute: {flops_efficiency: 0.5, mem_efficiency: 0.8, kernel_overhead: 10us, fp32_math: tf32}
efficiency: {conv_fp32: 0.6, conv_tf32_fwd: 0.3, matmul_tf32: 0.2}
nccl: {launch: 5us, interference_blocks: 16, interference_slowdown: 1.3, interference_predicted: 1.1}
collective: {op: allreduce, nranks: 2, shared: false, copy: true, alpha: 4us, bus_bw: 300GBps,
  fit_r2: 0.9, fit_rms_rel_residual: 0.1}
grouped_conv:
  sms: 100
  boost_mhz: 1000
  entries:
    - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136, stride: 1, batch: 32,
       fwd_us: 100, dgrad_us: 200, wgrad_us: 300}
host: {unit: launching, dispatch: 27.3us, node: 29us}
EOF
# several files merged (--calib A,B: the input split at lines beginning
# "====", fuzz/README.md): ddpreal calibrate's beside a host file, as the
# docs run them; every-key's sections one file each (two naming the same
# GPU); every key set twice; two GPUs named
sep() { echo "===="; }
{ cat bench/results/gpu-2026-11-26-h200/calib-resnet50.yaml; sep
  cat validation/host_calibs/host-gpu-2026-11-28c-h200.yaml; } >"$seeds/calib/merge-ddpreal-host"
awk -v g='gpu: "NVIDIA H200"' 'NR == 1 { next }
  /^[a-z]/ { if (n++) print "===="; print "schema_version: 1"; if (n <= 2) print g }
  { print }' "$seeds/calib/every-key.yaml" >"$seeds/calib/merge-every-section"
{ cat "$seeds/calib/every-key.yaml"; sep; cat "$seeds/calib/every-key.yaml"; } \
  >"$seeds/calib/merge-every-key-twice"
printf 'schema_version: 1\ngpu: A100\ncompute: {flops_efficiency: 0.5}\n====\nschema_version: 1\ngpu: H100\nnccl: {launch: 5us}\n' \
  >"$seeds/calib/merge-two-gpus"
cp tests/data/*.csv "$seeds/reference/" 2>/dev/null
cp tests/data/topo_import/* "$seeds/import/" 2>/dev/null
tiny="--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml"
bin/ddpsim $tiny --world-size 2 --schedule "$seeds/schedule/tiny.csv" --trace "$seeds/trace/tiny.csv" >/dev/null
bin/ddpsim --topo 4gpu --strategy dp --schedule "$seeds/schedule/dp.csv" --trace "$seeds/trace/dp.csv" >/dev/null
bin/ddpsim --topo tests/data/tiny-hostops-topo.yaml --model tests/data/tiny-model-host.yaml \
  --world-size 2 --strategy ddp --loop free --schedule "$seeds/schedule/free.csv" \
  --trace "$seeds/trace/free.csv" >/dev/null
# ddpreal: the runs' schedules, alone and with ddpreal's words after a
# "====" line (fuzz/README.md): gemm, a timeout the spins pass or not (by
# --timeout and by DDPREAL_TIMEOUT_S), more iterations than one
# MPI_Gather carries, the cuda device
for t in tiny free; do
  p="$seeds/schedule/$t.csv"
  cp "$p" "$seeds/ddpreal/$t"
  { cat "$p"; echo "==== --compute gemm --timeout 1 --iters 3 --warmup 0"; } >"$seeds/ddpreal/$t-gemm"
  { cat "$p"; echo "==== DDPREAL_TIMEOUT_S=0.0001"; } >"$seeds/ddpreal/$t-env-timeout"
  { cat "$p"; echo "==== --timeout 0.00001 --compute spin"; } >"$seeds/ddpreal/$t-timeout"
  { cat "$p"; echo "==== --iters 100000"; } >"$seeds/ddpreal/$t-iters"
  { cat "$p"; echo "==== --device cuda --share-gpus"; } >"$seeds/ddpreal/$t-cuda"
done
# analyze: a predicted trace, a "====" line (with --iter and --skip-measured
# values or none), a measured one (fuzz/readers.c). The measured side is
# the predicted trace as ddpreal would write it (source real, times 10 %
# longer), of the tiny and the --loop free runs (the dp one is 600 KB);
# each pair also in the wrong order, with --iter 1 --skip-measured 0, and
# one trace joined with itself; and one pair the project measured (H100,
# BERT-base, 120 KB).
for t in tiny free; do
  p="$seeds/trace/$t.csv"
  m="$seeds/analyze/$t-real.part"
  awk -F, -v OFS=, '/^#/ || $1 == "id" { print; next }
    { $15 = "real"; $17 = sprintf("%.3f", $17 * 1.1); $18 = sprintf("%.3f", $18 * 1.1); print }' \
    "$p" >"$m"
  { cat "$p"; echo "===="; cat "$m"; } >"$seeds/analyze/$t"
  { cat "$p"; echo "==== 1 0"; cat "$m"; } >"$seeds/analyze/$t-iter1-skip0"
  { cat "$m"; echo "===="; cat "$p"; } >"$seeds/analyze/$t-swapped"
  cp "$p" "$seeds/analyze/$t-self"
  rm "$m"
done
h100=bench/results/gpu-2026-11-23-h100
{ cat $h100/p-bert-base.csv; echo "===="; cat $h100/t-bert-base-gemm.csv; } \
  >"$seeds/analyze/h100-bert-base"
# --measured tables: ddpsim's own sweep CSV and a hand-written one
bin/ddpsim $tiny --bucket-mb 1,5,25 --format csv >"$seeds/measured/own.csv"
printf '# measured\nbucket_mb,iter_ms,exposed_comm_ms\n1,10.5,2\n"5",8,\n15,8.5,1\n' \
  >"$seeds/measured/hand.csv"
printf -- '--topo\n4gpu\n--bucket-mb\n1,5,25\n' >"$seeds/cli/sweep"
printf -- '--topo\n4gpu\n--strategy\ndp,ddp,ps\n--batch\n8:64:log4\n' >"$seeds/cli/strategies"
printf -- '--topo\n4gpu\n--comm-hook\npowersgd:4\n--straggler\n1:1.5,3:2\n' >"$seeds/cli/hooks"
printf -- '--topo\n4gpu\n--strategy\nddp\n--loop\nfree\n--host-scale\n1.25\n--calib\ntests/data/tiny-calib.yaml\n' >"$seeds/cli/host"
printf -- '--topo\n4gpu\n--strategy\nsingle\n--pytorch-version\n1.9\n--optimizer-batch\n64\n--weight-decay\n--no-bn-weight-decay\n--amp\nfp16\n' >"$seeds/cli/pytorch"
printf -- '--topo=4gpu\n--algo\nauto\n--proto\n^LL128\n--nccl-extra\nnone\n--no-sync\n4\n--static-graph\n' >"$seeds/cli/nccl"
# the recent refusals: bertadam's (accumulation, fp16), --calib lists
# merged (A,B and a second --calib), --host-scale, --straggler and
# --ring-chunks at and past their bounds
printf -- '--topo\n4gpu\n--model\nbert-base\n--optimizer\nbertadam\n--grad-accum\n2\n--amp\nfp16\n' >"$seeds/cli/bertadam"
printf -- '--topo\n4gpu\n--calib\na.yaml,b.yaml\n--calib\nc.yaml\n--host-scale\n0.001\n--straggler\n0:100\n--ring-chunks\n64\n' \
  >"$seeds/cli/bounds"
# subcmd: the subcommands' and ddpreal's command lines of README.md, docs/
# and tests/*.c (one word a line, the subcommand first), and every flag
python3 - "$seeds/subcmd" <<'PY'
import glob, re, shlex, sys
out = sys.argv[1]
subs = ("collective", "analyze", "topo", "buckets")
cmds = set()
# README.md and docs: `ddpsim SUB ...` and `ddpreal ...` lines (backslash
# continuations joined; a pipe, redirect or closing backtick ends one)
for path in ["README.md", "real/README.md"] + sorted(glob.glob("docs/*.md")):
    text = re.sub(r"\\\n\s*", " ", open(path).read())
    for m in re.finditer(r"\b(ddpsim (?:%s)\b|ddpreal)([^`|>\n]*)" % "|".join(subs), text):
        cmd = (m.group(1) + m.group(2)).replace("ddpsim ", "", 1)
        cmd = cmd.split("2>")[0].split(" # ")[0].strip()
        if ":" in cmd.split()[0]: continue  # a table's title line, not a command
        cmds.add(cmd)
# tests: the subcommands' argument strings, with %s as a file name
for path in sorted(glob.glob("tests/*.c")):
    for m in re.finditer(r'"((?:%s) [^"\\]*|--device cpu [^"\\]*)"' % "|".join(subs), open(path).read()):
        cmd = m.group(1).replace("%s", "tests/data/tiny-topo.yaml")
        if "%" in cmd or ": " in cmd: continue
        cmds.add(("ddpreal " if cmd.startswith("--") else "") + cmd)
n = 0
for cmd in sorted(cmds):
    try:
        words = shlex.split(cmd)
    except ValueError:
        continue
    if not words or words[0] not in subs + ("ddpreal",): continue
    open("%s/cmd%03d" % (out, n), "w").write("\n".join(words) + "\n")
    n += 1
print("fuzz: subcmd: %d seed command lines" % n)
PY
printf 'collective\n--topo\n4gpu\n--op\nbroadcast\n--root\n1\n--ring-chunks\n4\n--net\nalpha-beta\n--coll-model\naggregate\n--format\njson\n' \
  >"$seeds/subcmd/hand-collective"
printf 'analyze\np.csv\nm.csv\n--format\ncsv\n--per-op\n--pred-iter\n2\n--skip-measured\n1\n--chrome\nc.json\n--plot\nt.svg\n' \
  >"$seeds/subcmd/hand-analyze2"
printf 'analyze\np.csv\n--iter\n0\n--format\njson\n' >"$seeds/subcmd/hand-analyze1"
printf 'buckets\n--model\nresnet50\n--bucket-mb\n25\n--first-bucket-mb\n1\n--pytorch-version\n1.9\n--find-unused-parameters\n' \
  >"$seeds/subcmd/hand-buckets"
printf 'topo\nimport\na.xml\nb.txt\n--nodes\n2\n--nic\n8x400Gbps\n--gpu\nH100\n--gpus\ngpus.yaml\n--name\nmine\n-o\nmine.yaml\n' \
  >"$seeds/subcmd/hand-import"
printf 'topo\n4gpu\n--from\n0\n--to\n3\n--world-size\n2\n' >"$seeds/subcmd/hand-topo"
printf 'ddpreal\n--schedule=s.csv\n--trace\nt.csv\n--iters\n3\n--warmup=0\n--device\ncuda\n--compute\ngemm\n--share-gpus\n--timeout\n60\n' \
  >"$seeds/subcmd/hand-ddpreal"
printf 'ddpreal\ncollective\n--op\nallgather\n-b\n1K\n--maxbytes\n1M\n-f\n4\n-g\n2\n--share-gpus\n--iters\n3\n--warmup\n0\n--format\njson\n--algo\ntree\n--proto\nLL128\n' \
  >"$seeds/subcmd/hand-ddpreal-collective"
printf 'ddpreal\ncalibrate\n--schedule\ns.csv\n--out\nc.yaml\n--device\ncuda\n--nranks\n2\n--share-gpus\n--fp32-math\nfp32\n--peak-tflops\n19.5\n--mem-bw\n1555\n--iters\n3\n--nccl-blocks\n24\n-b\n1K\n-e\n64M\n--stepfactor\n8\n' \
  >"$seeds/subcmd/hand-ddpreal-calibrate"
i=0
for v in 25MiB 400Gbps 1.5us 312TFLOPS 1e-3 1:100:log5 1,5,25 0.5; do
  for k in 0 1 2 3 4 5; do printf "\\$(printf %03o $k)%s" "$v" >"$seeds/units/$i-$k"; done
  i=$((i + 1))
done

found=()
for arg in "$@"; do
  # passes, NAME:SECONDS each; NAME-small runs the target NAME on the small seeds
  case $arg in
    model)
      small=$((secs * ${FUZZ_MODEL_SMALL_PCT:-80} / 100))
      [ "$small" -ge 1 ] || small=1
      big=$((secs - small))
      [ "$big" -ge 1 ] || big=1
      passes="model-small:$small model:$big" ;;
    *) passes="$arg:$secs" ;;
  esac
  for p in $passes; do
    r=${p%%:*} t=${p##*:}
    target=${r%-small}
    echo "fuzz: $r for ${t} s"
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$bin/fuzz_$target" -max_total_time="$t" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="tests/data/fuzz/$target/" "build/fuzz/corpus/$r" "$seeds/$r" \
      >"build/fuzz/$r.log" 2>&1
    rc=$?
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "build/fuzz/$r.log" |
      sed "s/^/fuzz: $r: /"
    # runs a second over the whole pass, the seeds' loading included
    awk -v r="$r" -v t="$t" '/^stat::number_of_executed_units/ {
      printf "fuzz: %s: %.0f runs/s\n", r, $2 / t }' "build/fuzz/$r.log"
    if [ "$rc" -ne 0 ]; then
      found+=("$r")
      echo "fuzz: $r: FOUND something (exit $rc); see build/fuzz/$r.log and tests/data/fuzz/$target/" >&2
    fi
  done
done
[ ${#found[@]} -eq 0 ] && { echo "fuzz: nothing found in ${secs} s per reader"; exit 0; }
echo "fuzz: readers with findings: ${found[*]}" >&2
exit 1
