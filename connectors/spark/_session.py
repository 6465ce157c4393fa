"""One SparkSession per worker process, shared by every ``spark-sink`` task that runs in it.

Starting Spark costs a JVM (15–25 s), so the first task that needs the session creates it and
the others share it: :func:`acquire` counts users, :func:`release` stops the session when the
last one leaves (and an ``atexit`` hook stops it when the interpreter exits first). Creation is
lazy and thread-safe (tasks start in threads of their own).

A session that already runs in the process when the first task arrives (a notebook's, a test's)
is used as is and never stopped here: it is not ours. The first task decides ``spark.master``
and the static ``spark.conf.*`` settings; a later task that asks for different ones gets the
running session and a warning in the log.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_CONF", "acquire", "release"]

log = logging.getLogger("sluice.connectors.spark")

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}
"""Settings of a session created here, unless ``spark.conf.*`` says otherwise."""

_lock = threading.Lock()
_session: SparkSession | None = None
_owned = False
_users = 0
_settings: tuple[str, tuple[tuple[str, str], ...]] | None = None
_atexit_registered = False


def acquire(master: str, conf: Mapping[str, str]) -> SparkSession:
    """The process's session (created on first use with ``master`` and ``conf``); call
    :func:`release` once done with it."""
    global _session, _owned, _users, _settings, _atexit_registered
    wanted = (master, tuple(sorted(conf.items())))
    with _lock:
        if _session is not None and _stopped(_session):
            _session, _owned, _settings = None, False, None
        if _session is None:
            _session, _owned = _start(master, conf)
            _settings = wanted
            if _owned and not _atexit_registered:
                atexit.register(_stop_at_exit)
                _atexit_registered = True
        elif _owned and _settings != wanted:
            log.warning(
                "spark-sink: a SparkSession with spark.master=%s already runs in this worker; "
                "its settings are kept (asked for spark.master=%s, %s)",
                _settings[0] if _settings else "?",
                master,
                dict(conf),
            )
        _users += 1
        return _session


def release() -> None:
    """One user less; the last one stops a session this module created."""
    global _session, _owned, _users, _settings
    with _lock:
        _users = max(0, _users - 1)
        if _users == 0 and _session is not None:
            if _owned:
                log.info("spark-sink: stopping the SparkSession (its last task stopped)")
                _session.stop()
            _session, _owned, _settings = None, False, None


def _stopped(session: SparkSession) -> bool:
    context = session.sparkContext
    return context._jsc is None  # pyspark sets it to None when the context stops


def _start(master: str, conf: Mapping[str, str]) -> tuple[SparkSession, bool]:
    """The running session (not ours) or a new one (ours)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from sluice.connectors.spark._quiet import session as quiet_session

    if SparkContext._active_spark_context is not None:
        # Spark already runs here (a notebook, a test): its session, which is not ours to stop.
        return SparkSession.builder.getOrCreate(), False
    log.info("spark-sink: starting a SparkSession (master %s)", master)
    # Python workers run this interpreter, with sluice importable; no start-up noise in the log.
    session = quiet_session(master, "sluice-connect", {**DEFAULT_CONF, **conf})
    session.sparkContext.setLogLevel("WARN")
    return session, True


def _stop_at_exit() -> None:
    global _session
    with _lock:
        if _session is not None and _owned:
            try:
                _session.stop()
            except Exception as error:  # the JVM may be gone already
                log.debug("spark-sink: stopping the SparkSession at exit: %s", error)
        _session = None
