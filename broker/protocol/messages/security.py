"""Security APIs: users' SCRAM credentials (KIP-554). Each name is the union of kio's classes
of the versions served (see :mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.alter_user_scram_credentials import v0 as alter_user_scram_credentials_v0
from kio.schema.describe_user_scram_credentials import v0 as describe_user_scram_credentials_v0

__all__ = [
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
]

# DescribeUserScramCredentials (key 50), version 0
DescribeUserScramCredentialsRequest: TypeAlias = (
    describe_user_scram_credentials_v0.DescribeUserScramCredentialsRequest
)
DescribeUserScramCredentialsResponse: TypeAlias = (
    describe_user_scram_credentials_v0.DescribeUserScramCredentialsResponse
)
# AlterUserScramCredentials (key 51), version 0
AlterUserScramCredentialsRequest: TypeAlias = (
    alter_user_scram_credentials_v0.AlterUserScramCredentialsRequest
)
AlterUserScramCredentialsResponse: TypeAlias = (
    alter_user_scram_credentials_v0.AlterUserScramCredentialsResponse
)
