"""API v3's resource bodies: Confluent's ``kind``, ``metadata`` (``self``, ``resource_name``)
and ``related`` links.

Every v3 resource names itself with an absolute URL under the address the request came to,
and a CRN (``crn:///kafka=<cluster>/topic=<name>…``); collections are
``{"kind": "...List", "metadata": {"self", "next": null}, "data": [...]}``.

>>> urls = Urls("http://proxy:8082/", "c1")
>>> topic = urls.topic("t")
>>> topic["kind"], topic["metadata"]["resource_name"]
('KafkaTopic', 'crn:///kafka=c1/topic=t')
>>> topic["partitions"]
{'related': 'http://proxy:8082/v3/clusters/c1/topics/t/partitions'}
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

__all__ = ["Urls"]


def _related(url: str) -> dict[str, str]:
    return {"related": url}


class Urls:
    """Builds the bodies of one cluster's resources, under ``base`` (the proxy's URL)."""

    def __init__(self, base: str, cluster_id: str) -> None:
        self.base = base.rstrip("/")
        self.cluster_id = cluster_id
        self.crn = f"crn:///kafka={cluster_id}"

    def url(self, *parts: str | int) -> str:
        """``base/v3/clusters/<id>/<parts…>`` with each part escaped."""
        path = "/".join(quote(str(p), safe="") for p in ("v3", "clusters", self.cluster_id, *parts))
        return f"{self.base}/{path}"

    def collection(self, kind: str, url: str, data: list[dict[str, Any]]) -> dict[str, Any]:
        """A ``…List`` of ``data``."""
        return {"kind": kind, "metadata": {"self": url, "next": None}, "data": data}

    def _resource(self, kind: str, url: str, crn: str | None, **fields: Any) -> dict[str, Any]:
        return {"kind": kind, "metadata": {"self": url, "resource_name": crn}, **fields}

    def cluster(self, controller: int | None) -> dict[str, Any]:
        """A ``KafkaCluster``."""
        return self._resource(
            "KafkaCluster",
            self.url(),
            self.crn,
            cluster_id=self.cluster_id,
            controller=None if controller is None else _related(self.url("brokers", controller)),
            acls=_related(self.url("acls")),
            brokers=_related(self.url("brokers")),
            broker_configs=_related(self.url("broker-configs")),
            consumer_groups=_related(self.url("consumer-groups")),
            topics=_related(self.url("topics")),
            partition_reassignments=_related(
                self.url("topics", "-", "partitions", "-", "reassignment")
            ),
        )

    def topic(
        self,
        name: str,
        *,
        internal: bool = False,
        replication_factor: int = 0,
        partitions_count: int = 0,
    ) -> dict[str, Any]:
        """A ``KafkaTopic``."""
        return self._resource(
            "KafkaTopic",
            self.url("topics", name),
            f"{self.crn}/topic={name}",
            cluster_id=self.cluster_id,
            topic_name=name,
            is_internal=internal,
            replication_factor=replication_factor,
            partitions_count=partitions_count,
            partitions=_related(self.url("topics", name, "partitions")),
            configs=_related(self.url("topics", name, "configs")),
            partition_reassignments=_related(
                self.url("topics", name, "partitions", "-", "reassignment")
            ),
            authorized_operations=[],
        )

    def partition(self, topic: str, partition: int, leader: int | None) -> dict[str, Any]:
        """A ``KafkaPartition``."""
        here = ("topics", topic, "partitions", partition)
        return self._resource(
            "KafkaPartition",
            self.url(*here),
            f"{self.crn}/topic={topic}/partition={partition}",
            cluster_id=self.cluster_id,
            topic_name=topic,
            partition_id=partition,
            leader=None if leader is None else _related(self.url(*here, "replicas", leader)),
            replicas=_related(self.url(*here, "replicas")),
            reassignment=_related(self.url(*here, "reassignment")),
        )

    def topic_config(self, topic: str, entry: dict[str, Any]) -> dict[str, Any]:
        """A ``KafkaTopicConfig`` from ``entry`` (name, value, is_default, is_read_only,
        is_sensitive, source, synonyms)."""
        return self._resource(
            "KafkaTopicConfig",
            self.url("topics", topic, "configs", entry["name"]),
            f"{self.crn}/topic={topic}/config={entry['name']}",
            cluster_id=self.cluster_id,
            topic_name=topic,
            **entry,
        )

    def consumer_group(
        self,
        group: str,
        *,
        simple: bool,
        assignor: str,
        state: str,
        coordinator: int | None,
        group_type: str,
    ) -> dict[str, Any]:
        """A ``KafkaConsumerGroup``."""
        here = ("consumer-groups", group)
        return self._resource(
            "KafkaConsumerGroup",
            self.url(*here),
            f"{self.crn}/consumer-group={group}",
            cluster_id=self.cluster_id,
            consumer_group_id=group,
            is_simple=simple,
            partition_assignor=assignor,
            state=state,
            type=group_type,
            is_mixed_consumer_group=False,
            coordinator=None if coordinator is None else _related(self.url("brokers", coordinator)),
            consumer=_related(self.url(*here, "consumers")),
            lag_summary=_related(self.url(*here, "lag-summary")),
        )

    def consumer(
        self, group: str, consumer_id: str, instance_id: str | None, client_id: str
    ) -> dict[str, Any]:
        """A ``KafkaConsumer`` (a member of a group)."""
        here = ("consumer-groups", group, "consumers", consumer_id)
        return self._resource(
            "KafkaConsumer",
            self.url(*here),
            f"{self.crn}/consumer-group={group}/consumer={consumer_id}",
            cluster_id=self.cluster_id,
            consumer_group_id=group,
            consumer_id=consumer_id,
            instance_id=instance_id,
            client_id=client_id,
            assignments=_related(self.url(*here, "assignments")),
        )

    def lag(
        self,
        group: str,
        topic: str,
        partition: int,
        current: int,
        end: int,
        member: tuple[str, str | None, str] | None,
    ) -> dict[str, Any]:
        """A ``KafkaConsumerLag`` of one partition (``member``: consumer, instance, client)."""
        here = ("consumer-groups", group, "lags", topic, "partitions", partition)
        consumer_id, instance_id, client_id = member or ("", None, "")
        return self._resource(
            "KafkaConsumerLag",
            self.url(*here),
            f"{self.crn}/consumer-group={group}/lag={topic}/partition={partition}",
            cluster_id=self.cluster_id,
            consumer_group_id=group,
            topic_name=topic,
            partition_id=partition,
            current_offset=current,
            log_end_offset=end,
            lag=max(0, end - current),
            consumer_id=consumer_id,
            instance_id=instance_id,
            client_id=client_id,
        )

    def lag_summary(self, group: str, lags: list[dict[str, Any]]) -> dict[str, Any]:
        """A ``KafkaConsumerGroupLagSummary`` of the group's partition ``lags``."""
        here = ("consumer-groups", group, "lag-summary")
        top = max(lags, key=lambda lag: lag["lag"], default=None)
        fields: dict[str, Any] = {
            "cluster_id": self.cluster_id,
            "consumer_group_id": group,
            "max_lag_consumer_id": top["consumer_id"] if top else "",
            "max_lag_instance_id": top["instance_id"] if top else None,
            "max_lag_client_id": top["client_id"] if top else "",
            "max_lag_topic_name": top["topic_name"] if top else "",
            "max_lag_partition_id": top["partition_id"] if top else 0,
            "max_lag": top["lag"] if top else 0,
            "total_lag": sum(lag["lag"] for lag in lags),
        }
        if top:
            fields["max_lag_consumer"] = _related(
                self.url("consumer-groups", group, "consumers", top["consumer_id"] or "-")
            )
            fields["max_lag_partition"] = _related(
                self.url("topics", top["topic_name"], "partitions", top["partition_id"])
            )
        return self._resource(
            "KafkaConsumerGroupLagSummary",
            self.url(*here),
            f"{self.crn}/consumer-group={group}/lag-summary",
            **fields,
        )
