"""YAML deployment files: the structured and flat forms, and flattening to Kafka keys."""

from __future__ import annotations

import textwrap

import pytest

from sluice.connect.deploy import (
    loads,
)
from tests.connect.deploy_helpers import one

STRUCTURED = """
name: orders-in
class: file-source
tasks_max: 3
config:
  file: /var/log/orders.log
  topic: orders
  batch.size: 500
  key.converter: {schemas.enable: false}
transforms:
  - name: route
    type: RegexRouter
    regex: (.*)
    replacement: copy-$1
    predicate: isOrder
    negate: true
predicates:
  - name: isOrder
    type: TopicNameMatches
    pattern: orders.*
errors:
  tolerance: all
  log.enable: true
  deadletterqueue:
    topic.name: orders-dlq
    context.headers.enable: true
"""

FLAT = """
name: orders-in
connector.class: file-source
tasks.max: "3"
file: /var/log/orders.log
topic: orders
batch.size: 500
key.converter.schemas.enable: false
transforms: route
transforms.route.type: RegexRouter
transforms.route.regex: (.*)
transforms.route.replacement: copy-$1
transforms.route.predicate: isOrder
transforms.route.negate: true
predicates: isOrder
predicates.isOrder.type: TopicNameMatches
predicates.isOrder.pattern: orders.*
errors.tolerance: all
errors.log.enable: true
errors.deadletterqueue.topic.name: orders-dlq
errors.deadletterqueue.context.headers.enable: true
"""

EXPECTED = {
    "name": "orders-in",
    "connector.class": "file-source",
    "tasks.max": "3",
    "file": "/var/log/orders.log",
    "topic": "orders",
    "batch.size": "500",
    "key.converter.schemas.enable": "false",
    "transforms": "route",
    "transforms.route.type": "RegexRouter",
    "transforms.route.regex": "(.*)",
    "transforms.route.replacement": "copy-$1",
    "transforms.route.predicate": "isOrder",
    "transforms.route.negate": "true",
    "predicates": "isOrder",
    "predicates.isOrder.type": "TopicNameMatches",
    "predicates.isOrder.pattern": "orders.*",
    "errors.tolerance": "all",
    "errors.log.enable": "true",
    "errors.deadletterqueue.topic.name": "orders-dlq",
    "errors.deadletterqueue.context.headers.enable": "true",
}


# --- the two forms ------------------------------------------------------------------------


def test_structured_form_flattens_to_kafka_keys() -> None:
    spec = one(STRUCTURED)
    assert spec.config == EXPECTED
    assert list(spec.config)[:3] == ["name", "connector.class", "tasks.max"]
    assert (spec.name, spec.connector_class, spec.tasks_max, spec.state) == (
        "orders-in",
        "file-source",
        3,
        "running",
    )
    assert (spec.source, spec.line) == ("c.yaml", 1)


def test_flat_form_gives_the_same_config() -> None:
    assert one(FLAT).config == one(STRUCTURED).config == EXPECTED


def test_rest_shape_gives_the_same_config() -> None:
    body = "name: orders-in\nconfig:\n" + textwrap.indent(
        "\n".join(line for line in FLAT.strip().splitlines() if not line.startswith("name:")),
        "  ",
    )
    assert one(body).config == EXPECTED
    # The REST body may repeat the name inside config, as long as it is the same.
    assert one(body.replace("config:\n", "config:\n  name: orders-in\n")).config == EXPECTED


def test_key_lines_point_at_each_written_key() -> None:
    spec = one(STRUCTURED)
    lines = spec.key_lines
    assert lines["name"] == 1
    assert lines["connector.class"] == 2
    assert lines["tasks.max"] == 3
    assert lines["batch.size"] == 7
    assert lines["key.converter.schemas.enable"] == 8
    assert lines["transforms"] == 9
    assert lines["transforms.route.type"] == 11
    assert lines["predicates.isOrder.pattern"] == 19
    assert lines["errors.deadletterqueue.topic.name"] == 24
    assert str(spec.error("transforms.route.regex", "bad")) == (
        "c.yaml:12: transforms.route.regex: bad"
    )
    assert str(spec.error("file", "missing")) == "c.yaml:5: file: missing"
    # A key that was not written is reported at the connector's line.
    assert str(spec.error("poll.ms", "bad")) == "c.yaml:1: poll.ms: bad"
    # The structured form's own spellings are kept in messages.
    assert str(spec.error("tasks.max", "too many")) == "c.yaml:3: tasks_max: too many"
    assert str(spec.error("connector.class", "unknown")) == "c.yaml:2: class: unknown"
    assert spec.where("topic") == "c.yaml:6"


def test_defaults_tasks_max_1_and_state_running() -> None:
    spec = one("name: a\nclass: file-sink\nconfig: {topics: t}\n")
    assert (spec.tasks_max, spec.state, spec.config["tasks.max"]) == (1, "running", "1")


@pytest.mark.parametrize("state", ["running", "paused", "stopped", "PAUSED"])
def test_state_is_read_in_both_forms(state: str) -> None:
    assert one(f"name: a\nclass: x\nstate: {state}\n").state == state.lower()
    flat = one(f"name: a\nconnector.class: x\nstate: {state}\n")
    assert flat.state == state.lower()
    assert "state" not in flat.config, "state is Sluice's, not a connector setting"


def test_transforms_as_a_mapping_by_alias() -> None:
    spec = one(
        """
        name: a
        class: x
        transforms:
          first: {type: InsertField$Value, static.field: src, static.value: shop}
          second:
            type: MaskField$Value
            fields: [card, cvv]
        """
    )
    assert spec.config["transforms"] == "first,second"
    assert spec.config["transforms.first.static.field"] == "src"
    assert spec.config["transforms.second.fields"] == "card,cvv"


def test_flat_form_accepts_structured_transforms_and_nested_errors() -> None:
    spec = one(
        """
        name: a
        connector.class: x
        transforms:
          - {name: t, type: Filter}
        errors: {tolerance: all}
        """
    )
    assert spec.config["transforms"] == "t"
    assert spec.config["transforms.t.type"] == "Filter"
    assert spec.config["errors.tolerance"] == "all"


def test_values_become_kafka_text() -> None:
    spec = one(
        """
        name: a
        class: x
        config:
          enabled: yes
          off.switch: off
          version: 1.10
          zip: 01234
          big: 1e20
          day: 2024-01-01
          quoted: "true"
          empty: ''
          fields: [id, 2, true]
          no.fields: []
        """
    )
    config = spec.config
    assert config["enabled"] == "true"
    assert config["off.switch"] == "false"
    assert config["version"] == "1.10", "numbers stay as written"
    assert config["zip"] == "01234"
    assert config["big"] == "1e20"
    assert config["day"] == "2024-01-01"
    assert config["quoted"] == "true"
    assert config["empty"] == ""
    assert config["fields"] == "id,2,true"
    assert config["no.fields"] == ""


def test_anchors_and_merge_keys() -> None:
    [a, b] = loads(
        textwrap.dedent(
            """
            - &base {name: a, connector.class: file-sink, errors.tolerance: all, topics: t}
            - <<: *base
              name: b
              errors.tolerance: none
            """
        ),
        "c.yaml",
    )
    assert (a.config["errors.tolerance"], b.config["errors.tolerance"]) == ("all", "none")
    assert b.config["connector.class"] == "file-sink"
    assert b.name == "b"
