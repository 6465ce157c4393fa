"""YAML read as PyYAML's node graph, so that every key keeps the line it was written on.

``yaml.safe_load`` forgets where a value came from; composing instead of constructing keeps each
node's ``start_mark``. Only what a deployment file needs is interpreted here (the connector files
of :mod:`sluice.connect.deploy` and the ``sluice up`` file of :mod:`sluice.up.loader` both read
YAML through this module): mappings (with duplicate keys refused and ``<<`` merge keys applied),
sequences, and scalars as *text* — Kafka configs are strings, so a number stays as it was
written and a YAML 1.1 boolean (``true``, ``yes``, ``on``…) becomes ``true``/``false``.

>>> [doc] = compose("a: 1.50\\nb: yes\\n", "x.yaml")
>>> [(e.key, text(e.value), e.line) for e in entries(doc, "x.yaml", [])]
[('a', '1.50', 1), ('b', 'true', 2)]
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sluice.errors import ConfigError

__all__ = ["Entry", "compose", "entries", "is_null", "line", "text"]

_YAML = "tag:yaml.org,2002:"
_BOOL = _YAML + "bool"
_NULL = _YAML + "null"
_MERGE = _YAML + "merge"
_SCALARS = frozenset(_YAML + kind for kind in ("str", "int", "float", "bool", "null", "timestamp"))


@dataclass(frozen=True)
class Entry:
    """One ``key: value`` of a mapping, with the line of the key."""

    key: str
    value: Node
    line: int


def line(node: Node) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


def compose(source_text: str, source: str) -> list[Node]:
    """The non-empty documents of a YAML stream; a syntax error raises at the parser's line."""
    try:
        documents = list(yaml.compose_all(source_text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise ConfigError(
            f"invalid YAML: {error.problem or error.context}",
            source=source,
            line=None if mark is None else int(mark.line) + 1,
        ) from None
    except yaml.reader.ReaderError as error:  # a character YAML does not allow
        at = source_text.count("\n", 0, error.position) + 1
        message = f"invalid YAML: character #x{error.character:04x} is not allowed"
        raise ConfigError(message, source=source, line=at) from None
    return [doc for doc in documents if not is_null(doc)]


def is_null(node: Node) -> bool:
    """Whether the node is YAML's null (``~``, ``null`` or nothing)."""
    return isinstance(node, ScalarNode) and node.tag == _NULL


def text(node: ScalarNode) -> str | None:
    """A scalar as Kafka config text; None for null. Raises ValueError for a foreign tag."""
    if node.tag == _NULL:
        return None
    if node.tag == _BOOL:
        return "true" if SafeConstructor.bool_values[str(node.value).lower()] else "false"
    if node.tag not in _SCALARS:
        raise ValueError(f"unsupported YAML tag {node.tag}")
    return str(node.value)


def entries(
    node: MappingNode, source: str, problems: list[ConfigError], prefix: str = ""
) -> list[Entry]:
    """The entries of a mapping in order, merge keys applied (the mapping's own keys win).

    A key written twice, a key that is not a scalar or a bad merge is reported to ``problems``
    (named ``prefix + key``) and skipped.
    """
    merged: dict[str, Entry] = {}
    own: dict[str, Entry] = {}
    for key_node, value in node.value:
        if key_node.tag == _MERGE:
            sources = value.value if isinstance(value, SequenceNode) else [value]
            for merged_node in sources:
                if not isinstance(merged_node, MappingNode):
                    problems.append(
                        ConfigError(
                            "can merge only mappings", key="<<", source=source, line=line(key_node)
                        )
                    )
                    continue
                for entry in entries(merged_node, source, problems, prefix):
                    merged.setdefault(entry.key, entry)
            continue
        if not isinstance(key_node, ScalarNode) or is_null(key_node):
            problems.append(
                ConfigError("a key must be plain text", source=source, line=line(key_node))
            )
            continue
        key = str(key_node.value)
        if key in own:
            problems.append(
                ConfigError(
                    f"duplicate key (first at line {own[key].line})",
                    key=prefix + key,
                    source=source,
                    line=line(key_node),
                )
            )
            continue
        own[key] = Entry(key, value, line(key_node))
    return list({**merged, **own}.values())
