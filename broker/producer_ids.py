"""Producer ids for idempotent and transactional producers, unique across restarts and, in a
cluster, across brokers.

Ids are handed out from blocks claimed from a :class:`BlockSource`:

- on one node, :class:`LocalBlocks`: the end of the current block of :data:`BLOCK` ids is
  written to ``<data_dir>/producer-id-block`` (atomically) *before* any id of the block is
  used, so a crash can only skip ids, never repeat one;
- in a cluster, the metadata store's ``/latest_producer_id_block`` (Kafka's
  ``ZkProducerIdManager``), claimed with a versioned write so two brokers never get the same
  block. Claiming blocks on ZooKeeper, so :meth:`ProducerIdManager.next_async` claims a block in
  the event loop's executor, never on the loop itself.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> ids = ProducerIdManager(LocalBlocks(d))
>>> ids.next(), ids.next()
(0, 1)
>>> ProducerIdManager(LocalBlocks(d)).next()  # a restart continues after the reserved block
1000
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Protocol

from sluice.broker.cluster.metadata_store import MetadataStore, MetadataStoreError
from sluice.broker.log.files import write_atomically
from sluice.errors import SluiceError

__all__ = [
    "BLOCK",
    "BlockSource",
    "ClusterBlocks",
    "LocalBlocks",
    "ProducerIdManager",
    "ProducerIdsUnavailableError",
]

BLOCK = 1000


class ProducerIdsUnavailableError(SluiceError):
    """No block of producer ids could be claimed (the cluster's store is unreachable):
    InitProducerId answers a retriable error."""


class BlockSource(Protocol):
    """Where blocks of producer ids come from."""

    blocking: bool
    """Whether claiming a block waits on another process (run it off the event loop)."""

    def claim(self) -> tuple[int, int]:
        """Claim the next block: its first id and the id after its last. Raises
        :class:`ProducerIdsUnavailableError` when no block can be claimed."""
        ...


class LocalBlocks:
    """One node's blocks, reserved in ``<data_dir>/producer-id-block``."""

    blocking = False

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "producer-id-block"
        self._end = int(self._path.read_text()) if self._path.exists() else 0

    def claim(self) -> tuple[int, int]:
        first, self._end = self._end, self._end + BLOCK
        write_atomically(self._path, str(self._end).encode())
        return first, self._end


class ClusterBlocks:
    """A cluster's blocks, claimed for ``broker_id`` from the metadata store."""

    blocking = True

    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self.store = store
        self.broker_id = broker_id

    def claim(self) -> tuple[int, int]:
        try:
            block = self.store.allocate_producer_id_block(self.broker_id)
        except MetadataStoreError as exc:
            raise ProducerIdsUnavailableError(f"cannot claim producer ids: {exc}") from None
        return block.first, block.last + 1


class ProducerIdManager:
    """Allocates producer ids from the blocks of a :class:`BlockSource`; not thread-safe (the
    event loop only)."""

    def __init__(self, source: BlockSource) -> None:
        self.source = source
        self._next = 0
        self._block_end = 0
        self._claiming: asyncio.Lock | None = None

    def next(self) -> int:
        """The next id, claiming a block if needed (on the caller's thread: for a source
        that does not block)."""
        if self._next >= self._block_end:
            self._next, self._block_end = self.source.claim()
        return self._take()

    async def next_async(self) -> int:
        """The next id; a blocking source's block is claimed in the loop's executor. Raises
        :class:`ProducerIdsUnavailableError`."""
        if not self.source.blocking:
            return self.next()
        if self._claiming is None:
            self._claiming = asyncio.Lock()
        async with self._claiming:
            if self._next >= self._block_end:
                loop = asyncio.get_running_loop()
                self._next, self._block_end = await loop.run_in_executor(None, self.source.claim)
        return self._take()

    def _take(self) -> int:
        pid = self._next
        self._next += 1
        return pid
