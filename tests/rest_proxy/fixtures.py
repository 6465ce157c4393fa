"""The REST proxy as a real ``sluice rest-proxy start`` process, and raw HTTP to it (what curl
would send: urllib, bytes in and out)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BrokerProcess, free_port, stop_process

SLUICE = str(Path(sys.executable).with_name("sluice"))


@dataclass
class Answer:
    """An HTTP answer: status, headers, body bytes."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def stream(self) -> list[Any]:
        """The concatenated JSON values of the body."""
        decoder = json.JSONDecoder()
        text, position, values = self.body.decode(), 0, []
        while True:
            while position < len(text) and text[position].isspace():
                position += 1
            if position >= len(text):
                return values
            value, position = decoder.raw_decode(text, position)
            values.append(value)


class Proxy:
    """A running proxy process and an HTTP client for it."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
        self.proc = proc
        self.url = url
        self.log = log

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        content_type: str | None = "application/json",
        accept: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 30.0,
    ) -> Answer:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        if data is not None and content_type is not None:
            request.add_header("Content-Type", content_type)
        if accept is not None:
            request.add_header("Accept", accept)
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return Answer(response.status, dict(response.headers), response.read())
        except urllib.error.HTTPError as error:
            with error:
                return Answer(error.code, dict(error.headers), error.read())

    def get(self, path: str, **kwargs: Any) -> Answer:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Answer:
        return self.request("POST", path, body, **kwargs)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start_proxy(bootstrap: str, tmp_path: Path, *args: str) -> Proxy:
    """``sluice rest-proxy start`` on a free port; waits until it answers."""
    port = free_port()
    log = tmp_path / f"rest-proxy-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                SLUICE,
                "rest-proxy",
                "start",
                "--listen",
                f"127.0.0.1:{port}",
                "-b",
                bootstrap,
                *args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    proxy = Proxy(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the proxy exited with {proc.returncode}: {proxy.log_text()}")
        try:
            with urllib.request.urlopen(f"{proxy.url}/", timeout=2):
                return proxy
        except OSError:
            time.sleep(0.1)
    stop_process(proc)
    raise TimeoutError(f"the proxy did not answer: {proxy.log_text()}")


@pytest.fixture
def proxy_factory(tmp_path: Path) -> Iterator[Callable[..., Proxy]]:
    """Start proxies (``proxy_factory(bootstrap, *more args)``); each stopped by PID."""
    started: list[Proxy] = []

    def start(bootstrap: str, *args: str) -> Proxy:
        proxy = start_proxy(bootstrap, tmp_path, *args)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        stop_process(proxy.proc)


@pytest.fixture
def proxy(broker: BrokerProcess, proxy_factory: Callable[..., Proxy]) -> Proxy:
    """A proxy in front of a fresh broker."""
    return proxy_factory(broker.bootstrap)


def cluster_id(proxy: Proxy) -> str:
    answer = proxy.get("/v3/clusters")
    assert answer.status == 200, answer.body
    return str(answer.json()["data"][0]["cluster_id"])
