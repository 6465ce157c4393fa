"""The PROTOBUF schema format: protoc parsing, the base64 form, normal form, indexes, SchemaDiff."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pytest
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.common.protobuf import _init_pool, _str_to_proto
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.schemas.formats import InvalidSchemaError, format_named
from sluice.schemas.formats.protobuf import (
    COMPATIBLE_CHANGES,
    FORMAT,
    ProtobufSchema,
    differences,
)

CUSTOMER = """syntax = "proto3";
package shop;

message Customer {
  string name = 1;
  Tier tier = 2;
  enum Tier { BASIC = 0; GOLD = 1; }
}
"""

ORDER = """syntax = "proto3";
package shop;

import "shop/customer.proto";
import "google/protobuf/timestamp.proto";

option java_package = "com.example.shop";

message Order {
  int64 id = 1;
  shop.Customer customer = 2;
  google.protobuf.Timestamp placed_at = 3;
  map<string, Line> lines = 4;
  message Line {
    string sku = 1;
    uint32 quantity = 2;
  }
  oneof payment {
    string card = 5;
    bytes token = 6;
  }
  optional int32 priority = 7 [deprecated = true];
  repeated double weights = 8 [packed = false];
  reserved 20, 30 to max;
  reserved "legacy";
}

message Refund {
  int64 order_id = 1;
}

service Shop {
  rpc Place (Order) returns (stream Order);
}
"""

REFS = {"shop/customer.proto": CUSTOMER}


def parse(text: str, references: dict[str, str] | None = None) -> ProtobufSchema:
    return FORMAT.parse(text, references or {})


def by_number(schema: ProtobufSchema) -> descriptor_pb2.FileDescriptorProto:
    """The compiled file with each message's fields in number order (their order in the text
    changes nothing a reader sees; the order of nested messages, the message indexes, does)."""
    proto = schema.descriptor
    proto.name = "compared.proto"

    def sort(messages: Sequence[descriptor_pb2.DescriptorProto]) -> None:
        for message in messages:
            fields = sorted(message.field, key=lambda item: item.number)
            del message.field[:]
            message.field.extend(fields)
            sort(message.nested_type)

    sort(proto.message_type)
    return proto


def proto3(body: str, package: str = "p") -> ProtobufSchema:
    return parse(f'syntax = "proto3";\npackage {package};\n{body}')


# --- parsing .proto text ------------------------------------------------------------------------


def test_the_format_is_found_by_confluent_name() -> None:
    assert format_named("PROTOBUF") is FORMAT
    assert FORMAT.name == "PROTOBUF"


def test_text_with_references_and_well_known_types_parses() -> None:
    schema = parse(ORDER, REFS)
    assert schema.schema_type == "PROTOBUF"
    assert schema.canonical == schema.to_text(), "stored as text rendered from the descriptor"
    assert parse(schema.serialized(), REFS).canonical == schema.canonical, (
        "the text and the base64 form of one schema are the same schema (one id)"
    )
    assert schema.record_names() == ["shop.Order", "shop.Refund"]
    assert not schema.from_base64
    assert list(schema.descriptor.dependency) == [
        "shop/customer.proto",
        "google/protobuf/timestamp.proto",
    ]


def test_references_chain_transitively() -> None:
    base = 'syntax = "proto3"; package base; message Money { int64 units = 1; }'
    middle = (
        'syntax = "proto3"; package mid; import "base/money.proto";'
        " message Price { base.Money amount = 1; }"
    )
    top = 'syntax = "proto3"; import "mid/price.proto"; message Item { mid.Price price = 1; }'
    schema = parse(top, {"mid/price.proto": middle, "base/money.proto": base})
    assert schema.record_names() == ["Item"]
    with pytest.raises(InvalidSchemaError, match=r"base/money\.proto"):
        parse(top, {"mid/price.proto": middle})


@pytest.mark.parametrize(
    "path",
    [
        "google/protobuf/any.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/wrappers.proto",
        "google/type/date.proto",
        "confluent/meta.proto",
        "confluent/type/decimal.proto",
    ],
)
def test_builtin_files_import_without_a_reference(path: str) -> None:
    schema = parse(f'syntax = "proto3"; import "{path}"; message M {{ int32 a = 1; }}')
    assert list(schema.descriptor.dependency) == [path]


def test_custom_options_of_confluent_meta_parse() -> None:
    schema = proto3(
        'import "confluent/meta.proto";\n'
        'message M { string ssn = 1 [(confluent.field_meta).tags = "PII"]; }'
    )
    assert "(confluent.field_meta)" in schema.to_text()
    assert parse(schema.to_text()).record_names() == ["p.M"]


def test_proto2_parses_with_required_defaults_groups_and_extensions() -> None:
    text = """syntax = "proto2";
