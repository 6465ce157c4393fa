"""JSON Schema compatibility: a port of Confluent's ``SchemaDiff`` for JSON Schema.

:func:`schema_differences` reads both schemas as the everit library Confluent uses reads them (an
``ObjectSchema``, ``StringSchema``, ``CombinedSchema`` for a list of types or
``anyOf``/``oneOf``/``allOf``, ``EnumSchema``…, each ``$ref`` followed) and lists the differences
from the writer's schema (Confluent's *original*) to the reader's (*update*), named by Confluent's
``Difference.Type`` (``TYPE_CHANGED``, ``PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL``,
``MAX_LENGTH_DECREASED``…) at a JSON path (``#/properties/age``); those outside
:data:`COMPATIBLE_CHANGES` break compatibility.

This module compares decoded schema documents only: it neither parses schema text, nor checks
a schema against its metaschema, nor decides which pairs of versions a compatibility level
compares (the ``JSON`` format, :mod:`sluice.schemas.formats.json_schema`, parses and checks the
schemas and passes each document with the ``referencing`` resolver of its ``$ref`` s;
:mod:`sluice.schemas.compatibility` applies the level).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.schemas.formats.base import Incompatibility

__all__ = ["COMPATIBLE_CHANGES", "JsonSchemaIncompatibility", "schema_differences"]


def schema_differences(
    writer: Any, writer_resolver: Any, reader: Any, reader_resolver: Any
) -> list[JsonSchemaIncompatibility]:
    """Every difference Confluent's ``SchemaDiff`` finds from *writer* to *reader*, in the
    order found, compatible ones included (``kind`` in :data:`COMPATIBLE_CHANGES`); each is
    described in Confluent's words where Confluent describes its kind, else not (an empty
    description).

    Each schema is a decoded document; its resolver (a ``referencing`` ``Resolver`` at the
    document's base URI) looks up its ``$ref`` s. A ``RecursionError`` escapes for schemas
    nested deeper than the stack.

    >>> from referencing import Registry
    >>> resolver = Registry().resolver()
    >>> found = schema_differences({"type": "string"}, resolver,
    ...                            {"type": "string", "maxLength": 3}, resolver)
    >>> [(d.kind, d.path) for d in found]
    [('MAX_LENGTH_ADDED', '#/maxLength')]
    >>> [(d.kind, d.path) for d in schema_differences({"type": "string", "maxLength": 3},
    ...                                               resolver, {"type": "string"}, resolver)]
    [('MAX_LENGTH_REMOVED', '#/maxLength')]
    """
    ctx = _Context()
    _compare(ctx, _Loader(writer_resolver).load(writer), _Loader(reader_resolver).load(reader))
    return [
        JsonSchemaIncompatibility(kind, path, _description(kind, path)) for kind, path in ctx.diffs
    ]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _json_key(value: Any) -> str:
    """The JSON text equal values share: compact, keys sorted."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------------------------
# The schema as everit (Confluent's JSON Schema library) reads it.


@dataclass(eq=False)
class _S:
    """One loaded schema: ``kind`` is everit's class (``object``, ``string``, ``number``,
    ``boolean``, ``null``, ``array``, ``enum``, ``const``, ``not``, ``combined``, ``empty``,
    ``true``, ``false``)."""

    kind: str
    raw: Any
    criterion: str = ""  # combined: allOf, anyOf, oneOf
    subschemas: list[_S] = field(default_factory=list)  # combined; not: [must not match]
    values: list[str] = field(default_factory=list)  # enum, const: canonical JSON of each
    requires_integer: bool = False
    # object
    properties: dict[str, _S] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    permits_additional: bool = True
    additional: _S | None = None  # additionalProperties / additionalItems as a schema
    patterns: list[tuple[str, _S]] = field(default_factory=list)
    property_deps: dict[str, set[str]] = field(default_factory=dict)
    schema_deps: dict[str, _S] = field(default_factory=dict)
    # array
    all_items: _S | None = None
    item_list: list[_S] = field(default_factory=list)

    def number(self, key: str) -> float | None:
        value = self.raw.get(key) if isinstance(self.raw, dict) else None
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def has_default(self) -> bool:
        return isinstance(self.raw, dict) and "default" in self.raw


_OBJECT_KEYS = _words(
    "properties patternProperties additionalProperties required minProperties maxProperties "
    "dependencies propertyNames"
)
_ARRAY_KEYS = _words("items additionalItems minItems maxItems uniqueItems contains prefixItems")
_NUMBER_KEYS = _words("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")
_STRING_KEYS = _words("minLength maxLength pattern format")
_IMPLICIT = (
    ("object", _OBJECT_KEYS),
    ("array", _ARRAY_KEYS),
    ("number", _NUMBER_KEYS),
    ("string", _STRING_KEYS),
)


class _Loader:
    """everit's ``SchemaLoader``, enough of it for ``SchemaDiff``: ``$ref`` s are followed (a
    reference is the schema it refers to), and each node is loaded once (recursion is safe)."""

    def __init__(self, resolver: Any) -> None:
        self.loaded: dict[int, _S] = {}
        self.resolver = resolver

    def load(self, node: Any, resolver: Any = None) -> _S:
        resolver = resolver or self.resolver
        followed: set[int] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            if id(node) in followed:  # references that only refer to each other: no constraint
                return _S("empty", {})
            followed.add(id(node))
            resolved = resolver.lookup(node["$ref"])
            node, resolver = resolved.contents, resolved.resolver
        found = self.loaded.get(id(node))
        if found is not None:
            return found
        if node is True or node == {}:
            loaded = _S("true" if node is True else "empty", node)
            self.loaded[id(node)] = loaded
            return loaded
        if not isinstance(node, dict):
            loaded = _S("false", node)
            self.loaded[id(node)] = loaded
            return loaded
        loaded = _S("combined", node, criterion="allOf")  # filled in below, seen if recursive
        self.loaded[id(node)] = loaded
        parts: list[_S] = []
        if "enum" in node and isinstance(node["enum"], list):
            parts.append(_S("enum", node, values=[_json_key(v) for v in node["enum"]]))
        if "const" in node:
            parts.append(_S("const", node, values=[_json_key(node["const"])]))
        if "not" in node:
            parts.append(_S("not", node, subschemas=[self.load(node["not"], resolver)]))
        for criterion in ("allOf", "anyOf", "oneOf"):
            if isinstance(node.get(criterion), list):
                subs = [self.load(s, resolver) for s in node[criterion]]
                parts.append(_S("combined", node, criterion=criterion, subschemas=subs))
        parts.extend(self._typed(node, resolver))
        if len(parts) == 1:
            only = parts[0]
            loaded.__dict__.update(only.__dict__)
        elif not parts:
            loaded.kind = "empty"
        else:  # several keyword groups: everit's synthetic allOf
            loaded.subschemas = parts
        return loaded

    def _typed(self, node: dict[str, Any], resolver: Any) -> list[_S]:
        types = node.get("type")
        if isinstance(types, str):
            return [self._of_type(types, node, resolver)]
        if isinstance(types, list):
            typed = [self._of_type(t, node, resolver) for t in types if isinstance(t, str)]
            if len(typed) == 1:
                return typed
            return [_S("combined", node, criterion="anyOf", subschemas=typed)]
        implicit = [kind for kind, keys in _IMPLICIT if any(k in node for k in keys)]
        return [self._of_type(kind, node, resolver) for kind in implicit]

    def _of_type(self, kind: str, node: dict[str, Any], resolver: Any) -> _S:
        if kind in ("integer", "number"):
            return _S("number", node, requires_integer=kind == "integer")
        if kind == "object":
            return self._object(node, resolver)
        if kind == "array":
            return self._array(node, resolver)
        return _S(kind, node)  # string, boolean, null

    def _object(self, node: dict[str, Any], resolver: Any) -> _S:
        out = _S("object", node)
        for name, sub in _mapping(node.get("properties")).items():
            out.properties[name] = self.load(sub, resolver)
        out.required = [r for r in node.get("required", []) if isinstance(r, str)]
        out.permits_additional, out.additional = self._additional(
            node.get("additionalProperties"), resolver
        )
        out.patterns = [
            (pattern, self.load(sub, resolver))
            for pattern, sub in _mapping(node.get("patternProperties")).items()
        ]
        for name, dependency in _mapping(node.get("dependencies")).items():
            if isinstance(dependency, list):
                out.property_deps[name] = {d for d in dependency if isinstance(d, str)}
            else:
                out.schema_deps[name] = self.load(dependency, resolver)
        for name, dependency in _mapping(node.get("dependentRequired")).items():
            out.property_deps[name] = {d for d in dependency if isinstance(d, str)}
        for name, dependency in _mapping(node.get("dependentSchemas")).items():
            out.schema_deps[name] = self.load(dependency, resolver)
        return out

    def _array(self, node: dict[str, Any], resolver: Any) -> _S:
        out = _S("array", node)
        items, additional = node.get("items"), node.get("additionalItems")
        if isinstance(node.get("prefixItems"), list):  # 2020-12: items is the rest
            out.item_list = [self.load(s, resolver) for s in node["prefixItems"]]
            additional = items
        elif isinstance(items, list):
            out.item_list = [self.load(s, resolver) for s in items]
        elif items is not None:
            out.all_items = self.load(items, resolver)
        out.permits_additional, out.additional = self._additional(additional, resolver)
        return out

    def _additional(self, value: Any, resolver: Any) -> tuple[bool, _S | None]:
        if value is None or value is True:
            return True, None
        if value is False:
            return False, None
        return True, self.load(value, resolver)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# ---------------------------------------------------------------------------------------------
# Confluent's SchemaDiff over loaded schemas: original (the writer) against update (the reader).

#: Confluent's ``SchemaDiff.COMPATIBLE_CHANGES``.
COMPATIBLE_CHANGES = _words(
    """ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
    MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
    MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
    EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED
    MULTIPLE_OF_REDUCED MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
    REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED DEPENDENCY_ARRAY_REMOVED
    DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
    MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED
    ADDITIONAL_PROPERTIES_EXTENDED PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL MAX_ITEMS_INCREASED
    MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED
    ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    ITEM_ADDED_TO_CLOSED_CONTENT_MODEL ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
    ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL ENUM_ARRAY_EXTENDED
    COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED"""
)


class _Context:
    """Confluent's ``diff.Context``: the differences found, each at a JSON path."""

    def __init__(self, path: tuple[str, ...] = (), in_progress: set[tuple[int, int]] | None = None):
        self.path = list(path)
        self.diffs: list[tuple[str, str]] = []
        self.in_progress = in_progress if in_progress is not None else set()

    def sub(self) -> _Context:
        return _Context(tuple(self.path), self.in_progress)

    def add(self, kind: str, *attribute: str) -> None:
        self.diffs.append((kind, "#/" + "/".join([*self.path, *attribute])))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE_CHANGES for kind, _ in self.diffs)


