"""YAML deployment files: both forms, flattening, folders, secrets, and every error's location."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from sluice.connect.api import SinkConnector, SourceConnector, Task
from sluice.connect.config_def import ConfigDef, at_least
from sluice.connect.deploy import (
    ConnectorSpec,
    DeploymentError,
    is_sensitive,
    load,
    loads,
    masked,
    resolve_class,
)
from sluice.errors import ConfigError


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def problems(text: str, source: str = "c.yaml", **kwargs: Any) -> list[str]:
    """Every problem ``loads`` reports, as ``file:line: key: message`` lines."""
    with pytest.raises(DeploymentError) as caught:
        loads(textwrap.dedent(text).lstrip("\n"), source, **kwargs)
    return [str(problem) for problem in caught.value.problems]


def one(text: str, **kwargs: Any) -> ConnectorSpec:
    specs = loads(textwrap.dedent(text).lstrip("\n"), "c.yaml", **kwargs)
    assert len(specs) == 1, f"expected one connector, got {specs}"
    return specs[0]


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


# --- files and folders --------------------------------------------------------------------


def test_a_file_may_hold_a_list_connectors_or_several_documents(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "- {name: a1, class: x}\n- {name: a2, class: x}\n")
    write(tmp_path, "b.yml", "connectors:\n  - {name: b1, class: x}\n")
    write(tmp_path, "c.yaml", "name: c1\nclass: x\n---\nname: c2\nclass: x\n---\n")
    write(tmp_path, "d.yaml", "# nothing yet\n")
    write(tmp_path, ".e.yaml", "{name: hidden, class: x}\n")
    write(tmp_path, "notes.txt", "not: yaml: at all\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "f.yaml", "{name: nested, class: x}\n")
    specs = load(tmp_path)
    assert [spec.name for spec in specs] == ["a1", "a2", "b1", "c1", "c2"]
    assert [Path(spec.source).name for spec in specs] == ["a.yaml"] * 2 + ["b.yml"] + ["c.yaml"] * 2
    assert [spec.line for spec in specs] == [1, 2, 2, 1, 4]


def test_a_single_file(tmp_path: Path) -> None:
    path = write(tmp_path, "one.yaml", "{name: a, class: x}\n")
    [spec] = load(path)
    assert spec.source == str(path)


def test_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "nope.yaml")
    assert str(caught.value) == f"{tmp_path / 'nope.yaml'}: no such file or folder"


def test_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path)
    assert str(caught.value) == f"{path}: cannot read: not UTF-8 text"


def test_duplicate_names_across_two_files(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "name: orders\nclass: x\n")
    b = write(tmp_path, "b.yaml", "# the same again\nname: orders\nclass: y\n")
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path)
    assert str(caught.value) == f"{b}:2: name: duplicate connector name 'orders' (also at {a}:1)"


def test_nothing_is_returned_when_any_file_is_bad(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "{name: fine, class: x}\n")
    bad = write(tmp_path, "b.yaml", "name: broken\nclass: x\ntasks_max: many\n")
    worse = write(tmp_path, "c.yaml", "name: [\n")
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path)
    assert [str(p) for p in caught.value.problems] == [
        f"{bad}:3: tasks_max: must be a whole number of at least 1, not 'many'",
        f"{worse}:2: invalid YAML: expected the node content, but found '<stream end>'",
    ]
    assert isinstance(caught.value, ConfigError)


# --- secrets ------------------------------------------------------------------------------


def test_env_and_file_secrets_are_resolved_and_masked(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "db.properties").write_text("# db\nuser=app\npassword = p@ss:word\n")
    path = write(
        tmp_path,
        "db.yaml",
        """
        name: db
        class: x
        config:
          connection.url: postgresql://${file:secrets/db.properties:user}@db/shop
          connection.pw: ${file:secrets/db.properties:password}
          api: ${env:API_TOKEN}
          connection.password: written-in-clear
          topic: ${topic}-${timestamp}
        """,
    )
    [spec] = load(path, environ={"API_TOKEN": "tok-123"})
    assert spec.config["connection.url"] == "postgresql://app@db/shop"
    assert spec.config["connection.pw"] == "p@ss:word"
    assert spec.config["api"] == "tok-123"
    assert spec.config["topic"] == "${topic}-${timestamp}", "not a provider placeholder"
    assert spec.secret_keys == {"connection.url", "connection.pw", "api"}
    shown = spec.masked_config()
    assert shown["connection.url"] == shown["connection.pw"] == shown["api"] == "[hidden]"
    assert shown["connection.password"] == "[hidden]", "masked by its name"
    assert shown["topic"] == "${topic}-${timestamp}"
    for secret in ("p@ss:word", "tok-123", "written-in-clear", "app@db"):
        assert secret not in repr(spec), f"{secret} leaked into repr"


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_TEST_TOPIC", "from-env")
    assert (
        one("name: a\nclass: x\nconfig: {topic: '${env:SLUICE_TEST_TOPIC}'}\n").config["topic"]
        == "from-env"
    )


def test_absolute_secret_file(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("k=v\n")
    spec = one(f"name: a\nclass: x\nconfig: {{p: '${{file:{secrets}:k}}'}}\n")
    assert spec.config["p"] == "v"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${env:NOPE}", "${env:NOPE}: environment variable NOPE is not set"),
        ("${vault:a:b}", "${vault:a:b}: unknown config provider placeholder"),
        ("${file:missing.properties:k}", "${file:missing.properties:k}: "),
        ("${file:s.properties:nope}", "${file:s.properties:nope}: no key nope in "),
    ],
)
def test_a_missing_secret_names_file_line_and_key(tmp_path: Path, value: str, message: str) -> None:
    (tmp_path / "s.properties").write_text("k=hunter2\n")
    path = write(tmp_path, "a.yaml", f"name: a\nclass: x\nconfig:\n  db.password: '{value}'\n")
    with pytest.raises(DeploymentError) as caught:
        load(path, environ={})
    assert str(caught.value).startswith(f"{path}:4: db.password: {message}")
    assert "hunter2" not in str(caught.value)


def test_errors_never_show_a_secret_value() -> None:
    [text] = problems(
        "name: a\nconnector.class: x\ntasks.max: ${env:N}\n", environ={"N": "many-s3cret"}
    )
    assert text == "c.yaml:3: tasks.max: must be a whole number of at least 1, not [hidden]"


def test_sensitive_names() -> None:
    sensitive = [
        "password",
        "connection.password",
        "ssl.key.password",
        "sasl.jaas.config",
        "aws.secret.access.key",
        "api.key",
        "apiToken",
        "client_secret",
        "gcp.credentials",
    ]
    plain = ["key.converter", "key.ignore", "topic", "transforms.t.fields", "tokenizer.name"]
    assert [key for key in sensitive if not is_sensitive(key)] == []
    assert [key for key in plain if is_sensitive(key)] == []
    assert masked({"a": "1", "b": "2"}, {"b"}) == {"a": "1", "b": "[hidden]"}


# --- errors at file:line: key -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a\n  class: x\n", "c.yaml:2: invalid YAML: mapping values are not allowed here"),
        ("name: a\nconfig: {file: x\n", "c.yaml:3: invalid YAML: expected ',' or '}', but got"),
        ("class: x\n", "c.yaml:1: name: missing: every connector needs a name"),
        (
            "name: a\ntasks_max: 2\n",
            "c.yaml:1: class: missing: name the connector class with class: (or Kafka's "
            "connector.class:)",
        ),
        (
            "name: a\ntasks.max: 2\n",
            "c.yaml:1: connector.class: missing: name the connector class with class:",
        ),
        ("name: a\nclass: x\ntasks_max: many\n", "c.yaml:3: tasks_max: must be a whole number"),
        ("name: a\nclass: x\ntasks_max: 0\n", "c.yaml:3: tasks_max: must be a whole number of at"),
        ("name: a\nclass: x\ntasks_max: 1.5\n", "c.yaml:3: tasks_max: must be a whole number"),
        (
            "name: a\nclass: x\nstate: dancing\n",
            "c.yaml:3: state: must be running, paused or stopped, not 'dancing'",
        ),
        (
            "name: a\nclass: x\ntask_max: 2\n",
            "c.yaml:3: task_max: unknown key; did you mean tasks_max? (the keys are name, class,",
        ),
        (
            "name: a\nclass: x\ntopic: t\n",
            "c.yaml:3: topic: unknown key; connector settings go under config:",
        ),
        (
            "name: a\nconnector_class: x\nconfig: {}\n",
            "c.yaml:2: connector_class: unknown key; did you mean class?",
        ),
        ("name: a\nclass: [x]\n", "c.yaml:2: class: must be a single value, not a list or"),
        ("name: a\nclass: x\nconfig: file\n", "c.yaml:3: config: must be a mapping of Kafka"),
        ("name: a\nclass: x\nerrors: all\n", "c.yaml:3: errors: must be a mapping (tolerance:"),
        (
            "name: a\nclass: x\nconfig:\n  topic: t\n  topic: u\n",
            "c.yaml:5: topic: duplicate key (first at line 4)",
        ),
        (
            "name: a\nclass: x\nconfig:\n  file:\n",
            "c.yaml:4: file: has no value (write '' for an empty one)",
        ),
        ("name: a\nclass: x\nconfig: {f: !!python/name:os.system x}\n", "c.yaml:3: f: unsupported"),
        (
            "name: a\nclass: x\nconfig:\n  connector.class: y\n",
            "c.yaml:2: class: set twice (also as connector.class at line 4)",
        ),
        (
            "name: a\nconnector.class: x\nerrors.tolerance: all\nerrors: {tolerance: none}\n",
            "c.yaml:4: errors.tolerance: set twice (also at line 3)",
        ),
        (
            "name: a\nconnector.class: x\nclass: y\n",
            "c.yaml:3: class: mixes the structured form with Kafka's flat connector.class:",
        ),
        (
            "name: a\nconfig: {name: b, connector.class: x}\n",
            "c.yaml:1: name: differs from config's name at line 2",
        ),
        ("name: ''\nclass: x\n", "c.yaml:1: name: must be non-empty text"),
        (
            "name: a\nclass: x\nconfig: {fields: [a, [b]]}\n",
            "c.yaml:3: fields: a list may hold only plain values",
        ),
        (
            "name: a\nclass: x\nconfig: {fields: ['a,b']}\n",
            "c.yaml:3: fields: a list item contains a comma",
        ),
        (
            "name: a\nclass: x\ntransforms:\n  - {type: Filter}\n",
            "c.yaml:4: transforms: an item has no name: (its alias)",
        ),
        (
            "name: a\nclass: x\ntransforms:\n  - {name: t, type: Filter}\n  - {name: t}\n",
            "c.yaml:5: transforms: duplicate alias 't' (first at line 4)",
        ),
        (
            "name: a\nclass: x\ntransforms:\n  - {name: t, type: Filter}\n  - u\n",
            "c.yaml:5: transforms: write every item as a mapping with name: and type:",
        ),
        (
            "name: a\nclass: x\ntransforms:\n  - {name: 'a b', type: Filter}\n",
            "c.yaml:4: transforms: alias 'a b' must be non-empty, without spaces or commas",
        ),
        (
            "name: a\nclass: x\ntransforms:\n  t: Filter\n",
            "c.yaml:4: transforms.t: must be a mapping of settings (type: ...)",
        ),
        ("just text\n", "c.yaml:1: expected a connector (a mapping of its settings)"),
        ("name: a\nclass: \x00\n", "c.yaml:2: invalid YAML: character #x0000 is not allowed"),
        (
            "name: a\nclass: x\ntransforms.t.type: Filter\n",
            "c.yaml:3: transforms.t.type: unknown key; connector settings go under config:",
        ),
        ("name: a\nclass: x\ntasks.max: 2\n", "c.yaml:3: tasks.max: unknown key; did you mean"),
        ("connectors: {a: b}\n", "c.yaml:1: connectors: must be a list of connectors"),
        (
            "connectors: []\nname: a\n",
            "c.yaml:2: name: unknown key; beside connectors: there can be nothing",
        ),
    ],
)
def test_each_error_names_file_line_and_key(text: str, expected: str) -> None:
    found = problems(text)
    assert found[0].startswith(expected), f"expected {expected!r}..., got {found}"


def test_every_problem_is_reported_at_once() -> None:
    found = problems(
        """
        - name: a
          class: x
          tasks_max: many
          state: dancing
        - name: b
          clas: x
        - name: a
          class: x
        """
    )
    assert [text.split(": ")[0] for text in found] == ["c.yaml:3", "c.yaml:4", "c.yaml:6"]
    # The misspelt key is reported, not also a missing `class`.
    assert found[2].startswith("c.yaml:6: clas: unknown key; did you mean class?")
    # `a` had problems, so the second `a` is no duplicate of anything loaded.
    assert not any("duplicate" in text for text in found)


def test_error_prefix_is_the_first_problem() -> None:
    with pytest.raises(DeploymentError) as caught:
        loads("name: a\nclass: x\nstate: dancing\ntasks_max: 0\n", "c.yaml")
    error = caught.value
    assert (error.source, error.line, error.key) == ("c.yaml", 3, "state")
    assert (
        str(error).splitlines()[0]
        == "c.yaml:3: state: must be running, paused or stopped, not 'dancing'"
    )


# --- resolve_class ------------------------------------------------------------------------


class LinesTask(Task):
    def start(self, config: dict[str, Any]) -> None:
        pass

    def stop(self) -> None:
        pass


class LinesSource(SourceConnector):
    CONFIG = (
        ConfigDef()
        .define("file", "string", doc="File to read.")
        .define("topic", "string")
        .define("batch.size", "int", 2000, validator=at_least(1))
        .define("secret.size", "int", 1)
    )

    def start(self, config: dict[str, Any]) -> None:
        pass

    def task_class(self) -> type[Task]:
        return LinesTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{}]


class LinesSink(SinkConnector):
    CONFIG = ConfigDef().define("file", "string", "out.txt")

    def start(self, config: dict[str, Any]) -> None:
        pass

    def task_class(self) -> type[Task]:
        return LinesTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [{}]


PLUGINS: dict[str, type[Any]] = {
    "lines-source": LinesSource,
    "lines-sink": LinesSink,
    "tests.connect.LinesSource": LinesSource,
}


def resolve_problems(text: str, **kwargs: Any) -> list[str]:
    spec = one(text, **kwargs)
    with pytest.raises(DeploymentError) as caught:
        resolve_class(spec, PLUGINS)
    return [str(problem) for problem in caught.value.problems]


def test_resolve_class_finds_the_class_and_accepts_a_good_config() -> None:
    spec = one("name: a\nclass: lines-source\nconfig: {file: in.txt, topic: t}\n")
    assert resolve_class(spec, PLUGINS) is LinesSource
    assert resolve_class(spec, PLUGINS.get) is LinesSource


def test_unknown_class_is_reported_at_the_class_line_with_the_known_aliases() -> None:
    assert resolve_problems("name: a\n# the plugin\nclass: lines-sorce\n") == [
        "c.yaml:3: class: unknown connector class 'lines-sorce'; did you mean lines-source? "
        "(known: lines-sink, lines-source; or a dotted path module.Class)"
    ]
    spec = one("name: a\nconnector.class: nope\n")
    with pytest.raises(DeploymentError) as caught:
        resolve_class(spec, lambda name: None, known=["lines-source"])
    assert str(caught.value) == (
        "c.yaml:2: connector.class: unknown connector class 'nope' "
        "(known: lines-source; or a dotted path module.Class)"
    )


def test_a_lookup_may_raise_config_error() -> None:
    def lookup(name: str) -> type[Any] | None:
        raise ConfigError(f"cannot import {name}")

    spec = one("name: a\nclass: pkg.Missing\n")
    with pytest.raises(DeploymentError, match=r"^c\.yaml:2: class: cannot import pkg\.Missing$"):
        resolve_class(spec, lookup)


def test_a_non_connector_is_refused() -> None:
    spec = one("name: a\nclass: x\n")
    with pytest.raises(DeploymentError, match=r"^c\.yaml:2: class: 'x' is not a connector class"):
        resolve_class(spec, {"x": dict})


def test_every_config_problem_is_listed_at_its_own_line() -> None:
    found = resolve_problems(
        """
        name: a
        class: lines-source
        config:
          batch.size: zero
          topic: t
        transforms:
          - name: t1
            type: NoSuchTransform
        errors:
          tolerance: some
          retry.timeout: soon
        """
    )
    assert found == [
        "c.yaml:1: file: missing required configuration (File to read.)",
        "c.yaml:4: batch.size: invalid value 'zero' for an int",
        "c.yaml:8: transforms.t1.type: unknown transformation 'NoSuchTransform' (built in: "
        + found[2].split("(built in: ")[1],
        "c.yaml:10: errors.tolerance: must be none or all, got 'some'",
        "c.yaml:11: errors.retry.timeout: invalid value 'soon' for a long",
    ]


def test_transform_settings_are_checked_at_their_line() -> None:
    found = resolve_problems(
        """
        name: a
        class: lines-source
        config: {file: f, topic: t}
        transforms:
          - name: c
            type: Cast$Value
        """
    )
    assert found == ["c.yaml:1: transforms.c.spec: required"]


def test_a_sink_needs_topics_or_a_regex() -> None:
    assert resolve_problems("name: a\nclass: lines-sink\n") == [
        "c.yaml:1: topics: must configure one of topics or topics.regex"
    ]
    both = "name: a\nclass: lines-sink\nconfig:\n  topics: t\n  topics.regex: t.*\n"
    assert resolve_problems(both) == [
        "c.yaml:5: topics.regex: topics and topics.regex are mutually exclusive options, "
        "but both are set"
    ]
    assert resolve_class(one("name: a\nclass: lines-sink\nconfig: {topics: t}\n"), PLUGINS)


def test_validation_errors_blank_out_secret_values() -> None:
    found = resolve_problems(
        "name: a\nclass: lines-source\nconfig: {file: f, topic: t, secret.size: '${env:S}'}\n",
        environ={"S": "s3cret-value"},
    )
    assert found == ["c.yaml:3: secret.size: invalid value '[hidden]' for an int"]