package legacy;
message Old {
  required string id = 1;
  optional int32 count = 2 [default = 7];
  optional string label = 3 [default = "a \\"quoted\\" label"];
  optional group Result = 4 {
    optional string url = 5;
  }
  extensions 100 to 199;
}
extend Old {
  optional string note = 100;
}
"""
    schema = parse(text)
    rendered = schema.to_text()
    assert by_number(parse(rendered)) == by_number(schema), rendered


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'syntax = "proto3";\nmessage M {\n  int32 a = 1\n}\n',
            r"schema\.proto:4:1: Expected \";\"",
        ),
        ('syntax = "proto3";\nmessage M {\n  Unknown u = 1;\n}\n', r'schema\.proto:3:3: "Unknown"'),
        (
            'syntax = "proto3";\nmessage M { int32 a = 1; int32 b = 1; }',
            r"schema\.proto:2:.*number 1",
        ),
        ('syntax = "proto4";', r"schema\.proto:1:10: Unrecognized syntax"),
    ],
)
def test_syntax_errors_name_the_line(text: str, expected: str) -> None:
    with pytest.raises(InvalidSchemaError, match=expected) as caught:
        parse(text)
    assert "absl" not in str(caught.value), "protoc's logging is left out"


def test_a_missing_import_says_which_reference_to_add() -> None:
    with pytest.raises(InvalidSchemaError, match=r"add a reference named 'shop/customer.proto'"):
        parse(ORDER)


def test_an_error_in_a_reference_names_the_reference() -> None:
    with pytest.raises(InvalidSchemaError, match=r"^shop/customer\.proto:1:"):
        parse(ORDER, {"shop/customer.proto": "message {"})


def test_an_empty_schema_is_invalid() -> None:
    with pytest.raises(InvalidSchemaError, match="empty schema"):
        parse(" \n")


@pytest.mark.parametrize("name", ["../etc/x.proto", "/abs.proto", "a//b.proto", "-I.proto", ""])
def test_reference_names_must_be_relative_import_paths(name: str) -> None:
    with pytest.raises(InvalidSchemaError, match="invalid reference name"):
        parse('syntax = "proto3"; message M {}', {name: 'syntax = "proto3";'})


def test_a_reference_named_like_the_main_file_is_fine() -> None:
    ref = 'syntax = "proto3"; package r; message R {}'
    schema = parse(
        'syntax = "proto3"; import "schema.proto"; message M { r.R r = 1; }', {"schema.proto": ref}
    )
    assert schema.record_names() == ["M"]


# --- the base64 form (what confluent-kafka's Python serializer registers) ----------------------


def _registered_by_python_serializer() -> tuple[MockSchemaRegistryClient, bytes]:
    """Serialize a nested message with confluent-kafka's ProtobufSerializer; the mock registry
    keeps what the serializer registers (the main file and its reference), byte for byte."""
    customer, order = parse(CUSTOMER), parse(ORDER, REFS)
    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)
    for schema, name in ((customer, "shop/customer.proto"), (order, "shop/order.proto")):
        proto = schema.descriptor
        proto.name = name
        pool.Add(proto)
    line = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order.Line"))
    client = MockSchemaRegistryClient({"url": "mock://protobuf-format"})
    serializer = ProtobufSerializer(line, client, {"use.deprecated.format": False})
    data = serializer(
        line(sku="A-1", quantity=2), SerializationContext("orders", MessageField.VALUE)
    )
    assert data is not None
    return client, data


def test_the_python_serializers_base64_form_parses_to_the_same_messages() -> None:
    client, _ = _registered_by_python_serializer()
    registered = client.get_latest_version("orders-value").schema
    assert registered.references is not None
    (reference,) = registered.references
    assert reference.name == "shop/customer.proto"
    assert reference.subject is not None and reference.version is not None
    referenced = client.get_version(reference.subject, reference.version).schema.schema_str
    assert registered.schema_str is not None and referenced is not None
    schema = parse(registered.schema_str, {reference.name: referenced})
    assert schema.from_base64
    from_text = parse(ORDER, REFS)
    assert schema.record_names() == from_text.record_names()
    assert by_number(schema) == by_number(from_text)
    # The canonical text is .proto text rendered from the descriptor, and it parses back alike.
    assert schema.canonical.startswith('syntax = "proto3";\npackage shop;\n')
    assert "map<string, .shop.Order.Line> lines = 4;" in schema.canonical
    assert by_number(parse(schema.canonical, REFS)) == by_number(schema)


def test_message_indexes_match_the_python_serializers_wire_bytes() -> None:
    _, data = _registered_by_python_serializer()
    # magic byte, 4-byte id, then zigzag varints: count 2 (0x04), indexes 0 and 1 (0x00, 0x02)
    assert data[5:8] == b"\x04\x00\x02"
    schema = parse(ORDER, REFS)
    assert schema.message_indexes("shop.Order.Line") == [0, 1], "the map entry counts"
    assert schema.message_name([0, 1]) == "shop.Order.Line"


def test_serialized_is_what_the_python_deserializer_reads() -> None:
    customer, order = parse(CUSTOMER), parse(ORDER, REFS)
    # As ProtobufDeserializer does with ?format=serialized answers: references first, by name.
    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)
    pool.Add(_str_to_proto("shop/customer.proto", customer.serialized()))
    main = _str_to_proto("default", order.serialized())
    pool.Add(main)
    assert pool.FindMessageTypeByName("shop.Order.Line").fields_by_name["sku"].number == 1
    again = parse(order.serialized(), {"shop/customer.proto": customer.serialized()})
    assert again.descriptor == order.descriptor


def test_a_base64_reference_serves_a_text_schema() -> None:
    schema = parse(ORDER, {"shop/customer.proto": parse(CUSTOMER).serialized()})
    assert schema.record_names() == ["shop.Order", "shop.Refund"]


def test_an_invalid_descriptor_in_base64_is_an_invalid_schema() -> None:
    proto = descriptor_pb2.FileDescriptorProto(name="x.proto", syntax="proto3")
    proto.message_type.add(name="M").field.add(
        name="a", number=1, label=1, type_name=".nope.Missing"
    )
    text = base64.standard_b64encode(proto.SerializeToString()).decode()
    with pytest.raises(InvalidSchemaError, match=r"nope\.Missing"):
        parse(text)


def test_base64_imports_need_references_too() -> None:
    text = parse(ORDER, REFS).serialized()
    with pytest.raises(InvalidSchemaError, match=r"add a reference named 'shop/customer\.proto'"):
        parse(text)


def test_custom_options_from_a_reference_survive_the_base64_round_trip() -> None:
    options = """syntax = "proto3";