def _compare(ctx: _Context, original: _S | None, update: _S | None) -> None:
    """``SchemaDiff.compare``."""
    if original is None or update is None:
        if original is not None:
            ctx.add("SCHEMA_REMOVED")
        elif update is not None:
            ctx.add("SCHEMA_ADDED")
        return
    pair = (id(original), id(update))
    if pair in ctx.in_progress:  # a recursive schema, already being compared further up
        return
    ctx.in_progress.add(pair)
    try:
        _compare_pair(ctx, original, update)
    finally:
        ctx.in_progress.discard(pair)


def _compare_pair(ctx: _Context, original: _S, update: _S) -> None:
    if original.kind != "combined" and update.kind == "combined":
        if len(update.subschemas) == 1:
            sub = ctx.sub()
            _compare(sub, original, update.subschemas[0])
            if sub.compatible():
                ctx.diffs += sub.diffs
                return
        elif update.criterion in ("anyOf", "oneOf"):
            for subschema in update.subschemas:
                sub = ctx.sub()
                _compare(sub, original, subschema)
                if sub.compatible():
                    ctx.diffs += sub.diffs
                    ctx.add("SUM_TYPE_EXTENDED")
                    return
    elif original.kind == "combined" and update.kind != "combined":
        if len(original.subschemas) == 1:
            sub = ctx.sub()
            _compare(sub, original.subschemas[0], update)
            if sub.compatible():
                ctx.diffs += sub.diffs
                return
        elif original.criterion == "allOf":  # one of the constraints kept, the others dropped
            for subschema in original.subschemas:
                sub = ctx.sub()
                _compare(sub, subschema, update)
                if sub.compatible():
                    ctx.diffs += sub.diffs
                    ctx.add("PRODUCT_TYPE_NARROWED")
                    return
    if _everit_class(original) != _everit_class(update):
        if original.kind != "false" and update.kind not in ("empty", "true"):
            ctx.add("TYPE_CHANGED")
        return
    _compare_same(ctx, original, update)


