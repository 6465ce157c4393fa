"""State stores: key-value, window and session stores, changelogged and cached.

Each store is composed as in Kafka Streams: a write/read cache in front of a backend (a dict, or
RocksDB through rocksdict), logging every dirty key once per flush to a compacted changelog topic
from which the store is restored.
"""

from sluice.streams.state.base import StateStore, StoreContext, StoreSpec
from sluice.streams.state.keyvalue import KeyValueStore
from sluice.streams.state.session import SessionStore
from sluice.streams.state.window import WindowStore

__all__ = [
    "KeyValueStore",
    "SessionStore",
    "StateStore",
    "StoreContext",
    "StoreSpec",
    "WindowStore",
]
