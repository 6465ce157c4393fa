"""The per-batch check of a topic that accepts only its schemas.

Confluent's wire format, which every record value (key) of such a topic must carry::

    offset  size  field
    0       1     magic byte, 0
    1       4     schema id, big-endian int32 (an id of the registry)
    5       ...   Protobuf only: the message-index path (zigzag varints: a count, then the
                  indexes; the single byte 0 stands for [0]), then the payload
    5       ...   other formats: the payload (never looked into: Confluent Server checks the
                  id, not the data)

A record passes when its value (key) is null — a tombstone passes, as in Confluent Server — or
when its schema id exists in the registry and is registered under the subject the topic's
strategy names (:mod:`.strategies`). One bad record refuses the whole batch: nothing of it is
appended, and :class:`~sluice.broker.log.errors.RecordValidationError` (INVALID_RECORD) names
each bad record's index with its reason (``value: no magic byte``, ``value: unknown schema id
42``, ``value: schema id 42 is not registered under subject orders-value``).

A registry that does not answer refuses the batch with REQUEST_TIMED_OUT (a retriable code:
clients retry the batch, nothing of it was appended) — see :data:`UNAVAILABLE`.

>>> parse_wire(b"\\x00\\x00\\x00\\x00\\x2a{}", protobuf=False)
(42, ())
>>> parse_wire(b"\\x00\\x00\\x00\\x00\\x07\\x04\\x02\\x00rest", protobuf=True)
(7, (1, 0))
>>> parse_wire(b"plain text", protobuf=False)
'no magic byte'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.log.errors import RecordValidationError
from sluice.broker.records import batch as rb
from sluice.broker.records.codec import Record, decode_records
from sluice.broker.schema_validation.client import RegistryClient, RegistryUnavailableError
from sluice.broker.schema_validation.strategies import (
    SchemaNameError,
    needs_record_name,
    record_name,
    subject_for,
)

__all__ = ["UNAVAILABLE", "SideRule", "TopicRules", "Validator", "parse_wire", "rules_of"]

UNAVAILABLE = ErrorCode.request_timed_out
"""The answer when the registry cannot be asked: retriable in every client (Kafka's
``TimeoutException`` is a ``RetriableException``; librdkafka retries it), and the batch was not
appended, so a retry cannot duplicate it. Confluent does not document its own code for this case."""


@dataclass(frozen=True, slots=True)
class SideRule:
    """Validation of one side of the records (value or key)."""

    is_key: bool
    strategy: str


@dataclass(frozen=True, slots=True)
class TopicRules:
    """What a topic requires: its value rule, its key rule (None: that side is not checked)."""

    value: SideRule | None
    key: SideRule | None


def rules_of(config: Mapping[str, Any]) -> TopicRules:
    """The rules of a topic's effective configuration."""
    value = key = None
    if config.get("confluent.value.schema.validation"):
        value = SideRule(False, str(config["confluent.value.subject.name.strategy"]))
    if config.get("confluent.key.schema.validation"):
        key = SideRule(True, str(config["confluent.key.subject.name.strategy"]))
    return TopicRules(value, key)


def parse_wire(data: bytes, *, protobuf: bool) -> tuple[int, tuple[int, ...]] | str:
    """``(schema id, message indexes)`` of a serialized value, or why it is not in the wire
    format. The message indexes are read only when ``protobuf`` (else ``()``)."""
    if not data or data[0] != 0:
        return "no magic byte"
    if len(data) < 5:
        return f"no schema id after the magic byte ({len(data)} bytes)"
    schema_id = int.from_bytes(data[1:5], "big", signed=True)
    if not protobuf:
        return schema_id, ()
    position = 5
    values = []
    try:
        count, position = _zigzag(data, position)
        if count == 0:
            return schema_id, (0,)
        if not 0 < count <= 64:
            return f"bad Protobuf message-index count {count}"
        for _ in range(count):
            index, position = _zigzag(data, position)
            values.append(index)
    except IndexError:
        return "truncated Protobuf message indexes"
    return schema_id, tuple(values)


def _zigzag(data: bytes, position: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


class Validator:
    """Checks batches against the registry behind ``client``."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client

    async def check(self, topic: str, records: bytes | memoryview, rules: TopicRules) -> None:
        """Refuse the batch (raise) unless every record passes ``rules``.

        A batch that is not one well-formed v2 batch is left to the append path, which refuses
        it with the code Kafka gives (the same as on any topic).
        """
        try:
            header = rb.read_header(records)
            if header.size != len(records):
                return
            rb.validate(records, header)
        except rb.InvalidBatchError:
            return
        if header.is_control:
            return
        try:
            decoded = decode_records(records, header)
        except rb.InvalidBatchError as exc:
            code = (
                ErrorCode.corrupt_message if exc.corrupt else ErrorCode.unsupported_compression_type
            )
            raise KafkaError(code, exc.reason) from None
        try:
            errors = await self._errors(topic, decoded, rules)
        except RegistryUnavailableError as exc:
            raise KafkaError(
                UNAVAILABLE,
                f"the schema registry could not be asked about the records of {topic} "
                f"(nothing was appended; retry): {exc}",
            ) from None
        if errors:
            raise RecordValidationError(errors)

    async def _errors(
        self, topic: str, decoded: list[Record], rules: TopicRules
    ) -> list[tuple[int, str]]:
        errors: list[tuple[int, str]] = []
        seen: dict[tuple[bool, bytes], str | None] = {}  # the reason a prefix fails (None: not)
        for index, record in enumerate(decoded):
            for rule, data in ((rules.value, record.value), (rules.key, record.key)):
                if rule is None or data is None:
                    continue
                memo = (rule.is_key, data[:16])  # magic, id, a Protobuf message-index path
                if memo in seen:
                    reason = seen[memo]
                else:
                    reason = seen[memo] = await self._reason(topic, data, rule)
                if reason is not None:
                    errors.append((index, f"{'key' if rule.is_key else 'value'}: {reason}"))
                    break
        return errors

    async def _reason(self, topic: str, data: bytes, rule: SideRule) -> str | None:
        """Why ``data`` fails ``rule`` (None: it passes)."""
        by_record = needs_record_name(rule.strategy)
        schema = None
        parsed = parse_wire(data, protobuf=False)
        if isinstance(parsed, str):
            return parsed
        schema_id = parsed[0]
        if schema_id < 0:  # registries number from 1
            return f"unknown schema id {schema_id}"
        record = None
        if by_record:
            schema = await self.client.schema(schema_id)
            if schema is None:
                return f"unknown schema id {schema_id}"
            indexes: tuple[int, ...] = ()
            if schema.schema_type == "PROTOBUF":
                with_indexes = parse_wire(data, protobuf=True)
                if isinstance(with_indexes, str):
                    return with_indexes
                indexes = with_indexes[1]
            try:
                record = record_name(schema.schema_type, schema.schema, indexes)
            except SchemaNameError as exc:
                return f"schema id {schema_id}: {exc}"
        subject = subject_for(rule.strategy, topic, is_key=rule.is_key, record=record)
        subjects = await self.client.subjects(schema_id, subject)
        if subjects is None:
            return f"unknown schema id {schema_id}"
        if subject not in subjects:
            return f"schema id {schema_id} is not registered under subject {subject}"
        return None
