"""``sluice schemas``: the schema registry's REST API from the command line.

::

    sluice schemas register SUBJECT --schema FILE [--type AVRO|JSON|PROTOBUF]
                            [--reference NAME=SUBJECT:VERSION]... [--normalize]
    sluice schemas list [--prefix PREFIX] [--deleted]
    sluice schemas get SUBJECT [--version V] | sluice schemas get --id ID
    sluice schemas versions SUBJECT [--deleted]
    sluice schemas delete SUBJECT [--version V] [--permanent]
    sluice schemas compat SUBJECT --schema FILE [--version V] [--type T] [--reference …]
    sluice schemas config [SUBJECT] [--set LEVEL | --delete]
    sluice schemas mode [SUBJECT] [--set MODE [--force] | --delete]

Every command takes ``--url`` (env ``SLUICE_SCHEMA_REGISTRY_URL``, default
``http://127.0.0.1:8081``). A refusal is printed as the registry's message with Confluent's
error code (``error: Subject 'orders-value' not found. (40401)``) and exits 1.

A secured registry (HTTPS, HTTP basic authentication) is reached with
``--schema-registry-config FILE`` (env ``SLUICE_SCHEMA_REGISTRY_CONFIG``): Confluent's client
properties ``basic.auth.user.info=USER:PASSWORD``, ``ssl.ca.location`` (PEM),
``ssl.certificate.location`` / ``ssl.key.location`` (:mod:`sluice.schemas.registry_client`).
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import typer

from sluice.cli._common import print_table
from sluice.cli._http_security_options import RegistryConfig, registry_settings
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["RegistryClient", "app"]

DEFAULT_URL = "http://127.0.0.1:8081"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

app = typer.Typer(
    help="Register, list, get and delete schemas; compatibility and modes (schema registry).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

Url = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="SLUICE_SCHEMA_REGISTRY_URL",
        metavar="URL",
        help="The schema registry.",
        rich_help_panel="Connection",
    ),
]
SchemaFile = Annotated[
    Path,
    typer.Option("--schema", "-s", metavar="FILE", help="The schema's text ('-': stdin)."),
]
SchemaType = Annotated[
    str,
    typer.Option("--type", metavar="TYPE", help="AVRO, JSON or PROTOBUF."),
]
References = Annotated[
    list[str] | None,
    typer.Option(
        "--reference",
        metavar="NAME=SUBJECT:VERSION",
        help="A schema reference (repeatable): the name the schema uses for SUBJECT's VERSION.",
    ),
]
Deleted = Annotated[
    bool, typer.Option("--deleted", help="Include soft-deleted subjects or versions.")
]


class RegistryClient:
    """The registry's REST API over ``urllib``; a refusal raises :class:`CliError` with the
    registry's message and error code; ``config``: the client properties of a secured
    registry (see the module docstring)."""

    def __init__(self, url: str, timeout_s: float = 30.0, config: Path | None = None) -> None:
        from sluice.schemas.registry_client import http_access, registry_client_config

        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        try:
            conf = registry_client_config(self.url, registry_settings(config))
            self._headers, self._context = http_access(conf)
        except (ConfigError, OSError, ssl.SSLError) as error:
            raise CliError(f"--schema-registry-config: {error}", exit_code=EXIT_USAGE) from None

    def call(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        """The decoded JSON answer of ``method path``."""
        shown = {k: str(v).lower() if isinstance(v, bool) else v for k, v in (query or {}).items()}
        target = self.url + path + (f"?{urllib.parse.urlencode(shown)}" if shown else "")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            target,
            data=data,
            method=method,
            headers={"Content-Type": _CONTENT_TYPE, "Accept": _CONTENT_TYPE, **self._headers},
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout_s, context=self._context
            ) as response:
                text = response.read()
        except urllib.error.HTTPError as answer:
            with answer:
                message = _refusal(answer.code, answer.read())
            if answer.code == 401:
                message += (
                    " — the registry asks for credentials: give basic.auth.user.info=USER:PASSWORD"
                    " in --schema-registry-config"
                    if "Authorization" not in self._headers
                    else " — the registry refused the credentials of --schema-registry-config"
                )
            raise CliError(message) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise CliError(
                    f"the TLS certificate of the schema registry at {self.url} cannot be "
                    f"verified ({reason.verify_message or reason}): give the CA that signed it "
                    "as ssl.ca.location in --schema-registry-config"
                ) from None
            raise CliError(
                f"cannot reach the schema registry at {self.url} ({reason}); is it running? "
                "Set --url or SLUICE_SCHEMA_REGISTRY_URL."
            ) from None
        return json.loads(text) if text else None


def _refusal(status: int, raw: bytes) -> str:
    try:
        body = json.loads(raw)
        return f"{body['message']} ({body['error_code']})"
    except (ValueError, KeyError, TypeError):
        return f"HTTP {status}: {raw.decode(errors='replace')[:200]}"


def _path(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _read(path: Path) -> str:
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(
            f"--schema: cannot read {path}: {error.strerror}", exit_code=EXIT_USAGE
        ) from None
    except UnicodeDecodeError:
        raise CliError(
            f"--schema: {path} is not a text file (UTF-8)", exit_code=EXIT_USAGE
        ) from None


def _references(values: list[str] | None) -> list[dict[str, Any]]:
    found = []
    for item in values or ():
        name, eq, target = item.partition("=")
        subject, colon, version = target.rpartition(":")
        if not eq or not colon or not name or not subject:
            raise typer.BadParameter(
                f"expected NAME=SUBJECT:VERSION, got {item!r}", param_hint="--reference"
            )
        number = -1 if version == "latest" else version
        try:
            found.append({"name": name, "subject": subject, "version": int(number)})
        except ValueError:
            raise typer.BadParameter(
                f"the version of {item!r} is not a number", param_hint="--reference"
            ) from None
    return found


def _schema_body(schema: Path, schema_type: str, references: list[str] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": _read(schema), "schemaType": schema_type.upper()}
    refs = _references(references)
    if refs:
        body["references"] = refs
    return body


@app.command()
def register(
    subject: Annotated[str, typer.Argument(help="The subject, e.g. orders-value.")],
    schema: SchemaFile,
    schema_type: SchemaType = "AVRO",
    references: References = None,
    normalize: Annotated[
        bool, typer.Option("--normalize", help="Register the schema's normal form.")
    ] = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Register a schema under SUBJECT; prints its id (the same id if it was registered)."""
    client = RegistryClient(url, config=config)
    answer = client.call(
        "POST",
        f"/subjects/{_path(subject)}/versions",
        _schema_body(schema, schema_type, references),
        {"normalize": normalize},
    )
    latest = client.call("POST", f"/subjects/{_path(subject)}",
                         _schema_body(schema, schema_type, references),
                         {"normalize": normalize})  # fmt: skip
    print_table(["SUBJECT", "VERSION", "ID"], [[subject, latest["version"], answer["id"]]])


