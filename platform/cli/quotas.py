"""``sluice quotas set|describe|delete``: client quotas of users and client ids (KIP-546), what
Kafka's ``kafka-configs.sh --entity-type users|clients --alter --add-config …`` does.

confluent-kafka's AdminClient has no client-quota methods, so this speaks
DescribeClientQuotas and AlterClientQuotas itself (:mod:`sluice.wire`: PLAINTEXT, TLS and SASL
PLAIN/SCRAM from ``-X``/``--command-config``, as ``sluice transactions``). Entities
are given as kafka-configs does: ``--entity-type`` (``users`` or ``clients``) once or twice,
each paired in order with an ``--entity-name``; a type without a name — or the name
``<default>`` — is the default of its kind (``--entity-default`` says so explicitly)::

    $ sluice quotas set --entity-type users --entity-name alice \\
          --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    user 'alice': producer_byte_rate=1048576, consumer_byte_rate=2097152 set
    $ sluice quotas set --entity-type clients --entity-default --add-config request_percentage=50
    $ sluice quotas describe
    USER   CLIENT-ID  QUOTAS
    -      <default>  request_percentage=50
    alice  -          consumer_byte_rate=2097152, producer_byte_rate=1048576
    $ sluice quotas delete --entity-type users --entity-name alice \\
          --delete-config consumer_byte_rate
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Final

import typer

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    parse_pairs,
    print_table,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["app"]

app = typer.Typer(
    help="Set, describe and delete client quotas (users, client ids).", no_args_is_help=True
)

QUOTA_KEYS: Final = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")
ENTITY_TYPES: Final = {"users": "user", "clients": "client-id"}
"""kafka-configs' entity types → the protocol's."""
DEFAULT_NAME: Final = "<default>"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

EntityType = Annotated[
    list[str] | None,
    typer.Option(
        "--entity-type", metavar="users|clients", help="Entity type; once or twice (both)."
    ),
]
EntityName = Annotated[
    list[str] | None,
    typer.Option(
        "--entity-name",
        metavar="NAME",
        help="Name of the entity type given in the same position; `<default>`: the default.",
    ),
]
EntityDefault = Annotated[
    bool,
    typer.Option("--entity-default", help="Entity types given without a name are their default."),
]


def _wire_api(key: int, name: str) -> Any:
    from sluice import wire

    return wire.Api(key, name, 0, 1)


def _entity(
    types: list[str] | None, names: list[str] | None, default: bool, *, required: bool
) -> list[tuple[str, str | None]]:
    """The protocol's components (type, name; None: default) of the options' entity."""
    types = types or []
    names = names or []
    if required and not types:
        raise CliError("give --entity-type users|clients (once or twice)", exit_code=EXIT_USAGE)
    if len(names) > len(types):
        raise CliError("more --entity-name than --entity-type", exit_code=EXIT_USAGE)
    if len(set(types)) != len(types):
        raise CliError("each --entity-type at most once", exit_code=EXIT_USAGE)
    if default and len(names) == len(types):
        raise CliError("--entity-default: every --entity-type has a name", exit_code=EXIT_USAGE)
    components: list[tuple[str, str | None]] = []
    for i, kind in enumerate(types):
        if kind not in ENTITY_TYPES:
            raise CliError(f"--entity-type is users or clients, not {kind!r}", exit_code=EXIT_USAGE)
        name = names[i] if i < len(names) else None
        components.append((ENTITY_TYPES[kind], None if name == DEFAULT_NAME else name))
    return components


def _describe_entity(components: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{t} '{DEFAULT_NAME if n is None else n}'" for t, n in components)


def _connect(bootstrap: str, client_config: list[str] | None, timeout: float) -> Any:
    from sluice import wire
    from sluice.cli._transactions import wire_config

    servers, client_id, security = wire_config(bootstrap, parse_pairs(client_config, "-X"))
    try:
        return wire.connect(servers, timeout=timeout, client_id=client_id, security=security)
    except wire.WireError as exc:
        raise CliError(str(exc), exit_code=EXIT_FAILED) from None


def _classes(conn: Any, api: Any, module: str, *names: str) -> tuple[int, list[Any]]:
    version = conn.version_of(api)
    request = importlib.import_module(f"kio.schema.{module}.v{version}.request")
    return version, [getattr(request, n) for n in names]


def _alter(
    bootstrap: str,
    client_config: list[str] | None,
    timeout: float,
    components: list[tuple[str, str | None]],
    ops: list[tuple[str, float, bool]],
) -> None:
    from kio.schema.errors import ErrorCode

    api = _wire_api(49, "AlterClientQuotas")
    with _connect(bootstrap, client_config, timeout) as conn:
        _, (entity_cls, op_cls, entry_cls) = _classes(
            conn, api, "alter_client_quotas", "EntityData", "OpData", "EntryData"
        )
        entry = entry_cls(
            entity=tuple(entity_cls(entity_type=t, entity_name=n) for t, n in components),
            ops=tuple(op_cls(key=k, value=v, remove=r) for k, v, r in ops),
        )
        answer = conn.call(api, entries=(entry,), validate_only=False)
    for result in answer.entries:
        if result.error_code != ErrorCode.none:
            raise CliError(
                f"{_describe_entity(components)}: {result.error_code.name.upper()}: "
                f"{result.error_message or ''}".rstrip(": "),
                exit_code=EXIT_FAILED,
            )


def _format(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


@app.command("set")
def set_(
    *,
    entity_type: EntityType = None,
    entity_name: EntityName = None,
    entity_default: EntityDefault = False,
    add_config: Annotated[
        str,
        typer.Option(
            "--add-config",
            metavar="KEY=VALUE,…",
            help="Quotas to set: producer_byte_rate, consumer_byte_rate (bytes/s), "
            "request_percentage (percent of one handler).",
        ),
    ],
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Set quotas of a user, a client id, or a user's client id (AlterClientQuotas).

    Example: `sluice quotas set --entity-type clients --entity-name app
    --add-config producer_byte_rate=1048576`
    """
    client_config = client_properties(client_config, command_config)
    components = _entity(entity_type, entity_name, entity_default, required=True)
    ops: list[tuple[str, float, bool]] = []
    for key, text in parse_pairs(add_config.split(","), "--add-config").items():
        try:
            value = float(text)
        except ValueError:
            raise CliError(
                f"--add-config {key}={text}: not a number", exit_code=EXIT_USAGE
            ) from None
        ops.append((key, value, False))
    _alter(bootstrap, client_config, timeout, components, ops)
    done = ", ".join(f"{k}={_format(v)}" for k, v, _ in ops)
    typer.echo(f"{_describe_entity(components)}: {done} set")


