"""kio's response class for an API key and version, cached and typed by API key: each key's
overload returns the union of :mod:`.messages` for that API, so a handler that builds its
response from ``response_schema(KEY, version)`` is checked against every version served."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast, overload

from kio.index import load_response_schema

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AddOffsetsToTxnResponse,
        AddPartitionsToTxnResponse,
        AlterClientQuotasResponse,
        AlterConfigsResponse,
        AlterPartitionReassignmentsResponse,
        AlterReplicaLogDirsResponse,
        AlterUserScramCredentialsResponse,
        ApiVersionsResponse,
        CreateAclsResponse,
        CreatePartitionsResponse,
        CreateTopicsResponse,
        DeleteAclsResponse,
        DeleteGroupsResponse,
        DeleteRecordsResponse,
        DeleteTopicsResponse,
        DescribeAclsResponse,
        DescribeClientQuotasResponse,
        DescribeClusterResponse,
        DescribeConfigsResponse,
        DescribeGroupsResponse,
        DescribeLogDirsResponse,
        DescribeTransactionsResponse,
        DescribeUserScramCredentialsResponse,
        ElectLeadersResponse,
        EndTxnResponse,
        FetchResponse,
        FindCoordinatorResponse,
        HeartbeatResponse,
        IncrementalAlterConfigsResponse,
        InitProducerIdResponse,
        JoinGroupResponse,
        LeaveGroupResponse,
        ListGroupsResponse,
        ListOffsetsResponse,
        ListPartitionReassignmentsResponse,
        ListTransactionsResponse,
        MetadataResponse,
        OffsetCommitResponse,
        OffsetDeleteResponse,
        OffsetFetchResponse,
        OffsetForLeaderEpochResponse,
        ProduceResponse,
        SaslAuthenticateResponse,
        SaslHandshakeResponse,
        SyncGroupResponse,
        TxnOffsetCommitResponse,
        WriteTxnMarkersResponse,
    )


__all__ = ["response_schema"]

_SCHEMAS: dict[tuple[int, int], type[Any]] = {}


# fmt: off
@overload
def response_schema(api_key: Literal[0], version: int) -> type[ProduceResponse]: ...
@overload
def response_schema(api_key: Literal[1], version: int) -> type[FetchResponse]: ...
@overload
def response_schema(api_key: Literal[2], version: int) -> type[ListOffsetsResponse]: ...
@overload
def response_schema(api_key: Literal[3], version: int) -> type[MetadataResponse]: ...
@overload
def response_schema(api_key: Literal[8], version: int) -> type[OffsetCommitResponse]: ...
@overload
def response_schema(api_key: Literal[9], version: int) -> type[OffsetFetchResponse]: ...
@overload
def response_schema(api_key: Literal[10], version: int) -> type[FindCoordinatorResponse]: ...
@overload
def response_schema(api_key: Literal[11], version: int) -> type[JoinGroupResponse]: ...
@overload
def response_schema(api_key: Literal[12], version: int) -> type[HeartbeatResponse]: ...
@overload
def response_schema(api_key: Literal[13], version: int) -> type[LeaveGroupResponse]: ...
@overload
def response_schema(api_key: Literal[14], version: int) -> type[SyncGroupResponse]: ...
@overload
def response_schema(api_key: Literal[15], version: int) -> type[DescribeGroupsResponse]: ...
@overload
def response_schema(api_key: Literal[16], version: int) -> type[ListGroupsResponse]: ...
@overload
def response_schema(api_key: Literal[17], version: int) -> type[SaslHandshakeResponse]: ...
@overload
def response_schema(api_key: Literal[18], version: int) -> type[ApiVersionsResponse]: ...
@overload
def response_schema(api_key: Literal[19], version: int) -> type[CreateTopicsResponse]: ...
@overload
def response_schema(api_key: Literal[20], version: int) -> type[DeleteTopicsResponse]: ...
@overload
def response_schema(api_key: Literal[21], version: int) -> type[DeleteRecordsResponse]: ...
@overload
def response_schema(api_key: Literal[22], version: int) -> type[InitProducerIdResponse]: ...
@overload
def response_schema(api_key: Literal[23], version: int) -> type[OffsetForLeaderEpochResponse]: ...
@overload
def response_schema(api_key: Literal[24], version: int) -> type[AddPartitionsToTxnResponse]: ...
@overload
def response_schema(api_key: Literal[25], version: int) -> type[AddOffsetsToTxnResponse]: ...
@overload
def response_schema(api_key: Literal[26], version: int) -> type[EndTxnResponse]: ...
@overload
def response_schema(api_key: Literal[27], version: int) -> type[WriteTxnMarkersResponse]: ...
@overload
def response_schema(api_key: Literal[28], version: int) -> type[TxnOffsetCommitResponse]: ...
@overload
def response_schema(api_key: Literal[29], version: int) -> type[DescribeAclsResponse]: ...
@overload
def response_schema(api_key: Literal[30], version: int) -> type[CreateAclsResponse]: ...
@overload
def response_schema(api_key: Literal[31], version: int) -> type[DeleteAclsResponse]: ...
@overload
def response_schema(api_key: Literal[32], version: int) -> type[DescribeConfigsResponse]: ...
@overload
def response_schema(api_key: Literal[33], version: int) -> type[AlterConfigsResponse]: ...
@overload
def response_schema(api_key: Literal[34], version: int) -> type[AlterReplicaLogDirsResponse]: ...
@overload
def response_schema(api_key: Literal[35], version: int) -> type[DescribeLogDirsResponse]: ...
@overload
def response_schema(api_key: Literal[36], version: int) -> type[SaslAuthenticateResponse]: ...
@overload
def response_schema(api_key: Literal[37], version: int) -> type[CreatePartitionsResponse]: ...
@overload
def response_schema(api_key: Literal[42], version: int) -> type[DeleteGroupsResponse]: ...
@overload
def response_schema(api_key: Literal[43], version: int) -> type[ElectLeadersResponse]: ...
@overload
def response_schema(
    api_key: Literal[44], version: int
) -> type[IncrementalAlterConfigsResponse]: ...
@overload
def response_schema(
    api_key: Literal[45], version: int
) -> type[AlterPartitionReassignmentsResponse]: ...
@overload
def response_schema(
    api_key: Literal[46], version: int
) -> type[ListPartitionReassignmentsResponse]: ...
@overload
def response_schema(api_key: Literal[47], version: int) -> type[OffsetDeleteResponse]: ...
@overload
def response_schema(api_key: Literal[48], version: int) -> type[DescribeClientQuotasResponse]: ...
@overload
def response_schema(api_key: Literal[49], version: int) -> type[AlterClientQuotasResponse]: ...
@overload
def response_schema(
    api_key: Literal[50], version: int
) -> type[DescribeUserScramCredentialsResponse]: ...
@overload
def response_schema(
    api_key: Literal[51], version: int
) -> type[AlterUserScramCredentialsResponse]: ...
@overload
def response_schema(api_key: Literal[60], version: int) -> type[DescribeClusterResponse]: ...
@overload
def response_schema(api_key: Literal[65], version: int) -> type[DescribeTransactionsResponse]: ...
@overload
def response_schema(api_key: Literal[66], version: int) -> type[ListTransactionsResponse]: ...
@overload
def response_schema(api_key: int, version: int) -> type[Any]: ...
# fmt: on


def response_schema(api_key: int, version: int) -> type[Any]:
    """The response class for ``(api_key, version)`` (cached: kio resolves it by name).

    >>> response_schema(18, 3)
    <class 'kio.schema.api_versions.v3.response.ApiVersionsResponse'>
    """
    if (schema := _SCHEMAS.get((api_key, version))) is None:
        schema = _SCHEMAS[api_key, version] = cast(
            type[Any], load_response_schema(api_key, version)
        )
    return schema
