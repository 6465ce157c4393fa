"""Error handling of a connector's records: Kafka Connect's ``errors.*`` settings.

- ``errors.tolerance``: ``none`` (the default: the first failure fails the task) or ``all``
  (skip the record, log it if ``errors.log.enable``, and for sinks send it to the dead-letter
  topic ``errors.deadletterqueue.topic.name`` with the ``__connect.errors.*`` context headers
  when ``errors.deadletterqueue.context.headers.enable`` is true).
- ``errors.retry.timeout`` (ms, default 0: no retry; -1: forever) and
  ``errors.retry.delay.max.ms`` (default 60000): how long a failing operation is retried, with
  exponential back-off, before tolerance decides.

>>> policy = ErrorPolicy.from_config({"errors.tolerance": "all", "errors.retry.timeout": "0"})
>>> policy.tolerate_all, policy.retry_timeout_ms
(True, 0)
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ErrorPolicy", "dead_letter_headers"]

log = logging.getLogger("sluice.connect")

T = TypeVar("T")


@dataclass(frozen=True)
class ErrorPolicy:
    """The ``errors.*`` settings of one connector."""

    tolerate_all: bool = False
    log_errors: bool = False
    dead_letter_topic: str | None = None
    context_headers: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60_000

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ErrorPolicy:
        """Read the settings (missing ones take Kafka's defaults)."""
        tolerance = str(config.get("errors.tolerance", "none")).strip().lower()
        if tolerance not in ("none", "all"):
            raise ValueError(f"errors.tolerance must be none or all, got {tolerance!r}")
        return cls(
            tolerate_all=tolerance == "all",
            log_errors=str(config.get("errors.log.enable", "false")).lower() == "true",
            dead_letter_topic=config.get("errors.deadletterqueue.topic.name") or None,
            context_headers=str(
                config.get("errors.deadletterqueue.context.headers.enable", "false")
            ).lower()
            == "true",
            retry_timeout_ms=int(config.get("errors.retry.timeout", 0)),
            retry_delay_max_ms=int(config.get("errors.retry.delay.max.ms", 60_000)),
        )

    def retry(self, operation: Callable[[], T], what: str, stop: Callable[[], bool]) -> T:
        """Run ``operation``, retrying failures for ``errors.retry.timeout``; re-raise after."""
        deadline = time.monotonic() + self.retry_timeout_ms / 1000
        delay = 0.3
        while True:
            try:
                return operation()
            except Exception as error:
                forever = self.retry_timeout_ms < 0
                if stop() or (not forever and time.monotonic() + delay > deadline):
                    raise
                log.warning("%s failed, retrying in %.1f s: %s", what, delay, error)
                time.sleep(delay)
                delay = min(delay * 2, self.retry_delay_max_ms / 1000)


def dead_letter_headers(
    *,
    topic: str,
    partition: int,
    offset: int,
    connector: str,
    task: int,
    stage: str,
    plugin: str,
    error: BaseException,
) -> list[tuple[str, bytes]]:
    """Kafka Connect's context headers for a record sent to the dead-letter topic."""
    trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return [
        ("__connect.errors.topic", topic.encode()),
        ("__connect.errors.partition", str(partition).encode()),
        ("__connect.errors.offset", str(offset).encode()),
        ("__connect.errors.connector.name", connector.encode()),
        ("__connect.errors.task.id", str(task).encode()),
        ("__connect.errors.stage", stage.encode()),
        ("__connect.errors.class.name", plugin.encode()),
        ("__connect.errors.exception.class.name", type(error).__qualname__.encode()),
        ("__connect.errors.exception.message", str(error).encode()),
        ("__connect.errors.exception.stacktrace", trace.encode()),
    ]
