"""Transaction APIs: producer ids, the transaction protocol, markers, listing. Each name is the
union of kio's classes of the versions served (see :mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.add_offsets_to_txn import v0 as add_offsets_to_txn_v0
from kio.schema.add_offsets_to_txn import v1 as add_offsets_to_txn_v1
from kio.schema.add_offsets_to_txn import v2 as add_offsets_to_txn_v2
from kio.schema.add_offsets_to_txn import v3 as add_offsets_to_txn_v3
from kio.schema.add_partitions_to_txn import v0 as add_partitions_to_txn_v0
from kio.schema.add_partitions_to_txn import v1 as add_partitions_to_txn_v1
from kio.schema.add_partitions_to_txn import v2 as add_partitions_to_txn_v2
from kio.schema.add_partitions_to_txn import v3 as add_partitions_to_txn_v3
from kio.schema.describe_transactions import v0 as describe_transactions_v0
from kio.schema.end_txn import v0 as end_txn_v0
from kio.schema.end_txn import v1 as end_txn_v1
from kio.schema.end_txn import v2 as end_txn_v2
from kio.schema.end_txn import v3 as end_txn_v3
from kio.schema.init_producer_id import v0 as init_producer_id_v0
from kio.schema.init_producer_id import v1 as init_producer_id_v1
from kio.schema.init_producer_id import v2 as init_producer_id_v2
from kio.schema.init_producer_id import v3 as init_producer_id_v3
from kio.schema.init_producer_id import v4 as init_producer_id_v4
from kio.schema.list_transactions import v0 as list_transactions_v0
from kio.schema.txn_offset_commit import v0 as txn_offset_commit_v0
from kio.schema.txn_offset_commit import v1 as txn_offset_commit_v1
from kio.schema.txn_offset_commit import v2 as txn_offset_commit_v2
from kio.schema.txn_offset_commit import v3 as txn_offset_commit_v3
from kio.schema.write_txn_markers import v1 as write_txn_markers_v1

__all__ = [
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResponse",
    "DescribeTransactionsRequest",
    "DescribeTransactionsResponse",
    "EndTxnRequest",
    "EndTxnResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "TxnOffsetCommitRequest",
    "TxnOffsetCommitResponse",
    "WriteTxnMarkersRequest",
    "WriteTxnMarkersResponse",
]

# fmt: off
# WriteTxnMarkers (key 27), version 1
WriteTxnMarkersRequest: TypeAlias = write_txn_markers_v1.WriteTxnMarkersRequest
WriteTxnMarkersResponse: TypeAlias = write_txn_markers_v1.WriteTxnMarkersResponse
# InitProducerId (key 22), versions 0-4
InitProducerIdRequest: TypeAlias = (
    init_producer_id_v0.InitProducerIdRequest | init_producer_id_v1.InitProducerIdRequest
    | init_producer_id_v2.InitProducerIdRequest | init_producer_id_v3.InitProducerIdRequest
    | init_producer_id_v4.InitProducerIdRequest
)
InitProducerIdResponse: TypeAlias = (
    init_producer_id_v0.InitProducerIdResponse | init_producer_id_v1.InitProducerIdResponse
    | init_producer_id_v2.InitProducerIdResponse | init_producer_id_v3.InitProducerIdResponse
    | init_producer_id_v4.InitProducerIdResponse
)
# AddPartitionsToTxn (key 24), versions 0-3
AddPartitionsToTxnRequest: TypeAlias = (
    add_partitions_to_txn_v0.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v1.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v2.AddPartitionsToTxnRequest
    | add_partitions_to_txn_v3.AddPartitionsToTxnRequest
)
AddPartitionsToTxnResponse: TypeAlias = (
    add_partitions_to_txn_v0.AddPartitionsToTxnResponse
    | add_partitions_to_txn_v1.AddPartitionsToTxnResponse
    | add_partitions_to_txn_v2.AddPartitionsToTxnResponse
    | add_partitions_to_txn_v3.AddPartitionsToTxnResponse
)
# AddOffsetsToTxn (key 25), versions 0-3
AddOffsetsToTxnRequest: TypeAlias = (
    add_offsets_to_txn_v0.AddOffsetsToTxnRequest | add_offsets_to_txn_v1.AddOffsetsToTxnRequest
    | add_offsets_to_txn_v2.AddOffsetsToTxnRequest | add_offsets_to_txn_v3.AddOffsetsToTxnRequest
)
AddOffsetsToTxnResponse: TypeAlias = (
    add_offsets_to_txn_v0.AddOffsetsToTxnResponse | add_offsets_to_txn_v1.AddOffsetsToTxnResponse
    | add_offsets_to_txn_v2.AddOffsetsToTxnResponse | add_offsets_to_txn_v3.AddOffsetsToTxnResponse
)
# EndTxn (key 26), versions 0-3
EndTxnRequest: TypeAlias = (
    end_txn_v0.EndTxnRequest | end_txn_v1.EndTxnRequest | end_txn_v2.EndTxnRequest
    | end_txn_v3.EndTxnRequest
)
EndTxnResponse: TypeAlias = (
    end_txn_v0.EndTxnResponse | end_txn_v1.EndTxnResponse | end_txn_v2.EndTxnResponse
    | end_txn_v3.EndTxnResponse
)
# TxnOffsetCommit (key 28), versions 0-3
TxnOffsetCommitRequest: TypeAlias = (
    txn_offset_commit_v0.TxnOffsetCommitRequest | txn_offset_commit_v1.TxnOffsetCommitRequest
    | txn_offset_commit_v2.TxnOffsetCommitRequest | txn_offset_commit_v3.TxnOffsetCommitRequest
)
TxnOffsetCommitResponse: TypeAlias = (
    txn_offset_commit_v0.TxnOffsetCommitResponse | txn_offset_commit_v1.TxnOffsetCommitResponse
    | txn_offset_commit_v2.TxnOffsetCommitResponse | txn_offset_commit_v3.TxnOffsetCommitResponse
)
# DescribeTransactions (key 65), versions 0
DescribeTransactionsRequest: TypeAlias = describe_transactions_v0.DescribeTransactionsRequest
DescribeTransactionsResponse: TypeAlias = describe_transactions_v0.DescribeTransactionsResponse
# ListTransactions (key 66), versions 0
ListTransactionsRequest: TypeAlias = list_transactions_v0.ListTransactionsRequest
ListTransactionsResponse: TypeAlias = list_transactions_v0.ListTransactionsResponse
# fmt: on
