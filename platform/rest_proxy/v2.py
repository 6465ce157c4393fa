"""API v2: consumer instances and produce, as Confluent REST Proxy's v2 answers them.

::

    POST   /consumers/{g}                                      {"instance_id", "base_uri"}
    DELETE /consumers/{g}/instances/{i}                        204
    POST   /consumers/{g}/instances/{i}/subscription           204 ({"topics"} | {"topic_pattern"})
    GET    /consumers/{g}/instances/{i}/subscription           {"topics": [...]}
    DELETE /consumers/{g}/instances/{i}/subscription           204
    POST   /consumers/{g}/instances/{i}/assignments            204 ({"partitions": [...]})
    GET    /consumers/{g}/instances/{i}/assignments            {"partitions": [...]}
    POST   /consumers/{g}/instances/{i}/positions              204 ({"offsets": [...]})
    POST   /consumers/{g}/instances/{i}/positions/beginning    204 ({"partitions": [...]})
    POST   /consumers/{g}/instances/{i}/positions/end          204 ({"partitions": [...]})
    GET    /consumers/{g}/instances/{i}/records                [{"topic", "key", "value",
                                                                 "partition", "offset"}]
    POST   /consumers/{g}/instances/{i}/offsets                200 (body: offsets, or none:
                                                                 what was read)
    GET    /consumers/{g}/instances/{i}/offsets                {"offsets": [...]}
    POST   /topics/{t}                                          {"key_schema_id",
                                                                 "value_schema_id", "offsets"}

Records are read with ``Accept: application/vnd.kafka.<format>.v2+json`` of the instance's
format (another one: 406 with 40601). Offsets committed through ``POST …/offsets`` are those
of the last records processed, as Confluent's are: the group's committed offset becomes
``offset + 1``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from fastapi import APIRouter, Body, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from sluice.rest_proxy.consumers import ConsumerInstances, InstanceConfig
from sluice.rest_proxy.delivery import OutRecord, send
from sluice.rest_proxy.errors import (
    BAD_REQUEST,
    CONSUMER_FORMAT_MISMATCH,
    KAFKA_RETRIABLE,
    KEY_SCHEMA_MISSING,
    PARTITION_NOT_FOUND,
    VALUE_SCHEMA_MISSING,
    RestError,
)
from sluice.rest_proxy.formats import EmbeddedFormat, encode_plain
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import RegisteredSchema, SchemaRequest, SchemaSerdes

__all__ = ["V2_CONTENT_TYPE", "v2_router"]

V2_CONTENT_TYPE = "application/vnd.kafka.v2+json"
_EMBEDDED = re.compile(r"^application/vnd\.kafka(?:\.(?P<fmt>[a-z]+))?\.v2\+json$")


def _v2(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, media_type=V2_CONTENT_TYPE)


def _object(payload: Any, *, optional: bool = False) -> dict[str, Any]:
    if payload is None and optional:
        return {}
    if not isinstance(payload, dict):
        raise RestError(BAD_REQUEST, "The request body must be a JSON object")
    return payload


def _partitions(
    body: dict[str, Any], field: str = "partitions", *, offsets: bool = False
) -> list[TopicPartition]:
    entries = body.get(field)
    if not isinstance(entries, list):
        raise RestError(BAD_REQUEST, f"{field} must be a list")
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise RestError(BAD_REQUEST, f"each entry of {field} needs a topic (string)")
        partition = entry.get("partition")
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise RestError(BAD_REQUEST, f"each entry of {field} needs a partition (integer ≥ 0)")
        if offsets:
            offset = entry.get("offset")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise RestError(BAD_REQUEST, f"each entry of {field} needs an offset (integer ≥ 0)")
            found.append(TopicPartition(entry["topic"], partition, offset))
        else:
            found.append(TopicPartition(entry["topic"], partition))
    return found


def _embedded_of(content_type: str | None, default: str | None) -> str | None:
    """The embedded format a v2 media type (or an Accept list of them) names: ``default`` for
    plain JSON, ``*/*`` or none; ``None`` when no type of the list is a v2 one.

    >>> _embedded_of("application/vnd.kafka.avro.v2+json; q=0.9, */*", "binary")
    'avro'
    >>> _embedded_of("text/html", "binary") is None
    True
    """
    generic = False
    for item in (content_type or "").split(","):
        media = item.split(";")[0].strip().lower()
        if media in ("", "*/*", "application/json", "application/*", V2_CONTENT_TYPE):
            generic = True
            continue
        found = _EMBEDDED.match(media)
        if found is not None:
            return found["fmt"] or default
    return default if generic else None


def v2_router(pool: ClientPool, instances: ConsumerInstances, serdes: SchemaSerdes) -> APIRouter:
    """The v2 routes."""
    router = APIRouter()

    # -- instances ---------------------------------------------------------------------------

    @router.post("/consumers/{group}")
    def create_instance(
        request: Request, group: str, payload: Annotated[Any, Body()] = None
    ) -> Any:
        instance = instances.create(group, InstanceConfig.parse(payload))
        base = str(request.base_url).rstrip("/")
        return _v2(
            {
                "instance_id": instance.name,
                "base_uri": f"{base}/consumers/{group}/instances/{instance.name}",
            }
        )

    @router.delete("/consumers/{group}/instances/{name}", status_code=204)
    def delete_instance(group: str, name: str) -> Response:
        instances.delete(group, name)
        return Response(status_code=204)

    @router.post("/consumers/{group}/instances/{name}/subscription", status_code=204)
    def subscribe(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        body = _object(payload)
        topics, pattern = body.get("topics"), body.get("topic_pattern")
        if (topics is None) == (pattern is None):
            raise RestError(BAD_REQUEST, "Give either topics (a list) or topic_pattern (a regex)")
        if topics is not None and (
            not isinstance(topics, list)
            or not topics
            or not all(isinstance(t, str) and t for t in topics)
        ):
            raise RestError(BAD_REQUEST, "topics must be a non-empty list of topic names")
        if pattern is not None:
            if not isinstance(pattern, str) or not pattern:
                raise RestError(BAD_REQUEST, "topic_pattern must be a regular expression")
            try:
                re.compile(pattern)
            except re.error as error:
                raise RestError(BAD_REQUEST, f"topic_pattern: {error}") from None
        instance = instances.get(group, name)
        with instance.lock:
            instance.subscribe(topics or [], pattern)
        return Response(status_code=204)

    @router.get("/consumers/{group}/instances/{name}/subscription")
    def subscription(group: str, name: str) -> Any:
        instance = instances.get(group, name)
        return _v2({"topics": instance.subscription})

    @router.delete("/consumers/{group}/instances/{name}/subscription", status_code=204)
    def unsubscribe(group: str, name: str) -> Response:
        instance = instances.get(group, name)
        with instance.lock:
            instance.unsubscribe()
        return Response(status_code=204)

    @router.post("/consumers/{group}/instances/{name}/assignments", status_code=204)
    def assign(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        partitions = _partitions(_object(payload))
        instance = instances.get(group, name)
        with instance.lock:
            instance.assign(partitions)
        return Response(status_code=204)

    @router.get("/consumers/{group}/instances/{name}/assignments")
    def assignments(group: str, name: str) -> Any:
        instance = instances.get(group, name)
        with instance.lock:
            assigned = instance.consumer.assignment()
        return _v2(
            {"partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in assigned]}
        )

    @router.post("/consumers/{group}/instances/{name}/positions", status_code=204)
    def seek(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        offsets = _partitions(_object(payload), "offsets", offsets=True)
        instance = instances.get(group, name)
        with instance.lock:
            instance.seek(offsets)
        return Response(status_code=204)

    @router.post("/consumers/{group}/instances/{name}/positions/beginning", status_code=204)
    def seek_beginning(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        partitions = _partitions(_object(payload))
        instance = instances.get(group, name)
        with instance.lock:
            instance.seek(
                [TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in partitions]
            )
        return Response(status_code=204)

    @router.post("/consumers/{group}/instances/{name}/positions/end", status_code=204)
    def seek_end(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        partitions = _partitions(_object(payload))
        instance = instances.get(group, name)
        with instance.lock:
            instance.seek([TopicPartition(tp.topic, tp.partition, OFFSET_END) for tp in partitions])
        return Response(status_code=204)

    @router.get("/consumers/{group}/instances/{name}/records")
    def records(
        request: Request,
        group: str,
        name: str,
        timeout: Annotated[int | None, Query(ge=0)] = None,
        max_bytes: Annotated[int | None, Query(ge=1)] = None,
    ) -> Any:
        instance = instances.get(group, name)
        wanted = _embedded_of(request.headers.get("accept"), instance.fmt)
        if wanted != instance.fmt:
            raise RestError(
                CONSUMER_FORMAT_MISMATCH,
                "The requested embedded data format does "
                "not match the deserializer for this consumer instance",
            )
        with instance.lock:
            found = instance.records(timeout, max_bytes)
            instance.touch()
        return JSONResponse(found, media_type=f"application/vnd.kafka.{instance.fmt}.v2+json")

    @router.post("/consumers/{group}/instances/{name}/offsets")
    def commit(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Response:
        body = _object(payload, optional=True)
        offsets = None
        if body.get("offsets") is not None:
            given = _partitions(body, "offsets", offsets=True)
            offsets = [TopicPartition(tp.topic, tp.partition, tp.offset + 1) for tp in given]
        instance = instances.get(group, name)
        with instance.lock:
            instance.commit(offsets)
        return Response(status_code=200)

    @router.get("/consumers/{group}/instances/{name}/offsets")
    def committed(group: str, name: str, payload: Annotated[Any, Body()] = None) -> Any:
        partitions = _partitions(_object(payload))
        instance = instances.get(group, name)
        with instance.lock:
            found = instance.committed(partitions, pool.timeout_s)
        return _v2(
            {
                "offsets": [
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": tp.offset,
                        "metadata": tp.metadata or "",
                    }
                    for tp in found
                ]
            }
        )

    # -- produce -----------------------------------------------------------------------------

    @router.post("/topics/{topic}")
    async def produce(request: Request, topic: str) -> Any:
        fmt_name = _embedded_of(request.headers.get("content-type"), "json")
        if fmt_name is None:
            raise RestError(415, "HTTP 415 Unsupported Media Type")
        try:
            fmt = EmbeddedFormat.parse(fmt_name)
        except ValueError:
            raise RestError(415, "HTTP 415 Unsupported Media Type") from None
        try:
            payload = await request.json()
        except ValueError as error:
            raise RestError(BAD_REQUEST, f"Error processing JSON: {error}") from None
        body = _object(payload)
        entries = body.get("records")
        if not isinstance(entries, list) or not entries:
            raise RestError(
                42206 if isinstance(entries, list) else BAD_REQUEST,
                "records must be a non-empty list of {key, value, partition}",
            )
        partitions = await pool.partitions_soon(topic)
        if fmt.needs_schema:
            records, key_id, value_id = await run_in_threadpool(
                _schema_records, serdes, topic, fmt, body, entries, partitions
            )
        else:
            records = [_plain_record(fmt, entry, partitions, topic) for entry in entries]
            key_id = value_id = None
        reports = await send(pool, topic, records)
        offsets = []
        for report in reports:
            if isinstance(report, RestError):
                offsets.append(
                    {
                        "partition": None,
                        "offset": None,
                        "error_code": 2 if report.error_code == KAFKA_RETRIABLE else 1,
                        "error": report.message,
                    }
                )
            else:
                offsets.append(
                    {
                        "partition": report.partition,
                        "offset": report.offset,
                        "error_code": None,
                        "error": None,
                    }
                )
        return _v2({"key_schema_id": key_id, "value_schema_id": value_id, "offsets": offsets})

    return router


def _entry(entry: Any, partitions: int, topic: str) -> tuple[Any, Any, int | None]:
    if not isinstance(entry, dict):
        raise RestError(BAD_REQUEST, 'each record is {"key", "value", "partition"}')
    partition = entry.get("partition")
    if partition is not None:
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise RestError(BAD_REQUEST, "partition must be an integer ≥ 0")
        if partition >= partitions:
            raise RestError(PARTITION_NOT_FOUND, f"Partition {partition} of {topic} not found.")
    return entry.get("key"), entry.get("value"), partition


def _plain_record(fmt: EmbeddedFormat, entry: Any, partitions: int, topic: str) -> OutRecord:
    key, value, partition = _entry(entry, partitions, topic)
    return OutRecord(encode_plain(fmt, key), encode_plain(fmt, value), partition)


def _schema_records(
    serdes: SchemaSerdes,
    topic: str,
    fmt: EmbeddedFormat,
    body: dict[str, Any],
    entries: list[Any],
    partitions: int,
) -> tuple[list[OutRecord], int | None, int | None]:
    parsed = [_entry(entry, partitions, topic) for entry in entries]
    schemas: list[RegisteredSchema | None] = []
    for is_key, name, missing in (
        (True, "key", KEY_SCHEMA_MISSING),
        (False, "value", VALUE_SCHEMA_MISSING),
    ):
        text, schema_id = body.get(f"{name}_schema"), body.get(f"{name}_schema_id")
        used = any((p[0] if is_key else p[1]) is not None for p in parsed)
        if text is None and schema_id is None:
            if used:
                raise RestError(
                    missing, f"Request includes {name}s but does not include {name} schema"
                )
            schemas.append(None)
            continue
        if text is not None and not isinstance(text, str):
            raise RestError(BAD_REQUEST, f"{name}_schema must be a string")
        if schema_id is not None and (
            isinstance(schema_id, bool) or not isinstance(schema_id, int)
        ):
            raise RestError(BAD_REQUEST, f"{name}_schema_id must be an integer")
        request = SchemaRequest(
            fmt=fmt, schema=text, schema_id=None if text is not None else schema_id
        )
        schemas.append(serdes.resolve(topic, is_key, request))
    key_schema, value_schema = schemas
    records = []
    for key, value, partition in parsed:
        records.append(
            OutRecord(
                None
                if key is None or key_schema is None
                else serdes.serialize(topic, True, key_schema, key),
                None
                if value is None or value_schema is None
                else serdes.serialize(topic, False, value_schema, value),
                partition,
            )
        )
    return (
        records,
        None if key_schema is None else key_schema.schema_id,
        None if value_schema is None else value_schema.schema_id,
    )
