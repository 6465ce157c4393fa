"""Distributed mode: workers that share connectors and tasks through the broker.

Started by ``sluice connect start --group G``. :func:`cluster_worker` is the one
:class:`~sluice.connect.runtime.reconciler.Reconciler` of the standalone mode over other
stores: configs in ``connect-configs``, statuses in ``connect-status``, source offsets in
``connect-offsets`` (compacted topics read whole by every worker,
:class:`~sluice.connect.runtime.topic_store.TopicMap`), and slots given by the group
(:mod:`.membership`).

Worker settings use Kafka Connect's names: ``group.id``, ``config.storage.topic``,
``offset.storage.topic``, ``status.storage.topic``, ``offset.storage.partitions`` (25: the
number of slots), ``status.storage.partitions`` (5), ``session.timeout.ms``,
``heartbeat.interval.ms``, ``rebalance.timeout.ms``, beside the standalone worker's; and
``exactly.once.source.support`` (``disabled``, ``preparing``, ``enabled``: source tasks commit
their records and offsets in transactions, :mod:`sluice.connect.runtime.exactly_once`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.connect.runtime.client_configs import check_client_settings, worker_clients
from sluice.connect.runtime.config_store import ConfigStore
from sluice.connect.runtime.distributed.membership import GroupAssignment
from sluice.connect.runtime.exactly_once import check_worker_config
from sluice.connect.runtime.offsets import KafkaOffsetStore
from sluice.connect.runtime.reconciler import Reconciler
from sluice.connect.runtime.status_store import StatusStore
from sluice.connect.runtime.topic_store import TopicMap
from sluice.connect.runtime.worker import Worker
from sluice.errors import ConfigError

__all__ = ["DEFAULTS", "cluster_worker"]

DEFAULTS = {
    "group.id": "connect-cluster",
    "config.storage.topic": "connect-configs",
    "offset.storage.topic": "connect-offsets",
    "status.storage.topic": "connect-status",
    "offset.storage.partitions": "25",
    "status.storage.partitions": "5",
}


def cluster_worker(config: Mapping[str, Any]) -> Reconciler:
    """A worker of the group ``group.id`` (not joined yet: :meth:`~Reconciler.start` it with
    its REST API's ``host:port``); reads the three topics, creating them if needed."""
    if "bootstrap.servers" not in config:
        raise ConfigError("missing required configuration", key="bootstrap.servers")
    settings: dict[str, Any] = {**DEFAULTS, **config}
    check_worker_config(settings, distributed=True)  # before any topic is read
    bootstrap = str(settings["bootstrap.servers"])
    check_client_settings(settings)
    secured = worker_clients(settings)
    offsets = KafkaOffsetStore(
        TopicMap(
            bootstrap,
            str(settings["offset.storage.topic"]),
            partitions=int(settings["offset.storage.partitions"]),
            client_config=secured,
        )
    )
    worker = Worker(settings, offsets, distributed=True)
    worker.worker_id = "unknown"
    status = TopicMap(
        bootstrap,
        str(settings["status.storage.topic"]),
        partitions=int(settings["status.storage.partitions"]),
        client_config=secured,
    )
    configs = TopicMap(
        bootstrap, str(settings["config.storage.topic"]), partitions=1, client_config=secured
    )
    return Reconciler(
        worker,
        ConfigStore(configs),
        StatusStore(status),
        GroupAssignment(bootstrap, str(settings["group.id"]), settings),
    )
