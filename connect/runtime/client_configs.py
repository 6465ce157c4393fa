"""The librdkafka settings of the clients a Connect worker makes, from its worker settings.

Kafka Connect's rules, with one convenience:

- the worker's own clients — the internal topics' (``connect-configs``, ``connect-offsets``,
  ``connect-status``), the group membership's, the herder's admin — use the worker's
  top-level client security settings (``security.protocol``, ``sasl.*``, ``ssl.*``);
- the connectors' clients use the ``producer.`` (source tasks, the dead-letter queue),
  ``consumer.`` (sink tasks) and ``admin.`` (offsets through the REST API) settings.
  **Departure from Kafka:** they start from the worker's top-level security settings, which
  the prefixed ones override: Kafka Connect gives them ``bootstrap.servers`` only, so that a
  worker on a secured cluster must repeat every security setting three times (a frequent
  mistake). A worker file written for Kafka (with the prefixed settings) means the same here;
  connectors that must act as another principal than the worker get it by the prefixed
  ``sasl.jaas.config`` as in Kafka.

Settings are written with the Java client's keys and translated as the CLI's
``--command-config`` is (:mod:`sluice.client_security`): ``sasl.jaas.config`` becomes
``sasl.username``/``sasl.password``, PEM stores become ``ssl.ca.location`` …; a mistake is a
:class:`~sluice.errors.ConfigError` naming the key, raised when the worker is made.

>>> worker = {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL",
...           "producer.linger.ms": "20", "consumer.security.protocol": "SSL"}
>>> worker_clients(worker)
{'security.protocol': 'SASL_SSL'}
>>> task_clients(worker, "producer"), task_clients(worker, "consumer")
({'security.protocol': 'SASL_SSL', 'linger.ms': '20'}, {'security.protocol': 'SSL'})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from sluice.client_security import client_settings, is_security_key

__all__ = ["ClientRole", "check_client_settings", "task_clients", "worker_clients"]

ClientRole = Literal["producer", "consumer", "admin"]
"""The kinds of connector clients, each with its worker-setting prefix (``producer.`` …)."""

_ROLES: tuple[ClientRole, ...] = ("producer", "consumer", "admin")


def worker_clients(worker_config: Mapping[str, Any]) -> dict[str, Any]:
    """librdkafka settings for the worker's own clients: its top-level security settings."""
    security = {k: v for k, v in worker_config.items() if is_security_key(k)}
    return client_settings(security, source="worker config") if security else {}


def task_clients(worker_config: Mapping[str, Any], role: ClientRole) -> dict[str, Any]:
    """librdkafka settings for a connector's ``role`` client: the worker's security settings
    under its ``<role>.*`` settings (which win)."""
    prefix = f"{role}."
    own = {k[len(prefix) :]: v for k, v in worker_config.items() if k.startswith(prefix)}
    translated = client_settings(own, source=f"worker config ({prefix}*)") if own else {}
    return {**worker_clients(worker_config), **translated}


def check_client_settings(worker_config: Mapping[str, Any]) -> None:
    """Translate every client's settings once, so that a mistake stops the worker at start."""
    worker_clients(worker_config)
    for role in _ROLES:
        task_clients(worker_config, role)
