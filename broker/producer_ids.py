"""Producer ids for idempotent producers, unique across restarts.

Ids are handed out from blocks of :data:`BLOCK`; the end of the current block is written to
``<data_dir>/producer-id-block`` (atomically) *before* any id of the block is used, so a crash
can only skip ids, never repeat one.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> ids = ProducerIdManager(d)
>>> ids.next(), ids.next()
(0, 1)
>>> ProducerIdManager(d).next()  # a restart continues after the reserved block
1000
"""

from __future__ import annotations

from pathlib import Path

from sluice.broker.log.files import write_atomically

BLOCK = 1000


class ProducerIdManager:
    """Allocates producer ids; not thread-safe (the event loop only)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "producer-id-block"
        self._next = int(self._path.read_text()) if self._path.exists() else 0
        self._block_end = self._next

    def next(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + BLOCK
            write_atomically(self._path, str(self._block_end).encode())
        pid = self._next
        self._next += 1
        return pid
