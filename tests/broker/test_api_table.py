"""The API table (:data:`sluice.broker.handlers.APIS`) is the one place an API's versions live:
``docs/broker.md`` says the same, the handlers' types cover exactly those versions, and
ApiVersions advertises them (asked in-process, through ``Server.handle``)."""

from __future__ import annotations

import inspect
import re
import struct
import types
import typing
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from sluice.broker.handlers import APIS, BY_KEY, METRIC_NAMES, SUPPORTED
from sluice.broker.protocol import messages
from sluice.broker.protocol.deferred import Deferred
from tests.broker.inprocess import InProcessBroker

DOCS = Path(__file__).resolve().parents[2] / "docs" / "broker.md"
ROW = re.compile(r"^\| (\w+) \| (\d+) \| (\d+)(?:–(\d+))? \|")


def documented_apis() -> dict[int, tuple[str, int, int]]:
    """``key -> (name, min, max)`` from the table under "## Protocol" in docs/broker.md."""
    section = DOCS.read_text().split("\n## Protocol\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[int, tuple[str, int, int]] = {}
    for line in section.splitlines():
        if (match := ROW.match(line)) is None:
            continue
        name, key, low, high = match.groups()
        assert int(key) not in rows, f"docs/broker.md lists API key {key} twice"
        rows[int(key)] = (name, int(low), int(high if high is not None else low))
    return rows


def test_docs_api_table_matches_the_api_table() -> None:
    documented = documented_apis()
    served = {s.key: (s.name, s.min_version, s.max_version) for s in APIS}
    assert set(documented) == set(served), (
        f"docs/broker.md lacks keys {sorted(set(served) - set(documented))}, "
        f"lists unserved keys {sorted(set(documented) - set(served))}"
    )
    for key, row in served.items():
        assert documented[key] == row, f"API key {key}: docs say {documented[key]}, table {row}"


def _classes(annotation: object) -> list[typing.Any]:
    """The kio classes of a union annotation (``None`` left out; a ``Deferred[...]`` response
    is the same classes, later)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    members = typing.get_args(annotation) if union else ()
    found = {
        m
        for m in members or (annotation,)
        if m is not type(None) and typing.get_origin(m) is not Deferred
    }
    for deferred in (m for m in members if typing.get_origin(m) is Deferred):
        found.update(_classes(typing.get_args(deferred)[0]))
    return sorted(found, key=lambda c: int(c.__version__))


@pytest.mark.parametrize("spec", APIS, ids=lambda s: s.name)
def test_handler_types_cover_exactly_the_served_versions(spec: typing.Any) -> None:
    # the handlers import the unions for type checking only: resolve them in messages
    hints = typing.get_type_hints(spec.handler, localns=vars(messages))
    request = list(inspect.signature(spec.handler).parameters)[1]
    served = set(range(spec.min_version, spec.max_version + 1))
    for what, annotation in (("request", hints[request]), ("response", hints["return"])):
        if isinstance(getattr(annotation, "versions", None), range):  # written by hand (Fetch)
            assert list(annotation.versions) == sorted(served), (
                f"{spec.name}'s handler writes versions {annotation.versions}, "
                f"the table serves {sorted(served)}"
            )
            assert annotation.api_key == spec.key, f"{spec.name}'s answer is of another API"
            continue
        classes = _classes(annotation)
        versions = sorted(int(c.__version__) for c in classes)
        assert versions == sorted(served), (
            f"{spec.name}'s handler takes {what} versions {versions}, "
            f"the table serves {sorted(served)}"
        )
        keys = {int(c.__api_key__) for c in classes}
        assert keys == {spec.key}, f"{spec.name}'s {what} classes are of API keys {keys}"


def test_derived_tables() -> None:
    assert len(BY_KEY) == len(APIS) == len(SUPPORTED) == len(METRIC_NAMES)
    assert SUPPORTED[0] == (3, 9) and METRIC_NAMES[1] == "FetchConsumer"
    assert all(METRIC_NAMES[s.key] == s.name for s in APIS if s.name != "Fetch")


def test_api_versions_advertises_the_table(in_process_broker: InProcessBroker) -> None:
    answer = in_process_broker.request(
        ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )
    assert answer.error_code == ErrorCode.none
    advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert advertised == dict(SUPPORTED)
    assert [k.api_key for k in answer.api_keys] == sorted(SUPPORTED), "sorted by key"
    requests = next(in_process_broker.server.requests.families())
    assert [(s.labels, s.value) for s in requests.samples] == [({"request": "ApiVersions"}, 1)]


def test_api_versions_above_max_gets_v0_body_with_the_table(
    in_process_broker: InProcessBroker,
) -> None:
    # header v2 (flexible): key 18, version 99, correlation id, client id "t", no tagged fields
    frame = struct.pack(">hhih", 18, 99, 4242, 1) + b"t\x00" + b"\x02t\x021\x00"
    answer = in_process_broker.handle(frame)
    assert answer is not None, "ApiVersions v99 should be answered, not refused"
    (size, correlation) = struct.unpack_from(">ii", answer)
    assert size == len(answer) - 4 and correlation == 4242
    body, _ = entity_reader(ApiVersionsResponseV0)(answer, 8)
    assert body.error_code == ErrorCode.unsupported_version, body.error_code
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys} == dict(SUPPORTED)
