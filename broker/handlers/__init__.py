"""Request handlers, one module per API: ``async handle(broker, request) -> response | None``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.handlers import (
    api_versions,
    configs,
    delete_records,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
    topics_admin,
)
from sluice.broker.protocol import versions as v

Handler = Callable[[Broker, Any], Awaitable[Any]]

HANDLERS: dict[int, Handler] = {
    v.PRODUCE: produce.handle,
    v.FETCH: fetch.handle,
    v.LIST_OFFSETS: list_offsets.handle,
    v.METADATA: metadata.handle,
    v.API_VERSIONS: api_versions.handle,
    v.CREATE_TOPICS: topics_admin.create_topics,
    v.DELETE_TOPICS: topics_admin.delete_topics,
    v.CREATE_PARTITIONS: topics_admin.create_partitions,
    v.DELETE_RECORDS: delete_records.handle,
    v.INIT_PRODUCER_ID: init_producer_id.handle,
    v.DESCRIBE_CONFIGS: configs.describe_configs,
    v.ALTER_CONFIGS: configs.alter_configs,
    v.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
}

assert set(HANDLERS) == set(v.SUPPORTED), "every supported API needs a handler"
