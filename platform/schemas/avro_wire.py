"""Avro in Confluent's wire format, through a schema registry: the writer and reader that
Sluice's Avro serde and Connect's Avro converter share.

Bytes: magic byte 0, the schema id (4 bytes big-endian), the Avro binary encoding
(:mod:`sluice.schemas.avro_codec`) — or, for the schema ``"bytes"``, the bytes themselves, as
Confluent's serializers write them. What confluent-kafka's ``AvroSerializer`` and
``AvroDeserializer`` do per message (a ``SerializationContext``, the subject, the registry
cache, a ``BytesIO``, fastavro's generic walk) is done here once per subject or schema id: a
writer is the schema id's header and a compiled codec, a reader the codec of the writer's
schema and the reader's schema if it differs.

The registry steps are Confluent's (``AbstractKafkaAvroSerializer``): with
``auto.register.schemas`` the schema is registered under the subject (else looked up in it),
with ``use.latest.version`` the subject's latest version is the writer's and the reader's
schema (fetched once per subject, as confluent-kafka's client caches it); ``normalize.schemas``
is passed along. Schemas this module does not take — with references, or with data-contract
rules (``ruleSet``) that confluent-kafka's serializers execute — make :meth:`AvroWire.writer` and
:meth:`AvroWire.reader` return ``None``: the caller then uses confluent-kafka's classes.

Thread-safe: the caches are filled under a lock; writers and readers are plain functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sluice.schemas.avro_codec import AvroCodec

__all__ = ["AvroWire", "full_name"]

Writer = Callable[[Any], bytes]
Reader = Callable[[bytes], Any]


def full_name(schema: Any) -> str | None:
    """The full name of a record (enum, fixed) schema's JSON form, as Confluent's record
    strategies name subjects by it; for other schemas their type, or ``None``.

    >>> full_name({"type": "record", "name": "Order", "namespace": "shop"})
    'shop.Order'
    >>> full_name(["null", "long"]) is None
    True
    """
    if not isinstance(schema, dict):
        return None
    name = schema.get("name")
    if not isinstance(name, str):
        kind = schema.get("type")
        return kind if isinstance(kind, str) else None
    namespace = schema.get("namespace")
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _is_bytes(parsed: Any) -> bool:
    return parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")


def _schema_text(schema: str) -> str:
    """The schema text as confluent-kafka registers it (a primitive's name wrapped)."""
    text = schema.strip()
    if text[:1] not in ("{", "["):
        text = '{"type":' + text + "}"
    return text


class AvroWire:
    """Writers and readers of Confluent's Avro wire format for one registry client
    (confluent-kafka's ``SchemaRegistryClient``: its caches are shared)."""

    def __init__(
        self,
        client: Any,
        *,
        auto_register: bool = True,
        use_latest: bool = False,
        normalize: bool = False,
    ) -> None:
        self.client = client
        self.auto_register = auto_register
        self.use_latest = use_latest
        self.normalize = normalize
        self._lock = threading.Lock()
        self._writers: dict[tuple[str | None, str], Writer | None] = {}
        self._readers: dict[tuple[int, str | None, Any], Reader | None] = {}
        self._codecs: dict[int, AvroCodec] = {}
        self._parsed: dict[str, Any] = {}

    # -- writing --------------------------------------------------------------------------

    def writer(self, schema: str | None, subject: str) -> Writer | None:
        """The writer of values of *schema* (text; ``None`` with ``use.latest.version``) under
        *subject*, or ``None`` when confluent-kafka's serializer must write them."""
        key = (schema, subject)
        found = self._writers.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        with self._lock:
            made = self._make_writer(schema, subject)
            self._writers[key] = made
            return made

    def _make_writer(self, schema: str | None, subject: str) -> Writer | None:
        from confluent_kafka.schema_registry import Schema

        if self.use_latest:
            latest = self.client.get_latest_version(subject)
            if not self._plain(latest.schema):
                return None
            schema_id, text = latest.schema_id, latest.schema.schema_str
        else:
            if schema is None:
                raise ValueError("an Avro writer needs a schema, or use.latest.version")
            text = _schema_text(schema)
            parsed = AvroCodec(text)  # a bad schema fails here, before the registry sees it
            registered = Schema(text, "AVRO")
            if self.auto_register:
                schema_id = self.client.register_schema_full_response(
                    subject, registered, normalize_schemas=self.normalize
                ).schema_id
            else:
                schema_id = self.client.lookup_schema(
                    subject, registered, normalize_schemas=self.normalize
                ).schema_id
            self._codecs.setdefault(schema_id, parsed)
        header = b"\x00" + int(schema_id).to_bytes(4, "big")
        codec = self._codec_of(schema_id, text)
        if _is_bytes(codec.schema):

            def raw(value: Any) -> bytes:
                return header + (value if isinstance(value, bytes) else value.encode())

            return raw
        encode = codec.encode

        def write(value: Any) -> bytes:
            return header + encode(value)

        return write

    # -- reading --------------------------------------------------------------------------

    def reader(
        self,
        schema_id: int,
        reader_schema: str | None = None,
        subject_of: Callable[[str | None], str | None] | None = None,
    ) -> Reader | None:
        """The reader of payloads written with *schema_id* (whole records: header and body),
        into *reader_schema* (text) if given, or with ``use.latest.version`` into the latest
        version of the subject ``subject_of(writer's record name or None)`` names (a callable
        kept from call to call: it is part of the cache key); ``None`` when confluent-kafka's
        deserializer must read them."""
        key = (schema_id, reader_schema, subject_of)
        found = self._readers.get(key, False)
        if found is not False:
            return found  # type: ignore[return-value]
        with self._lock:
            made = self._make_reader(schema_id, reader_schema, subject_of)
            self._readers[key] = made
            return made

    def _make_reader(
        self,
        schema_id: int,
        reader_schema: str | None,
        subject_of: Callable[[str | None], str | None] | None,
    ) -> Reader | None:
        registered = self.client.get_schema(schema_id)
        if registered.schema_type not in (None, "AVRO") or not self._plain(registered):
            return None
        codec = self._codec_of(schema_id, registered.schema_str)
        reader: Any = None
        if self.use_latest and subject_of is not None:
            parsed = codec.schema
            subject = subject_of(parsed.get("name") if isinstance(parsed, dict) else None)
            if subject is not None:
                latest = self.client.get_latest_version(subject)
                if not self._plain(latest.schema):
                    return None
                if latest.schema_id != schema_id:
                    reader = self._codec_of(latest.schema_id, latest.schema.schema_str).schema
        elif reader_schema is not None:
            reader = self._parsed_of(_schema_text(reader_schema))
            if reader == codec.schema:
                reader = None
        if _is_bytes(codec.schema):

            def raw(data: bytes) -> bytes:
                return bytes(data[5:])

            return raw
        decode = codec.decode

        def read(data: bytes) -> Any:
            return decode(data, 5, reader)

        return read

    # -- shared ---------------------------------------------------------------------------

    @staticmethod
    def _plain(schema: Any) -> bool:
        """A schema this module writes and reads itself: no references, no rules."""
        return not getattr(schema, "references", None) and not getattr(schema, "rule_set", None)

    def _codec_of(self, schema_id: int, text: str) -> AvroCodec:
        codec = self._codecs.get(schema_id)
        if codec is None:
            codec = self._codecs[schema_id] = AvroCodec(text)
        return codec

    def _parsed_of(self, text: str) -> Any:
        parsed = self._parsed.get(text)
        if parsed is None:
            parsed = self._parsed[text] = AvroCodec(text).schema
        return parsed
