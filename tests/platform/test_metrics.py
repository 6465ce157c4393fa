"""``sluice.metrics``: the address option, the threaded and the asyncio ``/metrics`` servers."""

from __future__ import annotations

import asyncio
import socket

import pytest
from prometheus_client import CollectorRegistry, Counter

from sluice.errors import ConfigError
from sluice.metrics import parse_listen, serve_metrics, serve_metrics_async
from tests.platform.scrape import scrape


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    Counter("sluice_test_things", "Things.", registry=registry).inc(3)
    return registry


@pytest.mark.parametrize("text", ["", "9404", "host:", "host:port", "h:70000", "a:-1"])
def test_a_malformed_address_names_the_option(text: str) -> None:
    with pytest.raises(ConfigError, match="--metrics-listen: expected HOST:PORT"):
        parse_listen(text)


def test_addresses() -> None:
    assert parse_listen("[::1]:9404") == ("::1", 9404)
    assert parse_listen(":9404") == ("0.0.0.0", 9404)
    assert parse_listen("localhost:1", key="metrics_listen") == ("localhost", 1)


def test_threaded_server_serves_its_own_registry() -> None:
    server = serve_metrics("127.0.0.1:0", _registry())
    try:
        scraped = scrape(server.port)
        assert scraped.get("sluice_test_things_total") == 3
        assert "python_gc" not in scraped.text, "the global registry must not be served"
    finally:
        server.close()


def test_a_port_in_use_is_a_config_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=r"--metrics-listen: cannot serve metrics on"):
            serve_metrics(f"127.0.0.1:{port}", _registry())

        async def on_loop() -> None:
            await serve_metrics_async(f"127.0.0.1:{port}", _registry(), key="x")

        with pytest.raises(ConfigError, match=r"^x: cannot serve metrics on"):
            asyncio.run(on_loop())


async def _get(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    return answer


def test_asyncio_server_answers_get_head_and_unknown_paths() -> None:
    async def scenario() -> list[bytes]:
        server = await serve_metrics_async("127.0.0.1:0", _registry())
        try:
            return [
                await _get(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
                await _get(server.port, b"HEAD /metrics HTTP/1.0\r\n\r\n"),
                await _get(server.port, b"GET /nothing HTTP/1.1\r\n\r\n"),
                await _get(server.port, b"POST /metrics HTTP/1.1\r\n\r\n"),
            ]
        finally:
            await server.close()

    get, head, missing, post = asyncio.run(scenario())
    assert get.startswith(b"HTTP/1.1 200 OK\r\n"), get[:80]
    assert b"\r\n\r\n" in get and b"sluice_test_things_total 3.0" in get
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert missing.startswith(b"HTTP/1.1 404 "), missing[:80]
    assert post.startswith(b"HTTP/1.1 405 "), post[:80]
