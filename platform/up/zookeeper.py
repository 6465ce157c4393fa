"""A ZooKeeper of its own for a cluster that ``sluice up`` runs (``zookeeper: embedded``):
Debian's ``zookeeper`` package on the machine's Java, one standalone server.

It runs as a plain foreground JVM (what ``zkServer.sh start-foreground`` runs, without the
script's JMX and log-directory setup)::

    java -Xmx256m -XX:+UseSerialGC -cp <dir>:/usr/share/java/zookeeper.jar:<logging jars>
         org.apache.zookeeper.server.quorum.QuorumPeerMain <dir>/zoo.cfg

``zookeeper.jar``'s manifest names its dependencies in /usr/share/java; the two logging jars
bind slf4j to log4j 1.2, which reads the ``log4j.properties`` written beside ``zoo.cfg`` (the
log goes to ``<dir>/zookeeper.log``). ``zoo.cfg`` holds the tick (ZooKeeper's default 2 s:
sessions of 4 to 40 s, which takes Kafka's ``zookeeper.session.timeout.ms`` of 18 s), the
address, the data directory (``<dir>/data``) and no admin server (it would take port 8080).
It is ready when it answers ``ruok`` with ``imok`` (:func:`is_ready`).

The tests' ZooKeeper fixture uses the same files and command, with a short tick.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

__all__ = [
    "LOGGING_JARS",
    "ZOOKEEPER_JAR",
    "ZooKeeperMissingError",
    "command",
    "four_letter_word",
    "is_ready",
]

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
LOGGING_JARS = (Path("/usr/share/java/slf4j-log4j12.jar"), Path("/usr/share/java/log4j-1.2.jar"))
DEFAULT_TICK_MS = 2000


class ZooKeeperMissingError(RuntimeError):
    """Java or Debian's zookeeper package is not installed."""


def command(
    directory: Path,
    host: str,
    port: int,
    *,
    tick_ms: int = DEFAULT_TICK_MS,
    sync: bool = True,
    heap: str = "256m",
) -> list[str]:
    """Write ``zoo.cfg`` and ``log4j.properties`` into ``directory`` (created) and return the
    command line that runs the server. ``sync=False`` leaves out the fsync of each write
    (``forceSync=no``: for tests only, which never lose power). Raises
    :class:`ZooKeeperMissingError` when Java or the package is missing.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> command(folder, "127.0.0.1", 2181)[-2:] == [
    ...     "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(folder / "zoo.cfg")]
    True
    >>> "clientPort=2181" in (folder / "zoo.cfg").read_text()
    True
    """
    java = shutil.which("java")
    if not ZOOKEEPER_JAR.exists() or java is None:
        raise ZooKeeperMissingError(
            f"an embedded ZooKeeper needs Java and Debian's zookeeper package ({ZOOKEEPER_JAR} "
            "is missing): apt-get install zookeeper default-jre-headless"
            if java is not None
            else "an embedded ZooKeeper needs Java: apt-get install default-jre-headless"
        )
    data = directory / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = directory / "zoo.cfg"
    config.write_text(
        f"tickTime={tick_ms}\n"
        f"dataDir={data}\n"
        f"clientPort={port}\n"
        f"clientPortAddress={host}\n"
        f"minSessionTimeout={2 * tick_ms}\n"
        f"maxSessionTimeout={max(20 * tick_ms, 20_000)}\n"
        "maxClientCnxns=0\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=ruok,srvr,mntr,cons\n" + ("" if sync else "forceSync=no\n"),
        encoding="utf-8",
    )
    (directory / "log4j.properties").write_text(
        "log4j.rootLogger=INFO, FILE\n"
        "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
        f"log4j.appender.FILE.File={directory / 'zookeeper.log'}\n"
        "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n\n",
        encoding="utf-8",
    )
    classpath = ":".join(str(p) for p in (directory, ZOOKEEPER_JAR, *LOGGING_JARS))
    return [
        java,
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp",
        classpath,
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        str(config),
    ]


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send one of ZooKeeper's four-letter commands; its answer ("" if it closed at once)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def is_ready(host: str, port: int) -> bool:
    """Whether the server at ``host:port`` answers ``ruok`` with ``imok``."""
    try:
        return four_letter_word(host, port, "ruok") == "imok"
    except OSError:
        return False
