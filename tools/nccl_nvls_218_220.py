#!/usr/bin/env python3
"""NCCL 2.18.5's and 2.20.5's all-reduce model and NVLS layout on 8 H100/H200.

Investigation aid for validation/notes-nccl-nvls-218-220.md (not used by
ddpsim). For one node of 8 Hopper GPUs on NVSwitch (Azure ND H100 v5, NCCL
2.18.5; ND H200 v5, NCCL 2.20.5) it prints:

  1. the graphs each version's search finds (src/graph/search.cc, topo.h):
     the ring's and NVLS's channels and speed, from the rules the notes cite;
  2. each version's own model (src/graph/tuning.cc): latency and algorithm
     bandwidth per algorithm/protocol, v2.30.7's from ddpsim's `nccl` column;
  3. each version's predicted time and choice at 256 KiB - 2 MiB;
  4. how each version lays an NVLS all-reduce over channels and heads
     (src/enqueue.cc, the device all_reduce.h), beside the measured times;
  5. the measured busbw of both tables against ddpsim as the rows run it
     (--algo auto), with the NVLS the pages ran (--algo nvls), and with the
     2.18.5/2.20.5 choice forced.

Nothing is fitted. Run from the repository root after `make`:
    python3 tools/nccl_nvls_218_220.py
"""
import csv
import math
import subprocess

NRANKS = 8
NVLINKS_PER_GPU = 18          # H100/H200 SXM: 18 NVLink4 links to the NVSwitches
KIB = 1024
MIB = 1024 * 1024

# ---- per-version constants (tags v2.18.5-1 and v2.20.5-1) ----
V = {
    '2.18.5': {
        'nvlink_bw': 20.0,                                   # topo.h SM90_NVLINK_BW
        'speeds_intra': [60, 40, 30, 24, 20, 15, 12, 6, 3],  # search.cc sm90SpeedArrayIntra
        'nvls_lat': 23.0,        # tuning.cc baseLat[NVLS][Simple]; hwLat[NVLINK][NVLS] = 0
        'tree_simple_hw': 4.0,   # hwLat[NVLINK][Tree][Simple]
    },
    '2.20.5': {
        'nvlink_bw': 20.6,
        'speeds_intra': [60, 50, 40, 30, 24, 20, 15, 12, 6, 3],
        'nvls_lat': 23.0,        # baseLat[NVLS] = 0; hwLat[NVLINK][NVLS][Simple] = 23
        'tree_simple_hw': 28.0,
    },
}
# Common to both (tuning.cc): ring LL busBw/4 capped by llMaxBws Hopper-N1 87.7;
# LL128 x0.92 capped by perChMaxRingLL128Bws Hopper 36.7 per channel; tree caps
# perChMaxTreeBws Hopper 38.7, perChMaxTreeLL128Bws 36.7; NVLS ratio 5/6.
BASE_LAT = {('ring', 'LL'): 6.6, ('ring', 'LL128'): 14.0, ('ring', 'Simple'): 8.4,
            ('tree', 'LL'): 6.8, ('tree', 'LL128'): 14.0, ('tree', 'Simple'): 0.0}
HW_LAT_NVLINK = {('ring', 'LL'): .6, ('ring', 'LL128'): 1.9, ('ring', 'Simple'): 3.4,
                 ('tree', 'LL'): .6, ('tree', 'LL128'): 1.25}
TREE_CORRECTION = {  # treeCorrectionFactor[proto][log2(bytes >> 6)], same in both tags
    'LL': [1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0],
    'LL128': [1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0],
    'Simple': [.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9]}
PROTOS = ('LL', 'LL128', 'Simple')
CANDIDATES = [('tree', p) for p in PROTOS] + [('ring', p) for p in PROTOS] + [('nvls', 'Simple')]


