"""What security costs: one broker with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners.

    python bench/security.py [--quick] [--runs N] [--connections 500] [--json PATH]

In one run, on one Sluice broker (certificates made here with ``trustme``; SCRAM-SHA-512 user
made through AdminClient on the PLAINTEXT listener):

* produce and consume throughput, 100 B and 1 KB records, through one confluent-kafka producer
  or consumer (``_clients``: the same batching as ``broker_throughput.py``, bounded by a record
  count and a deadline), over PLAINTEXT — **the reference** —, SSL and SASL_SSL
  (SCRAM-SHA-512). The listeners take turns run by run, so load from elsewhere on the machine
  falls on each alike; each figure is the median of the runs, each run a fresh child process.
  Beside each: the ratio to PLAINTEXT (target for TLS: ≥ 0.70 at 1 KB; the verdict compares
  each listener's fastest run, as a disturbance only slows a run) and the CPU of the broker
  and of the client process (a TLS producer's librdkafka thread shares the two cores).
  The first produce run of each listener and size fills the topic its consume runs read; every
  later produce run writes a topic of its own, deleted after it, so that no run appends to a
  partition of gigabytes whose 1 GiB segments roll and are fsynced meanwhile (in one growing
  topic, produce 1 KB fell from ~1 M to ~0.5 M records/s by the fourth run, the broker's kernel
  time tripled; on fresh topics it stays at ~1 M/s);
* authentications per second: full handshakes, each a new TCP connection, by a raw client
  (kio frames; 4 threads in a child process) doing SaslHandshake + SaslAuthenticate with
  SCRAM-SHA-512 (the client's salted password computed once, so the broker's work dominates),
  over SASL_PLAINTEXT and SASL_SSL, beside connect + ApiVersions over PLAINTEXT (the reference)
  and SSL (what the TLS handshake alone costs); with the broker's CPU per connection;
* memory per idle connection: the broker's RSS (psutil) before and after ``--connections``
  connections are opened and left idle — PLAINTEXT (the reference), TLS (handshake done) and
  SASL_SSL (authenticated) —, divided by their number.

The broker is stopped by PID when done, whatever happened.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _clients import CONSUMER_FETCHING, Run, Window, Workload, _produce_loop, bench_producer
from _harness import (
    SLUICE,
    add_warm_option,
    cpu_seconds,
    create_topic,
    delete_topic,
    free_port,
    in_child,
    median,
    wait_for_port,
    warmed,
)
from _security_wire import (
    AUTH_THREADS,
    HANDSHAKES,
    MECHANISM,
    PASSWORD,
    USER,
    Frames,
    Handshakes,
    Scram,
    api_versions,
    handshake_run,
    tls_context,
)
from rich.console import Console
from rich.table import Table

LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
"""Throughput is measured over these; PLAINTEXT is the reference."""
SIZES = (100, 1000)
TARGET_TLS_SHARE = 0.70


@dataclass(frozen=True)
class Plan:
    runs: int
    seconds: float
    records: dict[int, int]
    auth_seconds: float


FULL = Plan(3, 2.0, {100: 2_000_000, 1000: 600_000}, 3.0)
QUICK = Plan(1, 1.5, {100: 1_000_000, 1000: 300_000}, 2.0)


@dataclass(frozen=True)
class Secured:
    """The running broker: its pid, a port per listener and the CA its certificate chains to."""

    pid: int
    ports: dict[str, int]
    ca: str

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def client_config(self, listener: str) -> dict[str, Any]:
        """confluent-kafka's settings for ``listener``."""
        config: dict[str, Any] = {"security.protocol": listener}
        if listener in ("SSL", "SASL_SSL"):
            config["ssl.ca.location"] = self.ca
        if listener.startswith("SASL"):
            config |= {
                "sasl.mechanism": MECHANISM,
                "sasl.username": USER,
                "sasl.password": PASSWORD,
            }
        return config


