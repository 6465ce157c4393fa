"""A real ZooKeeper server for the tests: Debian's ``zookeeper`` package on Java 17.

Started as a plain foreground JVM (what ``zkServer.sh start-foreground`` runs, without the
script's JMX and log-directory setup)::

    java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
         -cp <dir>:/usr/share/java/zookeeper.jar:slf4j-log4j12.jar:log4j-1.2.jar
         org.apache.zookeeper.server.quorum.QuorumPeerMain <dir>/zoo.cfg

``zookeeper.jar``'s manifest names its dependencies in /usr/share/java; the two logging jars
bind slf4j to log4j 1.2, which reads the ``log4j.properties`` written beside ``zoo.cfg`` (the
log goes to ``<dir>/zookeeper.log``). ``zoo.cfg`` sets a short tick of 200 ms (sessions may last
0.4 to 20 s), a free loopback port, the data dir and no admin server (it would take port 8080).
Ready when it answers ``ruok`` with ``imok``: about a second here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
LOGGING_JARS = (Path("/usr/share/java/slf4j-log4j12.jar"), Path("/usr/share/java/log4j-1.2.jar"))
TICK_MS = 200


def four_letter_word(port: int, word: str, timeout: float = 1.0) -> str:
    """Send one of ZooKeeper's four-letter commands; its answer ("" if it closed at once)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode()


class ZooKeeperServer:
    """One standalone ZooKeeper in ``directory``, on ``port``; restartable on the same data."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.data_dir = directory / "data"
        self.log_path = directory / "zookeeper.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def hosts(self) -> str:
        """``host:port`` for ``zookeeper.connect``."""
        return f"127.0.0.1:{self.port}"

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config = self.directory / "zoo.cfg"
        config.write_text(
            f"tickTime={TICK_MS}\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            f"minSessionTimeout={2 * TICK_MS}\n"
            f"maxSessionTimeout={100 * TICK_MS}\n"
            "maxClientCnxns=0\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,mntr,cons\n"
            # no fsync wait on the test machine's shared disk; a test never loses power
            "forceSync=no\n"
        )
        (self.directory / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, FILE\n"
            "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
            f"log4j.appender.FILE.File={self.log_path}\n"
            "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n\n"
        )
        return config

    def start(self, timeout: float = 30.0) -> None:
        """Start the JVM and wait (bounded) until it answers ``ruok``."""
        if not ZOOKEEPER_JAR.exists():
            raise RuntimeError(
                f"{ZOOKEEPER_JAR} is missing: install Debian's zookeeper package "
                "(make system-deps does)"
            )
        config = self._write_config()
        classpath = ":".join(str(p) for p in (self.directory, ZOOKEEPER_JAR, *LOGGING_JARS))
        command = [
            "java",
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            classpath,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(config),
        ]
        with (self.directory / "stdout.log").open("ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"ZooKeeper exited with {self.proc.returncode} at start; "
                    f"see {self.log_path} and {self.directory / 'stdout.log'}"
                )
            try:
                if four_letter_word(self.port, "ruok") == "imok":
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"ZooKeeper did not answer ruok on port {self.port} in {timeout}s")

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL after 10 s; nothing if it is not running."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def restart(self) -> None:
        """Stop and start again on the same port and data (sessions survive a short restart:
        they expire only after their timeout)."""
        self.stop()
        self.start()
