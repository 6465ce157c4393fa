"""ApiVersions: which APIs and versions the broker serves.

A request above the highest supported version is answered, as Kafka does, with a v0 body
carrying UNSUPPORTED_VERSION and the supported list, so that the client retries with a version
it can use.
"""

from __future__ import annotations

from typing import Any

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.codec import encode_response, make, nested, response_schema
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.versions import API_VERSIONS, SUPPORTED


def _response(schema: type[Any], error: ErrorCode) -> Any:
    api_version = nested(schema, "api_keys")
    keys = tuple(
        make(api_version, api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(SUPPORTED.items())
    )
    return make(
        schema,
        error_code=error,
        api_keys=keys,
        throttle_time=0,
        supported_features=(),
        finalized_features_epoch=-1,
        finalized_features=(),
        zk_migration_ready=False,
    )


async def handle(broker: Broker, request: Any, _client: Connection) -> Any:
    return _response(response_schema(API_VERSIONS, request.__version__), ErrorCode.none)


def unsupported_version_response(correlation_id: int) -> bytes:
    """The whole response frame for an ApiVersions request of a too-new version."""
    body = _response(ApiVersionsResponseV0, ErrorCode.unsupported_version)
    return encode_response(API_VERSIONS, 0, correlation_id, body)
