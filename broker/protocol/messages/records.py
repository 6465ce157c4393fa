"""Record APIs: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords. Each name is
the union of kio's classes of the versions served (see
:mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.delete_records import v0 as delete_records_v0
from kio.schema.delete_records import v1 as delete_records_v1
from kio.schema.delete_records import v2 as delete_records_v2
from kio.schema.fetch import v4 as fetch_v4
from kio.schema.fetch import v5 as fetch_v5
from kio.schema.fetch import v6 as fetch_v6
from kio.schema.fetch import v7 as fetch_v7
from kio.schema.fetch import v8 as fetch_v8
from kio.schema.fetch import v9 as fetch_v9
from kio.schema.fetch import v10 as fetch_v10
from kio.schema.fetch import v11 as fetch_v11
from kio.schema.fetch import v12 as fetch_v12
from kio.schema.fetch import v13 as fetch_v13
from kio.schema.fetch import v14 as fetch_v14
from kio.schema.fetch import v15 as fetch_v15
from kio.schema.fetch import v16 as fetch_v16
from kio.schema.list_offsets import v1 as list_offsets_v1
from kio.schema.list_offsets import v2 as list_offsets_v2
from kio.schema.list_offsets import v3 as list_offsets_v3
from kio.schema.list_offsets import v4 as list_offsets_v4
from kio.schema.list_offsets import v5 as list_offsets_v5
from kio.schema.list_offsets import v6 as list_offsets_v6
from kio.schema.list_offsets import v7 as list_offsets_v7
from kio.schema.offset_for_leader_epoch import v2 as offset_for_leader_epoch_v2
from kio.schema.offset_for_leader_epoch import v3 as offset_for_leader_epoch_v3
from kio.schema.offset_for_leader_epoch import v4 as offset_for_leader_epoch_v4
from kio.schema.produce import v3 as produce_v3
from kio.schema.produce import v4 as produce_v4
from kio.schema.produce import v5 as produce_v5
from kio.schema.produce import v6 as produce_v6
from kio.schema.produce import v7 as produce_v7
from kio.schema.produce import v8 as produce_v8
from kio.schema.produce import v9 as produce_v9

__all__ = [
    "DeleteRecordsRequest",
    "DeleteRecordsResponse",
    "FetchRequest",
    "FetchResponse",
    "ListOffsetsRequest",
    "ListOffsetsResponse",
    "OffsetForLeaderEpochRequest",
    "OffsetForLeaderEpochResponse",
    "ProduceRequest",
    "ProduceResponse",
]

# fmt: off
# Produce (key 0), versions 3-9
ProduceRequest: TypeAlias = (
    produce_v3.ProduceRequest | produce_v4.ProduceRequest | produce_v5.ProduceRequest
    | produce_v6.ProduceRequest | produce_v7.ProduceRequest | produce_v8.ProduceRequest
    | produce_v9.ProduceRequest
)
ProduceResponse: TypeAlias = (
    produce_v3.ProduceResponse | produce_v4.ProduceResponse | produce_v5.ProduceResponse
    | produce_v6.ProduceResponse | produce_v7.ProduceResponse | produce_v8.ProduceResponse
    | produce_v9.ProduceResponse
)
# Fetch (key 1), versions 4-16
FetchRequest: TypeAlias = (
    fetch_v4.FetchRequest | fetch_v5.FetchRequest | fetch_v6.FetchRequest | fetch_v7.FetchRequest
    | fetch_v8.FetchRequest | fetch_v9.FetchRequest | fetch_v10.FetchRequest
    | fetch_v11.FetchRequest | fetch_v12.FetchRequest | fetch_v13.FetchRequest
    | fetch_v14.FetchRequest | fetch_v15.FetchRequest | fetch_v16.FetchRequest
)
FetchResponse: TypeAlias = (
    fetch_v4.FetchResponse | fetch_v5.FetchResponse | fetch_v6.FetchResponse
    | fetch_v7.FetchResponse | fetch_v8.FetchResponse | fetch_v9.FetchResponse
    | fetch_v10.FetchResponse | fetch_v11.FetchResponse | fetch_v12.FetchResponse
    | fetch_v13.FetchResponse | fetch_v14.FetchResponse | fetch_v15.FetchResponse
    | fetch_v16.FetchResponse
)
# ListOffsets (key 2), versions 1-7
ListOffsetsRequest: TypeAlias = (
    list_offsets_v1.ListOffsetsRequest | list_offsets_v2.ListOffsetsRequest
    | list_offsets_v3.ListOffsetsRequest | list_offsets_v4.ListOffsetsRequest
    | list_offsets_v5.ListOffsetsRequest | list_offsets_v6.ListOffsetsRequest
    | list_offsets_v7.ListOffsetsRequest
)
ListOffsetsResponse: TypeAlias = (
    list_offsets_v1.ListOffsetsResponse | list_offsets_v2.ListOffsetsResponse
    | list_offsets_v3.ListOffsetsResponse | list_offsets_v4.ListOffsetsResponse
    | list_offsets_v5.ListOffsetsResponse | list_offsets_v6.ListOffsetsResponse
    | list_offsets_v7.ListOffsetsResponse
)
# DeleteRecords (key 21), versions 0-2
DeleteRecordsRequest: TypeAlias = (
    delete_records_v0.DeleteRecordsRequest | delete_records_v1.DeleteRecordsRequest
    | delete_records_v2.DeleteRecordsRequest
)
DeleteRecordsResponse: TypeAlias = (
    delete_records_v0.DeleteRecordsResponse | delete_records_v1.DeleteRecordsResponse
    | delete_records_v2.DeleteRecordsResponse
)
# OffsetForLeaderEpoch (key 23), versions 2-4
OffsetForLeaderEpochRequest: TypeAlias = (
    offset_for_leader_epoch_v2.OffsetForLeaderEpochRequest
    | offset_for_leader_epoch_v3.OffsetForLeaderEpochRequest
    | offset_for_leader_epoch_v4.OffsetForLeaderEpochRequest
)
OffsetForLeaderEpochResponse: TypeAlias = (
    offset_for_leader_epoch_v2.OffsetForLeaderEpochResponse
    | offset_for_leader_epoch_v3.OffsetForLeaderEpochResponse
    | offset_for_leader_epoch_v4.OffsetForLeaderEpochResponse
)
# fmt: on