def _everit_class(schema: _S) -> str:
    return "empty" if schema.kind == "true" else schema.kind


def _compare_same(ctx: _Context, original: _S, update: _S) -> None:
    for key, kind in (
        ("$id", "ID_CHANGED"),
        ("title", "TITLE_CHANGED"),
        ("description", "DESCRIPTION_CHANGED"),
        ("default", "DEFAULT_CHANGED"),
    ):
        if _get(original, key) != _get(update, key):
            ctx.add(kind)
    if original.kind == "string":
        _compare_string(ctx, original, update)
    elif original.kind == "number":
        _compare_number(ctx, original, update)
    elif original.kind in ("enum", "const"):
        _compare_enum(ctx, original, update)
    elif original.kind == "combined":
        _compare_combined(ctx, original, update)
    elif original.kind == "not":
        ctx.path.append("not")
        sub = ctx.sub()
        _compare(sub, update.subschemas[0], original.subschemas[0])  # reversed
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")
        ctx.path.pop()
    elif original.kind == "object":
        _compare_object(ctx, original, update)
    elif original.kind == "array":
        _compare_array(ctx, original, update)


def _get(schema: _S, key: str) -> Any:
    if not isinstance(schema.raw, dict):
        return None
    if key == "$id":
        return schema.raw.get("$id", schema.raw.get("id"))
    return schema.raw.get(key)


