"""The global stores of a process kept up to date: restored whole before processing starts, then
fed every poll from a consumer of their topics (Kafka's global stream thread, run inline on the
stream thread).

Global stores are never checkpointed: they are rebuilt from their topics at each start, wiped
first, then followed from the end of that restoration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from sluice import clients
from sluice.streams.config import StreamsConfig
from sluice.streams.globals import GlobalStores
from sluice.streams.runtime.restore import Restoration, restore
from sluice.streams.runtime.thread_clients import assign_only

__all__ = ["GlobalStoreUpdater"]


class GlobalStoreUpdater:
    """Restores the global stores of ``stores`` and applies what their topics get next."""

    def __init__(
        self, stores: GlobalStores, config: StreamsConfig, partitions: Mapping[str, int]
    ) -> None:
        self.stores = stores
        self.config = config
        self.partitions = partitions
        self._consumer: Consumer | None = None

    def bootstrap(
        self,
        state_dir: Path,
        restore_consumer: Consumer,
        track: Callable[[list[Restoration]], None],
    ) -> None:
        """Open the stores, restore them whole and start following their topics; ``track`` is
        shown the restorations before they run (the metrics follow their progress)."""
        self.stores.init(state_dir)
        topics = self.stores.topics
        if not topics:
            return
        for store in self.stores.stores.values():
            store.wipe()
        work = [
            Restoration(self.stores.store_of(topic), topic, partition, None)
            for topic in topics
            for partition in range(self.partitions[topic])
        ]
        track(work)
        restore(restore_consumer, work)
        consumer = clients.consumer(
            self.config.bootstrap_servers,
            **{
                "isolation.level": self.config.isolation_level,
                **assign_only(self.config, "global"),
                **self.config.consumer_config,
            },
        )
        consumer.assign(
            [TopicPartition(item.topic, item.partition, max(item.end_offset, 0)) for item in work]
        )
        self._consumer = consumer

    def poll(self) -> None:
        """Apply the records that arrived (without waiting)."""
        consumer = self._consumer
        if consumer is None:
            return
        for message in consumer.consume(10_000, 0):
            if message.error() is None:
                self.stores.update(
                    str(message.topic()), message.key(), message.value(), message.timestamp()[1]
                )

    def close(self) -> None:
        """Close the consumer and the stores."""
        if self._consumer is not None:
            self._consumer.close()
        self.stores.close()
