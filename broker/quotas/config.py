"""What client quotas are configured, per entity, and which one applies to a connection
(Kafka's ``DefaultQuotaCallback``, KIP-55).

An entity names a user (the principal's name: ``alice`` for ``User:alice``, ``ANONYMOUS`` on a
listener without authentication), a client id, or both; either part may be the *default* of its
kind (``<default>`` in ZooKeeper, a null name in the admin APIs). Each entity may set any of
:data:`QUOTA_KEYS`. For a connection of user ``u`` and client id ``c``, each quota is the one of
the first entity in this order that sets it (Kafka's eight levels):

====  =============================================  ==============================
 #    ZooKeeper path                                  entity
====  =============================================  ==============================
 1    ``/config/users/<u>/clients/<c>``              (u, c)
 2    ``/config/users/<u>/clients/<default>``        (u, default client)
 3    ``/config/users/<u>``                          (u, -)
 4    ``/config/users/<default>/clients/<c>``        (default user, c)
 5    ``/config/users/<default>/clients/<default>``  (default user, default client)
 6    ``/config/users/<default>``                    (default user, -)
 7    ``/config/clients/<c>``                        (-, c)
 8    ``/config/clients/<default>``                  (-, default client)
====  =============================================  ==============================

All the connections the found entity covers share one measured rate (Kafka's metric tags): the
user's if the entity names a user (or the default user), the client id's if it names one (or the
default client id). No entity setting a quota: unlimited.

>>> configs = {Entity(DEFAULT, None): {PRODUCER_BYTE_RATE: 1024.0},
...            Entity("alice", "app"): {PRODUCER_BYTE_RATE: 99.0}}
>>> resolve(configs, "alice", "app")[PRODUCER_BYTE_RATE]
Quota(bound=99.0, user='alice', client_id='app')
>>> resolve(configs, "bob", "app")[PRODUCER_BYTE_RATE]
Quota(bound=1024.0, user='bob', client_id='')
>>> resolve(configs, "bob", "app").get(CONSUMER_BYTE_RATE) is None
True
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

__all__ = [
    "CONSUMER_BYTE_RATE",
    "DEFAULT",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "Default",
    "Entity",
    "Name",
    "Quota",
    "QuotaConfigs",
    "precedence",
    "resolve",
    "validate_value",
]

PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
QUOTA_KEYS: Final = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
"""The client quotas Sluice enforces (Kafka's ``QuotaConfig`` client keys)."""


class Default(enum.Enum):
    """The default entity of a kind (``<default>``): its quota applies to every user (or client
    id) without one of its own."""

    DEFAULT = "<default>"

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = Default.DEFAULT
Name: TypeAlias = "str | Default"
"""A user or client id, or the default of its kind."""


@dataclass(frozen=True, slots=True)
class Entity:
    """A quota entity: a user, a client id, or both (None: the part is absent)."""

    user: Name | None = None
    client_id: Name | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a quota entity names a user, a client id, or both")

    def describe(self) -> str:
        """Kafka's way of writing it: ``user 'alice', client-id '<default>'``."""
        parts = []
        for kind, name in (("user", self.user), ("client-id", self.client_id)):
            if name is not None:
                parts.append(f"{kind} '{name.value if isinstance(name, Default) else name}'")
        return ", ".join(parts)


QuotaConfigs: TypeAlias = Mapping[Entity, Mapping[str, float]]
"""Every entity's quotas: entity → quota key → value."""


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota in force for a connection, and the group of connections sharing its measured
    rate (``""``: the part that does not count)."""

    bound: float
    user: str
    client_id: str


def precedence(user: str, client_id: str) -> Iterator[Entity]:
    """The eight entities that may set a quota of ``(user, client_id)``, most specific first.

    >>> [e.describe() for e in precedence("u", "c")][:3]
    ["user 'u', client-id 'c'", "user 'u', client-id '<default>'", "user 'u'"]
    """
    for u in (user, DEFAULT):
        yield Entity(u, client_id)
        yield Entity(u, DEFAULT)
        yield Entity(u, None)
    yield Entity(None, client_id)
    yield Entity(None, DEFAULT)


def resolve(configs: QuotaConfigs, user: str, client_id: str) -> dict[str, Quota]:
    """The quotas in force for a connection of ``user`` with ``client_id``: per key, the
    first entity of :func:`precedence` that sets it; keys no entity sets are left out."""
    found: dict[str, Quota] = {}
    for entity in precedence(user, client_id):
        quotas = configs.get(entity)
        if not quotas:
            continue
        for key, value in quotas.items():
            if key not in found:
                found[key] = Quota(
                    value,
                    user if entity.user is not None else "",
                    client_id if entity.client_id is not None else "",
                )
    return found


def validate_value(key: str, value: float) -> str | None:
    """Why ``value`` is refused for quota ``key`` (Kafka's messages), or None.

    >>> validate_value("producer_byte_rate", -1.0)
    'Quota producer_byte_rate must be greater than 0'
    >>> validate_value("consumer_byte_rate", 1.5)
    'Quota consumer_byte_rate must be an integer'
    >>> validate_value("bogus", 1.0)
    'Unknown quota key bogus'
    """
    if key not in QUOTA_KEYS:
        return f"Unknown quota key {key}"
    if not value > 0:
        return f"Quota {key} must be greater than 0"
    if key != REQUEST_PERCENTAGE and value != int(value):
        return f"Quota {key} must be an integer"
    return None