def search(v):
    """The ring and NVLS graphs of ncclTopoCompute on one node (NICs trimmed)."""
    link = NVLINKS_PER_GPU * V[v]['nvlink_bw']     # one merged GPU<->NVS link
    speeds = V[v]['speeds_intra']
    # Ring: from the first speed <= maxBw, every speed while next/best > .49;
    # the first of the best nChannels x speed wins (ncclTopoCompareGraphs);
    # a ring charges each GPU's link once a channel.
    best = None
    for s in speeds:
        if s > link:
            continue
        if best and s / best[1] <= .49:
            break
        nch = int(link // s)
        if best is None or nch * s > best[0] * best[1]:
            best = (nch, s)
    nch, s = best
    if s >= 25 and not (s < 50 and nch > 4):         # ncclTopoDupChannels rule (sm90)
        nch, s = 2 * nch, s / 2
    ring = (nch, s)
    # NVLS: min = max = 8 channels (one head per GPU); over the 8 channels each
    # GPU's link carries 7 x speed as a member and 2 x speed as the head.
    start = next(s for s in speeds if s <= link and s * NRANKS <= link * NRANKS / (NRANKS - 1))
    nvls = next((NRANKS, s) for s in speeds if s <= start and (NRANKS + 1) * s <= link)
    return ring, nvls


def model(v):
    """{(algo, proto): (latency us, algorithm bandwidth GB/s)} of tuning.cc."""
    (rch, rs), (nch, ns) = search(v)
    bus = rch * rs
    steps = 2 * (NRANKS - 1)
    out = {}
    ring_bus = {'LL': min(87.7, bus / 4), 'LL128': min(bus * 0.92, rch * 36.7), 'Simple': bus}
    for p in PROTOS:
        out[('ring', p)] = (BASE_LAT[('ring', p)] + steps * HW_LAT_NVLINK[('ring', p)],
                            ring_bus[p] * NRANKS / steps)
    # Tree: taken on the ring's graph (an upper bound on its bandwidth).
    tbus = min(bus * .92, rch * 38.7)
    tree_bus = {'LL': min(tbus / 3.8, 87.7), 'LL128': min(tbus * 7 / 9, rch * 36.7), 'Simple': tbus}
    hw = dict(HW_LAT_NVLINK)
    hw[('tree', 'Simple')] = V[v]['tree_simple_hw']
    for p in PROTOS:
        out[('tree', p)] = (BASE_LAT[('tree', p)] + 2 * (NRANKS - 1) * hw[('tree', p)], tree_bus[p] * .5)
    out[('nvls', 'Simple')] = (V[v]['nvls_lat'], nch * ns * 5 / 6)
    return out


def time_us(m, a, p, nbytes):
    lat, bw = m[(a, p)]
    if a == 'tree':
        log = int(math.log2(nbytes >> 6))
        if log < 23:
            bw *= TREE_CORRECTION[p][log]
    return lat + nbytes / (1000 * bw)


def choose(times):
    """getAlgoInfo: least time, in NCCL's algorithm order (Tree, Ring, ..., NVLS)."""
    return min(CANDIDATES, key=lambda c: (times[c], CANDIDATES.index(c)))


def ddpsim_rows(topo, algo, proto=None):
    cmd = ['bin/ddpsim', 'collective', '--topo', topo, '--algo', algo,
           '-b', '1K', '-e', '8G', '-f', '2', '--format', 'csv']
    if proto:
        cmd += ['--proto', proto]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {int(r['size_bytes']): r for r in csv.DictReader(out.splitlines())}


def v2307_model(topo):
    """v2.30.7's times: ddpsim's `nccl` column per forced algorithm/protocol."""
    res = {}
    for a, p in CANDIDATES:
        rows = ddpsim_rows_cache(topo, a, p)
        res[(a, p)] = {s: float(r['nccl_model_us']) for s, r in rows.items()}
    return res


def nvls_chunk(nbytes):
    """calcCollChunking for NVLS (both tags): 512 KiB step capped at 128 KiB,
    halved against concurrentOps = 16 channels x 8 heads."""
    ops, c = 16 * NRANKS, 128 * KIB
    if nbytes < 64 * ops * c and c > 65536: c = 65536
    if nbytes < 8 * ops * c and c > 32768: c = 32768
    if nbytes < 2 * ops * c and c > 16384: c = 16384
    return c


def layout_2185(nbytes):
    """2.18.5 (and 2.19.x): a loop covers 16 channels x 8 heads x chunk; channel
    b takes bytes [b*8*chunk, (b+1)*8*chunk) of it, head h the h-th chunk."""
    c = nvls_chunk(nbytes)
    loop = 16 * NRANKS * c
    loops = math.ceil(nbytes / loop)
    first = min(nbytes, loop)
    return dict(chunk=c, channels=math.ceil(first / (NRANKS * c)),
                heads=min(NRANKS, math.ceil(first / c)), per_head=min(c, nbytes), loops=loops)


def layout_2205(nbytes):
    """2.20.5: the bytes spread over the 16 NVLS channels (addCBDCollToPlan),
    each channel's share rounded up to 4 KiB (NCCL_SIMPLE_ALIGNMENT); a share
    below 8 x chunk splits evenly over the heads, again in 4 KiB units."""
    c = nvls_chunk(nbytes)
    share = min(nbytes, math.ceil(nbytes / 16 / 4096) * 4096)
    channels = math.ceil(nbytes / share)
    loops = math.ceil(share / (NRANKS * c))
    rem = share - (loops - 1) * NRANKS * c
    per_head = min(c, math.ceil(rem / NRANKS / 4096) * 4096, rem)
    return dict(chunk=c, channels=channels, heads=math.ceil(rem / per_head),
                per_head=per_head, loops=loops)


def measured(table):
    rows = {}
    with open('validation/collectives.csv', newline='') as f:
        for r in csv.DictReader(f):
            if table in r['machine'] and r['select'].startswith('size_bytes='):
                rows[int(r['select'].split('=')[1])] = float(r['value'])
    return rows


def busbw_to_us(nbytes, busbw):
    return nbytes / (busbw * NRANKS / (2 * (NRANKS - 1)) * 1e3)


def size_str(n):
    return f'{n // MIB} MiB' if n >= MIB else f'{n // KIB} KiB'


def main():
    h200 = 'validation/topologies/nd-h200-v5.yaml'
    sizes = [256 * KIB, 512 * KIB, MIB, 2 * MIB]
    print('## Graphs (one node, NICs trimmed: intra speed array, NVLS min = max = 8 channels)\n')
    for v in V:
        (rch, rs), (nch, ns) = search(v)
        print(f'- {v}: GPU link {NVLINKS_PER_GPU} x {V[v]["nvlink_bw"]} = '
              f'{NVLINKS_PER_GPU * V[v]["nvlink_bw"]:.1f} GB/s; ring {rch} x {rs:.1f} GB/s; '
              f'NVLS {nch} x {ns:.1f} GB/s')
    print('\n## Each version\'s model: latency (us) / algorithm bandwidth (GB/s)\n')
    v30 = v2307_model(h200)
    print('| algo/proto | 2.18.5 | 2.20.5 | v2.30.7 (ddpsim `nccl`, from 256 KiB and 2 MiB) |')
    print('| :--- | ---: | ---: | ---: |')
    models = {v: model(v) for v in V}
    for a, p in CANDIDATES:
        t1, t2 = v30[(a, p)][256 * KIB], v30[(a, p)][2 * MIB]
        bw = (2 * MIB - 256 * KIB) / ((t2 - t1) * 1e3)
        lat = t1 - 256 * KIB / (bw * 1e3)
        cells = [f'{models[v][(a, p)][0]:.1f} / {models[v][(a, p)][1]:.1f}' for v in V]
        v30cell = 'size-corrected: see below' if a == 'tree' else f'{lat:.1f} / {bw:.1f}'
        print(f'| {a} {p} | {cells[0]} | {cells[1]} | {v30cell} |')
    print('\n(Tree: on the ring\'s graph, an upper bound on its bandwidth, before '
          'treeCorrectionFactor, which the times below apply.)')
    print('\n## Predicted time (us) per candidate and the choice\n')
    print('| size | version | ring LL | ring LL128 | ring Simple | tree LL | tree LL128 | nvls | choice |')
    print('| ---: | :--- | ---: | ---: | ---: | ---: | ---: | ---: | :--- |')
    for s in sizes:
        for v in list(V) + ['2.30.7']:
            if v == '2.30.7':
                t = {c: v30[c][s] for c in CANDIDATES}
            else:
                t = {c: time_us(models[v], *c, s) for c in CANDIDATES}
            a, p = choose(t)
            cols = [t[('ring', 'LL')], t[('ring', 'LL128')], t[('ring', 'Simple')],
                    t[('tree', 'LL')], t[('tree', 'LL128')], t[('nvls', 'Simple')]]
            print(f'| {size_str(s)} | {v} | ' + ' | '.join(f'{x:.2f}' for x in cols) +
                  f' | {a} {p} {t[(a, p)]:.2f} |')
    # Crossovers of ring LL and NVLS.
    for v in V:
        (l1, b1), (l2, b2) = models[v][('ring', 'LL')], models[v][('nvls', 'Simple')]
        x = (l2 - l1) / (1 / (1000 * b1) - 1 / (1000 * b2))
        print(f'\n{v}: ring LL and NVLS tie at {x / KIB:.0f} KiB', end='')
    print('\n\n## NVLS layout (channels with data x heads with data in a channel x bytes per '
          'head per step) and the measured time\n')
    m100, m200 = measured('ND H100 v5'), measured('ND H200 v5')
    print('| size | chunk | 2.18.5 layout | H100 2.18.5 measured (us) | 2.20.5 layout | '
          'H200 2.20.5 measured (us) | H100 - H200 (us) |')
    print('| ---: | ---: | :--- | ---: | :--- | ---: | ---: |')
    for s in sorted(m100):
        if s > 8 * MIB:
            break
        a, b = layout_2185(s), layout_2205(s)
        t100, t200 = busbw_to_us(s, m100[s]), busbw_to_us(s, m200[s])
        fa = f'{a["channels"]} ch x {a["heads"]} heads x {a["per_head"] / KIB:g} KiB' + \
             (f', {a["loops"]} loops' if a['loops'] > 1 else '')
        fb = f'{b["channels"]} ch x {b["heads"]} heads x {b["per_head"] / KIB:g} KiB' + \
             (f', {b["loops"]} steps' if b['loops'] > 1 else '')
        print(f'| {size_str(s)} | {a["chunk"] // KIB} KiB | {fa} | {t100:.1f} | {fb} | {t200:.1f} | '
              f'{t100 - t200:+.1f} |')
    print('\n## The two tables against ddpsim (busbw GB/s; error = predicted / measured - 1)\n')
    for name, topo, meas in (('ND H100 v5 (NCCL 2.18.5)', 'dgx-h100', m100),
                             ('ND H200 v5 (NCCL 2.20.5)', h200, m200)):
        auto, nvls = ddpsim_rows_cache(topo, 'auto', None), ddpsim_rows_cache(topo, 'nvls', None)
        print(f'{name}:\n')
        print('| size | measured | ddpsim auto (as the rows run) | error | ddpsim --algo nvls '
              '(as measured) | error | 2.18.5/2.20.5 choice | ddpsim with it | error |')
        print('| ---: | ---: | ---: | ---: | ---: | ---: | :--- | ---: | ---: |')
        for s in sorted(meas):
            t = {c: time_us(models['2.20.5'], *c, s) for c in CANDIDATES}
            a, p = choose(t)
            ver = ddpsim_rows_cache(topo, a, None if a == 'nvls' else p)[s]
            cells = []
            for r in (auto[s], nvls[s], ver):
                bb = float(r['busbw_gbps'])
                cells.append(f'{bb:.2f} ({r["algo"]} {r["proto"]})')
                cells.append(f'{(bb / meas[s] - 1) * 100:+.1f}%')
            print(f'| {size_str(s) if s >= KIB else s} | {meas[s]:.2f} | {cells[0]} | {cells[1]} | '
                  f'{cells[2]} | {cells[3]} | {a} {p} | {cells[4]} | {cells[5]} |')
        print()


_CACHE = {}


def ddpsim_rows_cache(topo, a, p):
    key = (topo, a, p)
    if key not in _CACHE:
        _CACHE[key] = ddpsim_rows(topo, a, p)
    return _CACHE[key]


if __name__ == '__main__':
    main()
