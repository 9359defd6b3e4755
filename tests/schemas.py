"""Schemas shared by the tests."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

ORDER_V1 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
    }
)
ORDER_V2 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "item", "type": "string"},
            {"name": "quantity", "type": "int", "default": 1},
        ],
    }
)

#: Two records of the same shape on two subjects: a schema id of one read as the other decodes
#: without an error into the wrong record (what `schema.id.subject.check` refuses).
SHOP_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "acme.shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
SHOP_REFUND = {
    "type": "record",
    "name": "Refund",
    "namespace": "acme.shop",
    "fields": [{"name": "code", "type": "long"}, {"name": "label", "type": "string"}],
}

ORDER_JSON = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
        "required": ["id", "item"],
        "additionalProperties": False,
    }
)


def order_message_class() -> Any:
    """A Protobuf message class built at run time (no protoc needed)."""
    proto = descriptor_pb2.FileDescriptorProto(name="acme/order.proto", package="acme", syntax="proto3")
    message = proto.message_type.add(name="Order")
    message.field.add(
        name="id",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    message.field.add(
        name="item",
        number=2,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("acme.Order"))


#: (name, number, type, label, type name or None) of one field, for `add_fields`.
FieldSpec = tuple[str, int, int, int, str | None]


def add_fields(message: Any, fields: list[FieldSpec]) -> None:
    """Add fields to a `DescriptorProto`."""
    for name, number, kind, cardinality, type_name in fields:
        field = message.field.add(name=name, number=number, type=kind, label=cardinality)
        if type_name:
            field.type_name = type_name


def message_class(proto: Any, full_name: str) -> Any:
    """The class of message `full_name` of a `FileDescriptorProto` (which may import Timestamp)."""
    from google.protobuf import timestamp_pb2

    pool = descriptor_pool.DescriptorPool()
    if "google/protobuf/timestamp.proto" in proto.dependency:
        pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName(full_name))


def referencing_protobuf_classes(package: str) -> tuple[Any, Any, Any, Any]:
    """(the `product.proto`, `line_item.proto` and `order.proto` `FileDescriptorProto`s, the
    `Order` class): an `Order` has line items (of the imported line_item.proto), each with a
    `product` (of product.proto, which line_item.proto imports), and a `gift` Product. File names
    are `<package>/<file>`, as a reference names the import."""
    f = descriptor_pb2.FieldDescriptorProto

    def file(name: str, *imports: Any) -> Any:
        made = descriptor_pb2.FileDescriptorProto(name=f"{package}/{name}", package=package, syntax="proto3")
        made.dependency.extend(imported.name for imported in imports)
        return made

    product = file("product.proto")
    add_fields(
        product.message_type.add(name="Product"),
        [("sku", 1, f.TYPE_STRING, f.LABEL_OPTIONAL, ""), ("price", 2, f.TYPE_DOUBLE, f.LABEL_OPTIONAL, "")],
    )
    line = file("line_item.proto", product)
    add_fields(
        line.message_type.add(name="LineItem"),
        [
            ("qty", 1, f.TYPE_INT32, f.LABEL_OPTIONAL, ""),
            ("product", 2, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, f".{package}.Product"),
        ],
    )
    order = file("order.proto", line, product)
    add_fields(
        order.message_type.add(name="Order"),
        [
            ("id", 1, f.TYPE_INT32, f.LABEL_OPTIONAL, ""),
            ("items", 2, f.TYPE_MESSAGE, f.LABEL_REPEATED, f".{package}.LineItem"),
            ("gift", 3, f.TYPE_MESSAGE, f.LABEL_OPTIONAL, f".{package}.Product"),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    for made in (product, line, order):
        pool.Add(made)
    return product, line, order, GetMessageClass(pool.FindMessageTypeByName(f"{package}.Order"))


def _shipment_class() -> Any:
    """A Protobuf message with the shapes the Spark source maps: nested message, repeated, map and
    `google.protobuf.Timestamp`. Module-level (`schemas.Shipment`) so Spark's Python workers can
    import it by path. (`Parcel` below has an enum.)"""
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="acme/shipment.proto",
        package="acme",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    shipment = proto.message_type.add(name="Shipment")
    address = proto.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    entry = shipment.nested_type.add(name="WeightsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=label.TYPE_STRING, label=label.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=label.TYPE_INT64, label=label.LABEL_OPTIONAL)
    fields: list[FieldSpec] = [
        ("id", 1, label.TYPE_INT64, label.LABEL_OPTIONAL, None),
        ("to", 3, label.TYPE_MESSAGE, label.LABEL_OPTIONAL, ".acme.Address"),
        ("items", 4, label.TYPE_STRING, label.LABEL_REPEATED, None),
        ("weights", 5, label.TYPE_MESSAGE, label.LABEL_REPEATED, ".acme.Shipment.WeightsEntry"),
        ("sent", 6, label.TYPE_MESSAGE, label.LABEL_OPTIONAL, ".google.protobuf.Timestamp"),
        ("fragile", 7, label.TYPE_BOOL, label.LABEL_OPTIONAL, None),
    ]
    add_fields(shipment, fields)
    return message_class(proto, "acme.Shipment")


Shipment = _shipment_class()


def _payment_class() -> Any:
    """proto3, with fields of presence: `int64 id`, `oneof payment {string card; string iban}`,
    `optional string note` and a `Line line` message. Module-level (`schemas.Payment`), for the
    readers' `protobuf_message_class`."""
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="unit/payment.proto", package="unit", syntax="proto3")
    line = proto.message_type.add(name="Line")
    add_fields(line, [("sku", 1, label.TYPE_STRING, label.LABEL_OPTIONAL, None)])
    message = proto.message_type.add(name="Payment")
    message.oneof_decl.add(name="payment")
    message.oneof_decl.add(name="_note")  # proto3 `optional`: a synthetic oneof, after the real ones
    optional = label.LABEL_OPTIONAL
    add_fields(
        message,
        [
            ("id", 1, label.TYPE_INT64, optional, None),
            ("card", 2, label.TYPE_STRING, optional, None),
            ("iban", 3, label.TYPE_STRING, optional, None),
            ("note", 4, label.TYPE_STRING, optional, None),
            ("line", 5, label.TYPE_MESSAGE, optional, ".unit.Line"),
        ],
    )
    message.field[1].oneof_index = message.field[2].oneof_index = 0
    message.field[3].oneof_index = 1
    message.field[3].proto3_optional = True
    return message_class(proto, "unit.Payment")