def _limits(
    ctx: _Context,
    original: float | None,
    update: float | None,
    attribute: str,
    stem: str,
    *,
    grow: str = "INCREASED",
    shrink: str = "DECREASED",
) -> None:
    """The added/removed/increased/decreased pattern every numeric keyword follows."""
    if original == update:
        return
    if original is None:
        ctx.add(f"{stem}_ADDED", attribute)
    elif update is None:
        ctx.add(f"{stem}_REMOVED", attribute)
    elif original < update:
        ctx.add(f"{stem}_{grow}", attribute)
    else:
        ctx.add(f"{stem}_{shrink}", attribute)


def _compare_string(ctx: _Context, original: _S, update: _S) -> None:
    _limits(
        ctx, original.number("maxLength"), update.number("maxLength"), "maxLength", "MAX_LENGTH"
    )
    _limits(
        ctx, original.number("minLength"), update.number("minLength"), "minLength", "MIN_LENGTH"
    )
    before, after = _get(original, "pattern"), _get(update, "pattern")
    if before is None and after is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif before is not None and after is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif before != after:
        ctx.add("PATTERN_CHANGED", "pattern")


def _compare_number(ctx: _Context, original: _S, update: _S) -> None:
    for key, stem in (
        ("maximum", "MAXIMUM"),
        ("minimum", "MINIMUM"),
        ("exclusiveMaximum", "EXCLUSIVE_MAXIMUM"),
        ("exclusiveMinimum", "EXCLUSIVE_MINIMUM"),
    ):
        _limits(ctx, original.number(key), update.number(key), key, stem)
    before, after = original.number("multipleOf"), update.number("multipleOf")
    if before != after:
        if before is None:
            ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
        elif after is None:
            ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
        elif int(before) and int(after) and int(after) % int(before) == 0:
            ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
        elif int(before) and int(after) and int(before) % int(after) == 0:
            ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
        else:
            ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.requires_integer != update.requires_integer:
        ctx.add("TYPE_EXTENDED" if original.requires_integer else "TYPE_NARROWED")


