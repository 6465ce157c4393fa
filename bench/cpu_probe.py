"""How fast this machine runs the Python interpreter, sampled over time on each CPU.

    python bench/cpu_probe.py [--seconds 20] [--every 0.2]

Each sample times a fixed loop of trivial bytecodes (``timeit`` of ``x = 1 + 1``, 100,000
iterations, best of 2) in a process pinned to one CPU, and a 1 MiB ``memcpy`` (``bytes`` copy of a
``bytearray``) beside it. On a dedicated machine both are steady; on this VM the interpreter's
figure swings between ~17 and ~80 ns per iteration from one second to the next while the
``memcpy`` does not move, so Python-bound figures (stream processing, client loops) measured a
minute apart can differ by 2x or more. The table gives, per CPU, the fastest sample, the median,
and the share of samples within 1.5x of the fastest ("full speed").
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
import timeit

from _harness import median
from rich.console import Console
from rich.table import Table

_SPAWN = mp.get_context("spawn")
LOOP = 100_000
MIB = 1 << 20


def _probe(cpu: int, seconds: float, every: float, out: mp.connection.Connection) -> None:
    os.sched_setaffinity(0, {cpu})
    source = bytearray(MIB)
    loop_ns: list[float] = []
    copy_gbps: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        loop_ns.append(min(timeit.repeat("x = 1 + 1", number=LOOP, repeat=2)) / LOOP * 1e9)
        start = time.perf_counter()
        for _ in range(20):
            bytes(source)
        copy_gbps.append(20 * MIB / (time.perf_counter() - start) / 1e9)
        time.sleep(every)
    out.send((loop_ns, copy_gbps))


def sample(seconds: float, every: float) -> dict[int, tuple[list[float], list[float]]]:
    """Per CPU: the loop's ns per iteration and the copy's GB/s, one of each per sample."""
    cpus = sorted(os.sched_getaffinity(0))
    pipes, procs = [], []
    for cpu in cpus:
        parent, child = _SPAWN.Pipe(duplex=False)
        proc = _SPAWN.Process(target=_probe, args=(cpu, seconds, every, child), daemon=True)
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    try:
        return {cpu: pipe.recv() for cpu, pipe in zip(cpus, pipes, strict=True)}
    finally:
        for proc in procs:
            proc.join(seconds + 30)
            if proc.is_alive():
                proc.kill()
                proc.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    args = parser.parse_args()
    console = Console()
    console.log(f"sampling every CPU for {args.seconds:.0f} s")
    results = sample(args.seconds, args.every)
    table = Table(title="Interpreter speed over time: ns per iteration of x = 1 + 1")
    columns = ("CPU", "samples", "fastest", "median", "slowest", "at full speed", "memcpy GB/s")
    for column in columns:
        table.add_column(column, justify="right")
    for cpu, (loop_ns, copy_gbps) in results.items():
        fastest = min(loop_ns)
        full = sum(v <= 1.5 * fastest for v in loop_ns) / len(loop_ns)
        copies = f"{min(copy_gbps):.1f}–{max(copy_gbps):.1f} (median {median(copy_gbps):.1f})"
        table.add_row(
            str(cpu),
            str(len(loop_ns)),
            f"{fastest:.0f}",
            f"{median(loop_ns):.0f}",
            f"{max(loop_ns):.0f}",
            f"{full:.0%}",
            copies,
        )
    console.print(table)
    console.print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