@contextlib.contextmanager
def secured_broker(data_root: str | None) -> Iterator[Secured]:
    """A Sluice broker with the four listeners, a fresh directory, stopped by PID at the end."""
    import trustme

    with tempfile.TemporaryDirectory(prefix="bench-security-", dir=data_root) as tmp:
        root = Path(tmp)
        authority = trustme.CA()
        server_pem, ca_pem = root / "server.pem", root / "ca.pem"
        authority.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
            server_pem
        )
        authority.cert_pem.write_to_path(ca_pem)
        ports = {name: free_port() for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        props = {
            "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
            "ssl.keystore.location": str(server_pem),
            "sasl.enabled.mechanisms": MECHANISM,
            "log.dirs": str(root / "data"),
        }
        config = root / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        log_path = root / "broker.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [str(SLUICE), "broker", "start", "--config", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            try:
                for port in ports.values():
                    wait_for_port(port, proc)
            except (RuntimeError, TimeoutError):
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(
                    f"the broker did not start; its log ends with:\n{tail}"
                ) from None
            _add_user(f"127.0.0.1:{ports['PLAINTEXT']}")
            yield Secured(proc.pid, ports, str(ca_pem))
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()


def _add_user(bootstrap: str) -> None:
    """The SCRAM-SHA-512 user, made through the PLAINTEXT listener (the client closed here)."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
    )
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        UserScramCredentialUpsertion as Upsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    upsertion = Upsertion(USER, info, PASSWORD.encode())
    for future in admin.alter_user_scram_credentials([upsertion]).values():
        future.result(20)


# ---- throughput (each run in a child process) -------------------------------------------------


def produce_run(load: Workload, security: dict[str, Any]) -> Run:
    """``_clients.produce_run`` with the listener's security settings."""
    producer, failed = bench_producer(load, **security)
    producer.list_topics(load.topic, timeout=10)  # connecting is not part of the figure
    window = Window(load.broker_pid)
    sent = _produce_loop(producer, load)
    left = producer.flush(30)
    run = window.run(sent, load.value_bytes)
    if left or failed:
        raise RuntimeError(f"{left} records unacknowledged, {len(failed)} failed: {failed[:3]}")
    return run


def consume_run(load: Workload, security: dict[str, Any]) -> Run:
    """``_clients.consume_run`` with the listener's security settings."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": load.bootstrap, "group.id": "bench", **CONSUMER_FETCHING, **security}
    )
    try:
        consumer.assign([TopicPartition(load.topic, 0, 0)])
        got, timed, window = 0, 0, None
        deadline = time.monotonic() + load.seconds + 10
        while got < load.records and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10_000, timeout=0.5)
            if not batch:
                continue
            for msg in (batch[0], batch[-1]):
                error = msg.error()
                if error is not None and not error.retriable():
                    raise RuntimeError(f"consume error: {error}")
            got += len(batch)
            if window:
                timed += len(batch)
            else:
                window = Window(load.broker_pid)
                deadline = time.monotonic() + load.seconds
        if window is None:
            raise RuntimeError(f"no record arrived within {load.seconds + 10:.0f}s")
        return window.run(timed, load.value_bytes)
    finally:
        consumer.close()


@dataclass(frozen=True)
class Rate:
    """A median rate (records/s and MB/s) and the broker's CPU, or the error that stopped it."""

    rps: float = 0.0
    mbps: float = 0.0
    broker_cores: float = 0.0
    client_cores: float = 0.0
    best: float = 0.0  # the fastest run's records/s
    runs: list[float] | None = None
    error: str = ""


def _rate(runs: list[Run]) -> Rate:
    timed = [r for r in runs if r.seconds > 0]
    return Rate(
        median([r.records_per_second for r in runs]),
        median([r.mb_per_second for r in runs]),
        median([r.broker_cpu / r.seconds for r in timed]),
        median([r.client_cpu / r.seconds for r in timed]),
        max(r.records_per_second for r in runs),
        [round(r.records_per_second) for r in runs],
    )


def throughput(broker: Secured, plan: Plan, console: Console) -> dict[str, dict[str, Rate]]:
    """``{"produce 1 KB": {"PLAINTEXT": Rate, …}, …}``, the listeners in turns, run by run."""
    plain = broker.address("PLAINTEXT")
    for listener in LISTENERS:
        for size in SIZES:
            create_topic(plain, f"{listener.lower()}-{size}")
    figures: dict[str, dict[str, Rate]] = {}
    for kind, fn in (("produce", produce_run), ("consume", consume_run)):
        for size in SIZES:
            label = f"{kind} {'100 B' if size == 100 else '1 KB'}"
            console.log(label)
            runs: dict[str, list[Run]] = {listener: [] for listener in LISTENERS}
            errors: dict[str, str] = {}
            for number in range(plan.runs):
                # every other round in reverse: no listener always runs first after a deletion
                for listener in LISTENERS[:: -1 if number % 2 else 1]:
                    if listener in errors:
                        continue
                    topic = f"{listener.lower()}-{size}"
                    apart = kind == "produce" and number > 0  # the first fills the consume's
                    if apart:
                        topic = f"{topic}-run{number}"
                        create_topic(plain, topic)
                    load = Workload(
                        broker.address(listener),
                        topic,
                        size,
                        plan.records[size],
                        plan.seconds,
                        broker_pid=broker.pid,
                    )
                    try:
                        runs[listener].append(in_child(fn, load, broker.client_config(listener)))
                    except (RuntimeError, TimeoutError) as exc:
                        errors[listener] = str(exc).splitlines()[0]
                    finally:
                        if apart:
                            delete_topic(plain, topic)
            figures[label] = {
                listener: Rate(error=errors[listener]) if listener in errors else _rate(found)
                for listener, found in runs.items()
            }
    return figures


# ---- handshakes -------------------------------------------------------------------------------


def handshakes(broker: Secured, plan: Plan, console: Console) -> dict[str, Handshakes]:
    console.log("handshakes")
    found: dict[str, list[tuple[float, float]]] = {label: [] for label in HANDSHAKES}
    for _ in range(plan.runs):
        for label, (listener, tls, sasl) in HANDSHAKES.items():
            before = cpu_seconds(broker.pid)
            count, seconds = in_child(
                handshake_run,
                broker.ports[listener],
                broker.ca if tls else None,
                sasl,
                plan.auth_seconds,
            )
            used = cpu_seconds(broker.pid) - before
            found[label].append((count / seconds, 1000 * used / max(count, 1)))
    return {
        label: Handshakes(
            median([rate for rate, _ in runs]),
            median([ms for _, ms in runs]),
            [round(rate) for rate, _ in runs],
        )
        for label, runs in found.items()
    }


# ---- idle connections -------------------------------------------------------------------------


def _rss(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


def idle_memory(broker: Secured, count: int, console: Console) -> dict[str, float]:
    """Broker RSS bytes per idle connection, each kind opened ``count`` at a time (from this
    process: the connections must stay open while the broker's RSS is read)."""
    console.log(f"memory of {count} idle connections")
    kinds = {
        "PLAINTEXT (reference)": ("PLAINTEXT", False, False),
        "TLS, handshake done": ("SSL", True, False),
        "SASL_SSL, authenticated": ("SASL_SSL", True, True),
    }
    per_connection: dict[str, float] = {}
    for label, (listener, tls, sasl) in kinds.items():
        time.sleep(1.0)
        before = _rss(broker.pid)
        context = tls_context(broker.ca) if tls else None
        opened: list[Frames] = []
        try:
            scram = Scram(USER, PASSWORD)
            for _ in range(count):
                frames = Frames(broker.ports[listener], context)
                opened.append(frames)
                api_versions(frames)
                if sasl:
                    scram.authenticate(frames)
            time.sleep(1.0)
            after = _rss(broker.pid)
        finally:
            for frames in opened:
                frames.close()
        per_connection[label] = (after - before) / count
    return per_connection


# ---- report -----------------------------------------------------------------------------------


def report(
    rates: dict[str, dict[str, Rate]],
    shakes: dict[str, Handshakes],
    memory: dict[str, float],
    connections: int,
) -> None:
    console = Console()
    table = Table(title="Throughput by listener (median records/s · MB/s; ratio to PLAINTEXT)")
    table.add_column("figure")
    for listener in LISTENERS:
        table.add_column(listener + (" (reference)" if listener == "PLAINTEXT" else ""))
    for label, by_listener in rates.items():
        reference = by_listener["PLAINTEXT"].rps
        cells = []
        for listener in LISTENERS:
            rate = by_listener[listener]
            if rate.error:
                cells.append(f"[red]error[/]: {rate.error[:60]}")
                continue
            ratio = (
                f" · {rate.rps / reference:.2f}x" if listener != "PLAINTEXT" and reference else ""
            )
            cells.append(
                f"{rate.rps:,.0f}/s · {rate.mbps:,.1f} MB/s{ratio}\n"
                f"cores: broker {rate.broker_cores:.2f} · client {rate.client_cores:.2f}; "
                f"runs {rate.runs}"
            )
        table.add_row(label, *cells)
    console.print(table)
    # The verdicts compare each listener's fastest run: what slows a run here (memory the host
    # takes back, docs/benchmarks.md; other work on the two cores) never speeds one up.
    for kind in ("produce", "consume"):
        by_listener = rates[f"{kind} 1 KB"]
        reference, tls = by_listener["PLAINTEXT"].best, by_listener["SSL"].best
        if reference and tls:
            share = tls / reference
            verdict = "met" if share >= TARGET_TLS_SHARE else "missed"
            console.print(
                f"{kind} 1 KB over TLS, fastest runs: {tls:,.0f} against {reference:,.0f}/s, "
                f"{share:.2f}x plaintext (target ≥ {TARGET_TLS_SHARE:.2f}x): {verdict}"
            )
    shake_table = Table(title=f"New connections per second ({AUTH_THREADS} client threads)")
    for column in ("handshake", "per second (median)", "broker CPU ms each", "runs"):
        shake_table.add_column(column)
    for label, figure in shakes.items():
        shake_table.add_row(
            label, f"{figure.per_second:,.0f}", f"{figure.broker_ms:.2f}", str(figure.runs)
        )
    console.print(shake_table)
    memory_table = Table(title=f"Broker RSS per idle connection ({connections} open)")
    memory_table.add_column("connection")
    memory_table.add_column("KiB each")
    for label, size in memory.items():
        memory_table.add_row(label, f"{size / 1024:,.1f}")
    console.print(memory_table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="one run per figure, fewer records")
    parser.add_argument("--runs", type=int, help="runs per figure (3; 1 with --quick)")
    parser.add_argument("--connections", type=int, default=500, help="idle connections to open")
    parser.add_argument("--data-root", help="where the broker's temporary directory goes")
    parser.add_argument("--json", help="also write the figures to this file")
    add_warm_option(parser, 14.0)  # what its runs write stays: 7.4 GB, 12.3 GB at --runs 5
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.runs:
        plan = dataclasses.replace(plan, runs=args.runs)
    console = Console(stderr=True)
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    memory_note = warmed(args.warm_gib)
    with secured_broker(args.data_root) as broker:
        rates = throughput(broker, plan, console)
        shakes = handshakes(broker, plan, console)
        memory = idle_memory(broker, args.connections, console)
    load_after = os.getloadavg()
    report(rates, shakes, memory, args.connections)
    console.print(
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
        f"python {sys.version.split()[0]}{memory_note}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "load": [load_before[0], load_after[0]],
                    "throughput": {
                        label: {name: asdict(rate) for name, rate in by.items()}
                        for label, by in rates.items()
                    },
                    "handshakes": {label: asdict(figure) for label, figure in shakes.items()},
                    "idle_bytes_per_connection": memory,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
