"""The state directory of one application instance: its lock and its process id.

``<state_dir>/<application id>/`` holds the instance's stores and checkpoints, and, as Kafka
Streams' ``StateDirectory`` keeps them:

- ``.lock``: locked (``flock``, exclusive, never waited for) while the instance runs, with the
  locking process's pid in it. Two running instances of one application cannot share a state
  directory — their stores and checkpoints would mix, and so would their identity below — so the
  second one stops at start with an error saying to give each its own ``state_dir``. The kernel
  drops the lock when the process dies, however it dies: a killed instance leaves no stale lock.
- ``kafka-streams-process-metadata``: ``{"processId": "<uuid>"}``, written once (to a temporary
  file, then renamed: a crash leaves the old file or the new one). The process id names the
  instance's clients and, under exactly-once, its ``transactional.id``
  (``<application id>-<process id>-1``: thread 1), so a restarted instance comes back under the
  same transactional id and fences its previous incarnation (InitProducerId bumps the epoch)
  instead of leaving an orphan id behind each time. An unreadable file is replaced by a new id.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import uuid
from pathlib import Path
from typing import IO

from sluice.streams.errors import StreamsError

__all__ = ["LOCK_FILE", "PROCESS_FILE", "StateDirectory"]

log = logging.getLogger("sluice.streams")

LOCK_FILE = ".lock"
PROCESS_FILE = "kafka-streams-process-metadata"


class StateDirectory:
    """``<state_dir>/<application id>``, locked by :meth:`lock` until :meth:`unlock`."""

    def __init__(self, state_dir: Path, application_id: str) -> None:
        self.path = Path(state_dir) / application_id
        self.application_id = application_id
        self._lock: IO[str] | None = None

    def lock(self) -> None:
        """Take the directory for this instance; raise if another running instance has it."""
        if self._lock is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        handle = (self.path / LOCK_FILE).open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise StreamsError(
                f"the state directory {self.path} is locked by another running instance of "
                f"{self.application_id!r} (pid {holder}): two instances cannot share one; "
                f"give each its own state_dir (state.dir)"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock = handle

    def unlock(self) -> None:
        """Let the directory go (the process exiting does it too)."""
        handle, self._lock = self._lock, None
        if handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def process_id(self) -> str:
        """This instance's process id: the one on disk, or a new one written there."""
        path = self.path / PROCESS_FILE
        try:
            found = json.loads(path.read_text(encoding="utf-8")).get("processId")
            return str(uuid.UUID(str(found)))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError, TypeError) as error:
            log.warning("%s cannot be read (%s): a new process id replaces it", path, error)
        process_id = str(uuid.uuid4())
        self.path.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(PROCESS_FILE + ".tmp")
        temporary.write_text(json.dumps({"processId": process_id}), encoding="utf-8")
        temporary.replace(path)
        log.info("new process id %s written to %s", process_id, path)
        return process_id
