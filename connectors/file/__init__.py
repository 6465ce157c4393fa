"""File connectors: ``file-source`` (tail), ``spooldir-source`` and ``file-sink``.

They register under the short names and Kafka's FileStream class names as entry points of the
``sluice.connectors`` group (pyproject.toml), which is how the worker finds them.
"""

from __future__ import annotations

from sluice.connectors.file.sink import FileSinkConnector, FileSinkTask
from sluice.connectors.file.source import FileSourceConnector, FileSourceTask
from sluice.connectors.file.spooldir import SpoolDirSourceConnector, SpoolDirSourceTask

__all__ = [
    "FileSinkConnector",
    "FileSinkTask",
    "FileSourceConnector",
    "FileSourceTask",
    "SpoolDirSourceConnector",
    "SpoolDirSourceTask",
]
