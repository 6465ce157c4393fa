"""``--key-format`` / ``--value-format`` of ``sluice produce`` and ``sluice consume``: records
encoded through the schema registry, like ``kafka-avro-console-producer`` and ``-consumer``.

``produce`` reads each key or value as one JSON document and writes it in Confluent's wire format
with the schema of ``--key-schema`` / ``--value-schema FILE`` (registered under ``<topic>-key`` /
``<topic>-value``, as Confluent's serializers do), or, without a file, with the latest schema
of that subject. ``consume`` decodes each record by the schema id it carries and prints JSON.

JSON and Avro: a value is the plain JSON of the record; a union may be bare (``"note": "x"``) or
wrapped as in Avro's JSON encoding (``"note": {"string": "x"}``), ``bytes`` and ``fixed`` are
strings of code points 0–255 (Avro's JSON encoding), a ``decimal`` is a number or a string of
one, ``date`` and ``timestamp-*`` an ISO 8601 string or the number Avro stores. ``consume``
prints the same way (unions bare, decimals as strings, dates and timestamps ISO 8601), so what
it prints ``produce`` reads back. Protobuf values are Protobuf's JSON mapping, printed with the
``.proto`` field names.

>>> schema = {"type": "record", "name": "O", "fields": [
...     {"name": "note", "type": ["null", "string"]},
...     {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5,
...                                "scale": 2}}]}
>>> avro_from_json(schema, {"note": {"string": "x"}, "price": "1.50"})
{'note': 'x', 'price': Decimal('1.50')}
>>> avro_from_json(schema, {"note": 3, "price": 1})
Traceback (most recent call last):
...
sluice.serde.SerdeError: note: 3 matches no branch of the union ["null", "string"]
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError
from sluice.schemas.formats import InvalidSchemaError, format_named
from sluice.schemas.protobuf_messages import message_class
from sluice.schemas.serdes import (
    DEFAULT_REGISTRY_URL,
    ENV_REGISTRY_URL,
    AvroSerde,
    JsonSchemaSerde,
    ProtobufSerde,
    RegistryError,
    for_topic,
)
from sluice.schemas.wire_format import read_header, read_message_indexes
from sluice.serde import Serde, SerdeError

__all__ = [
    "KeyFormat",
    "KeySchema",
    "RecordFormat",
    "RegistryUrl",
    "ValueFormat",
    "ValueSchema",
    "avro_from_json",
    "decoder",
    "encoder",
]

PANEL = "Schema registry"


class RecordFormat(enum.StrEnum):
    avro = "avro"
    json_schema = "json-schema"
    protobuf = "protobuf"


KeyFormat = Annotated[
    RecordFormat | None,
    typer.Option(
        "--key-format",
        help="Keys through the schema registry: avro, json-schema or protobuf.",
        rich_help_panel=PANEL,
    ),
]
ValueFormat = Annotated[
    RecordFormat | None,
    typer.Option(
        "--value-format",
        help="Values through the schema registry: avro, json-schema or protobuf.",
        rich_help_panel=PANEL,
    ),
]
KeySchema = Annotated[
    Path | None,
    typer.Option(
        "--key-schema",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Schema of the keys (default: the latest of subject TOPIC-key).",
        rich_help_panel=PANEL,
    ),
]
ValueSchema = Annotated[
    Path | None,
    typer.Option(
        "--value-schema",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        readable=True,
        help="Schema of the values (default: the latest of subject TOPIC-value).",
        rich_help_panel=PANEL,
    ),
]
RegistryUrl = Annotated[
    str,
    typer.Option(
        "--schema-registry",
        envvar=ENV_REGISTRY_URL,
        metavar="URL",
        help="Schema registry for --key-format / --value-format.",
        rich_help_panel=PANEL,
    ),
]
DEFAULT_URL = DEFAULT_REGISTRY_URL

_TYPES = {
    RecordFormat.avro: "AVRO",
    RecordFormat.json_schema: "JSON",
    RecordFormat.protobuf: "PROTOBUF",
}


def _client_conf(url: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """confluent-kafka's registry client configuration for *url* with the registry client
    *settings* (``--schema-registry-config``'s, :mod:`sluice.schemas.registry_client`)."""
    from sluice.schemas.registry_client import registry_client_config

    try:
        return registry_client_config(url, settings)
    except ConfigError as error:
        raise CliError(f"--schema-registry-config: {error}", exit_code=EXIT_USAGE) from None


def _client(url: str, settings: Mapping[str, Any]) -> Any:
    """confluent-kafka's registry client for *url* with the registry client *settings*."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    conf = _client_conf(url, settings)
    try:
        return SchemaRegistryClient(conf)
    except (ValueError, OSError) as error:
        raise CliError(f"schema registry {url}: {error}", exit_code=EXIT_USAGE) from None


def _latest_schema(url: str, subject: str, option: str, settings: Mapping[str, Any]) -> str:
    """The text of the latest schema of *subject* (for a format given without a schema file)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = _client(url, settings)
    try:
        return str(client.get_latest_version(subject).schema.schema_str)
    except SchemaRegistryError as error:
        if error.error_code in (40401, 40402):
            raise CliError(
                f"subject {subject!r} not found in the schema registry at {url}; "
                f"give its schema with {option} FILE"
            ) from None
        raise CliError(f"schema registry {url}: {error.error_message}") from None
    except Exception as error:
        raise CliError(f"schema registry {url} is unreachable: {error}") from None


def encoder(
    fmt: RecordFormat,
    schema_file: Path | None,
    url: str,
    topic: str,
    *,
    is_key: bool,
    settings: Mapping[str, Any] | None = None,
) -> Callable[[bytes], bytes]:
    """``encode(json_text) -> bytes`` in the wire format; it raises :class:`SerdeError` for a
    document that does not fit the schema and :class:`RegistryError` when the registry fails.
    ``settings``: the registry client settings (credentials, CA), given to the serde."""
    field = "key" if is_key else "value"
    option = f"--{field}-schema"
    # the serde's options: the registry client's settings under confluent-kafka's names
    conf = _client_conf(url, settings or {})
    options: dict[str, Any] = {"schema.registry.url": conf.pop("url"), **conf}
    if schema_file is not None:
        text = schema_file.read_text()
    else:
        text = _latest_schema(url, f"{topic}-{field}", option, settings or {})
        options["auto.register.schemas"] = False
    try:
        format_named(_TYPES[fmt]).parse(text, {})  # the registry's own check, before any line
        if fmt is RecordFormat.avro:
            serde: Serde = AvroSerde(text, options)
            parsed = json.loads(text)
        elif fmt is RecordFormat.json_schema:
            serde = JsonSchemaSerde(text, options)
        else:
            serde = ProtobufSerde(text, options)
            cls = message_class(text)
    except (SerdeError, InvalidSchemaError, ValueError) as error:
        where = schema_file or f"the latest schema of {topic}-{field}"
        raise CliError(f"{option} {where}: not a valid {fmt.value} schema: {error}") from None
    bound = for_topic(serde, topic, is_key=is_key)

    def encode(raw: bytes) -> bytes:
        try:
            document = json.loads(raw)
        except ValueError as error:
            raise SerdeError(f"the {field} is not JSON: {error}") from None
        if fmt is RecordFormat.avro:
            document = avro_from_json(parsed, document, field)
        elif fmt is RecordFormat.protobuf:
            document = _protobuf_from_json(cls, document)
        return bound.serialize(document)

    return encode


def _protobuf_from_json(cls: Any, document: Any) -> Any:
    from google.protobuf import json_format

    message = cls()
    try:
        json_format.ParseDict(document, message)
    except (json_format.ParseError, TypeError, AttributeError) as error:
        raise SerdeError(str(error)) from None
    return message


def decoder(
    fmt: RecordFormat, url: str, settings: Mapping[str, Any] | None = None
) -> Callable[[bytes], bytes]:
    """``decode(record bytes) -> JSON text`` by the schema id the record carries; ``settings``:
    the registry client settings (credentials, CA)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    client = _client(url, settings or {})
    schemas: dict[int, Any] = {}

    def schema_of(schema_id: int) -> Any:
        if schema_id not in schemas:
            try:
                schema = client.get_schema(schema_id)
            except SchemaRegistryError as error:
                if error.error_code == 40403:
                    raise SerdeError(f"schema id {schema_id} is not in the registry") from None
                raise RegistryError(f"schema registry {url}: {error.error_message}") from None
            except Exception as error:
                raise RegistryError(f"schema registry {url} is unreachable: {error}") from None
            if schema.schema_type != _TYPES[fmt]:
                raise SerdeError(f"schema id {schema_id} is {schema.schema_type}, not {fmt.value}")
            schemas[schema_id] = _reader(fmt, schema.schema_str)
        return schemas[schema_id]

    def decode(data: bytes) -> bytes:
        schema_id, offset = read_header(data)
        read = schema_of(schema_id)
        if fmt is RecordFormat.protobuf:
            indexes, offset = read_message_indexes(data, offset)
            return read(data[offset:], indexes)  # type: ignore[no-any-return]
        return read(data[offset:], None)  # type: ignore[no-any-return]

    return decode


def _reader(fmt: RecordFormat, text: str) -> Callable[[bytes, list[int] | None], bytes]:
    """How to turn a payload written with the schema *text* into JSON."""
    if fmt is RecordFormat.avro:
        import io

        import fastavro

        parsed = fastavro.parse_schema(json.loads(text))

        def avro(payload: bytes, _: list[int] | None) -> bytes:
            try:
                record = fastavro.schemaless_reader(io.BytesIO(payload), parsed, None)
            except Exception as error:
                raise SerdeError(f"not Avro of its schema: {error}") from None
            return _dumps(record)

        return avro
    if fmt is RecordFormat.json_schema:

        def json_schema(payload: bytes, _: list[int] | None) -> bytes:
            try:
                return _dumps(json.loads(payload))
            except ValueError as error:
                raise SerdeError(f"not JSON: {error}") from None

        return json_schema

    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    names = format_named("PROTOBUF").parse(text, {})

    def protobuf(payload: bytes, indexes: list[int] | None) -> bytes:
        try:
            name = names.message_name(indexes or [0])  # type: ignore[attr-defined]
        except KeyError as error:
            raise SerdeError(str(error)) from None
        message = message_class(text, name)()
        try:
            message.ParseFromString(payload)
        except DecodeError as error:
            raise SerdeError(f"not a Protobuf {name}: {error}") from None
        document = json_format.MessageToDict(message, preserving_proto_field_name=True)
        return _dumps(document)

    return protobuf


def _plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "hex") and type(value).__name__ == "UUID":
        return str(value)
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":")).encode()


# -- JSON to Avro ----------------------------------------------------------------------------

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


def avro_from_json(schema: Any, value: Any, path: str = "") -> Any:
    """*value* (parsed JSON) as the Python value fastavro writes for *schema* (parsed JSON);
    :class:`SerdeError` names the field that does not fit."""
    return _Converter().convert(schema, value, path)


class _Converter:
    def __init__(self) -> None:
        self.named: dict[str, Any] = {}

    def convert(self, schema: Any, value: Any, path: str) -> Any:
        if isinstance(schema, list):
            return self.union(schema, value, path)
        if isinstance(schema, str):
            if schema in self.named:
                return self.convert(self.named[schema], value, path)
            schema = {"type": schema}
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.convert(kind, value, path)
        if kind in ("record", "error", "enum", "fixed") and "name" in schema:
            self.named[schema["name"]] = schema
            namespace = schema.get("namespace")
            if namespace and "." not in schema["name"]:
                self.named[f"{namespace}.{schema['name']}"] = schema
        logical = schema.get("logicalType")
        if logical is not None:
            converted = self.logical(logical, kind, schema, value, path)
            if converted is not None:
                return converted
        if kind in ("record", "error"):
            return self.record(schema, value, path)
        if kind == "array":
            self.expect(isinstance(value, list), "an array", value, path)
            return [
                self.convert(schema["items"], item, f"{path}[{i}]") for i, item in enumerate(value)
            ]
        if kind == "map":
            self.expect(isinstance(value, dict), "an object", value, path)
            return {k: self.convert(schema["values"], v, f"{path}.{k}") for k, v in value.items()}
        if kind == "enum":
            self.expect(value in schema.get("symbols", []), "one of the enum symbols", value, path)
            return value
        if kind in ("bytes", "fixed"):
            self.expect(isinstance(value, str), "a string of code points 0-255", value, path)
            try:
                return value.encode("latin-1")
            except UnicodeEncodeError:
                raise SerdeError(f"{path or 'value'}: a code point above 255 in bytes") from None
        return self.primitive(kind, value, path)

    def primitive(self, kind: Any, value: Any, path: str) -> Any:
        ok = {
            "null": value is None,
            "boolean": isinstance(value, bool),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "long": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "double": isinstance(value, int | float) and not isinstance(value, bool),
            "string": isinstance(value, str),
        }
        if kind not in ok:
            raise SerdeError(f"{path or 'value'}: unknown Avro type {kind!r}")
        self.expect(ok[kind], f"a{'n' if kind[0] in 'aeiou' else ''} {kind}", value, path)
        return float(value) if kind in ("float", "double") else value

    def record(self, schema: Mapping[str, Any], value: Any, path: str) -> Any:
        self.expect(isinstance(value, dict), f"a {schema.get('name')} object", value, path)
        fields = {field["name"]: field for field in schema.get("fields", [])}
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise SerdeError(f"{path or 'value'}: no field {unknown[0]!r} in {schema.get('name')}")
        result = {}
        for name, field in fields.items():
            where = f"{path}.{name}" if path else name
            if name in value:
                result[name] = self.convert(field["type"], value[name], where)
            elif "default" in field:
                result[name] = field["default"]
            else:
                raise SerdeError(f"{where}: missing (the field has no default)")
        return result

    def union(self, branches: list[Any], value: Any, path: str) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            (tag, inner), = value.items()  # fmt: skip
            for branch in branches:
                if self.branch_name(branch) == tag:
                    return self.convert(branch, inner, path)
        for branch in branches:
            try:
                return self.convert(branch, value, path)
            except SerdeError:
                continue
        shown = json.dumps([self.branch_name(b) for b in branches])
        raise SerdeError(
            f"{path or 'value'}: {json.dumps(value)} matches no branch of the union {shown}"
        )

    def branch_name(self, branch: Any) -> str:
        if isinstance(branch, str):
            return branch
        if isinstance(branch, dict):
            name = branch.get("name")
            if name and branch.get("type") in ("record", "error", "enum", "fixed"):
                namespace = branch.get("namespace")
                return f"{namespace}.{name}" if namespace and "." not in name else str(name)
            return str(branch.get("type"))
        return "union"

    def logical(self, logical: str, kind: Any, schema: Any, value: Any, path: str) -> Any:
        where = path or "value"
        if (
            logical == "decimal"
            and isinstance(value, int | float | str)
            and not isinstance(value, bool)
        ):
            try:
                number = decimal.Decimal(str(value))
            except decimal.InvalidOperation:
                return None  # perhaps bytes in Avro's JSON encoding
            scale = int(schema.get("scale", 0))
            return number.quantize(decimal.Decimal(1).scaleb(-scale))
        if isinstance(value, str) and logical == "date":
            try:
                return datetime.date.fromisoformat(value)
            except ValueError:
                raise SerdeError(f"{where}: {value!r} is not an ISO 8601 date") from None
        if isinstance(value, str) and logical.startswith(("timestamp-", "local-timestamp-")):
            try:
                moment = datetime.datetime.fromisoformat(value)
            except ValueError:
                raise SerdeError(f"{where}: {value!r} is not an ISO 8601 timestamp") from None
            if logical.startswith("timestamp-") and moment.tzinfo is None:
                moment = moment.replace(tzinfo=datetime.UTC)
            return moment
        if isinstance(value, str) and logical.startswith("time-"):
            try:
                return datetime.time.fromisoformat(value)
            except ValueError:
                raise SerdeError(f"{where}: {value!r} is not an ISO 8601 time") from None
        return None

    @staticmethod
    def expect(ok: bool, what: str, value: Any, path: str) -> None:
        if not ok:
            raise SerdeError(f"{path or 'value'}: expected {what}, got {json.dumps(value)}")
