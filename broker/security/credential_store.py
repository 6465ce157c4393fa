"""Where users' SCRAM credentials are kept: Kafka's ``/config/users/<user>`` in a cluster, a
file of the data directory on one node. Either holds, per user and mechanism, Kafka's text form
of the credential (:meth:`ScramCredential.to_text
<sluice.broker.security.credentials.ScramCredential.to_text>`) — never a password.

- :class:`FileScramStore`: ``<data_dir>/scram-credentials.json``::

      {"version": 1, "users": {"alice": {"SCRAM-SHA-256": "salt=…,stored_key=…,…"}}}

  replaced atomically (temporary file, fsync, rename), so a crash leaves the old or the new
  credentials; a file that does not parse is refused with its path, not guessed at.
- :class:`ZooKeeperScramStore`: the user's entity config, ``/config/users/<user>``, with one key
  per mechanism (``{"version":1,"config":{"SCRAM-SHA-256":"salt=…"}}``, Kafka's layout), written
  with a change notification as every entity config is (so that brokers caching credentials
  hear of it). The user's other keys (quotas) are kept.

Both are blocking (file system, ZooKeeper): the handlers call them through ``run_blocking``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Protocol

from sluice.broker.cluster.metadata_store import EntityConfigStore
from sluice.broker.cluster.znodes import desanitize, sanitize
from sluice.broker.log.files import write_atomically
from sluice.broker.security.credentials import SCRAM_MECHANISMS, ScramCredential

__all__ = ["FILE_NAME", "FileScramStore", "ScramStore", "ZooKeeperScramStore"]

FILE_NAME: Final = "scram-credentials.json"

Credentials = dict[str, dict[str, ScramCredential]]
"""user → mechanism → credential."""


class ScramStore(Protocol):
    """The SCRAM credentials of the cluster (or of the one node)."""

    def users(self) -> Credentials:
        """Every user with a credential, and its credentials."""
        ...

    def alter(self, user: str, upsert: Mapping[str, ScramCredential], delete: set[str]) -> None:
        """Set ``upsert``'s mechanisms of ``user`` and remove those in ``delete``."""
        ...


class FileScramStore:
    """One node's credentials, in ``<data_dir>/scram-credentials.json``."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def users(self) -> Credentials:
        if not self.path.exists():
            return {}
        try:
            doc = json.loads(self.path.read_bytes())
            return {
                user: {m: ScramCredential.parse(text, m) for m, text in mechanisms.items()}
                for user, mechanisms in doc["users"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{self.path}: not a SCRAM credentials file ({error})") from None

    def alter(self, user: str, upsert: Mapping[str, ScramCredential], delete: set[str]) -> None:
        every = self.users()
        mine = {m: c for m, c in every.get(user, {}).items() if m not in delete}
        mine.update(upsert)
        if mine:
            every[user] = mine
        else:
            every.pop(user, None)
        doc = {
            "version": 1,
            "users": {
                u: {m: c.to_text() for m, c in sorted(creds.items())}
                for u, creds in sorted(every.items())
            },
        }
        write_atomically(self.path, json.dumps(doc, indent=1).encode())


class ZooKeeperScramStore:
    """The cluster's credentials, in ``/config/users/<user>`` (the name sanitized as Kafka's
    ``Sanitizer``, as for quotas: one znode per user)."""

    def __init__(self, store: EntityConfigStore) -> None:
        self.store = store

    def users(self) -> Credentials:
        found: Credentials = {}
        for znode in self.store.entities("users"):
            user = desanitize(znode)
            config = self.store.get("users", znode)
            creds = {
                m: ScramCredential.parse(text, m)
                for m, text in config.items()
                if m in SCRAM_MECHANISMS
            }
            if creds:
                found[user] = creds
        return found

    def alter(self, user: str, upsert: Mapping[str, ScramCredential], delete: set[str]) -> None:
        def change(config: dict[str, str]) -> dict[str, str]:
            kept = {k: v for k, v in config.items() if k not in delete}
            kept.update({m: c.to_text() for m, c in upsert.items()})
            return kept

        # read and written at the znode's version: a quota set meanwhile is kept
        self.store.update("users", sanitize(user), change)
