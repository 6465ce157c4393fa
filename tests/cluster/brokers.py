"""A cluster of real broker processes on one ZooKeeper: :class:`BrokerCluster`.

Each broker is a :class:`~tests.conftest.BrokerProcess` (``sluice broker start``) with ids 1…N::

    sluice broker start --config <root>/broker-<i>.properties --listen 127.0.0.1:<free port>
                        --data-dir <root>/broker-<i> --broker-id <i> --zookeeper <zk_connect>

``broker-<i>.properties`` holds the keys given to the cluster (and those given to broker ``i``
alone); the broker's output goes to ``<root>/broker-<i>.log``, appended across restarts. A
broker is ready when it printed its ``accepting connections`` line (``broker/app.py``: in a
cluster, after it registered in ZooKeeper), counted from the start that waits for it, so a
restart waits for a new line. Every wait is bounded; a broker that exits or does not get
ready fails with the tail of its log. The brokers are stopped by PID in :meth:`close` (a
paused one is resumed first), also when a start fails.

A broker killed with SIGKILL leaves its registration (``/brokers/ids/<i>``) until its
ZooKeeper session expires, and a broker started meanwhile with the same id is refused, as in
Kafka. So :meth:`start` first waits (bounded by the session timeout and a margin) until
ZooKeeper no longer lists the broker, through a :class:`ZooKeeperMetadataStore` session of the
harness's own, which :meth:`close` closes.

The fixtures ``broker_cluster`` (3 brokers) and ``broker_cluster_factory`` of
``tests/cluster/conftest.py`` build one on the test's own ZooKeeper chroot and close it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sluice import wire
from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
from tests.conftest import BrokerProcess

READY = "accepting connections"
"""What a broker prints once it serves clients (and, in a cluster, registered)."""
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0
LOG_TAIL = 4000
SESSION_TIMEOUT_MS = 18_000
"""Kafka's default ``zookeeper.session.timeout.ms``, when the cluster's config names none."""


class BrokerCluster:
    """``size`` broker processes (ids 1…``size``) joined through ``zk_connect``.

    ``config`` goes to every broker's ``server.properties``; ``broker_config[i]`` adds or
    overrides keys of broker ``i`` (``{2: {"broker.rack": "r2"}}``); ``zookeeper_connect[i]``
    is broker ``i``'s ``--zookeeper`` instead of ``zk_connect`` (the same ZooKeeper and chroot
    through a fault proxy: ``tests/faults/netfault.py``). Nothing runs until
    :meth:`start_all`; use as a context manager to have :meth:`close` called whatever happens.
    """

    def __init__(
        self,
        root: Path,
        zk_connect: str,
        size: int = 3,
        config: Mapping[str, str] | None = None,
        broker_config: Mapping[int, Mapping[str, str]] | None = None,
        zookeeper_connect: Mapping[int, str] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a cluster needs at least one broker, not {size}")
        unknown = set(broker_config or {}) - set(range(1, size + 1))
        if unknown:
            raise ValueError(f"broker_config names brokers {sorted(unknown)} of 1…{size}")
        unknown = set(zookeeper_connect or {}) - set(range(1, size + 1))
        if unknown:
            raise ValueError(f"zookeeper_connect names brokers {sorted(unknown)} of 1…{size}")
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.zk_connect = zk_connect
        self._store: ZooKeeperMetadataStore | None = None
        self._paused: set[int] = set()
        self._brokers: dict[int, BrokerProcess] = {}
        for i in range(1, size + 1):
            keys = {**(config or {}), **(broker_config or {}).get(i, {})}
            self._brokers[i] = BrokerProcess(
                root / f"broker-{i}",
                keys,
                root / f"broker-{i}.log",
                args=(
                    "--broker-id",
                    str(i),
                    "--zookeeper",
                    (zookeeper_connect or {}).get(i, zk_connect),
                ),
            )

    def __enter__(self) -> BrokerCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def ids(self) -> list[int]:
        """The broker ids, 1…N."""
        return list(self._brokers)

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated (running or not)."""
        return ",".join(b.bootstrap for b in self._brokers.values())

    def broker(self, i: int) -> BrokerProcess:
        """Broker ``i``'s process: ``.proc``, ``.port``, ``.bootstrap``, ``.log_text()``."""
        try:
            return self._brokers[i]
        except KeyError:
            raise KeyError(f"no broker {i}: the cluster has brokers {self.ids}") from None

    def running(self) -> list[int]:
        """The ids of the brokers whose process is alive (paused ones included)."""
        return [i for i, b in self._brokers.items() if b.proc is not None and b.proc.poll() is None]

    def start_all(self, timeout: float = START_TIMEOUT) -> BrokerCluster:
        """Start every broker that is not running, at once (a process's start is mostly
        Python's imports), and wait until each is ready."""
        deadline = time.monotonic() + timeout
        stopped = [i for i in self.ids if i not in self.running()]
        with ThreadPoolExecutor(max(1, len(stopped))) as pool:
            launched = {i: pool.submit(self._launch, i) for i in stopped}
        marks = {i: future.result() for i, future in launched.items()}  # the first failure
        for i, mark in marks.items():
            self._wait_ready(i, mark, deadline)
        # A client's first Metadata may come before the controller's election; librdkafka's
        # admin calls then wait for a controller without asking again (a CreateTopics right
        # after start once waited out its 45 s): every broker knows the controller first.
        self.wait_until(
            lambda: all(self.controller_of(i) >= 0 for i in marks),
            "every started broker names a controller",
            timeout=max(1.0, deadline - time.monotonic()),
        )
        return self

    def controller_of(self, i: int, timeout: float = 10.0) -> int:
        """The controller id that Metadata from broker ``i`` names (-1: none yet)."""
        with wire.connect(self.broker(i).bootstrap, timeout=timeout) as conn:
            answer = conn.call(
                wire.METADATA,
                topics=(),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
        return int(answer.controller_id)

    def start(self, i: int, timeout: float = START_TIMEOUT) -> BrokerProcess:
        """(Re)start broker ``i`` on its data dir and port, once its previous registration is
        gone (see the module docstring); returns once it is ready."""
        if i in self.running():
            raise RuntimeError(f"broker {i} is running already (pid {self.broker(i).pid})")
        session_s = self.session_timeout_ms(i) / 1000
        self.wait_until(
            lambda: i not in self.store().live_brokers(),
            f"broker {i}'s previous registration to expire",
            timeout=session_s + 10,
        )
        self._wait_ready(i, self._launch(i), time.monotonic() + timeout)
        return self.broker(i)

    def stop(self, i: int, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM broker ``i`` (a clean, controlled shutdown) and wait; its exit code. A broker
        that does not exit in ``timeout`` s is killed and fails here with its log."""
        self.resume(i)
        try:
            return self.broker(i).stop(timeout)
        except Exception as exc:
            raise AssertionError(
                f"broker {i} did not stop within {timeout:g}s of SIGTERM ({exc})\n"
                f"{self.log_tail(i)}"
            ) from None

    def kill(self, i: int) -> None:
        """SIGKILL broker ``i`` (kill -9: nothing flushed, its ZooKeeper session left to
        expire) and reap it."""
        self.broker(i).kill()
        self._paused.discard(i)

    def pause(self, i: int) -> None:
        """SIGSTOP broker ``i``: a zombie that keeps its sockets and session until it expires."""
        broker = self.broker(i)
        if i not in self.running():
            raise RuntimeError(f"broker {i} is not running: nothing to pause")
        os.kill(broker.pid, signal.SIGSTOP)
        self._paused.add(i)

    def resume(self, i: int) -> None:
        """SIGCONT broker ``i`` if it is paused."""
        if i in self._paused:
            self._paused.discard(i)
            if i in self.running():
                os.kill(self.broker(i).pid, signal.SIGCONT)

    def close(self) -> None:
        """Stop every broker by PID (SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT`), and
        close the harness's ZooKeeper session."""
        for i in list(self._paused):
            self.resume(i)
        try:
            for broker in self._brokers.values():
                try:
                    broker.stop(STOP_TIMEOUT)
                except Exception:  # killed by stop() already; the others must still be stopped
                    broker.kill()
        finally:
            store, self._store = self._store, None
            if store is not None:
                store.close()

    def store(self) -> ZooKeeperMetadataStore:
        """The harness's own session on the cluster's ZooKeeper chroot (opened at first use)."""
        if self._store is None:
            self._store = ZooKeeperMetadataStore.connect(
                self.zk_connect, session_timeout_ms=10_000, connection_timeout_ms=10_000
            )
        return self._store

    def session_timeout_ms(self, i: int) -> int:
        """Broker ``i``'s ``zookeeper.session.timeout.ms``."""
        return int(self.broker(i).config.get("zookeeper.session.timeout.ms", SESSION_TIMEOUT_MS))

    def log_tail(self, i: int, chars: int = LOG_TAIL) -> str:
        """The end of broker ``i``'s log, headed by its name (for assertion messages)."""
        broker = self.broker(i)
        return f"--- broker {i} ({broker.log_path})\n{broker.log_text()[-chars:]}"

    def logs(self, chars: int = LOG_TAIL) -> str:
        """The end of every broker's log."""
        return "\n".join(self.log_tail(i, chars) for i in self.ids)

    def metadata_brokers(self, i: int, timeout: float = 10.0) -> list[int]:
        """The broker ids that Metadata from broker ``i`` lists (through ``sluice.wire``)."""
        with wire.connect(self.broker(i).bootstrap, timeout=timeout) as conn:
            return [node.node_id for node in wire.brokers(conn)]

    def wait_until(
        self, condition: Callable[[], bool], what: str, timeout: float = START_TIMEOUT
    ) -> None:
        """Poll ``condition`` (every 0.1 s, at most ``timeout`` s); fail with ``what`` and the
        brokers' logs if it never holds. An exception of ``condition`` counts as not yet."""
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except Exception as exc:
                last = exc
            time.sleep(0.1)
        detail = f" (last error: {last!r})" if last is not None else ""
        raise AssertionError(f"{what}: not within {timeout:g}s{detail}\n{self.logs()}")

    def _launch(self, i: int) -> int:
        """Start broker ``i``'s process; the number of ready lines its log had before."""
        broker = self.broker(i)
        mark = broker.log_text().count(READY)
        try:
            broker.start()  # returns once its port accepts connections
        except TimeoutError:
            pass  # slow (a loaded machine): still alive, it gets until the ready line's deadline
        except Exception as exc:
            broker.kill()
            raise AssertionError(f"broker {i} did not start: {exc}\n{self.log_tail(i)}") from None
        return mark

    def _wait_ready(self, i: int, mark: int, deadline: float) -> None:
        broker = self.broker(i)
        while broker.log_text().count(READY) <= mark:
            proc = broker.proc
            if proc is None or proc.poll() is not None:
                code = None if proc is None else proc.returncode
                raise AssertionError(
                    f"broker {i} exited with {code} before it was ready\n{self.log_tail(i)}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"broker {i} was not ready in time\n{self.log_tail(i)}")
            time.sleep(0.05)
