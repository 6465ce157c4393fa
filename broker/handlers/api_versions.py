"""ApiVersions: which APIs and versions the broker serves.

The list comes from the API table (:data:`sluice.broker.handlers.SUPPORTED`), which passes it in
(its ApiVersions row calls :func:`response`). A request above the highest supported version is
answered, as Kafka does, with a v0 body carrying UNSUPPORTED_VERSION and the supported list, so
that the client retries with a version it can use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from sluice.broker.protocol.api_keys import API_VERSIONS
from sluice.broker.protocol.codec import encode_response, make, nested
from sluice.broker.protocol.response_schema import response_schema

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import ApiVersionsResponse

Supported = Mapping[int, tuple[int, int]]
"""``api_key -> (min_version, max_version)``."""


def _response(
    schema: type[ApiVersionsResponse], error: ErrorCode, supported: Supported
) -> ApiVersionsResponse:
    api_version = nested(schema, "api_keys")
    keys = tuple(
        make(api_version, api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(supported.items())
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


def response(version: int, supported: Supported) -> ApiVersionsResponse:
    """The answer to an ApiVersions request of ``version``: the APIs in ``supported``."""
    return _response(response_schema(API_VERSIONS, version), ErrorCode.none, supported)


def unsupported_version_response(correlation_id: int, supported: Supported) -> bytes:
    """The whole response frame for an ApiVersions request of a too-new version."""
    body = _response(ApiVersionsResponseV0, ErrorCode.unsupported_version, supported)
    return encode_response(API_VERSIONS, 0, correlation_id, body)
