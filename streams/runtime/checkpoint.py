"""Checkpoint files: how far each store of a task has been written from its changelog.

``<state_dir>/<application id>/<task>/.checkpoint`` is JSON ``{"<topic>:<partition>": offset}``,
the changelog offset up to which the local (persistent) stores hold the data. It is written after
each commit under at-least-once and only on a clean close under exactly-once; it is deleted when
a task starts, so that a crash while the task runs leaves no checkpoint: the next start wipes the
stores and restores them from the changelog (Kafka Streams' rule).

>>> import tempfile, pathlib
>>> directory = pathlib.Path(tempfile.mkdtemp())
>>> write(directory, {("app-counts-changelog", 0): 42})
>>> read(directory)
{('app-counts-changelog', 0): 42}
>>> clear(directory); read(directory)
{}
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["clear", "read", "write"]

FILE = ".checkpoint"


def read(directory: Path) -> dict[tuple[str, int], int]:
    """The offsets in ``directory``'s checkpoint (empty if there is none, or it is unreadable)."""
    try:
        raw = json.loads((directory / FILE).read_text())
    except (OSError, ValueError):
        return {}
    offsets = {}
    for name, offset in raw.items():
        topic, _, partition = name.rpartition(":")
        offsets[(topic, int(partition))] = int(offset)
    return offsets


def write(directory: Path, offsets: dict[tuple[str, int], int]) -> None:
    """Replace the checkpoint atomically (write a temporary file, fsync, rename)."""
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / (FILE + ".tmp")
    data = json.dumps({f"{t}:{p}": o for (t, p), o in sorted(offsets.items())})
    with open(temporary, "w") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, directory / FILE)


def clear(directory: Path) -> None:
    """Remove the checkpoint (the task is running: local state may run ahead of it)."""
    (directory / FILE).unlink(missing_ok=True)
