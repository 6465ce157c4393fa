"""The machine's loopback TCP bandwidth: the ceiling any broker on 127.0.0.1 works under.

A sender process pushes 1 MiB ``sendall`` chunks to a receiver process that ``recv_into`` a
preallocated buffer, over one 127.0.0.1 connection. At one system call per MiB the Python overhead
is a few microseconds per MiB, so the kernel's copy is what is measured. Each side is its own
process, so the two can use both cores.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import socket
import time
from typing import Any

CHUNK = 1 << 20
_SPAWN = mp.get_context("spawn")


def send_for(port: int, seconds: float) -> None:
    """Push 1 MiB chunks to 127.0.0.1:``port`` for ``seconds`` (or until the receiver closes)."""
    payload = memoryview(bytearray(CHUNK))
    with socket.create_connection(("127.0.0.1", port)) as sock:
        deadline = time.monotonic() + seconds
        with contextlib.suppress(ConnectionError):  # the receiver may stop first
            while time.monotonic() < deadline:
                sock.sendall(payload)


def _receive(listener: socket.socket, seconds: float, out: Any) -> None:
    conn, _ = listener.accept()
    buf = memoryview(bytearray(4 * CHUNK))
    total = 0
    with conn:
        n = conn.recv_into(buf)  # the clock starts at the first byte, not at connect
        start = time.perf_counter()
        end = start + seconds + 10  # bounded even if the sender never closes
        while n and time.perf_counter() < end:
            total += n
            n = conn.recv_into(buf)
        out.send((total, time.perf_counter() - start))


def loopback_bytes_per_second(seconds: float = 2.0) -> float:
    """Bytes per second one TCP connection carries over 127.0.0.1, measured for ``seconds``."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        parent, child = _SPAWN.Pipe(duplex=False)
        sender = _SPAWN.Process(target=send_for, args=(port, seconds), daemon=True)
        sender.start()
        try:
            _receive(listener, seconds, child)
            total, elapsed = parent.recv()
        finally:
            sender.join(seconds + 10)
            if sender.is_alive():
                sender.kill()
                sender.join()
    return float(total / elapsed)


if __name__ == "__main__":
    print(f"{loopback_bytes_per_second() / 1e6:,.0f} MB/s")
