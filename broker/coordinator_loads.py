"""Coordinator partitions loading in the background, as Kafka's ``CoordinatorLoader`` on its
scheduler thread does: the broker keeps serving while a ``__consumer_offsets`` or
``__transaction_state`` partition it now leads is replayed.

In a cluster a broker that becomes the leader of such a partition becomes the coordinator of
its keys only once the partition is replayed into a shard. Meanwhile their requests are answered
COORDINATOR_LOAD_IN_PROGRESS (retriable: clients retry the same broker), as Kafka answers them.
The replay runs as a task on the event loop, handing the loop back every
:data:`BATCHES_PER_SLICE` batches, so a large partition no longer holds every other request while
it loads. Reading stays on the loop (no thread): the partition's log is only ever touched there.

A load is cancelled when the leadership goes before it ends (the shard is then never
installed), and started over when it comes back in a new epoch. A log that cannot be read
(:class:`~sluice.errors.StorageError`) ends the load without a shard: the keys stay
NOT_COORDINATOR here, as before any load. On one node every partition is loaded before the
broker accepts connections, with the same per-batch steps, synchronously.

Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator

from sluice.broker.internal_topic import ReplayedBatch
from sluice.errors import StorageError

__all__ = ["BATCHES_PER_SLICE", "CoordinatorLoads"]

log = logging.getLogger(__name__)

BATCHES_PER_SLICE = 64
"""How many batches are replayed before the loop is handed back (a batch of
``__consumer_offsets`` is usually one commit, of at most a few records per partition)."""


class CoordinatorLoads:
    """The loads in progress of one internal topic's partitions (``topic``: for the logs)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._tasks: dict[int, asyncio.Task[None]] = {}

    def start(
        self,
        index: int,
        batches: Iterator[ReplayedBatch],
        replay: Callable[[ReplayedBatch], None],
        done: Callable[[], str],
    ) -> None:
        """Replay ``batches`` of partition ``index`` through ``replay`` in a task, then call
        ``done`` (which installs the shard and says what it holds, for the log). A load of the
        same partition still running is cancelled first. Call in the event loop."""
        self.cancel(index)
        self._tasks[index] = asyncio.get_running_loop().create_task(
            self._run(index, batches, replay, done), name=f"load-{self.topic}-{index}"
        )

    def loading(self, index: int) -> bool:
        """Whether partition ``index`` is being loaded."""
        return index in self._tasks

    def any(self) -> bool:
        """Whether any partition is being loaded (ListGroups and ListTransactions say so)."""
        return bool(self._tasks)

    def cancel(self, index: int) -> None:
        """Stop loading partition ``index`` (its shard is never installed); nothing if it is
        not loading."""
        task = self._tasks.pop(index, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        """Stop every load (the broker closes)."""
        for index in list(self._tasks):
            self.cancel(index)

    async def wait(self, index: int) -> None:
        """Until the load of partition ``index`` (if any) ended, however it ended."""
        task = self._tasks.get(index)
        if task is not None:
            await asyncio.wait([task])

    async def _run(
        self,
        index: int,
        batches: Iterator[ReplayedBatch],
        replay: Callable[[ReplayedBatch], None],
        done: Callable[[], str],
    ) -> None:
        started = time.monotonic()
        try:
            for count, batch in enumerate(batches, 1):
                replay(batch)
                if count % BATCHES_PER_SLICE == 0:
                    await asyncio.sleep(0)
        except StorageError as exc:  # its log could not be read: not its coordinator
            log.error("could not load %s-%d: %s", self.topic, index, exc)
            return
        finally:
            if self._tasks.get(index) is asyncio.current_task():
                del self._tasks[index]
        held = done()
        log.info(
            "coordinator of %s-%d: loaded %s in %.0f ms",
            self.topic,
            index,
            held,
            (time.monotonic() - started) * 1000,
        )
