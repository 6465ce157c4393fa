"""Request handlers, one module per API: ``async handle(broker, request, client)``.

A handler returns the response, or None when none is due (acks=0).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sluice.broker.broker import Broker
from sluice.broker.handlers import (
    api_versions,
    configs,
    delete_records,
    fetch,
    groups,
    init_producer_id,
    list_offsets,
    log_dirs,
    metadata,
    offsets,
    produce,
    topics_admin,
    transactions,
)
from sluice.broker.protocol import versions as v
from sluice.broker.protocol.context import Connection

Handler = Callable[[Broker, Any, Connection], Awaitable[Any]]

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
    v.FIND_COORDINATOR: groups.find_coordinator,
    v.JOIN_GROUP: groups.join_group,
    v.SYNC_GROUP: groups.sync_group,
    v.HEARTBEAT: groups.heartbeat,
    v.LEAVE_GROUP: groups.leave_group,
    v.DESCRIBE_GROUPS: groups.describe_groups,
    v.LIST_GROUPS: groups.list_groups,
    v.DELETE_GROUPS: groups.delete_groups,
    v.OFFSET_COMMIT: offsets.offset_commit,
    v.OFFSET_FETCH: offsets.offset_fetch,
    v.OFFSET_DELETE: offsets.offset_delete,
    v.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
    v.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
    v.END_TXN: transactions.end_txn,
    v.TXN_OFFSET_COMMIT: transactions.txn_offset_commit,
    v.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
    v.LIST_TRANSACTIONS: transactions.list_transactions,
    v.DESCRIBE_LOG_DIRS: log_dirs.handle,
}

assert set(HANDLERS) == set(v.SUPPORTED), "every supported API needs a handler"
