"""Broker keys of Kafka's that are accepted, validated and described, but have no effect here.

Thread pools, the cleaner's buffers, connection quotas, socket buffers and the switch of
transaction verification; each key's ``no_effect`` says why it changes nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.broker.config_keys.key import INT_MAX, ConfigKey, ConfigType
from sluice.broker.config_keys.validators import at_least

__all__ = ["NO_EFFECT_BROKER_KEYS"]

_THREADS = "a broker runs on one asyncio loop (one core)"
_CLEANER = "the cleaner runs on the broker's loop, one log at a time, with no buffers to size"
_QUOTAS = "connection quotas are not enforced"

_ROWS: tuple[tuple[str, ConfigType, Any, str, Callable[[Any], str | None] | None, str], ...] = (
    ("num.io.threads", ConfigType.INT, 8, "Request handler threads.", at_least(1), _THREADS),
    ("num.network.threads", ConfigType.INT, 3, "Network threads.", at_least(1), _THREADS),
    ("background.threads", ConfigType.INT, 10, "Background threads.", at_least(1), _THREADS),
    (
        "num.recovery.threads.per.data.dir",
        ConfigType.INT,
        2,
        "Threads recovering logs at start.",
        at_least(1),
        _THREADS,
    ),
    ("log.cleaner.threads", ConfigType.INT, 1, "Cleaner threads.", at_least(0), _CLEANER),
    (
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        134_217_728,
        "Memory of the cleaner's key map.",
        None,
        _CLEANER,
    ),
    (
        "log.cleaner.io.buffer.size",
        ConfigType.INT,
        524_288,
        "Cleaner I/O buffer size.",
        at_least(0),
        _CLEANER,
    ),
    (
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        0.9,
        "Load factor of the cleaner's key map.",
        None,
        _CLEANER,
    ),
    (
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        1.7976931348623157e308,
        "Cleaner I/O throttle.",
        None,
        _CLEANER,
    ),
    ("max.connections", ConfigType.INT, INT_MAX, "Most connections.", at_least(0), _QUOTAS),
    (
        "max.connections.per.ip",
        ConfigType.INT,
        INT_MAX,
        "Most connections from one address.",
        at_least(0),
        _QUOTAS,
    ),
    (
        "max.connections.per.ip.overrides",
        ConfigType.STRING,
        "",
        "Per-address overrides of max.connections.per.ip.",
        None,
        _QUOTAS,
    ),
    (
        "max.connection.creation.rate",
        ConfigType.INT,
        INT_MAX,
        "Most new connections per second.",
        at_least(0),
        _QUOTAS,
    ),
    (
        "transaction.partition.verification.enable",
        ConfigType.BOOLEAN,
        True,
        "Verify that a partition was added to the transaction before a transactional write.",
        None,
        "AddPartitionsToTxn is always required before a transactional write",
    ),
    (
        "socket.send.buffer.bytes",
        ConfigType.INT,
        102_400,
        "SO_SNDBUF of the sockets (-1: the OS default).",
        None,
        "the operating system's socket buffers are used",
    ),
    (
        "socket.receive.buffer.bytes",
        ConfigType.INT,
        102_400,
        "SO_RCVBUF of the sockets (-1: the OS default).",
        None,
        "the operating system's socket buffers are used",
    ),
)

NO_EFFECT_BROKER_KEYS: tuple[ConfigKey, ...] = tuple(
    ConfigKey(name, kind, default, doc, check=check, no_effect=reason)
    for name, kind, default, doc, check, reason in _ROWS
)
"""Broker keys valid in Kafka that change nothing on a Sluice node; each says why
(:attr:`ConfigKey.no_effect`). They are validated, stored and described like any other."""
