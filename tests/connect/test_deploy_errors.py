"""YAML deployment files: every error's location, and resolve_class."""

from __future__ import annotations

from typing import Any

import pytest

from sluice.connect.api.config_def import ConfigDef, at_least
from sluice.connect.api.connector import SinkConnector, SourceConnector, Task
from sluice.connect.deploy import (
    DeploymentError,
    loads,
    resolve_class,
)
from sluice.errors import ConfigError
from tests.connect.deploy_helpers import one, problems

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
