"""bench/databases.py's report: the table of figures with PASS/FAIL, and the profiles."""

from __future__ import annotations

import math
from pathlib import Path

from _db_cdc import BulkResult, LagResult
from _db_common import LAG_RATE_TARGET, LAG_TARGET_MS, SINK_TARGET
from _db_sink import SinkResult
from rich.console import Console
from rich.table import Table

from connect import summarize_profile


# -- the report ----------------------------------------------------------------------------------
def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:,.1f} ms"


def _per(cpu_s: float, count: int) -> str:
    return f"{cpu_s / count * 1e6:,.0f}" if count else "–"


def _verdict(ok: bool) -> str:
    return "[bold green]PASS[/]" if ok else "[bold red]FAIL[/]"


def _lag_rows(table: Table, lag: LagResult, verdicts: dict[str, str]) -> None:
    at = f"{lag.rate:,.0f}/s"
    ok = not lag.error and lag.lag.p99 <= LAG_TARGET_MS
    if lag.rate >= LAG_RATE_TARGET:
        ok = ok and lag.write_rate >= 0.98 * LAG_RATE_TARGET
        verdict = _verdict(ok)
        verdicts[f"cdc_lag_{lag.rate:.0f}"] = "PASS" if ok else "FAIL"
    else:  # below the target's rate: shown, not judged
        verdict = "(below target rate)"
    exact = not lag.missing and not lag.duplicates and lag.written > 0
    verdicts[f"cdc_exact_{lag.rate:.0f}"] = "PASS" if exact else "FAIL"
    blank = ("", "", "", "")
    table.add_row(
        f"CDC lag p50 at {at} (written {lag.write_rate:,.0f}/s); ref: raw slot reader",
        _ms(lag.lag.p50),
        _ms(lag.ref_lag.p50),
        *blank[:3],
        f"{lag.cpu_worker:.1f} · {lag.cpu_broker:.1f} · {lag.cpu_pg:.1f}",
    )
    table.add_row(
        f"CDC lag p99 at {at}",
        _ms(lag.lag.p99),
        _ms(lag.ref_lag.p99),
        "",
        f"≤ {LAG_TARGET_MS:.0f} ms at {LAG_RATE_TARGET:,.0f}/s",
        verdict,
        "",
    )
    table.add_row(
        "  p99.9 / max",
        f"{_ms(lag.lag.p999)} / {_ms(lag.lag.max)}",
        f"{_ms(lag.ref_lag.p999)} / {_ms(lag.ref_lag.max)}",
        *blank,
    )
    table.add_row(
        "  commit → produce() p50 / p99; produce() → consumer p50 / p99",
        f"{_ms(lag.to_produce.p50)} / {_ms(lag.to_produce.p99)}",
        f"{_ms(lag.broker_hop.p50)} / {_ms(lag.broker_hop.p99)}",
        *blank,
    )
    table.add_row(
        "  delivered changes/s over the steady window (ref: written)",
        f"{lag.delivered_rate:,.0f}",
        f"{lag.write_rate:,.0f}",
        f"{lag.delivered_rate / lag.write_rate:.0%}" if lag.write_rate else "",
        "",
        "",
        "",
    )
    table.add_row(
        "  every change exactly once: distinct ids / written (ref: read)",
        f"{lag.distinct:,} / {lag.written:,}",
        f"{lag.ref_inserts:,}",
        "",
        "all, once",
        _verdict(exact),
        "",
    )


