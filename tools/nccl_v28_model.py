#!/usr/bin/env python3
"""NCCL 2.8.3/2.8.4's own all-reduce model against v2.30.7's and the measured rows.

Investigation aid for validation/notes-nccl-versions.md (not used by ddpsim):
prints, for the validation rows measured with NCCL 2.8.x on one node
(ABCI 2.0 Compute Node (A), 4 and 8 A100-SXM4-40GB on NVSwitch, NCCL 2.8.4;
Bessemer's 4 V100 PCIe, NCCL 2.8.3), per size:

  - the algorithm/protocol NCCL 2.8.x's tuning model picks and its predicted
    time (src/graph/tuning.cc at tag v2.8.4-1; identical at v2.8.3-1), from
    the graph NCCL 2.8.x's search gives these machines (src/graph/search.cc,
    topo.h at v2.8.4-1; derivation in the notes);
  - v2.30.7's choice and time: ddpsim's `nccl` column (--algo auto);
  - ddpsim's simulated time, as it stands (v2.30.7's choice) and with
    2.8.x's choice forced (--algo/--proto);
  - "2.8.x model + extras": 2.8.x's model time plus ddpsim's fitted extras
    for that algorithm/protocol (ddpsim's forced time less its own `nccl`
    column): an estimate of what ddpsim would print with 2.8.x's constants,
    assuming its extras stay as they are;
  - the measured time (size / algbw, algbw = busbw * N / (2 (N - 1))), the
    min and max over the rows' repeated runs in validation/collectives.csv.

Then Bessemer's NCCL 2.4.2 rows against ddpsim (2.4.2 has no tuning model),
the fit table's NCCL 2.18.5 run (tests/data/nccl_allreduce_8xa100_azure.csv)
against ABCI-A's 8 GPUs, and NCCL 2.18.5's own model and choice there.

With --log FILE (an nccl-tests all_reduce_perf output of an ABCI-A run, e.g.
aistabci/abci2.0benchmark allreduce/intra_anode/job08.sh.7280517.nccl) and
--ranks N it prints instead every size of that log: the in-place time, 2.8.4's
choice and model time, the measured time less the model's, and v2.30.7's
model and ddpsim's time (--algo auto) on validation/topologies/abci-a.yaml.

Nothing is fitted. Run from the repository root after `make`:
    python3 tools/nccl_v28_model.py
    python3 tools/nccl_v28_model.py --log job08.sh.7280517.nccl --ranks 8
"""
import csv
import subprocess
import sys

# ---- NCCL's tuning constants (src/graph/tuning.cc) for allreduce on one node ----
# v2.8.4-1 (identical at v2.8.3-1); v2.18.5-1 (the fit table's version) for comparison.
TREE_CORRECTION_284 = {  # treeCorrectionFactor[proto][log2(bytes >> 6)], 23 entries
    'LL': [1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0],
    'LL128': [1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92],
    'Simple': [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9]}
TREE_CORRECTION_2185 = dict(TREE_CORRECTION_284, LL128=[
    1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0])
VERSIONS = {
    '2.8.4': {
        'base_lat': {'tree': {'LL': 4.4, 'LL128': 4.4, 'Simple': 0.0},
                     'ring': {'LL': 3.6, 'LL128': 10.0, 'Simple': 8.4}},
        'hw_lat': {'NVLINK': {'tree': {'LL': .52, 'LL128': 1.25, 'Simple': 28.0},
                              'ring': {'LL': .47, 'LL128': 1.9, 'Simple': 3.4}},
                   'PCI': {'tree': {'LL': 1.0, 'LL128': 1.9, 'Simple': 28.0},
                           'ring': {'LL': 1.0, 'LL128': 2.5, 'Simple': 5.7}}},
        'ring_ll128_per_ch': 16.9,   # ll128MaxBwPerCh[ncclFuncAllReduce]
        'tree_ll128_per_ch': 16.9,
        'sm80_cap': 235.0,           # "if (compCap80) busBw = min(busBw, 235)"
        'tree_correction': TREE_CORRECTION_284},
    '2.18.5': {
        'base_lat': {'tree': {'LL': 6.8, 'LL128': 14.0, 'Simple': 0.0},
                     'ring': {'LL': 6.6, 'LL128': 14.0, 'Simple': 8.4}},
        'hw_lat': {'NVLINK': {'tree': {'LL': .6, 'LL128': 1.25, 'Simple': 4.0},
                              'ring': {'LL': .6, 'LL128': 1.9, 'Simple': 3.4}},
                   'PCI': {'tree': {'LL': 1.0, 'LL128': 1.9, 'Simple': 6.0},
                           'ring': {'LL': 1.0, 'LL128': 2.5, 'Simple': 5.7}}},
        'ring_ll128_per_ch': 20.0,   # perChMaxRingLL128Bws Volta/Ampere N1
        'tree_ll128_per_ch': 20.0,   # perChMaxTreeLL128Bws
        'sm80_cap': None,
        'tree_correction': TREE_CORRECTION_2185},
}
# Both: ring LL busBw = min(llMaxBw, busBw / 4) for allreduce; llMaxBws N1 Volta 39.0,
# Ampere 87.7; perChMaxTreeBws N1 Volta 26.5, Ampere 24.0.
LL_MAX_BW_N1 = {70: 39.0, 80: 87.7}
PER_CH_MAX_TREE_BW_N1 = {70: 26.5, 80: 24.0}
PROTOS = ('LL', 'LL128', 'Simple')


