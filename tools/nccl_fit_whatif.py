#!/usr/bin/env python3
"""How much the fit of NCCL's extras depends on which NCCL version's model
is run on the fit table.

The fit (tests/test_nccl_fit.c, docs/collectives.md "The fit") runs
v2.30.7's model on the 8x A100 table, which NCCL 2.18.5 measured. The two
versions' tuning differs there (validation/notes-nccl-versions.md): 2.18.5
charges ring LL at busBw / 4 (v2.30.7: x 0.5) and so picks LL128 at 2 MiB
where v2.30.7 picks LL. This tool repeats the committed fit (same grid,
same median criterion, sizes >= 1 MiB) twice:

  - as committed: each row's time without extras is ddpsim's simulation
    of v2.30.7's choice (`--nccl-extra none`);
  - with 2.18.5's choices and LL rule: where 2.18.5 picks another
    protocol, ddpsim's simulation of that protocol; each row's time then
    moves by 2.18.5's model less v2.30.7's for the protocol run (the
    models from tools/nccl_v28_model.py and ddpsim's `nccl` column).

A row's slice syncs are what ddpsim adds for them: (time with the
committed extras - time without - launch) / sync. Nothing here changes
ddpsim; it prints the two fits and the rows they stand on. Run from the
repository root after `make`:
    python3 tools/nccl_fit_whatif.py
"""
import csv
import statistics
import subprocess

from nccl_v28_model import model_v28, time_v28

TABLE = 'tests/data/nccl_allreduce_8xa100_azure.csv'
TOPO = 'topologies/dgx-a100.yaml'
LAUNCH_US, SYNC_US = 14.0, 2.5  # DS_NCCL_EXTRA_MEASURED (sim/coll/nccl_model.h)
MIB = 1 << 20


def collective(args):
    out = subprocess.run(['bin/ddpsim', 'collective', '--topo', TOPO, '--format', 'csv'] + args,
                         check=True, capture_output=True, text=True).stdout
    return {int(r['size_bytes']): r for r in csv.DictReader(out.splitlines())}


def measured():
    rows = {}
    with open(TABLE) as f:
        for r in csv.DictReader(line for line in f if not line.startswith('#')):
            size = int(r['size_bytes_assumed_2^k'])
            if size >= MIB:  # time = S 2(N-1)/N / busbw, N = 8
                rows[size] = size * 2 * 7 / 8 / (float(r['busbw_GBps_inplace_published']) * 1e3)
    return rows


def fit(rows, meas):
    """The committed grid: launch 0..40 us by 0.5 (outer), sync 0..5 us by
    0.05 (inner), least median |measured / T - 1|, the first point wins ties."""
    best = (float('inf'), 0.0, 0.0)
    for li in range(81):
        for si in range(101):
            launch, sync = li * 0.5, si * 0.05
            err = statistics.median(abs(meas[s] / (t0 + launch + n * sync) - 1)
                                    for s, (t0, n) in rows.items())
            if err < best[0]:
                best = (err, launch, sync)
    return best


def main():
    meas = measured()
    lo, hi = min(meas), max(meas)
    span = ['-b', str(lo), '-e', str(hi), '-f', '2', '--algo', 'auto']
    none = collective(span + ['--nccl-extra', 'none'])
    extra = collective(span)
    m2185 = model_v28(8, 12, 20.0, 80, 'NVLINK', True, '2.18.5')
    committed, older = {}, {}
    print('| size | v2.30.7 | T0 (us) | syncs | 2.18.5 | T0 with 2.18.5 (us) | measured (us) |')
    print('| ---: | :--- | ---: | ---: | :--- | ---: | ---: |')
    for size in sorted(meas):
        r = none[size]
        t0 = float(r['time_us'])
        syncs = round((float(extra[size]['time_us']) - t0 - LAUNCH_US) / SYNC_US)
        committed[size] = (t0, syncs)
        times = {(a, p): time_v28(m2185, a, p, size)
                 for a in ('ring', 'tree') for p in ('LL', 'LL128', 'Simple')}
        algo, proto = min((k for k in times if times[k] is not None), key=lambda k: times[k])
        forced = r if (algo, proto) == (r['algo'], r['proto']) else collective(
            ['-b', str(size), '-e', str(size), '--algo', algo, '--proto', proto,
             '--nccl-extra', 'none'])[size]
        t_old = float(forced['time_us']) + times[(algo, proto)] - float(forced['nccl_model_us'])
        forced_extra = collective(['-b', str(size), '-e', str(size), '--algo', algo,
                                   '--proto', proto])[size]
        syncs_old = round((float(forced_extra['time_us']) - float(forced['time_us'])
                           - LAUNCH_US) / SYNC_US)
        older[size] = (t_old, syncs_old)
        print(f"| {size // MIB} MiB | {r['algo']} {r['proto']} | {t0:.1f} | {syncs} | "
              f"{algo} {proto} | {t_old:.1f} | {meas[size]:.1f} |")
    for name, rows in (('v2.30.7 on the table (committed)', committed),
                       ("2.18.5's choices and LL rule", older)):
        err, launch, sync = fit(rows, meas)
        print(f'{name}: launch {launch:.1f} us, sync {sync:.2f} us, '
              f'median error {100 * err:.1f} %')


if __name__ == '__main__':
    main()