@app.command("delete")
def delete(
    *,
    entity_type: EntityType = None,
    entity_name: EntityName = None,
    entity_default: EntityDefault = False,
    delete_config: Annotated[
        str | None,
        typer.Option(
            "--delete-config", metavar="KEY,…", help="Quotas to remove (default: all three)."
        ),
    ] = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Remove quotas of an entity (AlterClientQuotas).

    Example: `sluice quotas delete --entity-type users --entity-name alice`
    """
    client_config = client_properties(client_config, command_config)
    components = _entity(entity_type, entity_name, entity_default, required=True)
    keys = [k.strip() for k in delete_config.split(",")] if delete_config else list(QUOTA_KEYS)
    _alter(bootstrap, client_config, timeout, components, [(k, 0.0, True) for k in keys])
    typer.echo(f"{_describe_entity(components)}: {', '.join(keys)} removed")


@app.command("describe")
def describe(
    *,
    entity_type: EntityType = None,
    entity_name: EntityName = None,
    entity_default: EntityDefault = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List the quotas of every entity, or of those matching the entity options: a type
    without a name matches every name of it and its default, unless --entity-default.

    Example: `sluice quotas describe --entity-type users --entity-name alice`
    """
    from kio.schema.errors import ErrorCode

    client_config = client_properties(client_config, command_config)
    types, names = entity_type or [], entity_name or []
    components = _entity(types, names, False, required=False)
    api = _wire_api(48, "DescribeClientQuotas")
    with _connect(bootstrap, client_config, timeout) as conn:
        _, (component_cls,) = _classes(conn, api, "describe_client_quotas", "ComponentData")
        filters = []
        for i, (kind, name) in enumerate(components):
            if i < len(names):
                match = (MATCH_DEFAULT, None) if name is None else (MATCH_EXACT, name)
            else:
                match = (MATCH_DEFAULT, None) if entity_default else (MATCH_SPECIFIED, None)
            filters.append(component_cls(entity_type=kind, match_type=match[0], match=match[1]))
        answer = conn.call(api, components=tuple(filters), strict=False)
    if answer.error_code != ErrorCode.none:
        raise CliError(
            f"{answer.error_code.name.upper()}: {answer.error_message or ''}".rstrip(": "),
            exit_code=EXIT_FAILED,
        )
    rows = []
    for entry in answer.entries or ():
        parts = {c.entity_type: DEFAULT_NAME if c.entity_name is None else c.entity_name
                 for c in entry.entity}  # fmt: skip
        quotas = ", ".join(f"{v.key}={_format(float(v.value))}" for v in entry.values)
        rows.append((parts.get("user", "-"), parts.get("client-id", "-"), quotas))
    print_table(["USER", "CLIENT-ID", "QUOTAS"], rows)
