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

A secured registry is reached with the broker's ``confluent.basic.auth.user.info`` and
``confluent.ssl.*`` settings (:class:`~.client.RegistryAccess`).

The broker reaches the registry over HTTP(S) only (it imports nothing of ``sluice.schemas`` or
``sluice.schema_registry``): any Confluent-compatible registry serves.

>>> from sluice.broker.config import BrokerConfig
>>> config = BrokerConfig.from_properties({}).topic_config(
...     {"confluent.value.schema.validation": "true"}
... )
>>> validates(config), rules_of(config).value
(True, SideRule(is_key=False, strategy='io.confluent.kafka.serializers.subject.TopicNameStrategy'))
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError
from sluice.broker.schema_validation.client import (
    RegistryAccess,
    RegistryClient,
    RegistryUnavailableError,
)
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
    "RegistryAccess",
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

_validators: dict[tuple[tuple[str, ...], RegistryAccess], Validator] = {}
"""One validator (and so one cache) per registry URL list and access, for the life of the
process."""


def validates(config: Mapping[str, Any]) -> bool:
    """Whether a topic's effective configuration asks for any schema validation."""
    return bool(config.get(VALUE_VALIDATION) or config.get(KEY_VALIDATION))


def validator_for(urls: Sequence[str], access: RegistryAccess | None = None) -> Validator:
    """The process's validator for the registry at ``urls``, reached with ``access``; a
    KafkaError when its TLS files cannot be loaded."""
    key = (tuple(urls), access or RegistryAccess())
    if (validator := _validators.get(key)) is None:
        try:
            client = RegistryClient(key[0], access=key[1])
        except (OSError, ssl.SSLError) as exc:
            raise KafkaError(
                ErrorCode.invalid_record,
                f"cannot reach the schema registry: confluent.ssl.* files unusable: {exc}",
            ) from None
        validator = _validators[key] = Validator(client)
    return validator


async def check_batch(
    urls: Sequence[str] | None,
    topic: str,
    records: bytes | memoryview | None,
    config: Mapping[str, Any],
    broker_config: Mapping[str, Any] | None = None,
) -> None:
    """Refuse a Produce batch to ``topic`` whose records do not carry allowed schema ids
    (raises :class:`~sluice.broker.log.errors.RecordValidationError` or
    :class:`~sluice.broker.errors.KafkaError`). ``urls``: the broker's
    ``confluent.schema.registry.url``; ``broker_config``: its settings (the
    ``confluent.basic.auth.*`` and ``confluent.ssl.*`` ones reach a secured registry)."""
    if not records:
        return  # the append path refuses it
    if not urls:
        raise KafkaError(
            ErrorCode.invalid_record,
            f"topic {topic} requires schema validation, but the broker has no {REGISTRY_URL}",
        )
    try:
        access = RegistryAccess.from_config(broker_config or {})
    except ValueError as exc:
        raise KafkaError(ErrorCode.invalid_record, f"topic {topic}: {exc}") from None
    await validator_for(urls, access).check(topic, records, rules_of(config))
