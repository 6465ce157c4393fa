"""The streams benchmark's tables (pipelines, restore, targets) and its JSON file."""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict
from pathlib import Path

from _streams_restore import Restore
from _streams_runs import Result
from rich.console import Console
from rich.table import Table

PIPELINES = ("filter", "count", "window")
TARGET_VS_QUIX = 5.0
TARGET_VS_FAUST = 20.0
TARGET_STATELESS = 200_000
TARGET_RESTORE_S = 10.0


def _rate(r: Result | None) -> str:
    if r is None:
        return "—"
    if r.error and not r.timed_inputs:
        return f"[red]error[/]: {r.error.splitlines()[0][:60]}"
    text = f"{r.events_per_second:,.0f}/s"
    return text + (" [red](incomplete)[/]" if r.error else "")


def _ratio(ours: Result | None, ref: Result | None) -> str:
    if ours is None or ref is None or not ours.events_per_second or not ref.events_per_second:
        return ""
    rate = ours.events_per_second / ref.events_per_second
    per_cpu = ref.cpu_per_million / ours.cpu_per_million if ours.cpu_per_million else 0.0
    return f"{rate:,.2f}x ({per_cpu:,.2f}x per CPU-s)"


def _targets(
    results: dict[tuple[str, str], Result], restores: list[Restore]
) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    for pipeline in PIPELINES:
        ours = results.get(("sluice", pipeline))
        for ref_name, target in (("quixstreams", TARGET_VS_QUIX), ("faust", TARGET_VS_FAUST)):
            ref = results.get((ref_name, pipeline))
            ok = None
            measured = "n/a"
            if ours and ref and ours.events_per_second and ref.events_per_second:
                ratio = ours.events_per_second / ref.events_per_second
                measured, ok = f"{ratio:,.2f}x", ratio >= target
            out.append((f"{pipeline}: ≥ {target:g}x {ref_name}", measured, ok))
    stateless = results.get(("sluice", "filter"))
    rate = stateless.events_per_second if stateless else 0.0
    loops = [
        f"{name}: {loop.events_per_second:,.0f}/s"
        for name in ("bare-loop", "native-loop")
        if (loop := results.get((name, "filter"))) and loop.timed_inputs
    ]
    ceiling = f" ({', '.join(loops)})" if loops else ""
    out.append(
        (
            f"filter (stateless): ≥ {TARGET_STATELESS:,} events/s in one process",
            f"{rate:,.0f}/s{ceiling}" if rate else "n/a",
            rate >= TARGET_STATELESS if rate else None,
        )
    )
    for r in restores:
        out.append(
            (
                f"restore of {r.keys:,} keys ≤ {TARGET_RESTORE_S:g} s ({r.stores})",
                f"{r.seconds:.2f} s" if not r.error else "n/a",
                r.seconds <= TARGET_RESTORE_S if not r.error else None,
            )
        )
    return out


def print_report(
    console: Console,
    *,
    started: datetime.datetime,
    machine: str,
    records: int,
    faust_records: int,
    frameworks: list[str],
    pipelines: list[str],
    results: dict[tuple[str, str], Result],
    restores: list[Restore],
    restore_keys: int,
    restore_floor: float,
) -> None:
    """The pipelines table, the restore table (if any restore ran) and the targets."""
    table = Table(
        title=f"Streams pipelines on Sluice's broker, {started:%Y-%m-%d %H:%M} UTC, "
        f"{records:,} input records (faust: the first {faust_records:,})",
        caption=machine,
    )
    columns = (
        "pipeline",
        "framework",
        "records",
        "events/s",
        "CPU-s",
        "CPU-s per 1M",
        "broker cores",
        "to first output",
        "sluice / this",
    )
    for column in columns:
        table.add_column(column, justify="left" if column in columns[:2] else "right")
    for pipeline in pipelines:
        ours = results.get(("sluice", pipeline))
        for framework in frameworks:
            r = results.get((framework, pipeline))
            if r is None:
                continue
            table.add_row(
                pipeline,
                framework,
                f"{r.inputs:,}",
                _rate(r),
                f"{r.cpu:,.1f}" if r.timed_inputs else "",
                f"{r.cpu_per_million:,.1f}" if r.timed_inputs else "",
                f"{r.broker_cpu / r.seconds:.2f}" if r.seconds else "",
                f"{r.to_first_output:.1f} s" if r.timed_inputs else "",
                "" if framework == "sluice" else _ratio(ours, r),
            )
        table.add_section()
    console.print(table)
    if restores:
        restore_table = Table(
            title=f"Restore of a {restore_keys:,}-key count store from its changelog "
            "(one partition, empty state directory)"
        )
        for column in ("stores", "start → restored", "restore phase", "process", "CPU-s"):
            restore_table.add_column(column, justify="left" if column == "stores" else "right")
        for r in restores:
            if r.error:
                restore_table.add_row(r.stores, f"[red]error[/]: {r.error[:80]}")
                continue
            restore_table.add_row(
                r.stores,
                f"{r.seconds:.2f} s",
                f"{r.phase_seconds:.2f} s",
                f"{r.process_seconds:.2f} s",
                f"{r.cpu:.1f}",
            )
        restore_table.add_row(
            "reference: the changelog read by a bare confluent-kafka consumer",
            f"{restore_floor:.2f} s",
        )
        console.print(restore_table)

    targets = Table(title="Targets (Sluice)")
    for column in ("target", "measured", "result"):
        targets.add_column(column)
    for text, value, ok in _targets(results, restores):
        verdict = "n/a" if ok is None else ("[green]PASS[/]" if ok else "[red]FAIL[/]")
        targets.add_row(text, value, verdict)
    console.print(targets)
    console.print(
        "events/s: input records processed per second, timed from the first output record seen "
        "to the last expected one. CPU-s: user + system seconds of the framework's process (all "
        "threads) over that window. broker cores: the broker's CPU seconds per second of it. "
        "sluice / this: the events/s ratio and, in brackets, the ratio of CPU-s per event."
    )


def write_json(
    path: Path,
    *,
    started: datetime.datetime,
    machine: str,
    records: int,
    faust_records: int,
    results: dict[tuple[str, str], Result],
    restores: list[Restore],
    restore_floor: float,
) -> None:
    path.write_text(
        json.dumps(
            {
                "started": started.isoformat(),
                "machine": machine,
                "records": records,
                "faust_records": faust_records,
                "results": [
                    {**asdict(r), "events_per_second": r.events_per_second}
                    for r in results.values()
                ],
                "restores": [asdict(r) for r in restores],
                "restore_consume_alone_seconds": restore_floor,
            },
            indent=2,
        )
    )
