"""A registered Protobuf schema's `.proto` text compiled in this process (protobuf_text.py,
_protoc.py): the serialized form the serdes ask for, never asked of the registry."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from google.protobuf import descriptor_pb2
from google.protobuf.message_factory import GetMessageClass

from pulsar_external_schema import _protoc
from pulsar_external_schema.errors import SchemaParseError
from pulsar_external_schema.protobuf_text import (
    SERIALIZED,
    ProtobufTextMockClient,
    compile_registered,
    new_client,
)

MONEY = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
ORDER = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "confluent/meta.proto";
import "common/money.proto";
enum Status { UNKNOWN = 0; PAID = 1; }
message Order {
  int64 id = 1;
  optional string note = 2;
  Status status = 3;
  map<string, int32> counts = 4;
  oneof payment { string card = 5; string iban = 6 [(confluent.field_meta).tags = "PII"]; }
  google.protobuf.Timestamp at = 7;
  common.Money total = 8;
  repeated Line lines = 9;
  message Line { string sku = 1; }
}
"""
REFERENCES = [SchemaReference("common/money.proto", "money", 1)]


def texts(subject: str, version: int) -> Schema:
    assert (subject, version) == ("money", 1)
    return Schema(MONEY, "PROTOBUF")


def test_the_text_with_references_well_known_and_confluent_imports_compiles_to_its_descriptor() -> None:
    proto = compile_registered(Schema(ORDER, "PROTOBUF", REFERENCES), texts)
    assert proto.package == "shop"
    assert [m.name for m in proto.message_type] == ["Order"]
    assert list(proto.dependency) == [
        "google/protobuf/timestamp.proto",
        "confluent/meta.proto",
        "common/money.proto",
    ]
    fields = {f.name: f for f in proto.message_type[0].field}
    assert fields["note"].proto3_optional and fields["total"].type_name == ".common.Money"
    # loaded as confluent-kafka loads it, the message reads what its fields write
    from pulsar_external_schema import _confluent

    serialized = Schema(base64.b64encode(proto.SerializeToString()).decode(), "PROTOBUF", REFERENCES)
    client = ProtobufTextMockClient({"url": "mock://compile-order"})
    client.register_schema("money", Schema(MONEY, "PROTOBUF"))
    pool, _ = _confluent.protobuf_pool(serialized, client, "shop.proto")
    order: Any = GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    message = order(id=7, iban="iban-2", status=1)
    message.counts["a"] = 2
    again = order.FromString(message.SerializeToString())
    assert again.WhichOneof("payment") == "iban" and again.status == 1 and dict(again.counts) == {"a": 2}


def test_a_text_that_does_not_compile_says_where() -> None:
    broken = 'syntax = "proto3";\nmessage X {\n  strin a = 1;\n}\n'
    with pytest.raises(
        SchemaParseError, match=r'does not compile: __registered__\.proto:3:3: "strin" is not defined'
    ):
        compile_registered(Schema(broken, "PROTOBUF"), texts)
    with pytest.raises(SchemaParseError, match=r"common/money\.proto.*File not found"):
        compile_registered(Schema(ORDER, "PROTOBUF"), texts)  # its reference not given


def test_an_import_path_outside_the_compile_is_refused() -> None:
    with pytest.raises(_protoc.ProtocError, match="must be relative"):
        _protoc.compile_file("a.proto", {"a.proto": MONEY, "../up.proto": MONEY})


def file_of(serialized: str | None) -> descriptor_pb2.FileDescriptorProto:
    assert serialized is not None
    return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized, validate=True))


def test_the_client_answers_the_serialized_form_from_the_text_it_holds() -> None:
    client: Any = new_client({"url": "mock://compile-client"})
    assert isinstance(client, ProtobufTextMockClient)
    money_id = client.register_schema("money", Schema(MONEY, "PROTOBUF"))
    order_id = client.register_schema("orders-value", Schema(ORDER, "PROTOBUF", REFERENCES))

    assert client.get_schema(order_id).schema_str == ORDER  # as the registry holds it
    serialized = client.get_schema(order_id, "orders-value", SERIALIZED)
    assert file_of(serialized.schema_str).message_type[0].name == "Order"
    assert [r.name for r in serialized.references or ()] == ["common/money.proto"]
    for found in (
        client.get_version("orders-value", 1, False, SERIALIZED),
        client.get_latest_version("orders-value", SERIALIZED),
    ):
        assert found.schema_id == order_id and found.schema.schema_str == serialized.schema_str
    # a reference, in the form confluent-kafka resolves references in
    assert file_of(client.get_version("money", 1, True, SERIALIZED).schema.schema_str).package == "common"
    assert (
        client.get_schema(money_id, None, SERIALIZED).schema_str
        == client.get_schema(money_id, None, SERIALIZED).schema_str
    )
    # a schema held in the serialized form already is handed on as it is; Avro is never compiled
    given = base64.b64encode(file_of(serialized.schema_str).SerializeToString()).decode()
    given_id = client.register_schema("given-value", Schema(given, "PROTOBUF"))
    assert client.get_schema(given_id, None, SERIALIZED).schema_str == given
    avro = '{"type": "record", "name": "R", "fields": []}'
    avro_id = client.register_schema("avro-value", Schema(avro, "AVRO"))
    assert client.get_schema(avro_id, None, SERIALIZED).schema_str == avro


def test_the_clients_pool_reads_a_message_of_the_registered_text() -> None:
    # what a consumer with no generated class builds from the registry (topic_schemas.py)
    client: Any = new_client({"url": "mock://compile-pool"})
    client.register_schema("money", Schema(MONEY, "PROTOBUF"))
    order_id = client.register_schema("orders-value", Schema(ORDER, "PROTOBUF", REFERENCES))
    from pulsar_external_schema import _confluent

    pool, _ = _confluent.protobuf_pool(client.get_schema(order_id, None, SERIALIZED), client, "orders.proto")
    assert pool.FindEnumTypeByName("shop.Status").values_by_number[1].name == "PAID"
