"""A partition's topic id on disk: Kafka's ``partition.metadata`` file, and Kafka's Uuid text.

On-disk format (Kafka's ``PartitionMetadataFile``, version 0), in each partition directory::

    version: 0
    topic_id: <the topic id as Kafka's Uuid text>

two lines, no trailing newline. Kafka's Uuid text is the 16 bytes in URL-safe base64 without
padding (22 characters). The file is written to a temporary name, fsynced and renamed, so after a
crash it is either absent or whole; a directory without it (written before topic ids existed, or
by a crash before the first write) gets its topic's id written at the next start. A file that
does not parse, or holds the zero id, is refused with its path (:class:`PartitionMetadataError`),
as Kafka refuses it, rather than silently replaced: the directory may belong to another topic.

>>> import tempfile, pathlib, uuid
>>> directory = pathlib.Path(tempfile.mkdtemp())
>>> topic_id = uuid.UUID("8c9ea9d3-2b7c-4bd2-9a5d-2a4a3c3b5e1f")
>>> write_partition_metadata(directory, topic_id)
>>> (directory / "partition.metadata").read_text()
'version: 0\\ntopic_id: jJ6p0yt8S9KaXSpKPDteHw'
>>> read_partition_metadata(directory) == topic_id
True
>>> read_partition_metadata(directory / "missing") is None
True
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
from pathlib import Path

from sluice.broker.log.files import write_atomically
from sluice.errors import StorageError

__all__ = [
    "PARTITION_METADATA",
    "PartitionMetadataError",
    "format_topic_id",
    "parse_topic_id",
    "random_topic_id",
    "read_partition_metadata",
    "write_partition_metadata",
]

PARTITION_METADATA = "partition.metadata"
VERSION = 0

_RESERVED = 100
"""Kafka reserves the ids 0..99 (most significant bits 0): 0 is "no id", 1 the metadata topic."""


class PartitionMetadataError(StorageError):
    """A ``partition.metadata`` file that cannot be read as Kafka writes it."""


def format_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka's text of a Uuid: URL-safe base64 of its 16 bytes, unpadded.

    >>> format_topic_id(uuid.UUID(int=1))
    'AAAAAAAAAAAAAAAAAAAAAQ'
    """
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def parse_topic_id(text: str) -> uuid.UUID:
    """The Uuid of Kafka's text; raises ``ValueError`` for anything else.

    >>> parse_topic_id("AAAAAAAAAAAAAAAAAAAAAQ")
    UUID('00000000-0000-0000-0000-000000000001')
    >>> parse_topic_id("not-an-id")
    Traceback (most recent call last):
    ...
    ValueError: 'not-an-id' is not a topic id (22 characters of URL-safe base64)
    """
    try:
        raw = base64.b64decode(text + "==", altchars=b"-_", validate=True)
    except binascii.Error:
        raw = b""
    if len(text) != 22 or len(raw) != 16:
        raise ValueError(f"{text!r} is not a topic id (22 characters of URL-safe base64)")
    return uuid.UUID(bytes=raw)


def random_topic_id() -> uuid.UUID:
    """A new topic id as Kafka's ``Uuid.randomUuid`` makes them: random, never one of the
    reserved ids (the zero id among them) and never with a ``-`` in its text (a command-line
    tool would take it for an option).

    >>> topic_id = random_topic_id()
    >>> topic_id.int >= 100 and "-" not in format_topic_id(topic_id)
    True
    """
    while True:
        topic_id = uuid.uuid4()
        if topic_id.int >= _RESERVED and "-" not in format_topic_id(topic_id):
            return topic_id


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id recorded in ``directory``, or None when it has no ``partition.metadata``."""
    path = directory / PARTITION_METADATA
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PartitionMetadataError(f"{path}: cannot read: {exc}") from exc
    lines = text.splitlines()
    fields = [line.split(":", 1) for line in lines]
    if len(lines) != 2 or any(len(f) != 2 for f in fields):
        raise PartitionMetadataError(
            f"{path}: expected 'version: {VERSION}' and 'topic_id: <id>' lines, found {text!r}"
        )
    (version_key, version), (id_key, id_text) = ((k, v.strip()) for k, v in fields)
    if version_key != "version" or version != str(VERSION):
        raise PartitionMetadataError(
            f"{path}: line 1: unrecognized version {lines[0]!r} (this broker reads version 0)"
        )
    if id_key != "topic_id":
        raise PartitionMetadataError(
            f"{path}: line 2: expected 'topic_id: <id>', found {lines[1]!r}"
        )
    try:
        topic_id = parse_topic_id(id_text)
    except ValueError as exc:
        raise PartitionMetadataError(f"{path}: line 2: {exc}") from None
    if topic_id.int == 0:
        raise PartitionMetadataError(f"{path}: line 2: the zero topic id is not a topic id")
    return topic_id


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    """Record ``topic_id`` in ``directory`` (atomically: temporary file, fsync, rename)."""
    text = f"version: {VERSION}\ntopic_id: {format_topic_id(topic_id)}"
    try:
        write_atomically(directory / PARTITION_METADATA, text.encode("utf-8"))
    except OSError as exc:
        raise PartitionMetadataError(
            f"{directory / PARTITION_METADATA}: cannot write: {os.strerror(exc.errno or 0)}"
        ) from exc