@app.command(name="list")
def list_(
    prefix: Annotated[
        str, typer.Option("--prefix", metavar="PREFIX", help="Only subjects starting so.")
    ] = "",
    deleted: Deleted = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """List the subjects with their latest version."""
    client = RegistryClient(url, config=config)
    subjects = client.call("GET", "/subjects", query={"subjectPrefix": prefix, "deleted": deleted})
    rows = []
    for subject in subjects:
        latest = client.call(
            "GET", f"/subjects/{_path(subject)}/versions/latest", query={"deleted": deleted}
        )
        rows.append([subject, latest["version"], latest["id"], latest.get("schemaType", "AVRO")])
    print_table(["SUBJECT", "LATEST", "ID", "TYPE"], rows)


@app.command()
def get(
    subject: Annotated[str | None, typer.Argument(help="The subject.")] = None,
    version: Annotated[
        str, typer.Option("--version", "-v", metavar="V", help="A version number or latest.")
    ] = "latest",
    schema_id: Annotated[
        int | None, typer.Option("--id", metavar="ID", help="Get the schema of this id.")
    ] = None,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Print a schema: SUBJECT's VERSION (its subject, version, id and type on stderr), or
    the schema of --id."""
    client = RegistryClient(url, config=config)
    if schema_id is not None:
        if subject is not None:
            raise typer.BadParameter("give SUBJECT or --id, not both", param_hint="--id")
        found = client.call("GET", f"/schemas/ids/{schema_id}")
        typer.echo(f"id {schema_id}, {found.get('schemaType', 'AVRO')}", err=True)
    elif subject is None:
        raise typer.BadParameter("give SUBJECT or --id", param_hint="SUBJECT")
    else:
        found = client.call("GET", f"/subjects/{_path(subject)}/versions/{version}")
        typer.echo(
            f"{subject} version {found['version']}, id {found['id']}, "
            f"{found.get('schemaType', 'AVRO')}",
            err=True,
        )
    for ref in found.get("references", ()):
        typer.echo(f"reference {ref['name']} = {ref['subject']}:{ref['version']}", err=True)
    typer.echo(found["schema"])


@app.command()
def versions(
    subject: Annotated[str, typer.Argument(help="The subject.")],
    deleted: Deleted = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """List SUBJECT's versions with their ids."""
    client = RegistryClient(url, config=config)
    numbers = client.call("GET", f"/subjects/{_path(subject)}/versions", query={"deleted": deleted})
    live = set(client.call("GET", f"/subjects/{_path(subject)}/versions")) if deleted else None
    rows = []
    for number in numbers:
        found = client.call(
            "GET", f"/subjects/{_path(subject)}/versions/{number}", query={"deleted": True}
        )
        row = [number, found["id"], found.get("schemaType", "AVRO")]
        if live is not None:
            row.append("yes" if number not in live else "no")
        rows.append(row)
    print_table(["VERSION", "ID", "TYPE", *(["DELETED"] if deleted else [])], rows)


@app.command()
def delete(
    subject: Annotated[str, typer.Argument(help="The subject.")],
    version: Annotated[
        str | None,
        typer.Option("--version", "-v", metavar="V", help="Delete only this version (or latest)."),
    ] = None,
    permanent: Annotated[
        bool,
        typer.Option("--permanent", help="Delete for good (only what was soft-deleted before)."),
    ] = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Soft-delete SUBJECT (or one version); --permanent deletes what was soft-deleted."""
    client = RegistryClient(url, config=config)
    kind = "permanently deleted" if permanent else "soft-deleted"
    query = {"permanent": True} if permanent else None
    if version is None:
        done = client.call("DELETE", f"/subjects/{_path(subject)}", query=query)
        typer.echo(f"{subject}: {kind} version(s) {', '.join(map(str, done))}")
    else:
        done = client.call("DELETE", f"/subjects/{_path(subject)}/versions/{version}", query=query)
        typer.echo(f"{subject}: {kind} version {done}")


@app.command()
def compat(
    subject: Annotated[str, typer.Argument(help="The subject.")],
    schema: SchemaFile,
    version: Annotated[
        str | None,
        typer.Option(
            "--version",
            "-v",
            metavar="V",
            help="Test against this version only (default: as "
            "registering would, by the subject's compatibility level).",
        ),
    ] = None,
    schema_type: SchemaType = "AVRO",
    references: References = None,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Test whether a schema may be registered under SUBJECT; exit 1 with the reasons if not."""
    client = RegistryClient(url, config=config)
    path = f"/compatibility/subjects/{_path(subject)}/versions"
    if version is not None:
        path += f"/{version}"
    answer = client.call(
        "POST", path, _schema_body(schema, schema_type, references), {"verbose": True}
    )
    if answer["is_compatible"]:
        typer.echo(f"compatible with {subject}")
        return
    typer.echo(f"incompatible with {subject}:", err=True)
    for message in answer.get("messages", ()):
        typer.echo(f"  {message}", err=True)
    raise typer.Exit(EXIT_FAILED)


@app.command()
def config(
    subject: Annotated[str | None, typer.Argument(help="The subject (default: global).")] = None,
    set_level: Annotated[
        str | None,
        typer.Option(
            "--set", metavar="LEVEL", help="NONE, BACKWARD, FORWARD, FULL or a _TRANSITIVE one."
        ),
    ] = None,
    delete: Annotated[
        bool, typer.Option("--delete", help="Remove the setting (the global one applies).")
    ] = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Show or set the compatibility level (of SUBJECT, or the global one)."""
    client = RegistryClient(url, config=config)
    path = "/config" if subject is None else f"/config/{_path(subject)}"
    scope = subject or "(global)"
    if set_level is not None and delete:
        raise typer.BadParameter("give --set or --delete, not both", param_hint="--delete")
    if set_level is not None:
        answer = client.call("PUT", path, {"compatibility": set_level})
        level = answer["compatibility"]
    elif delete:
        answer = client.call("DELETE", path)
        typer.echo(f"{scope}: removed {answer['compatibilityLevel']}", err=True)
        level = client.call("GET", path, query={"defaultToGlobal": True})["compatibilityLevel"]
    else:
        level = client.call("GET", path, query={"defaultToGlobal": True})["compatibilityLevel"]
    print_table(["SUBJECT", "COMPATIBILITY"], [[scope, level]])


@app.command()
def mode(
    subject: Annotated[str | None, typer.Argument(help="The subject (default: global).")] = None,
    set_mode: Annotated[
        str | None, typer.Option("--set", metavar="MODE", help="READWRITE, READONLY or IMPORT.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="IMPORT even though schemas exist.")
    ] = False,
    delete: Annotated[
        bool, typer.Option("--delete", help="Remove SUBJECT's mode (the global one applies).")
    ] = False,
    url: Url = DEFAULT_URL,
    config: RegistryConfig = None,
) -> None:
    """Show or set the mode (of SUBJECT, or the global one)."""
    client = RegistryClient(url, config=config)
    path = "/mode" if subject is None else f"/mode/{_path(subject)}"
    scope = subject or "(global)"
    if set_mode is not None and delete:
        raise typer.BadParameter("give --set or --delete, not both", param_hint="--delete")
    if delete:
        if subject is None:
            raise typer.BadParameter("--delete needs a SUBJECT", param_hint="--delete")
        client.call("DELETE", path)
    if set_mode is not None:
        current = client.call("PUT", path, {"mode": set_mode}, {"force": force})["mode"]
    else:
        current = client.call("GET", path, query={"defaultToGlobal": True})["mode"]
    print_table(["SUBJECT", "MODE"], [[scope, current]])
