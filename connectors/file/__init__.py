"""File connectors: ``file-source`` (tail), ``spooldir-source`` and ``file-sink``.

:data:`ALIASES` maps the short names (and Kafka's FileStream class names) to the classes:

>>> ALIASES["file-source"] is FileSourceConnector
True
>>> ALIASES["org.apache.kafka.connect.file.FileStreamSinkConnector"].__name__
'FileSinkConnector'
"""

from __future__ import annotations

from sluice.connect.api import Connector
from sluice.connectors.file.sink import FileSinkConnector, FileSinkTask
from sluice.connectors.file.source import FileSourceConnector, FileSourceTask
from sluice.connectors.file.spooldir import SpoolDirSourceConnector, SpoolDirSourceTask

__all__ = [
    "ALIASES",
    "FileSinkConnector",
    "FileSinkTask",
    "FileSourceConnector",
    "FileSourceTask",
    "SpoolDirSourceConnector",
    "SpoolDirSourceTask",
]

ALIASES: dict[str, type[Connector]] = {
    "file-source": FileSourceConnector,
    "spooldir-source": SpoolDirSourceConnector,
    "file-sink": FileSinkConnector,
    "org.apache.kafka.connect.file.FileStreamSourceConnector": FileSourceConnector,
    "org.apache.kafka.connect.file.FileStreamSinkConnector": FileSinkConnector,
}
"""Plugin names → connector classes (short aliases and Kafka's class names)."""
