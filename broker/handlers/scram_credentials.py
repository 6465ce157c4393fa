"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): the users' SCRAM
credentials, kept in :attr:`Broker.scram_credentials` (ZooKeeper in a cluster, the data
directory on one node; :mod:`sluice.broker.security.credential_store`).

An upsertion carries the salted password, the salt and the iteration count — never the
password — from which the broker derives the credential it stores. Kafka's answers, per user:
RESOURCE_NOT_FOUND for a credential that does not exist (described or deleted),
DUPLICATE_RESOURCE for a user named twice (described) or a mechanism altered twice,
UNSUPPORTED_SASL_MECHANISM for a mechanism other than SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2),
UNACCEPTABLE_CREDENTIAL for an empty user name, salt or salted password or an iteration count
outside 4096–16384. A user with any refused alteration has none of its alterations applied.
Describe lists the mechanisms and iteration counts only.

>>> MECHANISMS[1], MECHANISM_IDS["SCRAM-SHA-512"]
('SCRAM-SHA-256', 2)
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.protocol.api_keys import (
    ALTER_USER_SCRAM_CREDENTIALS,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
)
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import CLUSTER_DENIED, refuses_cluster
from sluice.broker.security.credentials import ScramCredential

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    )

MECHANISMS: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ``ScramMechanism`` type ids."""
MECHANISM_IDS: Final = {name: code for code, name in MECHANISMS.items()}

_Refusal = tuple[ErrorCode, str]


async def describe(
    broker: Broker, request: DescribeUserScramCredentialsRequest, client: Connection
) -> DescribeUserScramCredentialsResponse:
    schema = response_schema(DESCRIBE_USER_SCRAM_CREDENTIALS, request.__version__)
    if refuses_cluster(broker.authorizer, client, DESCRIBE_USER_SCRAM_CREDENTIALS):
        return make(
            schema,
            throttle_time=0,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=CLUSTER_DENIED,
            results=(),
        )
    result_cls = nested(schema, "results")
    info_cls = nested(schema, "results", "credential_infos")
    stored = await run_blocking(broker.scram_credentials.users)
    asked = [u.name for u in request.users or ()]
    doubled = {user for user, n in Counter(asked).items() if n > 1}
    results = []
    for user in sorted(stored) if not asked else list(dict.fromkeys(asked)):
        refusal: _Refusal | None = None
        if user in doubled:
            refusal = (
                ErrorCode.duplicate_resource,
                "Cannot describe SCRAM credentials for the same user twice in a single request",
            )
        elif user not in stored:
            refusal = (
                ErrorCode.resource_not_found,
                "Attempt to describe a user credential that does not exist",
            )
        infos = () if refusal else tuple(
            make(info_cls, mechanism=MECHANISM_IDS[m], iterations=c.iterations)
            for m, c in sorted(stored[user].items())
        )  # fmt: skip
        results.append(
            make(
                result_cls,
                user=user,
                error_code=refusal[0] if refusal else ErrorCode.none,
                error_message=refusal[1] if refusal else None,
                credential_infos=infos,
            )
        )
    return make(
        schema, throttle_time=0, error_code=ErrorCode.none, error_message=None,
        results=tuple(results),
    )  # fmt: skip


async def alter(
    broker: Broker, request: AlterUserScramCredentialsRequest, client: Connection
) -> AlterUserScramCredentialsResponse:
    schema = response_schema(ALTER_USER_SCRAM_CREDENTIALS, request.__version__)
    result_cls = nested(schema, "results")
    store = broker.scram_credentials
    stored = await run_blocking(store.users)
    changes: list[tuple[str, int, Any]] = [
        (d.name, int(d.mechanism), None) for d in request.deletions
    ] + [(u.name, int(u.mechanism), u) for u in request.upsertions]
    twice = Counter((user, mechanism) for user, mechanism, _ in changes)
    refusals: dict[str, _Refusal] = {}
    upserts: dict[str, dict[str, ScramCredential]] = {}
    deletes: dict[str, set[str]] = {}
    if refuses_cluster(broker.authorizer, client, ALTER_USER_SCRAM_CREDENTIALS):
        refusals = dict.fromkeys(
            (user for user, _, _ in changes),
            (ErrorCode.cluster_authorization_failed, CLUSTER_DENIED),
        )
    for user, code, upsertion in changes:
        if user in refusals:
            continue
        refusal, credential = _check(user, code, upsertion, twice, stored)
        if refusal is not None:
            refusals[user] = refusal
        elif credential is not None:
            upserts.setdefault(user, {})[credential.mechanism] = credential
        else:
            deletes.setdefault(user, set()).add(MECHANISMS[code])
    results = []
    for user in dict.fromkeys(user for user, _, _ in changes):
        refusal = refusals.get(user)
        if refusal is None:
            await run_blocking(store.alter, user, upserts.get(user, {}), deletes.get(user, set()))
        results.append(
            make(
                result_cls,
                user=user,
                error_code=refusal[0] if refusal else ErrorCode.none,
                error_message=refusal[1] if refusal else None,
            )
        )
    return make(schema, throttle_time=0, results=tuple(results))


def _check(
    user: str,
    code: int,
    upsertion: Any,
    twice: Counter[tuple[str, int]],
    stored: dict[str, dict[str, ScramCredential]],
) -> tuple[_Refusal | None, ScramCredential | None]:
    """Kafka's refusal of one alteration, else the credential an upsertion makes."""
    if not user:
        return (ErrorCode.unacceptable_credential, "Username must not be empty"), None
    mechanism = MECHANISMS.get(code)
    if mechanism is None:
        return (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"), None
    if twice[(user, code)] > 1:
        message = "A user credential cannot be altered twice in the same request"
        return (ErrorCode.duplicate_resource, message), None
    if upsertion is None:
        if mechanism not in stored.get(user, {}):
            message = "Attempt to delete a user credential that does not exist"
            return (ErrorCode.resource_not_found, message), None
        return None, None
    if not upsertion.salt or not upsertion.salted_password:
        message = "Salt and salted password must not be empty"
        return (ErrorCode.unacceptable_credential, message), None
    try:
        credential = ScramCredential.from_salted_password(
            mechanism, upsertion.salted_password, upsertion.salt, int(upsertion.iterations)
        )
    except ValueError as error:
        return (ErrorCode.unacceptable_credential, str(error)), None
    return None, credential
