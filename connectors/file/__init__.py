"""File connectors: file-source (tail), spooldir-source, file-sink."""