def model_v28(nranks, nch, speed, cc, hw, ll128_on, version='2.8.4'):
    """(latency us, algorithm bandwidth GB/s) per (algo, proto), one node."""
    v = VERSIONS[version]
    nsteps = 2 * (nranks - 1)
    out = {}
    for a in ('tree', 'ring'):
        for p in PROTOS:
            bus = nch * speed
            if cc == 80 and v['sm80_cap']:
                bus = min(bus, v['sm80_cap'])
            if a == 'ring' and p == 'LL':
                bus = min(LL_MAX_BW_N1[cc], bus / 4.0)
            if a == 'ring' and p == 'LL128':
                bus = min(bus * 0.92, v['ring_ll128_per_ch'] * nch)
            if a == 'tree':
                bus = min(bus * .92, nch * PER_CH_MAX_TREE_BW_N1[cc])
            if a == 'tree' and p == 'LL':
                bus = min(bus / 3.8, LL_MAX_BW_N1[cc])
            if a == 'tree' and p == 'LL128':
                bus = min(bus * 7.0 / 9.0, v['tree_ll128_per_ch'] * nch)
            if p == 'LL128' and not ll128_on:
                bus = 0.0
            algbw = bus * (0.5 if a == 'tree' else nranks / nsteps)
            per_hop = v['hw_lat'][hw][a][p]
            hops = nsteps if a == 'ring' else 2 * (nranks - 1)
            out[(a, p)] = (v['base_lat'][a][p] + hops * per_hop, algbw,
                           v['tree_correction'][p])
    return out


def time_v28(model, a, p, nbytes):
    lat, bw, correction = model[(a, p)]
    if bw == 0:
        return None
    log_size = max((nbytes >> 6).bit_length() - 1, 0)  # log2i (0 for 0)
    if a == 'tree' and log_size < 23:
        bw *= correction[log_size]
    return lat + nbytes / (1000.0 * bw)


def ddpsim(topo, g, algo, proto, nbytes):
    cmd = ['bin/ddpsim', 'collective', '--topo', topo] + (['-g', str(g)] if g else [])
    cmd += ['--algo', algo] + (['--proto', proto] if proto else [])
    cmd += ['-b', str(nbytes), '-e', str(nbytes), '--format', 'csv']
    rows = list(csv.DictReader(subprocess.run(cmd, check=True, capture_output=True,
                                              text=True).stdout.splitlines()))
    r = rows[0]
    return float(r['time_us']), float(r['nccl_model_us']), r['algo'], r['proto']


def measured_times(command_part, software_part, nranks):
    """size -> [measured time us] over the rows' repeated runs."""
    by_size = {}
    with open('validation/collectives.csv', newline='') as f:
        for row in csv.DictReader(f):
            if command_part not in row['command'] or software_part not in row['software']:
                continue
            size = int(row['select'].split('=')[1])
            algbw = float(row['value']) * nranks / (2.0 * (nranks - 1))
            by_size.setdefault(size, []).append(size / (algbw * 1000.0))
    return by_size


