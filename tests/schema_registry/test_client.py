"""confluent-kafka's own ``SchemaRegistryClient`` against a real registry process."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.schema_registry.conftest import ClientFactory, RegistryProcess, call


def avro(*fields: tuple[str, str]) -> Schema:
    record = {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [{"name": n, "type": t} for n, t in fields],
    }
    return Schema(json.dumps(record), "AVRO")


V1 = avro(("id", "long"))
V2 = Schema(
    json.dumps(
        {
            "type": "record",
            "name": "Order",
            "namespace": "shop",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "note", "type": "string", "default": ""},
            ],
        }
    ),
    "AVRO",
)
BREAKING = avro(("id", "long"), ("total", "double"))  # a new field without a default


@pytest.fixture
def client(registry: RegistryProcess, sr_client: ClientFactory) -> SchemaRegistryClient:
    return sr_client(registry.url)


def refused(error: pytest.ExceptionInfo[SchemaRegistryError]) -> tuple[int, int]:
    return error.value.http_status_code, error.value.error_code


def test_register_get_versions_latest_and_lookup(client: SchemaRegistryClient) -> None:
    first = client.register_schema("orders-value", V1)
    assert client.register_schema("orders-value", V1) == first  # the same schema: no new version
    second = client.register_schema("orders-value", V2)
    assert second == first + 1
    assert client.get_versions("orders-value") == [1, 2]
    assert json.loads(client.get_schema(first).schema_str) == json.loads(V1.schema_str)

    latest = client.get_latest_version("orders-value")
    assert (latest.version, latest.schema_id) == (2, second)
    assert client.get_version("orders-value", 1).schema_id == first
    assert client.get_subjects() == ["orders-value"]

    found = client.lookup_schema("orders-value", V1)
    assert (found.subject, found.version, found.schema_id) == ("orders-value", 1, first)
    with pytest.raises(SchemaRegistryError) as missing:
        client.lookup_schema("orders-value", BREAKING)
    assert refused(missing) == (404, 40403)

    # the same schema in another subject keeps its id
    assert client.register_schema("archive-value", V1) == first
    assert client.get_subjects_by_schema_id(first) == ["archive-value", "orders-value"]
    versions = client.get_schema_versions(first)
    assert {(v.subject, v.version) for v in versions} == {("archive-value", 1), ("orders-value", 1)}
    assert set(client.get_schema_types()) >= {"AVRO"}


def test_incompatible_schema_is_refused_with_the_reasons(client: SchemaRegistryClient) -> None:
    client.register_schema("pay-value", V1)
    with pytest.raises(SchemaRegistryError) as error:
        client.register_schema("pay-value", BREAKING)
    assert refused(error) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in error.value.error_message
    assert "'total'" in error.value.error_message
    assert client.get_versions("pay-value") == [1]

    assert client.test_compatibility("pay-value", V2) is True
    assert client.test_compatibility("pay-value", BREAKING) is False
    assert client.test_compatibility_all_versions("pay-value", BREAKING) is False

    client.set_compatibility("pay-value", "NONE")
    assert client.get_compatibility("pay-value") == "NONE"
    assert client.register_schema("pay-value", BREAKING) > 0
    assert client.get_versions("pay-value") == [1, 2]


def test_compatibility_endpoint_verbose_messages(
    registry: RegistryProcess, client: SchemaRegistryClient
) -> None:
    client.register_schema("c-value", V1)
    status, body = call(
        registry.url,
        "POST",
        "/compatibility/subjects/c-value/versions/latest?verbose=true",
        {"schema": BREAKING.schema_str},
    )
    assert status == 200 and body["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m for m in body["messages"])
    status, body = call(
        registry.url, "POST", "/compatibility/subjects/c-value/versions/9", {"schema": '"int"'}
    )
    assert (status, body["error_code"]) == (404, 40402)
    status, body = call(
        registry.url, "POST", "/compatibility/subjects/nope/versions/1", {"schema": '"int"'}
    )
    assert (status, body["error_code"]) == (404, 40401)


def test_soft_and_permanent_deletes(client: SchemaRegistryClient) -> None:
    first = client.register_schema("d-value", V1)
    client.register_schema("d-value", V2)

    with pytest.raises(SchemaRegistryError) as error:
        client.delete_version("d-value", 1, permanent=True)
    assert refused(error) == (404, 40407)
    assert client.delete_version("d-value", 1) == 1
    with pytest.raises(SchemaRegistryError) as error:
        client.delete_version("d-value", 1)
    assert refused(error) == (404, 40406)
    assert client.get_versions("d-value") == [2]
    with pytest.raises(SchemaRegistryError) as error:
        client.get_version("d-value", 1)
    assert refused(error) == (404, 40402)
    assert client.get_version("d-value", 1, deleted=True).schema_id == first
    assert client.delete_version("d-value", 1, permanent=True) == 1

    with pytest.raises(SchemaRegistryError) as error:
        client.delete_subject("d-value", permanent=True)
    assert refused(error) == (404, 40405)
    assert client.delete_subject("d-value") == [2]
    assert client.get_subjects() == []
    assert client.get_subjects(deleted=True) == ["d-value"]
    with pytest.raises(SchemaRegistryError) as error:
        client.delete_subject("d-value")
    assert refused(error) == (404, 40404)
    with pytest.raises(SchemaRegistryError) as error:
        client.get_versions("d-value")
    assert refused(error) == (404, 40401)
    assert client.delete_subject("d-value", permanent=True) == [2]
    assert client.get_subjects(deleted=True) == []

    # after a permanent delete the schema and its id are gone: registering it again starts
    # at version 1 with a new id (ids are never given out twice)
    assert client.register_schema("d-value", V1) == 3
    assert client.get_versions("d-value") == [1]
    with pytest.raises(SchemaRegistryError) as error:
        client.get_schema(9999)
    assert refused(error) == (404, 40403)


def test_config_and_mode(client: SchemaRegistryClient) -> None:
    assert client.get_compatibility() == "BACKWARD"
    client.set_compatibility(level="FULL")
    assert client.get_compatibility() == "FULL"
    client.set_compatibility("m-value", "FORWARD_TRANSITIVE")
    assert client.get_compatibility("m-value") == "FORWARD_TRANSITIVE"
    assert client.delete_config("m-value").compatibility_level.value == "FORWARD_TRANSITIVE"
    with pytest.raises(SchemaRegistryError) as error:
        client.get_compatibility("m-value")
    assert refused(error) == (404, 40408)
    with pytest.raises(SchemaRegistryError) as error:
        client.set_compatibility("m-value", "SIDEWAYS")
    assert refused(error) == (422, 42203)

    assert client.get_global_mode() == "READWRITE"
    client.register_schema("m-value", V1)
    assert client.update_mode("m-value", "READONLY") == "READONLY"
    assert client.get_mode("m-value") == "READONLY"
    with pytest.raises(SchemaRegistryError) as error:
        client.register_schema("m-value", V2)
    assert refused(error) == (422, 42205)
    with pytest.raises(SchemaRegistryError) as error:
        client.update_mode("m-value", "SIDEWAYS")
    assert refused(error) == (422, 42204)
    with pytest.raises(SchemaRegistryError) as error:
        client.update_mode("m-value", "IMPORT")  # schemas exist: needs force
    assert refused(error) == (422, 42205)
    assert client.delete_mode("m-value") == "READONLY"
    with pytest.raises(SchemaRegistryError) as error:
        client.get_mode("m-value")
    assert refused(error) == (404, 40409)
    assert client.register_schema("m-value", V2) > 0


def test_import_mode_registers_with_the_given_id_and_version(
    registry: RegistryProcess, client: SchemaRegistryClient
) -> None:
    assert client.update_mode("imported-value", "IMPORT") == "IMPORT"
    body = {"schema": V1.schema_str, "id": 100, "version": 5}
    assert call(registry.url, "POST", "/subjects/imported-value/versions", body) == (
        200,
        {"id": 100},
    )
    assert client.get_version("imported-value", 5).schema_id == 100
    # outside IMPORT mode an id cannot be given
    status, answer = call(registry.url, "POST", "/subjects/other-value/versions", body)
    assert (status, answer["error_code"]) == (422, 42205)
    # ids allocated afterwards follow the highest one
    client.delete_mode("imported-value")
    assert client.register_schema("other-value", V2) == 101


def test_references_across_subjects(client: SchemaRegistryClient) -> None:
    address = json.dumps(
        {
            "type": "record",
            "name": "Address",
            "namespace": "shop",
            "fields": [{"name": "city", "type": "string"}],
        }
    )
    address_id = client.register_schema("address", Schema(address, "AVRO"))
    customer = Schema(
        json.dumps(
            {
                "type": "record",
                "name": "Customer",
                "namespace": "shop",
                "fields": [{"name": "home", "type": "shop.Address"}],
            }
        ),
        "AVRO",
        [SchemaReference("shop.Address", "address", 1)],
    )
    customer_id = client.register_schema("customer-value", customer)
    assert customer_id != address_id
    registered = client.get_latest_version("customer-value")
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [
        ("shop.Address", "address", 1)
    ]
    assert client.get_referenced_by("address", 1) == [customer_id]
    assert client.get_schema(customer_id).references[0].subject == "address"

    with pytest.raises(SchemaRegistryError) as error:
        client.delete_version("address", 1)
    assert refused(error) == (422, 42206)
    with pytest.raises(SchemaRegistryError) as error:
        client.delete_subject("address")
    assert refused(error) == (422, 42206)

    dangling = Schema(customer.schema_str, "AVRO", [SchemaReference("shop.Address", "gone", 1)])
    with pytest.raises(SchemaRegistryError) as error:
        client.register_schema("dangling-value", dangling)
    assert refused(error) == (422, 42201)

    client.delete_subject("customer-value")
    assert client.delete_version("address", 1) == 1


def test_lookup_and_normalize(client: SchemaRegistryClient) -> None:
    spaced = Schema(
        '{"type": "record", "name": "shop.N", "fields": [{"name": "a", "type": "int"}]}', "AVRO"
    )
    schema_id = client.register_schema("n-value", spaced, normalize_schemas=True)
    same = Schema(
        '{"namespace": "shop", "name": "N", "type": "record", '
        '"fields": [{"type": "int", "name": "a"}]}',
        "AVRO",
    )
    found: RegisteredSchema = client.lookup_schema("n-value", same, normalize_schemas=True)
    assert found.schema_id == schema_id
    assert client.register_schema("n-value", same, normalize_schemas=True) == schema_id
    assert client.get_versions("n-value") == [1]


def test_subjects_with_slashes_as_protobuf_imports_are_registered(
    client: SchemaRegistryClient,
) -> None:
    """confluent-kafka's ProtobufSerializer registers each import under its file name
    (``shop/common.proto``), sent URL-encoded (``%2F``)."""
    subject = "shop/common.proto"
    text = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n'
    first = client.register_schema(subject, Schema(text, "PROTOBUF"))
    assert client.get_latest_version(subject).schema_id == first
    assert client.get_versions(subject) == [1]
    assert subject in client.get_subjects()
    assert client.set_compatibility(subject, "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility(subject) == "NONE"
    assert client.delete_subject(subject) == [1]
