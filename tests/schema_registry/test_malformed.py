"""Malformed requests to a real registry process (the follower's forwarding path included):
never a 500, always Confluent's error body."""

from __future__ import annotations

import urllib.parse

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.schema_registry.conftest import RegistryFactory, call

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
REGISTER_BODIES = JSON | st.fixed_dictionaries(
    {"schema": st.text(max_size=80) | JSON},
    optional={"schemaType": st.sampled_from(["AVRO", "JSON", "PROTOBUF", "x"]), "references": JSON},
)


def test_random_bodies_and_paths(registry_factory: RegistryFactory) -> None:
    one = registry_factory()
    two = registry_factory(like=one)  # one of them forwards every write

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(
        body=REGISTER_BODIES, subject=st.text(min_size=1, max_size=20), raw=st.binary(max_size=30)
    )
    def never_500(body: object, subject: str, raw: bytes) -> None:
        quoted = urllib.parse.quote(subject, safe="")
        for url in (one.url, two.url):
            for method, path, payload, data in (
                ("POST", f"/subjects/{quoted}/versions", body, None),
                ("POST", f"/subjects/{quoted}", body, None),
                ("POST", "/subjects/s/versions", None, raw),
                ("GET", f"/subjects/{quoted}/versions/{quoted}", None, None),
                ("DELETE", f"/subjects/{quoted}/versions/{quoted}", None, None),
                ("GET", f"/schemas/ids/{quoted}", None, None),
                ("PUT", f"/config/{quoted}", body, None),
            ):
                status, answer = call(url, method, path, payload, raw=data)
                assert status < 500, (method, path, payload, data, status, answer)
                if status >= 400:
                    assert set(answer) == {"error_code", "message"}, answer

    never_500()
