"""Topics that accept only their schemas: Confluent Server's broker-side schema ID validation.

A topic with ``confluent.value.schema.validation=true`` (``confluent.key.schema.validation``
for keys) takes a Produce batch only when every record's value (key) is in Confluent's wire
format with a schema id that the registry of ``confluent.schema.registry.url`` has registered
under the subject of the topic's ``confluent.value.subject.name.strategy``
(``confluent.key.subject.name.strategy``). Otherwise the whole batch is refused with
INVALID_RECORD, each bad record named in ``record_errors``. The data itself is not looked into,
as in Confluent Server: the check is of the schema id.

The modules: :mod:`.client` (the cached registry lookups), :mod:`.strategies` (subject names),
:mod:`.validator` (the per-batch check). :func:`check_batch` is what the Produce handler calls,
for topics that enable validation only.

The broker reaches the registry over HTTP only (it imports nothing of ``sluice.schemas`` or
``sluice.schema_registry``): any Confluent-compatible registry serves.

>>> from sluice.broker.config import BrokerConfig
>>> config = BrokerConfig.from_properties({}).topic_config(
...     {"confluent.value.schema.validation": "true"}
... )
>>> validates(config), rules_of(config).value
(True, SideRule(is_key=False, strategy='io.confluent.kafka.serializers.subject.TopicNameStrategy'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.schema_validation.client import RegistryClient, RegistryUnavailableError
from sluice.broker.schema_validation.strategies import (
    RECORD_NAME,
    STRATEGIES,
    TOPIC_NAME,
    TOPIC_RECORD_NAME,
)
from sluice.broker.schema_validation.validator import (
    UNAVAILABLE,
    TopicRules,
    Validator,
    rules_of,
)

__all__ = [
    "KEY_VALIDATION",
    "RECORD_NAME",
    "REGISTRY_URL",
    "STRATEGIES",
    "TOPIC_NAME",
    "TOPIC_RECORD_NAME",
    "UNAVAILABLE",
    "VALUE_VALIDATION",
    "RegistryClient",
    "RegistryUnavailableError",
    "TopicRules",
    "Validator",
    "check_batch",
    "rules_of",
    "validates",
]

REGISTRY_URL = "confluent.schema.registry.url"
VALUE_VALIDATION = "confluent.value.schema.validation"
KEY_VALIDATION = "confluent.key.schema.validation"

_validators: dict[tuple[str, ...], Validator] = {}
"""One validator (and so one cache) per registry URL list, for the life of the process."""


def validates(config: Mapping[str, Any]) -> bool:
    """Whether a topic's effective configuration asks for any schema validation."""
    return bool(config.get(VALUE_VALIDATION) or config.get(KEY_VALIDATION))


def validator_for(urls: Sequence[str]) -> Validator:
    """The process's validator for the registry at ``urls``."""
    key = tuple(urls)
    if (validator := _validators.get(key)) is None:
        validator = _validators[key] = Validator(RegistryClient(key))
    return validator


async def check_batch(
    urls: Sequence[str] | None,
    topic: str,
    records: bytes | memoryview | None,
    config: Mapping[str, Any],
) -> None:
    """Refuse a Produce batch to ``topic`` whose records do not carry allowed schema ids
    (raises :class:`~sluice.broker.log.errors.RecordValidationError` or
    :class:`~sluice.broker.errors.KafkaError`). ``urls``: the broker's
    ``confluent.schema.registry.url``."""
    if not records:
        return  # the append path refuses it
    if not urls:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"topic {topic} requires schema validation, but the broker has no {REGISTRY_URL}",
        )
    await validator_for(urls).check(topic, records, rules_of(config))