def _compare_enum(ctx: _Context, original: _S, update: _S) -> None:
    before, after = set(original.values), set(update.values)
    if original.kind == "const":
        if before != after:
            ctx.add("ENUM_ARRAY_CHANGED", "const")
    elif before != after:
        if after >= before:
            ctx.add("ENUM_ARRAY_EXTENDED", "enum")
        elif before >= after:
            ctx.add("ENUM_ARRAY_NARROWED", "enum")
        else:
            ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _compare_combined(ctx: _Context, original: _S, update: _S) -> None:
    before, after = original.criterion, update.criterion
    if before != after:
        singleton = len(original.subschemas) == 1
        if (
            after == "anyOf"
            or (after == "oneOf" and singleton)
            or (after == "allOf" and singleton and len(update.subschemas) == 1)
        ):
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    originals, updates = _distinct(original.subschemas), _distinct(update.subschemas)
    if len(originals) < len(updates):
        ctx.add("PRODUCT_TYPE_EXTENDED" if after == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(originals) > len(updates):
        ctx.add("PRODUCT_TYPE_NARROWED" if after == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[int, dict[int, list[tuple[str, str]]]] = {}
    for i, one in enumerate(originals):
        ctx.path.append(f"{before}/{i}")
        for j, other in enumerate(updates):
            sub = ctx.sub()
            _compare(sub, one, other)
            if sub.compatible():
                edges.setdefault(i, {})[j] = sub.diffs
        ctx.path.pop()
    matching = _maximum_matching(edges)
    for i, j in matching.items():
        ctx.diffs += edges[i][j]
    if len(matching) < min(len(originals), len(updates)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _distinct(schemas: list[_S]) -> list[_S]:
    seen: dict[str, _S] = {}
    for schema in schemas:
        seen.setdefault(_json_key(schema.raw), schema)
    return list(seen.values())


def _maximum_matching(edges: Mapping[int, Mapping[int, Any]]) -> dict[int, int]:
    """A maximum bipartite matching (Kuhn's augmenting paths), original index → update index."""
    owner: dict[int, int] = {}

    def augment(i: int, visited: set[int]) -> bool:
        for j in edges.get(i, {}):
            if j not in visited:
                visited.add(j)
                if j not in owner or augment(owner[j], visited):
                    owner[j] = i
                    return True
        return False

    for i in edges:
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _open(schema: _S) -> bool:
    return not schema.patterns and schema.additional is None and schema.permits_additional


def _partial(schema: _S, name: str) -> _S | None:
    for pattern, sub in schema.patterns:
        try:
            if re.search(pattern, name):
                return sub
        except re.error:
            continue
    return schema.additional


def _compare_object(ctx: _Context, original: _S, update: _S) -> None:
    ctx.path.append("required")
    for name in original.properties:
        if name in update.properties:
            was, now = name in original.required, name in update.required
            if was and not now:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif now and not was:
                with_default = update.properties[name].has_default
                ctx.add(
                    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                    if with_default
                    else "REQUIRED_ATTRIBUTE_ADDED",
                    name,
                )
    ctx.path[-1] = "properties"
    for name in [
        *original.properties,
        *(n for n in update.properties if n not in original.properties),
    ]:
        ctx.path.append(name)
        _compare_property(ctx, original, update, name)
        ctx.path.pop()
    ctx.path[-1] = "dependencies"
    for name in {**original.property_deps, **update.property_deps}:
        before, after = original.property_deps.get(name), update.property_deps.get(name)
        if after is None:
            ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
        elif before is None:
            ctx.add("DEPENDENCY_ARRAY_ADDED", name)
        elif before != after:
            kind = "EXTENDED" if after >= before else "NARROWED" if before >= after else "CHANGED"
            ctx.add(f"DEPENDENCY_ARRAY_{kind}", name)
    for name in {**original.schema_deps, **update.schema_deps}:
        one, other = original.schema_deps.get(name), update.schema_deps.get(name)
        if other is None:
            ctx.add("DEPENDENCY_SCHEMA_REMOVED", name)
        elif one is None:
            ctx.add("DEPENDENCY_SCHEMA_ADDED", name)
        else:
            ctx.path.append(name)
            _compare(ctx, one, other)
            ctx.path.pop()
    ctx.path[-1] = "additionalProperties"
    _compare_additional(ctx, original, update, "PROPERTIES")
    ctx.path.pop()
    for key, stem in (("maxProperties", "MAX_PROPERTIES"), ("minProperties", "MIN_PROPERTIES")):
        _limits(ctx, original.number(key), update.number(key), key, stem)


def _compare_additional(ctx: _Context, original: _S, update: _S, what: str) -> None:
    if original.permits_additional != update.permits_additional:
        added = (
            update.permits_additional if what == "PROPERTIES" else not original.permits_additional
        )
        ctx.add(f"ADDITIONAL_{what}_{'ADDED' if added else 'REMOVED'}")
    elif original.additional is None and update.additional is not None:
        ctx.add(f"ADDITIONAL_{what}_NARROWED")
    elif update.additional is None and original.additional is not None:
        ctx.add(f"ADDITIONAL_{what}_EXTENDED")
    else:
        _compare(ctx, original.additional, update.additional)


def _compare_property(ctx: _Context, original: _S, update: _S, name: str) -> None:
    before, after = original.properties.get(name), update.properties.get(name)
    if before is not None and after is not None:
        _compare(ctx, before, after)
    elif after is None:  # removed: only the update's content model matters
        if _open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
        elif (partial := _partial(update, name)) is not None:
            _covered(ctx, before, partial, "PROPERTY_REMOVED")
        elif before is not None and before.kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:  # added: only the original's content model matters
        if _open(original):
            empty = after.kind in ("empty", "true")
            ctx.add(
                "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                if empty
                else "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            )
            return
        if (partial := _partial(original, name)) is not None:
            _covered(ctx, partial, after, "PROPERTY_ADDED")
        if name in update.required:
            ctx.add(
                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                if after.has_default
                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            )
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")


def _covered(ctx: _Context, original: _S | None, update: _S | None, stem: str) -> None:
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs += sub.diffs
    covered = "IS_COVERED" if sub.compatible() else "NOT_COVERED"
    ctx.add(f"{stem}_{covered}_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _compare_array(ctx: _Context, original: _S, update: _S) -> None:
    ctx.path.append("items")
    _compare(ctx, original.all_items, update.all_items)
    ctx.path.pop()
    shared = min(len(original.item_list), len(update.item_list))
    for index in range(shared):
        ctx.path.append(f"items/{index}")
        _compare(ctx, original.item_list[index], update.item_list[index])
        ctx.path.pop()
    for index in range(shared, len(original.item_list)):
        ctx.path.append(f"items/{index}")
        removed = original.item_list[index]
        if _array_open(update):
            ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
        elif update.additional is not None:
            _covered(ctx, removed, update.additional, "ITEM_REMOVED")
        elif removed.kind == "false":
            ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        ctx.path.pop()
    for index in range(shared, len(update.item_list)):
        ctx.path.append(f"items/{index}")
        added = update.item_list[index]
        if _array_open(original):
            empty = added.kind in ("empty", "true")
            ctx.add(
                "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                if empty
                else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
            )
        elif original.additional is not None:
            _covered(ctx, original.additional, added, "ITEM_ADDED")
        else:
            ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
        ctx.path.pop()
    ctx.path.append("additionalItems")
    _compare_additional(ctx, original, update, "ITEMS")
    ctx.path.pop()
    for key, stem in (("maxItems", "MAX_ITEMS"), ("minItems", "MIN_ITEMS")):
        _limits(ctx, original.number(key), update.number(key), key, stem)
    was, now = _get(original, "uniqueItems") is True, _get(update, "uniqueItems") is True
    if was != now:
        ctx.add("UNIQUE_ITEMS_REMOVED" if was else "UNIQUE_ITEMS_ADDED", "uniqueItems")
    for key, stem in (("maxContains", "MAX_CONTAINS"), ("minContains", "MIN_CONTAINS")):
        _limits(ctx, original.number(key), update.number(key), key, stem)


def _array_open(schema: _S) -> bool:
    return schema.permits_additional and schema.additional is None


# ---------------------------------------------------------------------------------------------
# Confluent's descriptions (io.confluent.kafka.schemaregistry.json.diff.Difference), the
# reader schema where Confluent's first "%s" is, the writer where its second is.


@dataclass(frozen=True, slots=True)
class JsonSchemaIncompatibility(Incompatibility):
    """A JSON Schema incompatibility, printed as Confluent's ``JsonSchema`` prints it."""

    def __str__(self) -> str:
        return (
            f'Found incompatible change: {{errorType:"{self.kind}", '
            f'description:"{self.description}"}}'
        )


_GROUPS: list[tuple[str, frozenset[str]]] = [
    (
        "The keyword at path '{path}' in the reader schema is not present in the writer schema",
        _words("""MAXIMUM_ADDED MINIMUM_ADDED EXCLUSIVE_MAXIMUM_ADDED EXCLUSIVE_MINIMUM_ADDED
            MULTIPLE_OF_ADDED MAX_LENGTH_ADDED MIN_LENGTH_ADDED PATTERN_ADDED
            REQUIRED_ATTRIBUTE_ADDED MAX_PROPERTIES_ADDED MIN_PROPERTIES_ADDED
            DEPENDENCY_ARRAY_ADDED DEPENDENCY_SCHEMA_ADDED MAX_ITEMS_ADDED MIN_ITEMS_ADDED
            MAX_CONTAINS_ADDED MIN_CONTAINS_ADDED UNIQUE_ITEMS_ADDED ADDITIONAL_ITEMS_REMOVED
            ADDITIONAL_PROPERTIES_REMOVED UNEVALUATED_PROPERTIES_REMOVED
            UNEVALUATED_ITEMS_REMOVED"""),
    ),
    (
        "The value at path '{path}' in the reader schema is more than its value in the writer "
        "schema",
        _words("""MIN_LENGTH_INCREASED MINIMUM_INCREASED EXCLUSIVE_MINIMUM_INCREASED
            MIN_PROPERTIES_INCREASED MULTIPLE_OF_EXPANDED MIN_ITEMS_INCREASED
            MIN_CONTAINS_INCREASED"""),
    ),
    (
        "The value at path '{path}' in the reader schema is less than its value in the writer "
        "schema",
        _words("""MAX_LENGTH_DECREASED MAXIMUM_DECREASED MAX_ITEMS_DECREASED MAX_CONTAINS_DECREASED
            EXCLUSIVE_MAXIMUM_DECREASED MAX_PROPERTIES_DECREASED"""),
    ),
    (
        "The value at path '{path}' is different between the reader and writer schema",
        _words("PATTERN_CHANGED MULTIPLE_OF_CHANGED DEPENDENCY_ARRAY_CHANGED"),
    ),
    (
        "An array or combined type at path '{path}' has fewer elements in the reader schema "
        "than the writer schema",
        _words("""ADDITIONAL_ITEMS_NARROWED ENUM_ARRAY_NARROWED SUM_TYPE_NARROWED
            ADDITIONAL_PROPERTIES_NARROWED UNEVALUATED_PROPERTIES_NARROWED
            UNEVALUATED_ITEMS_NARROWED"""),
    ),
    (
        "An array or combined type at path '{path}' has more elements in the reader schema "
        "than the writer schema",
        _words("""DEPENDENCY_ARRAY_EXTENDED PRODUCT_TYPE_EXTENDED SUM_TYPE_EXTENDED
            NOT_TYPE_EXTENDED"""),
    ),
    (
        "A type at path '{path}' is different between the reader schema and the writer schema",
        _words("""TYPE_CHANGED TYPE_NARROWED COMBINED_TYPE_CHANGED COMBINED_TYPE_SUBSCHEMAS_CHANGED
            ENUM_ARRAY_CHANGED"""),
    ),
    (
        "The reader schema has an open content model and has a property or item at path "
        "'{path}' which is missing in the writer schema",
        _words("""PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
            REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
            OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL
            ITEM_ADDED_TO_OPEN_CONTENT_MODEL"""),
    ),
    (
        "The reader schema has an unopen content model and has a required property at path "
        "'{path}' which is missing in the writer schema",
        frozenset({"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"}),
    ),
    (
        "The reader schema has a closed content model and is missing a property or item present "
        "at path '{path}' in the writer schema",
        frozenset(
            {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"}
        ),
    ),
    (
        "A property or item is missing in the reader schema but present at path '{path}' in "
        "the writer schema and is not covered by its partially open content model",
        frozenset(
            {
                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            }
        ),
    ),
    (
        "The reader schema has a property or item at path '{path}' which is missing in the "
        "writer schema and is not covered by its partially open content model",
        frozenset(
            {
                "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            }
        ),
    ),
]


def _description(kind: str, path: str) -> str:
    for template, kinds in _GROUPS:
        if kind in kinds:
            return template.format(path=path)
    return ""
