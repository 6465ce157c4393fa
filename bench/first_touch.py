"""Page cache on this machine: ``pwrite`` into memory the guest never used, then into reused memory.

    python bench/first_touch.py [--gib 4] [--dir /tmp]

Writes ``--gib`` GiB in 1 MB ``pwrite``s into a new file, 500 MB at a time, and prints each
piece's MB/s; deletes the file and writes it again. On a virtual machine whose host backs guest
memory only when the guest first touches it (Firecracker here), pieces that land in pages
never used before run several times slower than the same pieces into pages freed by the first
pass. Memory that earlier work touched counts as used, so run it on a freshly booted machine,
or with more GiB than earlier work touched, to see the slow pieces. This is why the broker
benches touch memory first (``--warm-gib``; ``_harness.warm_memory``). Bounded: at most
``--gib`` GiB per pass, two passes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

_MB = 1_000_000
_PIECE = 500  # writes of 1 MB per printed figure


def one_pass(path: str, pieces: int) -> list[float]:
    """MB/s of each piece of ``_PIECE`` 1 MB writes into a new file at ``path`` (removed)."""
    data = b"x" * _MB
    rates = []
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        for piece in range(pieces):
            start = time.perf_counter()
            for i in range(_PIECE):
                os.pwrite(fd, data, (piece * _PIECE + i) * _MB)
            rates.append(_PIECE * _MB / (time.perf_counter() - start) / 1e6)
    finally:
        os.close(fd)
        os.unlink(path)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=4.0, help="GiB written per pass (4)")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the file goes")
    args = parser.parse_args()
    pieces = max(1, int(args.gib * (1 << 30) / (_PIECE * _MB)))
    path = os.path.join(args.dir, f"first-touch-{os.getpid()}")
    for name in ("first pass", "again"):
        rates = one_pass(path, pieces)
        print(f"{name:10}  " + "  ".join(f"{r:,.0f}" for r in rates) + "  MB/s per 500 MB")


if __name__ == "__main__":
    main()
