"""API v3: clusters, topics, partitions, topic configs, consumer groups and lags, produce.

::

    GET    /v3/clusters                                             KafkaClusterList
    GET    /v3/clusters/{c}                                         KafkaCluster
    GET    /v3/clusters/{c}/topics                                  KafkaTopicList
    POST   /v3/clusters/{c}/topics                                  201 KafkaTopic
    GET    /v3/clusters/{c}/topics/{t}                              KafkaTopic
    DELETE /v3/clusters/{c}/topics/{t}                              204
    GET    /v3/clusters/{c}/topics/{t}/partitions[/{p}]             KafkaPartition(List)
    GET    /v3/clusters/{c}/topics/{t}/configs[/{name}]             KafkaTopicConfig(List)
    PUT    /v3/clusters/{c}/topics/{t}/configs/{name}               204 ({"value": "..."})
    DELETE /v3/clusters/{c}/topics/{t}/configs/{name}               204 (back to the default)
    POST   /v3/clusters/{c}/topics/{t}/configs:alter                204 ({"data": [...]})
    POST   /v3/clusters/{c}/topics/{t}/records                      produce (:mod:`.records`)
    GET    /v3/clusters/{c}/consumer-groups[/{g}]                   KafkaConsumerGroup(List)
    GET    /v3/clusters/{c}/consumer-groups/{g}/consumers[/{id}]    KafkaConsumer(List)
    GET    /v3/clusters/{c}/consumer-groups/{g}/lag-summary         KafkaConsumerGroupLagSummary
    GET    /v3/clusters/{c}/consumer-groups/{g}/lags[/{t}/partitions/{p}]  KafkaConsumerLag(List)

The handlers that ask the broker are plain functions: FastAPI runs them in its thread pool,
so a slow admin call never holds up the event loop.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response
from fastapi.responses import JSONResponse

from sluice.rest_proxy.admin import ClusterAdmin, PartitionLag, bad_request
from sluice.rest_proxy.errors import BAD_REQUEST, RestError
from sluice.rest_proxy.resources import Urls

__all__ = ["v3_router"]


def _body_object(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise RestError(BAD_REQUEST, "The request body must be a JSON object")
    return payload


def _lag_fields(urls: Urls, group: str, lag: PartitionLag) -> dict[str, Any]:
    return urls.lag(group, lag.topic, lag.partition, lag.current, lag.end, lag.member)


def v3_router(admin: ClusterAdmin) -> APIRouter:
    """The v3 routes over ``admin`` (produce is :mod:`sluice.rest_proxy.records`)."""
    router = APIRouter(prefix="/v3")
    pool = admin.pool

    def urls(request: Request, cluster_id: str | None = None) -> Urls:
        actual = pool.cluster_id()
        if cluster_id is not None and cluster_id != actual:
            raise RestError(404, f"Cluster {cluster_id} cannot be found.")
        return Urls(str(request.base_url), actual)

    @router.get("/clusters")
    def list_clusters(request: Request) -> Any:
        here = urls(request)
        return here.collection(
            "KafkaClusterList", f"{here.base}/v3/clusters", [here.cluster(admin.controller())]
        )

    @router.get("/clusters/{cluster_id}")
    def get_cluster(request: Request, cluster_id: str) -> Any:
        return urls(request, cluster_id).cluster(admin.controller())

    # -- topics ------------------------------------------------------------------------------

    def topic_body(here: Urls, name: str) -> dict[str, Any]:
        info = admin.topic(name)
        return here.topic(
            name,
            internal=info.internal,
            replication_factor=info.replication_factor,
            partitions_count=len(info.partitions),
        )

    @router.get("/clusters/{cluster_id}/topics")
    def list_topics(request: Request, cluster_id: str) -> Any:
        here = urls(request, cluster_id)
        data = [
            here.topic(
                t.name,
                internal=t.internal,
                replication_factor=t.replication_factor,
                partitions_count=len(t.partitions),
            )
            for t in admin.topics()
        ]
        return here.collection("KafkaTopicList", here.url("topics"), data)

    @router.post("/clusters/{cluster_id}/topics")
    def create_topic(
        request: Request, cluster_id: str, payload: Annotated[Any, Body()] = None
    ) -> Any:
        here = urls(request, cluster_id)
        body = _body_object(payload)
        name = body.get("topic_name")
        if not isinstance(name, str) or not name:
            raise RestError(BAD_REQUEST, "topic_name is required (a string)")
        counts = []
        for field in ("partitions_count", "replication_factor"):
            value = body.get(field)
            if value is None:
                counts.append(-1)  # the broker's default
            elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RestError(BAD_REQUEST, f"{field} must be a positive integer")
            else:
                counts.append(value)
        configs: dict[str, str] = {}
        for entry in body.get("configs") or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise RestError(BAD_REQUEST, 'configs is a list of {"name", "value"}')
            value = entry.get("value")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise RestError(BAD_REQUEST, f"config {entry['name']}: value must be a string")
            if value is not None:
                configs[entry["name"]] = (
                    str(value).lower() if isinstance(value, bool) else str(value)
                )
        validate_only = body.get("validate_only") is True
        admin.create_topic(name, counts[0], counts[1], configs, validate_only)
        if validate_only:
            created = here.topic(
                name, partitions_count=max(counts[0], 0), replication_factor=max(counts[1], 0)
            )
        else:
            created = topic_body(here, name)
        return JSONResponse(
            created, status_code=201, headers={"Location": created["metadata"]["self"]}
        )

    @router.get("/clusters/{cluster_id}/topics/{topic}")
    def get_topic(request: Request, cluster_id: str, topic: str) -> Any:
        return topic_body(urls(request, cluster_id), topic)

    @router.delete("/clusters/{cluster_id}/topics/{topic}", status_code=204)
    def delete_topic(request: Request, cluster_id: str, topic: str) -> Response:
        urls(request, cluster_id)
        admin.delete_topic(topic)
        return Response(status_code=204)

    # -- partitions --------------------------------------------------------------------------

    @router.get("/clusters/{cluster_id}/topics/{topic}/partitions")
    def list_partitions(request: Request, cluster_id: str, topic: str) -> Any:
        here = urls(request, cluster_id)
        info = admin.topic(topic)
        data = [
            here.partition(topic, p, leader) for p, (leader, _) in sorted(info.partitions.items())
        ]
        return here.collection("KafkaPartitionList", here.url("topics", topic, "partitions"), data)

    @router.get("/clusters/{cluster_id}/topics/{topic}/partitions/{partition}")
    def get_partition(request: Request, cluster_id: str, topic: str, partition: int) -> Any:
        here = urls(request, cluster_id)
        leader, _ = admin.partition(topic, partition)
        return here.partition(topic, partition, leader)

    # -- configs -----------------------------------------------------------------------------

    @router.get("/clusters/{cluster_id}/topics/{topic}/configs")
    def list_configs(request: Request, cluster_id: str, topic: str) -> Any:
        here = urls(request, cluster_id)
        data = [here.topic_config(topic, entry) for entry in admin.configs(topic)]
        return here.collection("KafkaTopicConfigList", here.url("topics", topic, "configs"), data)

    @router.post("/clusters/{cluster_id}/topics/{topic}/configs:alter", status_code=204)
    def alter_configs(
        request: Request, cluster_id: str, topic: str, payload: Annotated[Any, Body()] = None
    ) -> Response:
        urls(request, cluster_id)
        body = _body_object(payload)
        data = body.get("data")
        if not isinstance(data, list):
            raise RestError(BAD_REQUEST, 'data is a list of {"name", "value", "operation"}')
        changes: list[tuple[str, str | None]] = []
        for entry in data:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise RestError(BAD_REQUEST, 'each entry of data is {"name", "value", "operation"}')
            operation = str(entry.get("operation") or "SET").upper()
            if operation == "SET":
                value = entry.get("value")
                if value is None or isinstance(value, dict | list):
                    raise RestError(BAD_REQUEST, f"config {entry['name']}: SET needs a value")
                changes.append((entry["name"], str(value)))
            elif operation == "DELETE":
                changes.append((entry["name"], None))
            else:
                raise bad_request(f"config {entry['name']}: operation must be SET or DELETE")
        admin.alter_configs(topic, changes, validate_only=body.get("validate_only") is True)
        return Response(status_code=204)

    @router.get("/clusters/{cluster_id}/topics/{topic}/configs/{name}")
    def get_config(request: Request, cluster_id: str, topic: str, name: str) -> Any:
        here = urls(request, cluster_id)
        return here.topic_config(topic, admin.config(topic, name))

    @router.put("/clusters/{cluster_id}/topics/{topic}/configs/{name}", status_code=204)
    def update_config(
        request: Request,
        cluster_id: str,
        topic: str,
        name: str,
        payload: Annotated[Any, Body()] = None,
    ) -> Response:
        urls(request, cluster_id)
        value = _body_object(payload).get("value")
        if value is None or isinstance(value, dict | list):
            raise RestError(BAD_REQUEST, 'the body is {"value": "..."}')
        admin.alter_configs(topic, [(name, str(value))])
        return Response(status_code=204)

    @router.delete("/clusters/{cluster_id}/topics/{topic}/configs/{name}", status_code=204)
    def reset_config(request: Request, cluster_id: str, topic: str, name: str) -> Response:
        urls(request, cluster_id)
        admin.alter_configs(topic, [(name, None)])
        return Response(status_code=204)

    # -- consumer groups ---------------------------------------------------------------------

    def group_body(here: Urls, group: str) -> dict[str, Any]:
        info = admin.group(group)
        return here.consumer_group(
            group,
            simple=info.simple,
            assignor=info.assignor,
            state=info.state,
            coordinator=info.coordinator,
            group_type=info.group_type,
        )

    @router.get("/clusters/{cluster_id}/consumer-groups")
    def list_groups(request: Request, cluster_id: str) -> Any:
        here = urls(request, cluster_id)
        data = []
        for group in admin.groups():
            try:
                data.append(group_body(here, group))
            except RestError:
                continue  # gone while we looked
        return here.collection("KafkaConsumerGroupList", here.url("consumer-groups"), data)

    @router.get("/clusters/{cluster_id}/consumer-groups/{group}")
    def get_group(request: Request, cluster_id: str, group: str) -> Any:
        return group_body(urls(request, cluster_id), group)

    @router.get("/clusters/{cluster_id}/consumer-groups/{group}/consumers")
    def list_consumers(request: Request, cluster_id: str, group: str) -> Any:
        here = urls(request, cluster_id)
        data = [here.consumer(group, m, i, c) for m, i, c, _ in admin.group(group).members]
        return here.collection(
            "KafkaConsumerList", here.url("consumer-groups", group, "consumers"), data
        )

    @router.get("/clusters/{cluster_id}/consumer-groups/{group}/consumers/{consumer}")
    def get_consumer(request: Request, cluster_id: str, group: str, consumer: str) -> Any:
        here = urls(request, cluster_id)
        for member, instance, client, _ in admin.group(group).members:
            if member == consumer:
                return here.consumer(group, member, instance, client)
        raise RestError(404, f"Consumer {consumer} not found in group {group}.")

    @router.get("/clusters/{cluster_id}/consumer-groups/{group}/lag-summary")
    def lag_summary(request: Request, cluster_id: str, group: str) -> Any:
        here = urls(request, cluster_id)
        lags = [_lag_fields(here, group, lag) for lag in admin.lags(group)]
        return here.lag_summary(group, lags)

    @router.get("/clusters/{cluster_id}/consumer-groups/{group}/lags")
    def list_lags(request: Request, cluster_id: str, group: str) -> Any:
        here = urls(request, cluster_id)
        data = [_lag_fields(here, group, lag) for lag in admin.lags(group)]
        return here.collection(
            "KafkaConsumerLagList", here.url("consumer-groups", group, "lags"), data
        )

    @router.get(
        "/clusters/{cluster_id}/consumer-groups/{group}/lags/{topic}/partitions/{partition}"
    )
    def get_lag(request: Request, cluster_id: str, group: str, topic: str, partition: int) -> Any:
        here = urls(request, cluster_id)
        for lag in admin.lags(group):
            if lag.topic == topic and lag.partition == partition:
                return _lag_fields(here, group, lag)
        raise RestError(404, f"Consumer lag of {topic}-{partition} not found in group {group}.")

    return router