package opts;
import "google/protobuf/descriptor.proto";
message Sensitivity { string level = 1; repeated string tags = 2; }
extend google.protobuf.FieldOptions { string pii = 50001; Sensitivity sensitivity = 50002; }
extend google.protobuf.MessageOptions { bool audited = 50003; }
"""
    text = """syntax = "proto3";
package app;
import "opts/opts.proto";
message User {
  option (opts.audited) = true;
  string email = 1 [(opts.pii) = "email", (opts.sensitivity) = { level: "high" tags: "a" }];
}
"""
    refs = {"opts/opts.proto": options}
    binary = parse(parse(text, refs).serialized(), refs)
    assert "  option (opts.audited) = true;\n" in binary.canonical
    assert '    (opts.pii) = "email",\n' in binary.canonical
    assert '    (opts.sensitivity) = { level: "high" tags: "a" }\n' in binary.canonical
    assert by_number(parse(binary.canonical, refs)) == by_number(binary)


def test_rendered_text_keeps_nested_messages_where_map_entries_put_them() -> None:
    text = """syntax = "proto3";
package p;
message Outer {
  message Line { string sku = 1; }
  int32 z = 9;
  map<string, Line> lines = 1;
  message After { int32 x = 1; }
  map<int32, After> afters = 2;
}
"""
    schema = parse(text)
    expected = ["Line", "LinesEntry", "After", "AftersEntry"]
    assert [m.name for m in schema.descriptor.message_type[0].nested_type] == expected
    for rendered in (parse(schema.serialized()).canonical, schema.normalized().canonical):
        again = parse(rendered)
        assert [m.name for m in again.descriptor.message_type[0].nested_type] == expected
        assert again.message_indexes("p.Outer.After") == [0, 2]


def test_a_base64_schema_is_stored_as_confluent_lays_out_proto_text() -> None:
    text = (
        'syntax = "proto3"; package p; import "google/protobuf/timestamp.proto";'
        " message M { reserved 7; enum E { Z = 0; } google.protobuf.Timestamp at = 1;"
        " oneof o { string a = 2; } message N {} } enum Top { T = 0; }"
    )
    assert parse(parse(text).serialized()).canonical == (
        'syntax = "proto3";\n'
        "package p;\n"
        "\n"
        'import "google/protobuf/timestamp.proto";\n'
        "\n"
        "message M {\n"
        "  reserved 7;\n"
        "\n"
        "  .google.protobuf.Timestamp at = 1;\n"
        "\n"
        "  oneof o {\n"
        "    string a = 2;\n"
        "  }\n"
        "\n"
        "  message N {}\n"
        "  enum E {\n"
        "    Z = 0;\n"
        "  }\n"
        "}\n"
        "enum Top {\n"
        "  T = 0;\n"
        "}\n"
    )


# --- normal form --------------------------------------------------------------------------------


def test_normalization_orders_fields_options_and_imports() -> None:
    a = parse(
        'syntax = "proto3"; package p; import "google/protobuf/empty.proto";'
        ' import "google/protobuf/any.proto";'
        ' option java_package = "x"; option go_package = "y";'
        " message M { string b = 2 [deprecated = true, json_name = 'bee']; int32 a = 1; }"
    )
    b = parse(
        'syntax = "proto3";\npackage p;\nimport "google/protobuf/any.proto";\n'
        'import "google/protobuf/empty.proto";\noption go_package = "y";\n'
        'option java_package = "x";\nmessage M {\n  int32 a = 1;\n'
        '  string b = 2 [json_name = "bee", deprecated = true];\n}\n'
    )
    assert a.canonical != b.canonical
    assert a.normalized().canonical == b.normalized().canonical
    assert a.normalized().canonical == (
        'syntax = "proto3";\npackage p;\n\nimport "google/protobuf/any.proto";\n'
        'import "google/protobuf/empty.proto";\n\noption go_package = "y";\n'
        'option java_package = "x";\n\nmessage M {\n  int32 a = 1;\n'
        '  string b = 2 [\n    deprecated = true,\n    json_name = "bee"\n  ];\n}\n'
    )


def test_normalization_qualifies_type_names_and_keeps_message_order() -> None:
    schema = proto3("message B { A a = 1; } message A { int32 x = 1; }")
    normal = schema.normalized()
    assert ".p.A a = 1;" in normal.canonical
    assert normal.record_names() == ["p.B", "p.A"], "message indexes depend on the order"
    assert normal.normalized().canonical == normal.canonical


def test_normalization_tells_different_schemas_apart() -> None:
    a = proto3("message M { int32 a = 1; }").normalized()
    b = proto3("message M { int64 a = 1; }").normalized()
    assert a.canonical != b.canonical


# --- message indexes ----------------------------------------------------------------------------


def test_message_indexes_of_nested_messages() -> None:
    schema = proto3(
        "message A {}\n"
        "message B {\n  message C {}\n  message D {\n    message E {}\n    message F {}\n  }\n}"
    )
    table = {
        "p.A": [0],
        "p.B": [1],
        "p.B.C": [1, 0],
        "p.B.D": [1, 1],
        "p.B.D.E": [1, 1, 0],
        "p.B.D.F": [1, 1, 1],
    }
    for name, indexes in table.items():
        assert schema.message_indexes(name) == indexes, name
        assert schema.message_name(indexes) == name
    assert schema.message_name([]) == "p.A", "an empty path is the first message"


@pytest.mark.parametrize("name", ["p.Z", "q.A", "p.A.Missing"])
def test_unknown_messages_have_no_indexes(name: str) -> None:
    with pytest.raises(KeyError):
        proto3("message A {}").message_indexes(name)


def test_index_paths_out_of_range_have_no_message() -> None:
    with pytest.raises(KeyError):
        proto3("message A {}").message_name([0, 0])


# --- compatibility (Confluent's SchemaDiff) -----------------------------------------------------

EVOLUTIONS = [
    # (writer, reader, the incompatible differences Confluent reports)
    ("message M { int32 a = 1; }", "message M { int32 a = 1; string b = 2; }", []),
    ("message M { int32 a = 1; string b = 2; }", "message M { int32 a = 1; }", []),
    ("message M { int32 a = 1; }", "message M { int32 renamed = 1; }", []),
    ("message M { int32 a = 1; }", "message M { int64 a = 1; }", []),
    ("message M { uint64 a = 1; }", "message M { bool a = 1; }", []),
    ("message M { string a = 1; }", "message M { bytes a = 1; }", []),
    ("message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", []),
    ("message M { sint32 a = 1; }", "message M { sint64 a = 1; }", []),
    (
        "enum E { Z = 0; } message M { E a = 1; }",
        "enum E { Z = 0; } message M { int32 a = 1; }",
        [],
    ),
    (
        "message M { int32 a = 1; }",
        "message M { string a = 1; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")],
    ),
    (
        "message M { int32 a = 1; }",
        "message M { sint32 a = 1; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")],
    ),
    (
        "message M { float a = 1; }",
        "message M { double a = 1; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")],
    ),
    (
        "message M { int32 a = 1; } message N {}",
        "message M { N a = 1; } message N {}",
        [("FIELD_KIND_CHANGED", "#/M/1")],
    ),
    (
        "message M { map<string, int32> a = 1; }",
        "message M { int32 a = 1; }",
        [("FIELD_KIND_CHANGED", "#/M/1")],
    ),
    (
        "message M { map<string, int32> a = 1; }",
        "message M { map<string, string> a = 1; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/1")],
    ),
    ("message M {} message N {}", "message M {}", [("MESSAGE_REMOVED", "#/N")]),
    ("message M {} message N {}", "message N {} message M {}", []),
    ("message M {}", "message M {} message N {}", []),
    ("enum E { Z = 0; A = 1; }", "enum E { Z = 0; }", []),
    ("enum E { Z = 0; A = 1; }", "enum E { Z = 0; B = 1; }", []),
    (
        "message A {} message B {} message M { A x = 1; }",
        "message A {} message B {} message M { B x = 1; }",
        [("FIELD_NAMED_TYPE_CHANGED", "#/M/1")],
    ),
    (
        "message M { message I { int32 v = 1; } I i = 1; }",
        "message M { message I { string v = 1; } I i = 1; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/I/1"), ("FIELD_NAMED_TYPE_CHANGED", "#/M/1")],
    ),
    (
        "message M { M next = 1; int32 v = 2; }",
        "message M { M next = 1; string v = 2; }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/2")],
    ),
    (
        "message M { oneof u { int32 a = 1; int32 b = 2; } }",
        "message M { oneof u { int32 a = 1; } }",
        [("ONEOF_FIELD_REMOVED", "#/M/u/2")],
    ),
    (
        "message M { oneof u { int32 a = 1; } }",
        "message M { oneof u { int32 a = 1; int32 b = 2; } }",
        [],
    ),
    ("message M { int32 a = 1; }", "message M { oneof u { int32 a = 1; } }", []),
    (
        "message M { int32 a = 1; int32 b = 2; }",
        "message M { oneof u { int32 a = 1; int32 b = 2; } }",
        [("MULTIPLE_FIELDS_MOVED_TO_ONEOF", "#/M/u")],
    ),
    (
        "message M { int32 a = 1; oneof u { int32 b = 2; } }",
        "message M { oneof u { int32 a = 1; int32 b = 2; } }",
        [("FIELD_MOVED_TO_EXISTING_ONEOF", "#/M/u")],
    ),
    (
        "message M { oneof u { int32 a = 1; } }",
        "message M { oneof u { string a = 1; } }",
        [("FIELD_SCALAR_KIND_CHANGED", "#/M/u/1")],
    ),
    ("message M { int32 a = 1; }", "message M { optional int32 a = 1; }", []),
]


@pytest.mark.parametrize(("writer", "reader", "expected"), EVOLUTIONS)
def test_evolutions(writer: str, reader: str, expected: list[tuple[str, str]]) -> None:
    errors = FORMAT.read_errors(proto3(reader), proto3(writer))
    assert [(error.kind, error.path) for error in errors] == expected
    for error in errors:
        assert error.path in error.description, "the description says where"


def test_a_changed_package_is_incompatible() -> None:
    errors = FORMAT.read_errors(
        proto3("message M {}", package="b"), proto3("message M {}", package="a")
    )
    assert [(error.kind, error.path) for error in errors] == [("PACKAGE_CHANGED", "#/")]


def test_required_fields_added_or_removed_are_incompatible() -> None:
    def proto2(body: str) -> ProtobufSchema:
        return parse(f'syntax = "proto2"; message M {{ optional int32 a = 1; {body} }}')

    added = FORMAT.read_errors(proto2("required int32 b = 2;"), proto2(""))
    removed = FORMAT.read_errors(proto2(""), proto2("required int32 b = 2;"))
    assert [(e.kind, e.path) for e in added] == [("REQUIRED_FIELD_ADDED", "#/M/2")]
    assert [(e.kind, e.path) for e in removed] == [("REQUIRED_FIELD_REMOVED", "#/M/2")]


def test_a_referenced_message_is_compared_through_the_field_using_it() -> None:
    changed = CUSTOMER.replace("string name = 1;", "int64 name = 1;")
    errors = FORMAT.read_errors(parse(ORDER, {"shop/customer.proto": changed}), parse(ORDER, REFS))
    assert [(e.kind, e.path) for e in errors] == [
        ("FIELD_SCALAR_KIND_CHANGED", "#/Customer/1"),
        ("FIELD_NAMED_TYPE_CHANGED", "#/Order/2"),
    ]
    assert FORMAT.read_errors(parse(ORDER, REFS), parse(ORDER, REFS)) == []


def test_compatible_differences_are_listed_but_not_errors() -> None:
    old = proto3("message M { int32 a = 1; } message N {}")
    new = proto3("message N {} message M { int32 b = 1; int32 c = 2; }")
    found = {(d.kind, d.path) for d in differences(old, new)}
    assert found == {
        ("FIELD_NAME_CHANGED", "#/M/1"),
        ("FIELD_ADDED", "#/M/2"),
        ("MESSAGE_MOVED", "#/M"),
        ("MESSAGE_MOVED", "#/N"),
    }
    assert {kind for kind, _ in found} <= COMPATIBLE_CHANGES
    assert FORMAT.read_errors(new, old) == []


class _OtherFormatSchema:
    schema_type = "AVRO"
    canonical = '"string"'

    def normalized(self) -> _OtherFormatSchema:
        return self

    def record_names(self) -> list[str]:
        return []


def test_a_schema_of_another_type_is_incompatible() -> None:
    schema = proto3("message M {}")
    for reader, writer in ((schema, _OtherFormatSchema()), (_OtherFormatSchema(), schema)):
        (error,) = FORMAT.read_errors(reader, writer)
        assert error.description == "Incompatible because of different schema type"


def test_the_base64_and_text_forms_of_one_schema_are_compatible() -> None:
    text = parse(ORDER, REFS)
    binary = parse(text.serialized(), REFS)
    assert differences(text, binary) == []


# --- robustness ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_random_text_is_parsed_or_refused_cleanly(text: str) -> None:
    try:
        schema = parse(text)
    except InvalidSchemaError:
        return
    assert schema.canonical == schema.to_text()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes_in_base64_are_parsed_or_refused_cleanly(data: bytes) -> None:
    try:
        schema = parse(base64.standard_b64encode(data).decode())
    except InvalidSchemaError:
        return
    assert schema.canonical


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_descriptors_are_parsed_or_refused_cleanly(data: st.DataObject) -> None:
    serialized = bytearray(base64.standard_b64decode(parse(ORDER, REFS).serialized()))
    for _ in range(data.draw(st.integers(1, 4))):
        serialized[data.draw(st.integers(0, len(serialized) - 1))] = data.draw(st.integers(0, 255))
    try:
        schema = parse(base64.standard_b64encode(bytes(serialized)).decode(), REFS)
    except InvalidSchemaError:
        return
    assert schema.canonical
