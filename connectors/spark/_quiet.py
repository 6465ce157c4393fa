"""A SparkSession that starts without the JVM's start-up noise, unless asked for it.

A local Spark prints a dozen lines on stderr before it does anything: the JDK's ``WARNING: Using
incubator modules``, ``Using Spark's default log4j profile``, ``Your hostname … resolves to a
loopback address`` and ``Set SPARK_LOCAL_IP …``, ``Setting default log level to "WARN"``,
``Unable to load native-hadoop library``, SLF4J's notices. None of them is the user's business.
:func:`session` starts Spark so that they are not shown:

- a local master (``local``, ``local[N]``, ``local[*]``) binds the driver to the loopback
  interface (``SPARK_LOCAL_IP=127.0.0.1`` in the JVM's environment, unless already set), so the
  hostname warnings have no cause;
- the JVM is started with its standard error going through this process, which drops exactly
  the lines above and passes every other line on, as it comes (errors, warnings of a query,
  the output of Spark's Python workers);
- the console progress bar is off (``spark.ui.showConsoleProgress``) unless ``conf`` sets it.

``SLUICE_SPARK_VERBOSE=1`` in the environment (or ``verbose=True``) starts Spark as it is, with
all of it. A session already running in the process (a notebook's) is returned as it is.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["NOISE", "VERBOSE_ENV", "is_noise", "session", "verbose_requested"]

VERBOSE_ENV = "SLUICE_SPARK_VERBOSE"
"""Set to ``1`` (``true``, ``yes``) to see Spark's start-up lines."""

NOISE = re.compile(
    rb"^(WARNING: Using incubator modules: "
    rb"|Using Spark's default log4j profile: "
    rb"|Setting default log level to \""
    rb"|To adjust logging level use sc\.setLogLevel\(newLevel\)"
    rb"|SLF4J(\(\w+\))?: "
    rb"|\S+ \S+ WARN Utils: (Your hostname, .* resolves to a loopback address"
    rb"|Set SPARK_LOCAL_IP if you need to bind to another address)"
    rb"|\S+ \S+ WARN NativeCodeLoader: Unable to load native-hadoop library)"
)
"""The start-up lines that are dropped (matched at the start of a line of the JVM's stderr)."""

_LOCAL_MASTER = re.compile(r"^local(\[[^\]]*\])?$")


def is_noise(line: bytes) -> bool:
    """Whether a line of the JVM's stderr is start-up noise.

    >>> is_noise(b"WARNING: Using incubator modules: jdk.incubator.vector\\n")
    True
    >>> is_noise(b"26/11/27 16:25:57 WARN NativeCodeLoader: Unable to load native-hadoop "
    ...          b"library for your platform... using builtin-java classes where applicable\\n")
    True
    >>> is_noise(b"26/11/27 16:26:01 ERROR Executor: Exception in task 0.0 in stage 1.0\\n")
    False
    """
    return NOISE.match(line) is not None


def verbose_requested() -> bool:
    """``SLUICE_SPARK_VERBOSE`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def session(
    master: str = "local[*]",
    app_name: str = "sluice",
    conf: Mapping[str, str] | None = None,
    *,
    verbose: bool | None = None,
) -> SparkSession:
    """The process's SparkSession: the running one, or a new one built with ``master``,
    ``app_name`` and ``conf`` (``spark.*`` settings), started quietly (see the module's
    docstring) unless ``verbose`` (default: :func:`verbose_requested`).

    Spark's Python workers run this interpreter (``PYSPARK_PYTHON``, unless set), so they can
    import ``sluice`` — the ``sluice`` data source needs it.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if verbose is None:
        verbose = verbose_requested()
    settings = dict(conf or {})
    if not verbose:
        settings.setdefault("spark.ui.showConsoleProgress", "false")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    if verbose:
        return builder.getOrCreate()
    local = _LOCAL_MASTER.match(master) is not None
    with _environment("SPARK_LOCAL_IP", "127.0.0.1" if local else None), _filtered_stderr():
        return builder.getOrCreate()


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """``name=value`` in the environment of processes started meanwhile (the JVM), unless
    ``value`` is None or the variable is set already."""
    if value is None or name in os.environ:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


@contextlib.contextmanager
def _filtered_stderr() -> Iterator[None]:
    """Processes started meanwhile (the JVM) write their stderr into a pipe that a thread
    reads, passing on every line but the noise to this process's stderr; this process's own
    stderr is back as it was when the block ends."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    read_end, write_end = os.pipe()
    target = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(
        target=_forward, args=(read_end, target), name="spark-stderr", daemon=True
    )
    forwarder.start()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(target, 2)  # the JVM keeps the pipe; this process writes where it wrote before


def _forward(read_end: int, target: int) -> None:
    """Copy lines from ``read_end`` to ``target`` but the noise, until every writer is gone."""
    with open(read_end, "rb", buffering=0) as pipe:
        pending = b""
        while chunk := pipe.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if not is_noise(line):
                    _write(target, line + b"\n")
        if pending and not is_noise(pending):
            _write(target, pending)
    os.close(target)


def _write(fd: int, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the terminal is gone: nothing to show anything on
        while data:
            data = data[os.write(fd, data) :]
