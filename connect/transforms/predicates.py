"""Predicates that guard transformations, under Kafka's names and settings.

- ``TopicNameMatches``: the topic matches ``pattern`` (a Java regular expression, whole name);
- ``HasHeaderKey``: the record has at least one header called ``name``;
- ``RecordIsTombstone``: the value is null.

A transformation uses one with ``transforms.<alias>.predicate=<predicate alias>``, and
``transforms.<alias>.negate=true`` applies it where the predicate does *not* hold.

>>> from sluice.connect.api.data import ConnectRecord
>>> matches = TopicNameMatches()
>>> matches.configure({"pattern": "orders-.*"})
>>> matches.test(ConnectRecord("orders-eu", 0, None, None, None, 1))
True
>>> matches.test(ConnectRecord("old-orders-eu", 0, None, None, None, 1))
False
"""

from __future__ import annotations

from sluice.connect.api.data import ConnectRecord
from sluice.connect.api.transform import ConfigKey, Predicate, Settings, compile_java_regex
from sluice.errors import ConfigError

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]


class TopicNameMatches(Predicate):
    """True for records whose topic matches ``pattern`` in full (Kafka's ``TopicNameMatches``)."""

    CONFIG = (
        ConfigKey(
            "pattern",
            "string",
            "A Java regular expression for matching against the name of a record's topic.",
        ),
    )

    def setup(self, settings: Settings) -> None:
        pattern = settings.string("pattern")
        if not pattern:
            raise ConfigError("String must be non-empty", key="pattern")
        self.pattern = compile_java_regex(pattern, "pattern")

    def test(self, record: ConnectRecord) -> bool:
        return record.topic is not None and self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Predicate):
    """True for records with at least one header called ``name`` (Kafka's ``HasHeaderKey``)."""

    CONFIG = (ConfigKey("name", "string", "The header name."),)

    def setup(self, settings: Settings) -> None:
        self.name = settings.string("name")
        if not self.name:
            raise ConfigError("String must be non-empty", key="name")

    def test(self, record: ConnectRecord) -> bool:
        return any(key == self.name for key, _ in record.headers)


class RecordIsTombstone(Predicate):
    """True for tombstones: records whose value is null (Kafka's ``RecordIsTombstone``)."""

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None
