"""Security APIs: the SASL exchange (SaslHandshake, SaslAuthenticate), users' SCRAM
credentials (KIP-554) and ACLs (CreateAcls, DescribeAcls, DeleteAcls). Each name is the
union of kio's classes of the versions served (see :mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.alter_user_scram_credentials import v0 as alter_user_scram_credentials_v0
from kio.schema.create_acls import v1 as create_acls_v1
from kio.schema.create_acls import v2 as create_acls_v2
from kio.schema.create_acls import v3 as create_acls_v3
from kio.schema.delete_acls import v1 as delete_acls_v1
from kio.schema.delete_acls import v2 as delete_acls_v2
from kio.schema.delete_acls import v3 as delete_acls_v3
from kio.schema.describe_acls import v1 as describe_acls_v1
from kio.schema.describe_acls import v2 as describe_acls_v2
from kio.schema.describe_acls import v3 as describe_acls_v3
from kio.schema.describe_user_scram_credentials import v0 as describe_user_scram_credentials_v0
from kio.schema.sasl_authenticate import v0 as sasl_authenticate_v0
from kio.schema.sasl_authenticate import v1 as sasl_authenticate_v1
from kio.schema.sasl_authenticate import v2 as sasl_authenticate_v2
from kio.schema.sasl_handshake import v0 as sasl_handshake_v0
from kio.schema.sasl_handshake import v1 as sasl_handshake_v1

__all__ = [
    "AlterUserScramCredentialsRequest",
    "AlterUserScramCredentialsResponse",
    "CreateAclsRequest",
    "CreateAclsResponse",
    "DeleteAclsRequest",
    "DeleteAclsResponse",
    "DescribeAclsRequest",
    "DescribeAclsResponse",
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

# DescribeAcls (key 29), versions 1-3
DescribeAclsRequest: TypeAlias = (
    describe_acls_v1.DescribeAclsRequest
    | describe_acls_v2.DescribeAclsRequest
    | describe_acls_v3.DescribeAclsRequest
)
DescribeAclsResponse: TypeAlias = (
    describe_acls_v1.DescribeAclsResponse
    | describe_acls_v2.DescribeAclsResponse
    | describe_acls_v3.DescribeAclsResponse
)
# CreateAcls (key 30), versions 1-3
CreateAclsRequest: TypeAlias = (
    create_acls_v1.CreateAclsRequest
    | create_acls_v2.CreateAclsRequest
    | create_acls_v3.CreateAclsRequest
)
CreateAclsResponse: TypeAlias = (
    create_acls_v1.CreateAclsResponse
    | create_acls_v2.CreateAclsResponse
    | create_acls_v3.CreateAclsResponse
)
# DeleteAcls (key 31), versions 1-3
DeleteAclsRequest: TypeAlias = (
    delete_acls_v1.DeleteAclsRequest
    | delete_acls_v2.DeleteAclsRequest
    | delete_acls_v3.DeleteAclsRequest
)
DeleteAclsResponse: TypeAlias = (
    delete_acls_v1.DeleteAclsResponse
    | delete_acls_v2.DeleteAclsResponse
    | delete_acls_v3.DeleteAclsResponse
)
