"""Bad requests get Confluent's error bodies and codes, never a 500, and never stop the proxy:
malformed JSON, wrong shapes, unknown topics and partitions, unsupported formats, and random
JSON bodies (Hypothesis) to the produce endpoints."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import BrokerProcess, create_topic
from tests.rest_proxy.fixtures import Proxy, cluster_id


def _error(answer: Any, status: int, code: int) -> dict[str, Any]:
    assert answer.status == status, (answer.status, answer.body)
    body = answer.json()
    assert body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    return dict(body)


def test_bad_produce_bodies(broker: BrokerProcess, proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap)
    cid = cluster_id(proxy)
    path = f"/v3/clusters/{cid}/topics/{topic}/records"
    _error(proxy.post(path, raw=b'{"value": '), 400, 400)
    _error(proxy.post(path, raw=b"[1, 2]"), 400, 400)
    _error(proxy.post(path, {"value": {"type": "YAML", "data": "x"}}), 400, 400)
    _error(proxy.post(path, {"value": {"type": "BINARY", "data": "***"}}), 422, 42206)
    _error(proxy.post(path, {"value": {"type": "STRING", "data": 5}}), 422, 42206)
    _error(
        proxy.post(path, {"partition_id": 9, "value": {"type": "STRING", "data": "x"}}), 404, 40402
    )
    body = _error(proxy.post(path, {"value": {"type": "AVRO", "data": {}}}), 400, 400)
    assert "Schema Registry" in body["message"]
    _error(proxy.post(f"/v3/clusters/{cid}/topics/no-such-topic/records", {}), 404, 40401)
    _error(proxy.post(path, raw=b"x", content_type="text/plain"), 415, 415)
    _error(proxy.get(path), 405, 405)
    _error(proxy.post(f"/v3/clusters/other-{cid}/topics/{topic}/records", {}), 404, 404)
    _error(
        proxy.post(
            f"/topics/{topic}",
            {"records": [{"value": 1}]},
            content_type="application/vnd.kafka.yaml.v2+json",
        ),
        415,
        415,
    )
    _error(
        proxy.post(
            f"/topics/{topic}",
            {"records": [{"value": {"a": 1}}]},
            content_type="application/vnd.kafka.avro.v2+json",
        ),
        422,
        42202,
    )
    _error(
        proxy.post(
            "/topics/no-such-topic",
            {"records": [{"value": 1}]},
            content_type="application/vnd.kafka.json.v2+json",
        ),
        404,
        40401,
    )
    _error(
        proxy.post(f"/topics/{topic}", raw=b"{", content_type="application/vnd.kafka.json.v2+json"),
        400,
        400,
    )
    _error(proxy.get("/v3/nothing/here"), 404, 404)
    _error(proxy.post(path, {"partition_id": 2**31, "value": None}), 404, 40402)
    _error(proxy.post(path, {"partition_id": 2**70, "value": None}), 400, 400)
    _error(proxy.post(path, raw=b""), 400, 400)
    _error(proxy.post(path, raw=b'{"value": {"type": "JSON", "data": NaN}}'), 400, 400)
    for moment in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "2024-02-30T00:00:00Z"):
        answer = proxy.post(path, {"value": {"type": "STRING", "data": "t"}, "timestamp": moment})
        assert answer.status in (200, 400), (moment, answer.status, answer.body)
    assert proxy.alive()


def test_bad_consumer_requests(proxy: Proxy) -> None:
    v2 = "application/vnd.kafka.v2+json"
    _error(proxy.post("/consumers/g", {"format": "xml"}, content_type=v2), 422, 42204)
    _error(proxy.post("/consumers/g", raw=b"{oops", content_type=v2), 400, 400)
    _error(
        proxy.post(
            "/consumers/g/instances/nobody/subscription", {"topics": ["t"]}, content_type=v2
        ),
        404,
        40403,
    )
    created = proxy.post("/consumers/g", {"name": "c"}, content_type=v2)
    assert created.status == 200
    base = "/consumers/g/instances/c"
    _error(proxy.post(f"{base}/subscription", {"topics": "t"}, content_type=v2), 400, 400)
    _error(proxy.post(f"{base}/subscription", {"topic_pattern": "("}, content_type=v2), 400, 400)
    _error(
        proxy.post(f"{base}/assignments", {"partitions": [{"topic": "t"}]}, content_type=v2),
        400,
        400,
    )
    _error(
        proxy.post(
            f"{base}/positions",
            {"offsets": [{"topic": "t", "partition": 0, "offset": 1}]},
            content_type=v2,
        ),
        409,
        40903,
    )
    _error(proxy.get(f"{base}/records", accept="application/vnd.kafka.avro.v2+json"), 406, 40601)
    assert proxy.request("DELETE", base).status == 204


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=15,
)
_PART = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["BINARY", "JSON", "STRING", "AVRO", "binary", "", "X"]) | _JSON,
        "data": _JSON,
        "schema_id": _JSON,
        "schema": _JSON,
        "subject": _JSON,
        "subject_name_strategy": _JSON,
        "schema_version": _JSON,
    },
)
_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "partition_id": st.integers(-2, 3) | _JSON,
        "headers": _JSON | st.lists(st.fixed_dictionaries({"name": _JSON, "value": _JSON})),
        "key": _PART | _JSON,
        "value": _PART | _JSON,
        "timestamp": _JSON | st.just("2024-01-01T00:00:00Z"),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies=st.lists(_RECORD | _JSON, min_size=1, max_size=4), cut=st.integers(0, 3))
@example(bodies=[{"key": {"type": []}}], cut=0)  # an unhashable type once broke the quick path
@example(bodies=[{"value": {"type": {"a": 1}, "data": 1}}], cut=0)
def test_random_bodies_never_give_a_500(
    broker: BrokerProcess, proxy: Proxy, bodies: list[Any], cut: int
) -> None:
    path = f"/v3/clusters/{cluster_id(proxy)}/topics/fuzz/records"
    if proxy.get(path.removesuffix("/records")).status == 404:
        create_topic(broker.bootstrap, partitions=2, name="fuzz")
    raw = "\n".join(json.dumps(b) for b in bodies).encode()
    raw = raw[: len(raw) - cut] if cut < len(raw) else raw
    answer = proxy.post(path, raw=raw)
    assert answer.status < 500, (answer.status, answer.body)
    for result in answer.stream():
        assert isinstance(result, dict) and isinstance(result["error_code"], int)
        assert result["error_code"] < 50000 or result["error_code"] in (50002, 50003), result
    v2 = proxy.post(
        "/topics/fuzz",
        raw=json.dumps({"records": bodies}).encode(),
        content_type="application/vnd.kafka.json.v2+json",
    )
    assert v2.status < 500, (v2.status, v2.body)
    assert proxy.alive()