CASES = [
    # label, topology, -g, ranks, graph channels, GB/s per channel, compute cap, hw, LL128 on,
    # command filter, software filter
    ('ABCI-A, 8 A100 on NVSwitch, NCCL 2.8.4', 'validation/topologies/abci-a.yaml', 8, 8,
     12, 21.0, 80, 'NVLINK', True, 'abci-a.yaml -g 8 ', '2.8.4'),
    ('ABCI-A, 4 A100 on NVSwitch, NCCL 2.8.4', 'validation/topologies/abci-a.yaml', 4, 4,
     12, 21.0, 80, 'NVLINK', True, 'abci-a.yaml -g 4 ', '2.8.4'),
    ('Bessemer, 4 V100 PCIe, NCCL 2.8.3', 'validation/topologies/c4140-4xv100-pcie.yaml', 0, 4,
     1, 12.0, 70, 'PCI', False, 'c4140-4xv100-pcie.yaml', 'NCCL 2.8.3'),
]


def log_mode(path, nranks):
    m = model_v28(nranks, 12, 21.0, 80, 'NVLINK', True)
    print(f'## {path}: {nranks} ranks, in-place; NCCL 2.8.4 graph 12 channels x 21.0 GB/s')
    print('| size (B) | measured (us) | 2.8.4 choice | 2.8.4 model (us) | measured - 2.8.4 (us) '
          '| v2.30.7 choice | v2.30.7 model (us) | ddpsim (us) |')
    print('| ---: | ---: | :--- | ---: | ---: | :--- | ---: | ---: |')
    with open(path) as f:
        for line in f:
            cols = line.split()
            if line.startswith('#') or len(cols) < 12:
                continue
            size, t_meas = int(cols[0]), float(cols[8])
            times = {k: time_v28(m, k[0], k[1], size) for k in m}
            times = {k: v for k, v in times.items() if v is not None}
            best = min(times, key=times.get)
            now_t, now_nccl, now_a, now_p = ddpsim('validation/topologies/abci-a.yaml', nranks,
                                                   'auto', None, size)
            print(f'| {size} | {t_meas:.1f} | {best[0]} {best[1]} | {times[best]:.1f} '
                  f'| {t_meas - times[best]:+.1f} | {now_a} {now_p} | {now_nccl:.1f} | {now_t:.1f} |')


