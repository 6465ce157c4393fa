"""``sluice acls add|remove|list``: the brokers' ACLs, with the options of Kafka's
``kafka-acls.sh``, through confluent-kafka's AdminClient (CreateAcls, DeleteAcls,
DescribeAcls). The broker must run an authorizer (``authorizer.class.name``); the principal
the CLI connects as must be allowed ALTER (add, remove) or DESCRIBE (list) on the cluster.

Resources: ``--topic``, ``--group``, ``--transactional-id`` (each repeatable) and
``--cluster``; ``--resource-pattern-type`` literal (default) or prefixed, and for ``remove`` and
``list`` also any or match. Who: ``--allow-principal``/``--deny-principal`` (``User:alice``),
from ``--allow-host``/``--deny-host`` (default ``*``). What: ``--operation`` (repeatable;
Kafka's names: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
AlterConfigs, IdempotentWrite, All), or the conveniences ``--producer`` (WRITE, DESCRIBE and
CREATE on the topics; WRITE and DESCRIBE on the transactional ids; ``--idempotent``: also
IDEMPOTENT_WRITE on the cluster) and ``--consumer`` (READ and DESCRIBE on the topics, READ on
the groups).

    $ sluice acls add --allow-principal User:alice --operation Read --topic orders
    added 1 ACL
    $ sluice acls list --topic orders
    PRINCIPAL   HOST  OPERATION  PERMISSION  RESOURCE  NAME    PATTERN
    User:alice  *     READ       ALLOW       TOPIC     orders  LITERAL
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # no __all__
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    error_of,
    make_client,
    parse_pairs,
    print_table,
    wire_security,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["app"]

app = typer.Typer(help="Add, remove and list ACLs (kafka-acls).", no_args_is_help=True)

CLUSTER_NAME = "kafka-cluster"
OPERATIONS = {
    "".join(part.capitalize() for part in op.name.split("_")).lower(): op
    for op in AclOperation
    if op not in (AclOperation.UNKNOWN, AclOperation.ANY)
}
"""Kafka's operation names (``IdempotentWrite``), lower-cased, and the enum's."""
PATTERNS = {"literal": ResourcePatternType.LITERAL, "prefixed": ResourcePatternType.PREFIXED,
            "any": ResourcePatternType.ANY, "match": ResourcePatternType.MATCH}  # fmt: skip

Principals = Annotated[list[str] | None, typer.Option(metavar="TYPE:NAME", help="Repeatable.")]
Hosts = Annotated[list[str] | None, typer.Option(metavar="HOST", help="Repeatable; default *.")]
Operations = Annotated[
    list[str] | None,
    typer.Option("--operation", metavar="OPERATION", help="Repeatable (Read, Write, ..., All)."),
]
Topics = Annotated[list[str] | None, typer.Option("--topic", metavar="TOPIC", help="Repeatable.")]
Groups = Annotated[list[str] | None, typer.Option("--group", metavar="GROUP", help="Repeatable.")]
TxnIds = Annotated[
    list[str] | None,
    typer.Option("--transactional-id", metavar="ID", help="Repeatable."),
]
Cluster = Annotated[bool, typer.Option("--cluster", help="The cluster resource.")]
PatternOption = Annotated[
    str,
    typer.Option(
        "--resource-pattern-type",
        metavar="literal|prefixed|any|match",
        help="How the resource names match (any and match: remove and list only).",
    ),
]


def _admin(bootstrap: str, client_config: list[str] | None, command_config: Any) -> Any:
    overrides = parse_pairs(client_properties(client_config, command_config), "-X")
    return make_client(clients.admin, bootstrap, {"client.id": "sluice-cli", **overrides})


def _operation(name: str) -> Any:
    found = OPERATIONS.get(name.replace("_", "").replace("-", "").lower())
    if found is None:
        known = ", ".join(
            "".join(p.capitalize() for p in op.name.split("_")) for op in OPERATIONS.values()
        )
        raise CliError(f"--operation {name!r}: not one of {known}", exit_code=EXIT_USAGE)
    return found


def _pattern(name: str, *, filters: bool) -> Any:
    found = PATTERNS.get(name.lower())
    if found is None or (not filters and found in (ResourcePatternType.ANY,
                                                   ResourcePatternType.MATCH)):  # fmt: skip
        allowed = "literal, prefixed, any, match" if filters else "literal, prefixed"
        raise CliError(
            f"--resource-pattern-type {name!r}: not one of {allowed}", exit_code=EXIT_USAGE
        )
    return found


def _resources(
    topics: list[str] | None,
    groups: list[str] | None,
    txn_ids: list[str] | None,
    cluster: bool,
) -> list[tuple[Any, str]]:
    found = [(ResourceType.TOPIC, t) for t in topics or ()]
    found += [(ResourceType.GROUP, g) for g in groups or ()]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in txn_ids or ()]
    if cluster:
        found.append((ResourceType.BROKER, CLUSTER_NAME))
    return found


def _entries(
    allow: list[str] | None,
    deny: list[str] | None,
    allow_hosts: list[str] | None,
    deny_hosts: list[str] | None,
) -> list[tuple[str, str, Any]]:
    """``(principal, host, permission)`` of the options (hosts default to ``*``)."""
    for principal in [*(allow or ()), *(deny or ())]:
        if not principal.partition(":")[2]:
            raise CliError(
                f"principal {principal!r}: give TYPE:NAME (User:alice)", exit_code=EXIT_USAGE
            )
    return [(p, h, AclPermissionType.ALLOW) for p in allow or () for h in allow_hosts or ["*"]] + [
        (p, h, AclPermissionType.DENY) for p in deny or () for h in deny_hosts or ["*"]
    ]


def _wanted(
    resources: list[tuple[Any, str]],
    operations: list[str] | None,
    producer: bool,
    consumer: bool,
    idempotent: bool,
) -> list[tuple[Any, str, Any]]:
    """``(resource type, name, operation)`` of the options and conveniences."""
    if not (producer or consumer):
        ops = [_operation(o) for o in operations or ["All"]]
        return [(rtype, name, op) for rtype, name in resources for op in ops]
    chosen: list[tuple[Any, str, Any]] = []
    per_type = {
        ResourceType.TOPIC: (
            [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE] if producer else []
        )
        + ([AclOperation.READ, AclOperation.DESCRIBE] if consumer else []),
        ResourceType.GROUP: [AclOperation.READ] if consumer else [],
        ResourceType.TRANSACTIONAL_ID: (
            [AclOperation.WRITE, AclOperation.DESCRIBE] if producer else []
        ),
    }
    for rtype, name in resources:
        for op in dict.fromkeys(per_type.get(rtype, [])):
            chosen.append((rtype, name, op))
    if producer and idempotent:
        chosen.append((ResourceType.BROKER, CLUSTER_NAME, AclOperation.IDEMPOTENT_WRITE))
    return chosen


@app.command()
def add(
    *,
    allow_principal: Principals = None,
    deny_principal: Principals = None,
    allow_host: Hosts = None,
    deny_host: Hosts = None,
    operation: Operations = None,
    topic: Topics = None,
    group: Groups = None,
    transactional_id: TxnIds = None,
    cluster: Cluster = False,
    resource_pattern_type: PatternOption = "literal",
    producer: Annotated[bool, typer.Option("--producer", help="A producer's ACLs.")] = False,
    consumer: Annotated[bool, typer.Option("--consumer", help="A consumer's ACLs.")] = False,
    idempotent: Annotated[
        bool, typer.Option("--idempotent", help="With --producer: IDEMPOTENT_WRITE too.")
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Add ACLs: each principal and host, each operation, on each resource.

    Example: `sluice acls add --allow-principal User:alice --consumer --topic orders --group app`
    """
    pattern = _pattern(resource_pattern_type, filters=False)
    entries = _entries(allow_principal, deny_principal, allow_host, deny_host)
    if not entries:
        raise CliError("give --allow-principal or --deny-principal", exit_code=EXIT_USAGE)
    if consumer and not group:
        raise CliError("--consumer needs --group", exit_code=EXIT_USAGE)
    resources = _resources(topic, group, transactional_id, cluster)
    if not resources:
        raise CliError(
            "give a resource: --topic, --group, --transactional-id or --cluster",
            exit_code=EXIT_USAGE,
        )
    bindings = [
        AclBinding(rtype, name, pattern, principal, host, op, permission)
        for rtype, name, op in _wanted(resources, operation, producer, consumer, idempotent)
        for principal, host, permission in entries
    ]
    admin = _admin(bootstrap, client_config, command_config)
    for binding, future in admin.create_acls(bindings, request_timeout=timeout).items():
        try:
            future.result(timeout + 5)
        except KafkaException as exc:
            raise CliError(f"{_describe(binding)}: {_reason(exc)}", exit_code=EXIT_FAILED) from None
    typer.echo(f"added {len(bindings)} ACL{'s' if len(bindings) != 1 else ''}")


