"""How fast this machine moves bytes from a socket into a file: the ceiling of a broker's ingest.

    python bench/ingest_ceiling.py [--seconds 2] [--rounds 3] [--dir DIR]

A Kafka broker's log is a file (DESIGN.md §3): every byte a producer sends crosses loopback and
then lands in the page cache. This measures that path with no broker at all, one connection,
1 MiB chunks (a few system calls per MiB, so the kernel's copies are what is timed), each
receiver in its own process while the sender runs in another:

* ``loopback``: ``recv_into`` a buffer and drop it (as ``_loopback``): the issue's reference;
* ``recv + pwrite``: then ``os.pwrite`` it to the end of a file: the path of Kafka's broker
  and of Sluice's (two copies: socket to buffer, buffer to page cache);
* ``recv + CRC + pwrite``: plus CRC-32C of each MiB, as a broker validating batches must;
* ``splice``: socket to pipe to file with ``os.splice``, never in user space (one copy): the
  kernel's floor, which no broker can use as is, because it cannot see the bytes to check them;
* ``splice + CRC``: the same, then each MiB read back with ``os.preadv`` into a buffer and
  CRC-checked: the cheapest way to both land the bytes and validate them.

Rounds take turns (every mode once per round) so that the machine's load falls on all alike;
the table shows medians and each mode's share of ``loopback``. Each run is bounded by
``--seconds`` and by 4 GiB; its file is deleted after it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import multiprocessing as mp
import os
import socket
import tempfile
import time
from collections.abc import Callable

from _harness import median
from _loopback import CHUNK, send_for
from crc32c import crc32c
from rich.console import Console
from rich.table import Table

F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ from Python 3.10 on Linux; spelled out for mypy
MAX_BYTES = 4 << 30
_SPAWN = mp.get_context("spawn")

Receive = Callable[[socket.socket, int, float], int]


def _drop(conn: socket.socket, fd: int, until: float) -> int:
    buf = memoryview(bytearray(CHUNK))
    total = 0
    while total < MAX_BYTES and time.perf_counter() < until:
        n = conn.recv_into(buf)
        if not n:
            break
        total += n
    return total


def _write(check: bool) -> Receive:
    def receive(conn: socket.socket, fd: int, until: float) -> int:
        buf = memoryview(bytearray(CHUNK))
        total = 0
        while total < MAX_BYTES and time.perf_counter() < until:
            n = 0
            while n < CHUNK:
                got = conn.recv_into(buf[n:])
                if not got:
                    return total
                n += got
            if check:
                crc32c(buf)
            os.pwrite(fd, buf, total)
            total += n
        return total

    return receive


def _splice(check: bool) -> Receive:
    def receive(conn: socket.socket, fd: int, until: float) -> int:
        r, w = os.pipe()
        fcntl.fcntl(w, F_SETPIPE_SZ, CHUNK)
        buf = memoryview(bytearray(CHUNK))
        total = 0
        try:
            while total < MAX_BYTES and time.perf_counter() < until:
                n = os.splice(conn.fileno(), w, CHUNK)
                if not n:
                    break
                moved = 0
                while moved < n:
                    moved += os.splice(r, fd, n - moved, offset_dst=total + moved)
                if check:
                    os.preadv(fd, [buf[:n]], total)
                    crc32c(buf[:n])
                total += n
        finally:
            os.close(r)
            os.close(w)
        return total

    return receive


MODES: dict[str, Receive] = {
    "loopback": _drop,
    "recv + pwrite": _write(check=False),
    "recv + CRC + pwrite": _write(check=True),
    "splice": _splice(check=False),
    "splice + CRC": _splice(check=True),
}


def run(mode: str, seconds: float, directory: str) -> float:
    """Bytes per second that ``mode`` took in over one loopback connection for ``seconds``."""
    with socket.socket() as listener, tempfile.TemporaryDirectory(dir=directory) as tmp:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        sender = _SPAWN.Process(
            target=send_for, args=(listener.getsockname()[1], seconds + 1), daemon=True
        )
        sender.start()
        fd = os.open(os.path.join(tmp, "segment"), os.O_CREAT | os.O_RDWR, 0o644)
        try:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1, socket.MSG_PEEK)  # the clock starts at the first byte
                start = time.perf_counter()
                total = MODES[mode](conn, fd, start + seconds)
                elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
            sender.join(seconds + 10)
            if sender.is_alive():
                sender.kill()
                sender.join()
    return total / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go")
    args = parser.parse_args()
    console = Console()
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    for round_ in range(args.rounds):
        for mode in MODES:
            console.log(f"round {round_ + 1}: {mode}")
            rates[mode].append(run(mode, args.seconds, args.dir))
    reference = median(rates["loopback"])
    table = Table(title=f"Socket to file, one connection, 1 MiB chunks, files in {args.dir}")
    for column in ("path", "MB/s (median)", "runs", "share of loopback"):
        table.add_column(column, justify="left" if column == "path" else "right")
    for mode, values in rates.items():
        middle = median(values)
        runs = " ".join(f"{v / 1e6:,.0f}" for v in values)
        table.add_row(mode, f"{middle / 1e6:,.0f}", runs, f"{middle / reference:.0%}")
    console.print(table)
    with contextlib.suppress(OSError):
        console.print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
