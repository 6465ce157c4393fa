"""Security APIs: the SASL exchange (SaslHandshake, SaslAuthenticate) and users' SCRAM
credentials (KIP-554). Each name is the union of kio's classes
of the versions served (see :mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.alter_user_scram_credentials import v0 as alter_user_scram_credentials_v0
from kio.schema.describe_user_scram_credentials import v0 as describe_user_scram_credentials_v0
from kio.schema.sasl_authenticate import v0 as sasl_authenticate_v0
from kio.schema.sasl_authenticate import v1 as sasl_authenticate_v1
from kio.schema.sasl_authenticate import v2 as sasl_authenticate_v2
from kio.schema.sasl_handshake import v0 as sasl_handshake_v0
from kio.schema.sasl_handshake import v1 as sasl_handshake_v1

__all__ = [
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "DescribeUserScramCredentialsRequest",
    "DescribeUserScramCredentialsResponse",
    "SaslAuthenticateRequest",
    "SaslAuthenticateResponse",
    "SaslHandshakeRequest",
    "SaslHandshakeResponse",
]

# SaslHandshake (key 17), versions 0-1 (after v0, raw tokens without Kafka's framing)
SaslHandshakeRequest: TypeAlias = (
    sasl_handshake_v0.SaslHandshakeRequest | sasl_handshake_v1.SaslHandshakeRequest
)
SaslHandshakeResponse: TypeAlias = (
    sasl_handshake_v0.SaslHandshakeResponse | sasl_handshake_v1.SaslHandshakeResponse
)
# SaslAuthenticate (key 36), versions 0-2
SaslAuthenticateRequest: TypeAlias = (
    sasl_authenticate_v0.SaslAuthenticateRequest
    | sasl_authenticate_v1.SaslAuthenticateRequest
    | sasl_authenticate_v2.SaslAuthenticateRequest
)
SaslAuthenticateResponse: TypeAlias = (
    sasl_authenticate_v0.SaslAuthenticateResponse
    | sasl_authenticate_v1.SaslAuthenticateResponse
    | sasl_authenticate_v2.SaslAuthenticateResponse
)

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