Payment = _payment_class()


def _parcel_class() -> Any:
    """A Protobuf message that declares an enum (`Parcel.Status`), which AxonOps v0.2.1 cannot give
    in the serialized form (a 500): read since its text is compiled here (protobuf_text.py).
    Module-level (`schemas.Parcel`), for the readers' `protobuf_message_class`."""
    label = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="acme/parcel.proto", package="acme", syntax="proto3")
    parcel = proto.message_type.add(name="Parcel")
    parcel.enum_type.add(name="Status").value.extend(
        [
            descriptor_pb2.EnumValueDescriptorProto(name="PACKED", number=0),
            descriptor_pb2.EnumValueDescriptorProto(name="SENT", number=1),
        ]
    )
    add_fields(
        parcel,
        [
            ("id", 1, label.TYPE_INT64, label.LABEL_OPTIONAL, None),
            ("status", 2, label.TYPE_ENUM, label.LABEL_OPTIONAL, ".acme.Parcel.Status"),
        ],
    )
    return message_class(proto, "acme.Parcel")


Parcel = _parcel_class()


def two_shipments() -> list[Any]:
    """A shipment with every field set (a nested message, a list, a map, a timestamp) and one
    with only its id: what the Protobuf read tests send."""
    full = Shipment(id=7, items=["book", "pen"], weights={"book": 400}, fragile=True)
    full.to.city = "Oslo"
    full.sent.FromSeconds(1_700_000_000)
    return [full, Shipment(id=8)]


def priced_product(namespace: str) -> dict[str, Any]:
    """A Product whose `cost` is tagged PII (an ENCRYPT rule on PII encrypts it), in a namespace of
    its own (AxonOps v0.2.1 keeps the first text of equal schemas, tags or not)."""
    return {
        "type": "record",
        "name": "Product",
        "namespace": namespace,
        "fields": [
            {"name": "sku", "type": "string"},
            {"name": "price", "type": "double"},
            {"name": "cost", "type": "string", "confluent:tags": ["PII"]},
        ],
    }


def order_of_products(namespace: str) -> dict[str, Any]:
    """An Order whose items are the Products of `namespace` (a schema reference)."""
    return {
        "type": "record",
        "name": "Order",
        "namespace": namespace,
        "fields": [
            {"name": "id", "type": "int"},
            {"name": "items", "type": {"type": "array", "items": f"{namespace}.Product"}},
        ],
    }
