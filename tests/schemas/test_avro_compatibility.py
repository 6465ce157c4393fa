"""The AVRO format's compatibility: Avro's resolution rules with Java's locations and messages,
cross-checked against fastavro reading real data and against Java's Avro (the library Confluent
runs)."""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer
from fastavro.read import SchemaResolutionError
from fastavro.utils import generate_many
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.schemas.formats import Incompatibility, InvalidSchemaError
from sluice.schemas.formats.avro import FORMAT, AvroIncompatibility, AvroSchema
from tests.schemas.avro_schemas import PRIMITIVES, avro, errors, record

# --- compatibility: Avro's resolution rules, Java's locations and messages ----------------------

INT_FIELD = {"name": "a", "type": "int"}

READ_ERRORS: list[tuple[str, Any, Any, list[tuple[str, str]]]] = [
    ("same", record("R", INT_FIELD), record("R", INT_FIELD), []),
    (
        "int promoted to long",
        record("R", {"name": "a", "type": "long"}),
        record("R", INT_FIELD),
        [],
    ),
    ("long promoted to double", '"double"', '"long"', []),
    ("float promoted to double", '"double"', '"float"', []),
    ("string read as bytes", '"bytes"', '"string"', []),
    ("bytes read as string", '"string"', '"bytes"', []),
    ("long narrowed to int", '"int"', '"long"', [("TYPE_MISMATCH", "/")]),
    ("double narrowed to float", '"float"', '"double"', [("TYPE_MISMATCH", "/")]),
    (
        "field type changed",
        record("R", {"name": "b", "type": "int", "default": 0}, {"name": "a", "type": "string"}),
        record("R", {"name": "a", "type": "int"}),
        [("TYPE_MISMATCH", "/fields/1/type")],
    ),
    (
        "field added without default",
        record("R", INT_FIELD, {"name": "b", "type": "int"}),
        record("R", INT_FIELD),
        [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
    ),
    (
        "field added with default",
        record("R", INT_FIELD, {"name": "b", "type": "int", "default": 0}),
        record("R", INT_FIELD),
        [],
    ),
    ("field removed", record("R"), record("R", INT_FIELD), []),
    (
        "field renamed with an alias",
        record("R", {"name": "z", "type": "int", "aliases": ["a"]}),
        record("R", INT_FIELD),
        [],
    ),
    (
        "record renamed",
        record("S", INT_FIELD),
        record("R", INT_FIELD),
        [("NAME_MISMATCH", "/name")],
    ),
    ("record renamed with an alias", record("S", aliases=["R"]), record("R"), []),
    ("namespace changed", record("a.R"), record("b.R"), []),  # Java compares the short names
    (
        "enum symbol removed",
        {"type": "enum", "name": "E", "symbols": ["A"]},
        {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]},
        [("MISSING_ENUM_SYMBOLS", "/symbols")],
    ),
    (
        "enum symbol removed, reader has a default",
        {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"},
        {"type": "enum", "name": "E", "symbols": ["A", "B"]},
        [],
    ),
    (
        "enum symbol added",
        {"type": "enum", "name": "E", "symbols": ["A", "B"]},
        {"type": "enum", "name": "E", "symbols": ["A"]},
        [],
    ),
    (
        "fixed resized",
        {"type": "fixed", "name": "F", "size": 4},
        {"type": "fixed", "name": "F", "size": 8},
        [("FIXED_SIZE_MISMATCH", "/size")],
    ),
    (
        "union branch removed",
        '["null","int"]',
        '["null","int","string"]',
        [("MISSING_UNION_BRANCH", "/2")],
    ),
    ("union branch added", '["null","int","string"]', '["null","int"]', []),
    ("union reads its branch", '["null","long"]', '"int"', []),
    ("union lacks the writer type", '["null","int"]', '"string"', [("MISSING_UNION_BRANCH", "/")]),
    (
        "writer union, one branch unreadable",
        '"string"',
        '["null","string"]',
        [("TYPE_MISMATCH", "/0")],
    ),
    (
        "array items",
        {"type": "array", "items": "int"},
        {"type": "array", "items": "string"},
        [("TYPE_MISMATCH", "/items")],
    ),
    (
        "map values",
        {"type": "map", "values": "long"},
        {"type": "map", "values": "int"},
        [],
    ),
    (
        "deep path",
        record("R", {"name": "m", "type": {"type": "map", "values": record("S", INT_FIELD)}}),
        record(
            "R",
            {
                "name": "m",
                "type": {"type": "map", "values": record("S", {"name": "a", "type": "boolean"})},
            },
        ),
        [("TYPE_MISMATCH", "/fields/0/type/values/fields/0/type")],
    ),
    (
        "recursive records",
        record("L", {"name": "next", "type": ["null", "L"]}, {"name": "v", "type": "long"}),
        record("L", {"name": "next", "type": ["null", "L"]}, {"name": "v", "type": "int"}),
        [],
    ),
    ("record against a primitive", record("R"), '"int"', [("TYPE_MISMATCH", "/")]),
]


@pytest.mark.parametrize(
    ("reader", "writer", "expected"),
    [case[1:] for case in READ_ERRORS],
    ids=[case[0] for case in READ_ERRORS],
)
def test_read_errors(reader: Any, writer: Any, expected: list[tuple[str, str]]) -> None:
    assert errors(reader, writer) == expected


def test_messages_are_avros_under_confluents_descriptions() -> None:
    found = FORMAT.read_errors(
        avro(record("R", {"name": "a", "type": "string"})), avro(record("R", INT_FIELD))
    )
    assert [str(e) for e in found] == [
        "{errorType:'TYPE_MISMATCH', description:'The type (path '/fields/0/type') of a field "
        "in the reader schema does not match with the writer schema', additionalInfo:'reader "
        "type: STRING not compatible with writer type: INT'}"
    ]
    enum = FORMAT.read_errors(
        avro({"type": "enum", "name": "E", "symbols": ["A"]}),
        avro({"type": "enum", "name": "E", "symbols": ["C", "A", "B"]}),
    )
    assert info(enum) == ["[B, C]"]
    union = FORMAT.read_errors(avro('["null","int"]'), avro('["null","int","string"]'))
    assert info(union) == ["reader union lacking writer type: STRING"]
    assert info(FORMAT.read_errors(avro(record("S")), avro(record("n.R")))) == ["expected: n.R"]
    fixed = FORMAT.read_errors(
        avro({"type": "fixed", "name": "F", "size": 4}),
        avro({"type": "fixed", "name": "F", "size": 8}),
    )
    assert info(fixed) == ["expected: 8, found: 4"]


def info(found: list[Incompatibility]) -> list[str]:
    """Avro's own messages (Confluent's additionalInfo)."""
    assert all(isinstance(f, AvroIncompatibility) for f in found), found
    return [f.additional_info for f in found if isinstance(f, AvroIncompatibility)]


# --- generated schemas, and real data ------------------------------------------------------------


class _Namer:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


def _named(schema: Any, namer: _Namer) -> Any:
    """Give every record, enum and fixed of a generated schema a unique name."""
    if isinstance(schema, list):
        return [_named(s, namer) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out["type"] in ("record", "enum", "fixed"):
        out["name"] = namer(out["type"][0].upper())
    if out["type"] == "record":
        out["fields"] = [{**f, "type": _named(f["type"], namer)} for f in out["fields"]]
    elif out["type"] == "array":
        out["items"] = _named(out["items"], namer)
    elif out["type"] == "map":
        out["values"] = _named(out["values"], namer)
    return out


NAMES = st.from_regex(r"\A[a-z][a-z0-9_]{0,6}\Z")
LEAVES = (
    st.sampled_from(PRIMITIVES[1:])
    | st.builds(
        lambda symbols: {"type": "enum", "name": "", "symbols": symbols},
        st.lists(st.from_regex(r"\A[A-Z][A-Z0-9]{0,3}\Z"), min_size=1, max_size=4, unique=True),
    )
    | st.builds(lambda size: {"type": "fixed", "name": "", "size": size}, st.integers(0, 16))
)


def _records(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(st.tuples(NAMES, inner), max_size=5, unique_by=lambda f: f[0]).map(
        lambda fields: {
            "type": "record",
            "name": "",
            "fields": [{"name": n, "type": t} for n, t in fields],
        }
    )


TYPES = st.recursive(
    LEAVES,
    lambda inner: (
        _records(inner)
        | inner.map(lambda t: {"type": "array", "items": t})
        | inner.map(lambda t: {"type": "map", "values": t})
        # not both string and bytes: fastavro reads bytes into a union's string branch
        | st.lists(st.sampled_from(PRIMITIVES[:-1]), min_size=1, max_size=3, unique=True)
    ),
    max_leaves=8,
)
RECORDS = _records(TYPES).map(lambda r: _named(r, _Namer()))


def _reads(writer: AvroSchema, reader: AvroSchema, count: int = 5) -> bool:
    """Whether data written with *writer* (fastavro) is read by *reader* (fastavro)."""
    for datum in generate_many(writer.parsed, count):
        buffer = io.BytesIO()
        schemaless_writer(buffer, writer.parsed, datum)
        buffer.seek(0)
        try:
            schemaless_reader(buffer, writer.parsed, reader.parsed)
        except SchemaResolutionError:
            return False
    return True


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(RECORDS)
def test_generated_records_parse_and_are_compatible_with_themselves(schema: Any) -> None:
    parsed = avro(schema)
    assert FORMAT.read_errors(parsed, parsed) == []
    again = avro(parsed.canonical)
    assert again == parsed
    assert FORMAT.read_errors(again, parsed) == [] and FORMAT.read_errors(parsed, again) == []
    assert parsed.normalized().normalized() == parsed.normalized()
    assert _reads(parsed, again)


@SETTINGS
@given(RECORDS, NAMES, st.sampled_from(["int", "long", "string", "boolean"]))
def test_adding_a_field_needs_a_default_to_stay_backward(schema: Any, name: str, kind: str) -> None:
    if any(f["name"] == name for f in schema["fields"]):
        name += "_new"
    defaults = {"int": 0, "long": 0, "string": "", "boolean": False}
    old = avro(schema)
    with_default = avro(
        {
            **schema,
            "fields": [*schema["fields"], {"name": name, "type": kind, "default": defaults[kind]}],
        }
    )
    without = avro({**schema, "fields": [*schema["fields"], {"name": name, "type": kind}]})
    assert FORMAT.read_errors(with_default, old) == []
    assert errors_of(without, old) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", f"/fields/{len(schema['fields'])}")
    ]
    assert FORMAT.read_errors(old, without) == []  # forward: the old schema ignores the field
    assert _reads(old, with_default)
    assert not _reads(old, without)


def errors_of(reader: AvroSchema, writer: AvroSchema) -> list[tuple[str, str]]:
    return [(e.kind, e.path) for e in FORMAT.read_errors(reader, writer)]


# no bytes written: random bytes are rarely UTF-8, and Avro lets a string reader read them
WRITER_TYPES = [t for t in PRIMITIVES[1:] if t != "bytes"]


@st.composite
def evolutions(draw: st.DrawFn) -> tuple[Any, Any]:
    """A flat record and a changed copy: a type changed, a field dropped or added."""
    fields = draw(
        st.lists(
            st.tuples(NAMES, st.sampled_from(WRITER_TYPES)),
            min_size=1,
            max_size=5,
            unique_by=lambda f: f[0],
        )
    )
    writer = [{"name": n, "type": t} for n, t in fields]
    reader = [dict(f) for f in writer]
    for step in range(draw(st.integers(1, 3))):
        change = draw(st.sampled_from(["retype", "drop", "add", "add_default", "unionize"]))
        target = reader[draw(st.integers(0, len(reader) - 1))] if reader else None
        if change == "retype" and target is not None and "default" not in target:
            target["type"] = draw(st.sampled_from(PRIMITIVES))
        elif change == "drop" and target is not None:
            reader.remove(target)
        elif change in ("add", "add_default"):
            extra = {"name": f"Added{step}", "type": "long"}
            reader.append({**extra, "default": 7} if change == "add_default" else extra)
        elif change == "unionize" and target is not None and target["type"] in PRIMITIVES[1:]:
            target["type"] = [target["type"], "null"]  # a default's type stays the first branch
    return record("R", *writer), record("R", *reader)


@settings(max_examples=150, deadline=None)
@given(evolutions())
def test_compatible_exactly_when_fastavro_reads_the_data(pair: tuple[Any, Any]) -> None:
    writer, reader = avro(pair[0]), avro(pair[1])
    compatible = FORMAT.read_errors(reader, writer) == []
    # flat records of primitives: every incompatibility shows up in any datum written
    assert compatible == _reads(writer, reader), FORMAT.read_errors(reader, writer)


# --- Java's Avro (the library Confluent runs) as the reference --------------------------------

JAVA_CHECK = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;

public class AvroReference {
  public static void main(String[] args) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    for (String line; (line = in.readLine()) != null; ) {
      String[] parts = line.split("\t");
      try {
        Schema reader = new Schema.Parser().parse(parts[0]);
        StringBuilder answer = new StringBuilder(reader.toString());
        if (parts.length > 1) {
          Schema writer = new Schema.Parser().parse(parts[1]);
          for (SchemaCompatibility.Incompatibility i : SchemaCompatibility
              .checkReaderWriterCompatibility(reader, writer).getResult().getIncompatibilities()) {
            answer.append("\t").append(i.getType()).append("|").append(i.getLocation())
                .append("|").append(i.getMessage());
          }
        }
        out.println(answer);
      } catch (Exception e) {
        out.println("ERROR " + e);
      }
    }
  }
}
"""


def _java_classpath(work: Path) -> str | None:
    """Compile the reference checker against the Avro jar pyspark ships; None without a JDK."""
    spec = importlib.util.find_spec("pyspark")
    javac, java = shutil.which("javac"), shutil.which("java")
    if spec is None or spec.origin is None or javac is None or java is None:
        return None
    jars = Path(spec.origin).parent / "jars"
    wanted = [
        "avro-1.*.jar",
        "jackson-core-*.jar",
        "jackson-databind-*.jar",
        "jackson-annotations-*.jar",
        "slf4j-api-*.jar",
    ]
    found = [next(iter(sorted(jars.glob(pattern))), None) for pattern in wanted]
    if any(jar is None for jar in found):
        return None
    classpath = os.pathsep.join([*(str(jar) for jar in found), str(work)])
    (work / "AvroReference.java").write_text(JAVA_CHECK)
    subprocess.run(
        [javac, "-cp", classpath, "-d", str(work), str(work / "AvroReference.java")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return classpath


def _random_type(rng: random.Random, depth: int, names: Iterator[int]) -> Any:
    roll = rng.random()
    if depth > 2 or roll < 0.35:
        kind = rng.choice(PRIMITIVES)
        return {"type": kind, "x-prop": rng.randint(0, 3)} if rng.random() < 0.1 else kind
    if roll < 0.45:
        symbols = rng.sample(["A", "B", "C", "D"], rng.randint(1, 4))
        enum: dict[str, Any] = {"type": "enum", "name": f"E{next(names)}", "symbols": symbols}
        if rng.random() < 0.3:
            enum["default"] = symbols[0]
        return enum
    if roll < 0.52:
        return {"type": "fixed", "name": f"F{next(names)}", "size": rng.randint(1, 4)}
    if roll < 0.62:
        return {"type": "array", "items": _random_type(rng, depth + 1, names)}
    if roll < 0.70:
        return {"type": "map", "values": _random_type(rng, depth + 1, names)}
    if roll < 0.82:
        return rng.sample(PRIMITIVES, rng.randint(1, 3))
    return _random_record(rng, depth + 1, f"R{next(names)}", names)


DEFAULTS = {
    "null": None,
    "boolean": True,
    "int": 1,
    "long": 2,
    "float": 1.5,
    "double": 2.5,
    "bytes": "x",
    "string": "s",
}


def _random_record(
    rng: random.Random, depth: int, name: str, names: Iterator[int] | None = None
) -> dict[str, Any]:
    """A record of random fields; named types are numbered in order, so that two records
    generated side by side share names where their shapes meet."""
    names = names if names is not None else itertools.count(1)
    fields = []
    for field_name in rng.sample(["a", "b", "c", "d", "e"], rng.randint(0, 4)):
        kind = _random_type(rng, depth, names)
        spec: dict[str, Any] = {"name": field_name, "type": kind}
        first = kind[0] if isinstance(kind, list) else kind
        if isinstance(first, str) and first in DEFAULTS and rng.random() < 0.4:
            spec["default"] = DEFAULTS[first]
        if rng.random() < 0.15:  # (Java refuses to compare a field aliased to its own name)
            spec["aliases"] = [rng.choice([a for a in ("a", "b", "z") if a != field_name])]
        fields.append(spec)
    out: dict[str, Any] = {"type": "record", "name": name, "fields": fields}
    if rng.random() < 0.2:
        out["namespace"] = rng.choice(["n1", "n2"])
    if rng.random() < 0.1:
        out["aliases"] = [rng.choice(["R0", "n1.R1", "Q"])]
    return out


def test_canonical_text_and_read_errors_match_java_avro(tmp_path: Path) -> None:
    classpath = _java_classpath(tmp_path)
    # make test installs both (Java 17 is on every machine, pyspark is a test dependency): a
    # missing one is a broken environment, not a reason to skip the check
    assert classpath is not None, "needs a JDK (javac) and pyspark's Avro jar"
    rng = random.Random(20261129)
    pairs = [(_random_record(rng, 0, "R0"), _random_record(rng, 0, "R0")) for _ in range(600)]
    lines = [f"{json.dumps(reader)}\t{json.dumps(writer)}" for reader, writer in pairs]
    java = subprocess.run(
        ["java", "-cp", classpath, "AvroReference"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    answers = java.stdout.splitlines()
    assert len(answers) == len(pairs)
    compared = 0
    for (reader, writer), expected in zip(pairs, answers, strict=True):
        try:
            ours_reader, ours_writer = avro(reader), avro(writer)
        except InvalidSchemaError as refused:
            # Avro 1.12 lets a named type be defined twice when both definitions are equal;
            # Confluent's Avro 1.11 and fastavro refuse it
            assert expected.startswith("ERROR") or "redefine" in str(refused), (reader, refused)
            continue
        if "matches multiple fields" in expected:
            # a reader field whose name and alias both name writer fields: Java throws, we take
            # the field of the same name (the Avro specification's order)
            continue
        found = [
            f"{e.kind}|{e.path}|{e.additional_info}"
            for e in FORMAT.read_errors(ours_reader, ours_writer)
            if isinstance(e, AvroIncompatibility)
        ]
        assert "\t".join([ours_reader.canonical, *found]) == expected, (reader, writer)
        compared += 1
    assert compared > 500, f"only {compared} of {len(pairs)} pairs compared"
