"""Conventions that hold across every ``sluice`` command: one meaning per short option, one
description of ``-X``, one style of table header. Read from the command tree and the sources,
so that a new command is checked without a new test."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from sluice.cli import app
from sluice.cli._common import CLIENT_CONFIG_HELP

CLI_SOURCES = Path(__file__).parents[2] / "platform" / "cli"
SHARED_SHORT = {"-p": {"--partition", "--partitions"}}
"""Like rpk: ``-p`` is the partition to read or write, and the partition count of a topic."""
ALLOWED_CLASHES = {("up", "-f")}
"""``sluice up -f FILE`` (docker compose's habit) predates the rule; see docs/cli.md."""
HEADER = re.compile(r"^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*$")


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    subcommands = getattr(command, "commands", None)
    if subcommands:
        for name, sub in subcommands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path), command


def _options() -> Iterator[tuple[str, Any]]:
    for name, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if param.param_type_name == "option":
                yield name, param


def test_every_short_option_has_one_meaning() -> None:
    meanings: dict[str, dict[str, list[str]]] = {}
    for command, option in _options():
        long = [o for o in option.opts if o.startswith("--")]
        for short in (o for o in option.opts if not o.startswith("--")):
            if (command, short) not in ALLOWED_CLASHES:
                meanings.setdefault(short, {}).setdefault(" ".join(long), []).append(command)
    clashes = {
        short: uses
        for short, uses in meanings.items()
        if len(uses) > 1 and set(uses) != SHARED_SHORT.get(short)
    }
    assert not clashes, f"short options with more than one meaning: {clashes}"
    assert set(meanings["-f"]) == {"--format"}, meanings["-f"]
    assert sorted(meanings["-f"]["--format"]) == ["consume", "produce"]


def test_file_has_no_short_option_in_produce() -> None:
    file = [o for c, o in _options() if c == "produce" and "--file" in o.opts]
    assert len(file) == 1 and file[0].opts == ["--file"], [o.opts for o in file]


def test_x_is_described_one_way_everywhere() -> None:
    takers = {c: o for c, o in _options() if "-X" in o.opts}
    assert {"produce", "consume", "transactions list", "transactions describe"} <= set(takers)
    assert {"topics create", "groups describe", "connect standalone", "status"} <= set(takers)
    for command, option in takers.items():
        assert option.opts == ["--client-config", "-X"], (command, option.opts)
        assert option.help == CLIENT_CONFIG_HELP, (command, option.help)
        assert option.metavar == "KEY=VALUE", (command, option.metavar)


def _table_headers(path: Path) -> Iterator[tuple[int, str]]:
    """The literal header cells of every ``print_table(headers, …)`` call in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print_table"):
            continue
        headers = node.args[0]
        elements = headers.elts if isinstance(headers, ast.List | ast.Tuple) else []
        for element in elements:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                yield node.lineno, element.value


def test_table_headers_are_upper_case_words_joined_by_hyphens() -> None:
    found = {
        (path.name, line, cell)
        for path in sorted(CLI_SOURCES.glob("*.py"))
        for line, cell in _table_headers(path)
    }
    names = {name for name, _, _ in found}
    assert {"topics.py", "groups.py", "transactions.py", "connect.py"} <= names, names
    wrong = sorted(f"{n}:{line}: {cell!r}" for n, line, cell in found if not HEADER.match(cell))
    assert not wrong, f"headers not like TOPIC, CURRENT-OFFSET: {wrong}"
