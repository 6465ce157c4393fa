"""Kafka's configuration keys: their types, defaults, validation, documentation and synonyms.

``TOPIC_KEYS`` are the per-topic keys (``retention.ms``), each with the broker-level synonym
that supplies its default (``log.retention.ms``); ``BROKER_KEYS`` are the keys of
``server.properties``. :mod:`sluice.broker.config` builds effective configurations.

The modules: :mod:`.key` (:class:`ConfigKey`, Kafka's type and source numbering),
:mod:`.validators` (the checks), :mod:`.topic_keys`, :mod:`.broker_keys` (which gathers
:mod:`.cluster_keys`, :mod:`.security_keys` and :mod:`.no_effect_keys`).

>>> TOPIC_KEYS["retention.ms"].synonym
'log.retention.ms'
>>> BROKER_KEYS["num.partitions"].parse("3")
3
"""

from sluice.broker.config_keys.broker_keys import (
    BROKER_KEYS,
    DYNAMIC_BROKER_KEYS,
    INERT_BROKER_KEYS,
)
from sluice.broker.config_keys.key import (
    INT_MAX,
    LONG_MAX,
    ConfigKey,
    ConfigSource,
    ConfigType,
    render,
)
from sluice.broker.config_keys.security_keys import dynamic_listener_key, listener_key
from sluice.broker.config_keys.topic_keys import TOPIC_KEYS

__all__ = [
    "BROKER_KEYS",
    "DYNAMIC_BROKER_KEYS",
    "INERT_BROKER_KEYS",
    "INT_MAX",
    "LONG_MAX",
    "TOPIC_KEYS",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "dynamic_listener_key",
    "listener_key",
    "render",
]
