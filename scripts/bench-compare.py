#!/usr/bin/env python3
"""Two builds of `sim`, measured side by side in one run (BENCHMARKS.md).

Every performance change reports these figures against the build before
it, so that neither the throughput nor the cost a user pays around it can
regress unseen: issue 51 found a 3x slower generator and a sweep paying
0.9 s of system time and 400k page faults, both hidden by figures that
looked only at user time on a loaded machine.

For each round, alternating OLD then NEW (so a machine that gets busier
slows both alike):
  - a sweep, `SIM --seeds 0..N --jobs 1`, as its own child: wall seconds,
    user and system seconds, minor page faults and peak RSS, read from the
    child's own resource usage (`os.wait4`), not from a shell's `time`;
  - `SIM bench --json` (the generator, the simulator, the bare engine,
    explore), unless --no-bench.
Then a table of each figure's median and range per build, and NEW / OLD
of the medians. Exit status: 0 when both builds ran every round, 1 when a
run failed (its output is shown), 2 for bad usage.

  scripts/bench-compare.py /tmp/base/sim target/release/sim
  scripts/bench-compare.py OLD NEW --rounds 5 --sweep-seeds 2000 \\
      --bench-args '--seeds 400 --os-seeds 1 --rows 1000 --explore-ops 10'
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

# The figures of `sim bench --json` worth a line, in the order printed;
# each says whether more is better.
BENCH_FIGURES = [
    ("generate_ops_per_sec", True),
    ("sim_ops_per_sec", True),
    ("sim_run_ops_per_sec", True),
    ("bare_ops_per_sec", True),
    ("sim_overhead", False),
    ("explore_states_per_sec", True),
    ("explore_depth2_states_per_sec", True),
]

SWEEP_FIGURES = [
    ("sweep_wall_s", False),
    ("sweep_user_s", False),
    ("sweep_sys_s", False),
    ("sweep_minor_faults", False),
    ("sweep_peak_rss_kb", False),
]


class RunFailed(Exception):
    """A measured run exited with a failure: its figures mean nothing."""


def sweep(binary, seeds):
    """One sweep as its own child: its wall time and its own rusage."""
    command = [binary, "--seeds", f"0..{seeds}", "--jobs", "1"]
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait4 reports this child's usage alone (RUSAGE_CHILDREN would fold
    # every earlier run into the peak RSS). stderr is drained first: a
    # sweep prints progress, and a full pipe would stall it.
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall_s = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RunFailed(f"{shlex.join(command)} exited {child.returncode}:\n{stderr.decode(errors='replace')[-2000:]}")
    return {
        "sweep_wall_s": wall_s,
        "sweep_user_s": usage.ru_utime,
        "sweep_sys_s": usage.ru_stime,
        "sweep_minor_faults": usage.ru_minflt,
        "sweep_peak_rss_kb": usage.ru_maxrss,
    }


def bench(binary, bench_args):
    """`sim bench --json`'s figures."""
    command = [binary, "bench", "--json", *bench_args]
    done = subprocess.run(command, capture_output=True)
    if done.returncode != 0:
        raise RunFailed(f"{shlex.join(command)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')[-2000:]}")
    figures = json.loads(done.stdout)
    missing = [name for name, _ in BENCH_FIGURES if name not in figures]
    if missing:
        raise RunFailed(f"{shlex.join(command)} printed no {missing}")
    return {name: figures[name] for name, _ in BENCH_FIGURES}


def show(value):
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def table(figures, runs):
    """One line a figure: each build's median and range, NEW / OLD."""
    lines = [f"{'figure':<32} {'old median (range)':>30} {'new median (range)':>30} {'new/old':>8}"]
    for name, more_is_better in figures:
        old = [run[name] for run in runs["old"]]
        new = [run[name] for run in runs["new"]]
        old_median, new_median = statistics.median(old), statistics.median(new)
        ratio = new_median / old_median if old_median else float("nan")
        cells = [f"{show(statistics.median(v))} ({show(min(v))}-{show(max(v))})" for v in (old, new)]
        better = "higher is better" if more_is_better else "lower is better"
        lines.append(f"{name:<32} {cells[0]:>30} {cells[1]:>30} {ratio:>7.2f}x  {better}")
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(
        description="Measure two sim builds side by side, alternated in one run (see the module doc).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("old", help="the build before the change (a sim binary; copy it out of target/ first)")
    parser.add_argument("new", help="the build with the change")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of OLD then NEW (default 3)")
    parser.add_argument("--sweep-seeds", type=int, default=2000, help="the sweep's seeds, 0..N (default 2000)")
    parser.add_argument("--no-bench", action="store_true", help="the sweep only, no `sim bench`")
    parser.add_argument(
        "--bench-args", default="", help="extra arguments for `sim bench --json`, one shell-quoted string"
    )
    parser.add_argument("--json", action="store_true", help="print every run's figures as one JSON object")
    args = parser.parse_args()
    for binary in (args.old, args.new):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            parser.error(f"{binary} is not an executable file")
    if args.rounds < 1 or args.sweep_seeds < 1:
        parser.error("--rounds and --sweep-seeds must be at least 1")
    return args


def main():
    args = parse_args()
    runs = {"old": [], "new": []}
    bench_args = shlex.split(args.bench_args)
    try:
        for round_index in range(args.rounds):
            for side, binary in (("old", args.old), ("new", args.new)):
                figures = sweep(binary, args.sweep_seeds)
                if not args.no_bench:
                    figures.update(bench(binary, bench_args))
                runs[side].append(figures)
                print(f"round {round_index + 1}/{args.rounds} {side}: sweep {figures['sweep_wall_s']:.2f} s", file=sys.stderr)
    except RunFailed as failed:
        print(f"bench-compare: {failed}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"old": args.old, "new": args.new, "runs": runs}, indent=2))
        return 0
    print(f"old: {args.old}\nnew: {args.new}\n{args.rounds} rounds, sweep of seeds 0..{args.sweep_seeds} at one job")
    print(table(SWEEP_FIGURES + ([] if args.no_bench else BENCH_FIGURES), runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