def main():
    if '--log' in sys.argv:
        log_mode(sys.argv[sys.argv.index('--log') + 1], int(sys.argv[sys.argv.index('--ranks') + 1]))
        return 0
    for (label, topo, g, n, nch, speed, cc, hw, ll128, cmd_part, sw_part) in CASES:
        m = model_v28(n, nch, speed, cc, hw, ll128)
        meas = measured_times(cmd_part, sw_part, n)
        print(f'## {label}: NCCL 2.8.x graph {nch} channels x {speed} GB/s')
        print('2.8.x lat(us)/algbw(GB/s): ' + ', '.join(
            f'{a}/{p} {lat:.2f}/{bw:.2f}' for (a, p), (lat, bw, _) in m.items() if bw > 0))
        print('| size | 2.8.x choice | 2.8.x model (us) | v2.30.7 choice | v2.30.7 model (us) '
              '| 2.8.x / v2.30.7 model | ddpsim now (us) | ddpsim, 2.8.x choice (us) | extras (us) '
              '| 2.8.x model + extras (us) | measured (us) | measured / ddpsim now '
              '| measured / ddpsim, 2.8.x choice | measured / (2.8.x + extras) |')
        print('| ---: | :--- | ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
              '| ---: | ---: |')
        for size in sorted(meas):
            times = {k: time_v28(m, k[0], k[1], size) for k in m}
            times = {k: v for k, v in times.items() if v is not None}
            best = min(times, key=times.get)  # NCCL's order on ties: tree before ring, LL first
            t28 = times[best]
            now_t, now_nccl, now_a, now_p = ddpsim(topo, g, 'auto', None, size)
            f_t, f_nccl, _, _ = ddpsim(topo, g, best[0], best[1], size)
            est = t28 + (f_t - f_nccl)
            lo, hi = min(meas[size]), max(meas[size])
            mt = f'{lo:.1f}' if hi - lo < 0.05 else f'{lo:.1f}-{hi:.1f}'
            def ratio(t):
                return f'{lo / t:.2f}' if hi - lo < 0.05 else f'{lo / t:.2f}-{hi / t:.2f}'
            print(f'| {size >> 10} KiB | {best[0]} {best[1]} | {t28:.1f} | {now_a} {now_p} '
                  f'| {now_nccl:.1f} | {t28 / now_nccl:.2f} | {now_t:.1f} | {f_t:.1f} '
                  f'| {f_t - f_nccl:.1f} | {est:.1f} | {mt} | {ratio(now_t)} | {ratio(f_t)} '
                  f'| {ratio(est)} |')
        print()
    # Bessemer with NCCL 2.4.2 (no tuning model: enqueue.cu getKernelInfo runs LL up to
    # nc * nt * nRanks * 64 B = 1 * 256 * 4 * 64 = 64 KiB, else Simple; one ring, one CTA).
    topo = 'validation/topologies/c4140-4xv100-pcie.yaml'
    meas = measured_times('c4140-4xv100-pcie.yaml', 'NCCL 2.4.2', 4)
    print('## Bessemer, 4 V100 PCIe, NCCL 2.4.2: LL up to 64 KiB, then Simple, 1 ring, 1 CTA')
    print('| size | 2.4.2 protocol | v2.30.7 choice | ddpsim now (us) | measured (us) | measured / ddpsim now |')
    print('| ---: | :--- | :--- | ---: | ---: | ---: |')
    for size in sorted(meas):
        now_t, _, now_a, now_p = ddpsim(topo, 0, 'auto', None, size)
        t = meas[size][0]
        print(f'| {size >> 10} KiB | {"LL" if size <= 65536 else "Simple"} | {now_a} {now_p} '
              f'| {now_t:.1f} | {t:.1f} | {t / now_t:.2f} |')
    print()
    # The fit table's NCCL 2.18.5 run on the same node type (8 A100-SXM4-80GB on
    # NVSwitch, Azure) against ABCI-A's 8 GPUs (job08.sh.7280517), sizes 1-32 MiB.
    azure = {}
    with open('tests/data/nccl_allreduce_8xa100_azure.csv', newline='') as f:
        for row in csv.DictReader(line for line in f if not line.startswith('#')):
            azure[int(row['size_bytes_assumed_2^k'])] = float(row['time_us_derived'])
    job08 = {}
    with open('validation/collectives.csv', newline='') as f:
        for row in csv.DictReader(f):
            if 'job08.sh.7280517' in row['source']:
                size = int(row['select'].split('=')[1])
                job08[size] = size / (float(row['value']) * 8 / 14.0 * 1000.0)
    print('## 8 A100 on NVSwitch: NCCL 2.18.5 (fit table, Azure) against NCCL 2.8.4 (ABCI-A)')
    print('| size | 2.18.5 (us) | 2.8.4 job08 (us) | 2.8.4 - 2.18.5 (us) | step from previous size: 2.18.5 / 2.8.4 (us) |')
    print('| ---: | ---: | ---: | ---: | ---: |')
    prev = None
    for size in sorted(job08):
        step = (f'{azure[size] - azure[prev]:.1f} / {job08[size] - job08[prev]:.1f}'
                if prev else '')
        print(f'| {size >> 10} KiB | {azure[size]:.1f} | {job08[size]:.1f} '
              f'| {job08[size] - azure[size]:+.1f} | {step} |')
        prev = size
    # NCCL 2.18.5's own choice on 8 A100 (graph 12 x 20 GB/s: SM80_NVLINK_BW 20.0, search
    # speed 40 -> 6 channels, duplicated).
    m = model_v28(8, 12, 20.0, 80, 'NVLINK', True, '2.18.5')
    print()
    print('## NCCL 2.18.5 model, 8 A100 (12 channels x 20 GB/s): choice and time per protocol (us)')
    print('| size | 2.18.5 choice | ring LL | ring LL128 | ring Simple | tree LL128 |')
    print('| ---: | :--- | ---: | ---: | ---: | ---: |')
    for size in sorted(job08):
        times = {k: time_v28(m, k[0], k[1], size) for k in m}
        best = min(times, key=times.get)
        print(f'| {size >> 10} KiB | {best[0]} {best[1]} {times[best]:.1f} '
              f'| {times[("ring", "LL")]:.1f} | {times[("ring", "LL128")]:.1f} '
              f'| {times[("ring", "Simple")]:.1f} | {times[("tree", "LL128")]:.1f} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
