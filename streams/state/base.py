"""What every state store is to the task that owns it.

A store is created per task from a :class:`StoreSpec`, then :meth:`StateStore.init` hands it a
:class:`StoreContext`: its changelog partition (``None`` for stores that are not logged), the
function that sends changelog records, and its directory under ``state_dir`` (persistent stores).

Life of a store: ``init`` → ``restore`` (records of the changelog, oldest first, until its end)
→ processing, with ``flush`` at every commit (dirty entries go to the backend and, once per key,
to the changelog) → ``close``. After a crash the store is rebuilt from its changelog.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ChangelogSender", "StateStore", "StoreContext", "StoreSpec"]

ChangelogSender = Callable[[str, int, bytes, bytes | None, int], None]
"""``send(topic, partition, key, value_or_tombstone, timestamp)``."""


@dataclass(slots=True)
class StoreContext:
    """Where a store logs to and lives."""

    changelog_topic: str | None
    partition: int
    send: ChangelogSender
    directory: Path | None = None


class StateStore(ABC):
    """The part of a store the runtime drives; the data API is on the subclasses."""

    name: str
    logged: bool = True
    context: StoreContext | None = None

    def init(self, context: StoreContext) -> None:
        """Attach the store to its task (called once, before restore)."""
        self.context = context

    @abstractmethod
    def flush(self) -> None:
        """Write dirty entries through, and log each dirty key once to the changelog."""

    @abstractmethod
    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        """Apply one changelog record (``value is None``: a deletion)."""

    @abstractmethod
    def close(self) -> None:
        """Flush nothing, release files; the store is not used again."""

    def restore_batch(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        """Apply changelog records in order (stores with a faster bulk path override this)."""
        restore = self.restore
        for key, value, timestamp in records:
            restore(key, value, timestamp)

    persistent: bool = False
    """Whether the store outlives the process (its checkpointed offset is worth restoring from)."""

    def wipe(self) -> None:  # noqa: B027 - optional hook
        """Forget local state (before a restore from scratch); in-memory stores need nothing."""

    def flush_restored(self) -> None:  # noqa: B027 - optional hook
        """Make what :meth:`restore` applied durable, without logging it again."""

    def _log(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        context = self.context
        if self.logged and context is not None and context.changelog_topic is not None:
            context.send(context.changelog_topic, context.partition, key, value, timestamp)


@dataclass(slots=True)
class StoreSpec:
    """How to make a store for each task: its name, a factory and whether it is logged.

    ``changelog_config`` holds topic configs for the changelog (``cleanup.policy`` and so on).
    """

    name: str
    factory: Callable[[], StateStore]
    logged: bool = True
    changelog_config: dict[str, str] = field(default_factory=lambda: {"cleanup.policy": "compact"})

    def build(self) -> StateStore:
        """A fresh store."""
        store = self.factory()
        store.name = self.name
        store.logged = self.logged
        return store
