"""YAML deployment files: loading files and folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.connect.deploy import (
    DeploymentError,
    load,
)
from sluice.errors import ConfigError
from tests.connect.deploy_helpers import write

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
