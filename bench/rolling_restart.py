"""Producer latency through a rolling restart of a three-broker cluster run by ``sluice up``.

A ``sluice up`` of three brokers and an embedded ZooKeeper (free loopback ports, a temporary
folder) holds a topic of 3 partitions, replication factor 3, ``min.insync.replicas=2``. One
idempotent ``acks=all`` confluent-kafka producer sends 100-byte records at a steady rate; each
record's latency is the time from ``produce()`` to its delivery report. First ``--steady``
seconds of steady state (the reference, measured in the same run), then ``sluice up
--rolling-restart`` restarts the brokers one at a time while the producer goes on; its latency
is measured until the restart is done. Issue 21's targets: no producer error, p99 during the
restart under 5x the steady p99.

    python bench/rolling_restart.py [--rate 2000] [--steady 20]

Every loop is bounded in count and time; everything started is stopped by PID.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

SLUICE = str(Path(sys.executable).with_name("sluice"))
RESTART_TIMEOUT_S = 600.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


@dataclass
class Phase:
    """Latencies (ms) of the records sent during one phase, and the errors reported."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sent: int = 0


class PacedProducer:
    """Sends at ``rate`` records/s into the current :attr:`phase` until stopped."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "linger.ms": 1,
                "log_level": 0,
            }
        )
        self.rate = rate
        self.phase = Phase()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer")

    def start(self) -> None:
        self.producer.list_topics("bench", timeout=30)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        self.producer.flush(60)

    def _run(self) -> None:
        payload = b"x" * 100
        start = time.monotonic()
        sent = 0
        limit = self.rate * int(RESTART_TIMEOUT_S + 120)  # bounded in count
        while not self._stop.is_set() and sent < limit:
            due = int((time.monotonic() - start) * self.rate) + 1
            while sent < due:
                phase, stamp = self.phase, time.monotonic()

                def report(
                    err: object, _msg: object, phase: Phase = phase, t: float = stamp
                ) -> None:
                    if err is not None:
                        phase.errors.append(str(err))
                    else:
                        phase.latencies.append((time.monotonic() - t) * 1000)

                try:
                    self.producer.produce("bench", payload, on_delivery=report)
                except BufferError:
                    self.producer.poll(0.001)
                    continue
                phase.sent += 1
                sent += 1
            self.producer.poll(0)
            time.sleep(0.0005)


def write_file(folder: Path) -> None:
    ports = [free_port() for _ in range(3)]
    brokers = "\n".join(f"    - {{id: {i}, listen: 127.0.0.1:{p}}}" for i, p in enumerate(ports, 1))
    (folder / "sluice.yaml").write_text(
        "broker:\n"
        "  zookeeper: embedded\n"
        f"  zookeeper_listen: 127.0.0.1:{free_port()}\n"
        "  brokers:\n"
        f"{brokers}\n"
        "  config:\n"
        "    min.insync.replicas: 2\n"
        "    offsets.topic.num.partitions: 3\n"
        "topics:\n"
        "  - {name: bench, partitions: 3, replication_factor: 3}\n"
    )


def wait_running(folder: Path, log: Path, up: subprocess.Popen[bytes]) -> str:
    """The cluster's bootstrap once ``sluice up`` says everything runs."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if up.poll() is not None:
            raise RuntimeError(f"sluice up exited:\n{log.read_text()}")
        if "everything is running" in log.read_text():
            state = (folder / ".sluice" / "up.json").read_text()
            return str(json.loads(state)["bootstrap"])
        time.sleep(0.3)
    raise TimeoutError(f"sluice up did not start in 180 s:\n{log.read_text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=2000, help="records/s (default 2000)")
    parser.add_argument("--steady", type=float, default=20.0, help="steady seconds (default 20)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sluice-rolling-"))
    write_file(folder)
    log = folder / "up.out"
    with log.open("ab") as out:
        up = subprocess.Popen([SLUICE, "up"], cwd=folder, stdout=out, stderr=out)
    producer: PacedProducer | None = None
    try:
        bootstrap = wait_running(folder, log, up)
        producer = PacedProducer(bootstrap, args.rate)
        producer.start()
        time.sleep(3)  # warm-up, not counted
        steady = producer.phase = Phase()
        time.sleep(args.steady)
        during = producer.phase = Phase()
        started = time.monotonic()
        restart = subprocess.run(
            [SLUICE, "up", "--rolling-restart"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=RESTART_TIMEOUT_S,
            check=False,
        )
        took = time.monotonic() - started
        producer.phase = Phase()  # after: not counted
        if restart.returncode != 0:
            raise RuntimeError(f"the rolling restart failed: {restart.stderr}\n{log.read_text()}")
        producer.stop()
        producer = None
    finally:
        if producer is not None:
            producer.stop()
        if up.poll() is None:
            os.kill(up.pid, signal.SIGTERM)
            up.wait(300)
    load = os.getloadavg()[0]
    print(
        f"Rolling restart of 3 brokers under an idempotent acks=all producer at {args.rate:,} "
        f"rec/s of 100 B ({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
        f"{load:.2f} after the run)"
    )
    print(f"{'phase':<22}{'records':>10}{'errors':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, phase in (("steady (reference)", steady), ("rolling restart", during)):
        lat = phase.latencies
        print(
            f"{name:<22}{len(lat):>10,}{len(phase.errors):>8}{percentile(lat, 50):>10.2f}"
            f"{percentile(lat, 99):>10.2f}{max(lat, default=float('nan')):>10.2f}"
        )
    ratio = percentile(during.latencies, 99) / percentile(steady.latencies, 99)
    print(f"the restart took {took:.1f} s; p99 during / steady = {ratio:.2f}x (target < 5x)")
    print(f"producer errors during the restart: {len(during.errors)} (target 0)")
    for error in sorted(set(during.errors))[:5]:
        print(f"  {error}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
