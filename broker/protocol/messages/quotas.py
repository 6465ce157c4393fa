"""Client quota APIs (KIP-546): DescribeClientQuotas and AlterClientQuotas. Each name is the
union of kio's classes of the versions served (see :mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.alter_client_quotas import v0 as alter_client_quotas_v0
from kio.schema.alter_client_quotas import v1 as alter_client_quotas_v1
from kio.schema.describe_client_quotas import v0 as describe_client_quotas_v0
from kio.schema.describe_client_quotas import v1 as describe_client_quotas_v1

__all__ = [
    "AlterClientQuotasRequest",
    "AlterClientQuotasResponse",
    "DescribeClientQuotasRequest",
    "DescribeClientQuotasResponse",
]

# DescribeClientQuotas (key 48), versions 0-1
DescribeClientQuotasRequest: TypeAlias = (
    describe_client_quotas_v0.DescribeClientQuotasRequest
    | describe_client_quotas_v1.DescribeClientQuotasRequest
)
DescribeClientQuotasResponse: TypeAlias = (
    describe_client_quotas_v0.DescribeClientQuotasResponse
    | describe_client_quotas_v1.DescribeClientQuotasResponse
)
# AlterClientQuotas (key 49), versions 0-1
AlterClientQuotasRequest: TypeAlias = (
    alter_client_quotas_v0.AlterClientQuotasRequest
    | alter_client_quotas_v1.AlterClientQuotasRequest
)
AlterClientQuotasResponse: TypeAlias = (
    alter_client_quotas_v0.AlterClientQuotasResponse
    | alter_client_quotas_v1.AlterClientQuotasResponse
)