@app.command()
def remove(
    *,
    allow_principal: Principals = None,
    deny_principal: Principals = None,
    allow_host: Hosts = None,
    deny_host: Hosts = None,
    operation: Operations = None,
    topic: Topics = None,
    group: Groups = None,
    transactional_id: TxnIds = None,
    cluster: Cluster = False,
    resource_pattern_type: PatternOption = "literal",
    force: Annotated[bool, typer.Option("--force", help="Do not ask for confirmation.")] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Remove the ACLs the options match (no principal: every ACL of the resources).

    Example: `sluice acls remove --allow-principal User:alice --topic orders --force`
    """
    pattern = _pattern(resource_pattern_type, filters=True)
    resources = _resources(topic, group, transactional_id, cluster)
    if not resources:
        raise CliError(
            "give a resource: --topic, --group, --transactional-id or --cluster",
            exit_code=EXIT_USAGE,
        )
    entries: list[tuple[str | None, str | None, Any]] = list(
        _entries(allow_principal, deny_principal, allow_host, deny_host)
    ) or [(None, None, AclPermissionType.ANY)]
    ops = [_operation(o) for o in operation] if operation else [AclOperation.ANY]
    filters = [
        # None matches any (confluent-kafka's stubs say str)
        AclBindingFilter(rtype, name, pattern, principal, host, op, permission)  # type: ignore[arg-type]
        for rtype, name in resources
        for op in ops
        for principal, host, permission in entries
    ]
    if not force and not typer.confirm(
        f"remove the ACLs of {len(filters)} filter(s)?", default=False
    ):
        raise CliError("not removed", exit_code=EXIT_FAILED)
    admin = _admin(bootstrap, client_config, command_config)
    removed = 0
    for _found, future in admin.delete_acls(filters, request_timeout=timeout).items():
        try:
            removed += len(future.result(timeout + 5))
        except KafkaException as exc:
            raise CliError(_reason(exc), exit_code=EXIT_FAILED) from None
    typer.echo(f"removed {removed} ACL{'s' if removed != 1 else ''}")


@app.command("list")
def list_(
    *,
    topic: Topics = None,
    group: Groups = None,
    transactional_id: TxnIds = None,
    cluster: Cluster = False,
    principal: Annotated[
        str | None, typer.Option("--principal", metavar="TYPE:NAME", help="Only this one's.")
    ] = None,
    resource_pattern_type: PatternOption = "any",
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List ACLs (all, or those of the resources and principal given).

    Example: `sluice acls list --topic orders --resource-pattern-type match`
    """
    pattern = _pattern(resource_pattern_type, filters=True)
    resources: list[tuple[Any, str | None]] = list(
        _resources(topic, group, transactional_id, cluster)
    ) or [(ResourceType.ANY, None)]
    admin = _admin(bootstrap, client_config, command_config)
    found: dict[str, Any] = {}
    for rtype, name in resources:
        anything: Any = None  # matches any (confluent-kafka's stubs say str)
        query = AclBindingFilter(
            rtype, name or anything, pattern, principal or anything, anything,
            AclOperation.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        try:
            for binding in admin.describe_acls(query, request_timeout=timeout).result(timeout + 5):
                found[_describe(binding)] = binding
        except KafkaException as exc:
            raise CliError(_reason(exc), exit_code=EXIT_FAILED) from None
    if not found:
        _refused(bootstrap, client_config, command_config, timeout)
    print_table(
        ["PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE", "NAME", "PATTERN"],
        [
            [
                b.principal,
                b.host,
                b.operation.name,
                b.permission_type.name,
                "CLUSTER" if b.restype == ResourceType.BROKER else b.restype.name,
                b.name,
                b.resource_pattern_type.name,
            ]
            for _, b in sorted(found.items())
        ],
    )


def _refused(
    bootstrap: str, client_config: list[str] | None, command_config: Any, timeout: float
) -> None:
    """Raise what the broker answered if it refused DescribeAcls: librdkafka reports the
    response's top-level error (CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster,
    SECURITY_DISABLED without an authorizer) as an empty result, so an empty list is asked
    again over :mod:`sluice.wire`, which shows the error code."""
    from sluice import wire

    try:
        security = wire_security(command_config, "sluice acls list", client_config)
    except CliError:
        return  # settings sluice.wire cannot apply (OAUTHBEARER): librdkafka's answer stands
    try:
        with wire.connect(
            bootstrap, timeout=timeout, client_id="sluice-cli", security=security
        ) as conn:
            answer = conn.call(
                wire.DESCRIBE_ACLS,
                resource_type_filter=1,  # ANY
                resource_name_filter=None,
                pattern_type_filter=1,  # ANY
                principal_filter=None,
                host_filter=None,
                operation=1,  # ANY
                permission_type=1,  # ANY
            )
    except wire.WireError:
        return  # unreachable now: librdkafka's (empty) answer stands
    if answer.error_code != ErrorCode.none:
        name = answer.error_code.name.upper()
        raise CliError(f"{name}: {answer.error_message or name}", exit_code=EXIT_FAILED)


def _describe(binding: Any) -> str:
    return (
        f"{binding.permission_type.name} {binding.principal} from {binding.host} "
        f"{binding.operation.name} on {binding.restype.name}:{binding.name} "
        f"({binding.resource_pattern_type.name})"
    )


def _reason(exc: KafkaException) -> str:
    error = error_of(exc)
    return f"{error.name()}: {error.str()}" if error is not None else str(exc)