def report(
    console: Console,
    title: str,
    lags: list[LagResult],
    bulk: BulkResult | None,
    sink: SinkResult | None,
) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    table = Table(title=title)
    for column in (
        "figure",
        "Sluice",
        "reference",
        "ratio",
        "target",
        "verdict",
        "CPU-s w · b · pg",
    ):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for lag in lags:
        _lag_rows(table, lag, verdicts)
    if bulk is not None:
        ratio = bulk.rate / bulk.ref_rate if bulk.ref_rate else 0.0
        verdicts["cdc_bulk"] = "ERROR" if bulk.error else "—"
        table.add_row(
            f"CDC max changes/s ({bulk.rows:,}-row backlog; ref: raw psycopg2 slot reader)",
            f"{bulk.rate:,.0f}",
            f"{bulk.ref_rate:,.0f}",
            f"{ratio:.0%}",
            "(none)",
            "" if not bulk.error else "[red]ERROR[/]",
            f"{bulk.cpu_worker:.1f} · {bulk.cpu_broker:.1f} · {bulk.cpu_pg:.1f}",
        )
        table.add_row(
            "  from the worker's start / to the first change",
            f"{bulk.rate_total:,.0f}",
            f"{bulk.to_first:.2f} s",
            "",
            "",
            "",
            f"ref {bulk.ref_cpu:.1f}",
        )
    if sink is not None:
        ratio = sink.rate / sink.ref_rate if sink.ref_rate else 0.0
        ok = not sink.error and ratio >= SINK_TARGET
        verdicts["sink"] = "PASS" if ok else "FAIL"
        refs = " / ".join(f"{r.rows_per_second:,.0f}" for r in sink.refs)
        table.add_row(
            f"jdbc-sink upsert rows/s ({sink.rows:,} rows; ref: SQLAlchemy executemany)",
            f"{sink.rate:,.0f}",
            f"{sink.ref_rate:,.0f}",
            f"{ratio:.0%}",
            f"≥ {SINK_TARGET:.0%}",
            _verdict(ok),
            f"{sink.cpu_worker:.1f} · {sink.cpu_broker:.1f} · {sink.cpu_pg:.1f}",
        )
        if sink.batched is not None:
            table.add_row(
                "  beside: the same upsert as one multi-row statement per batch",
                "",
                f"{sink.batched.rows_per_second:,.0f}",
                f"{sink.rate / sink.batched.rows_per_second:.0%}"
                if sink.batched.rows_per_second
                else "",
                "",
                "",
                f"ref {sink.batched.cpu:.1f}",
            )
        table.add_row(
            "  from the worker's start / to the first row; reference runs",
            f"{sink.rate_total:,.0f}",
            f"{sink.to_first:.2f} s",
            "",
            "",
            "",
            f"ref {refs}",
        )
    console.print(table)
    phases: list[tuple[str, LagResult | BulkResult | SinkResult | None]] = [
        *((f"cdc-lag {lag.rate:.0f}/s", lag) for lag in lags),
        ("cdc-bulk", bulk),
        ("sink", sink),
    ]
    for name, phase in phases:
        if phase is not None and phase.error:
            console.print(f"[red]{name}: {phase.error.strip()}[/red]")
    for lag in lags:
        console.print(
            f"cdc-lag {lag.rate:,.0f}/s: worker CPU {_per(lag.cpu_worker, lag.distinct)} µs per "
            f"change, {lag.value_bytes:,} B per value; writer {lag.written:,} rows, statement "
            f"p50/p99 {_ms(lag.statement_ms.p50)}/{_ms(lag.statement_ms.p99)}, "
            f"{lag.late_txns} late transactions; lag max with warm-up {_ms(lag.lag_all_max)}; "
            f"{lag.other_records} records without id"
        )
    if bulk is not None:
        console.print(
            f"cdc-bulk: {bulk.rows:,} rows inserted in {bulk.insert_seconds:.2f} s; raw reader "
            f"{bulk.ref_seconds:.2f} s ({bulk.ref_cpu:.1f} CPU-s); connector {bulk.seconds:.2f} s, "
            f"worker CPU {_per(bulk.cpu_worker, bulk.changes)} µs per change"
        )
    if sink is not None:
        batched = [sink.batched] if sink.batched else []
        console.print(
            f"sink: input produced in {sink.produce_seconds:.2f} s; {sink.check}; connector "
            f"{sink.seconds:.2f} s from the first row; CPU µs per row: worker "
            f"{_per(sink.cpu_worker, sink.written)}, PostgreSQL {_per(sink.cpu_pg, sink.written)}; "
            "references (client) "
            + ", ".join(f"{r.method} {_per(r.cpu, r.rows)}" for r in [*sink.refs, *batched])
        )
    return verdicts


def _print_profiles(console: Console, directory: Path, workers: list[str]) -> None:
    for name in workers:
        share, rows = summarize_profile(directory / f"{name}.txt", top=24)
        console.print(
            f"\n[bold]{name}[/bold]: the task thread has {share:.0%} of the samples; "
            "of those, per function: inclusive, self"
        )
        for frame, inclusive, own in rows:
            console.print(f"  {inclusive:6.1%} {own:6.1%}  {frame}")
