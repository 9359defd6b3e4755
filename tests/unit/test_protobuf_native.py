"""The native Protobuf reader (`native/src/protobuf_values.rs`) and writer
(`native/src/protobuf_encode.rs`) held to the Python path.

The Python path reads a body with the message class's `FromString` and puts the message in its
column with `reading/types.py`'s converter; the extension reads the wire bytes into the same
column. For every body, generated or hostile, the extension either gives the Python path's row
or leaves the row to it: never another value, and never a row Python would refuse. Hypothesis
draws `.proto` files (scalars of every kind, enums, nested and repeated messages, maps, oneofs,
proto3 `optional`, Timestamp, packed and unpacked repeated scalars), messages of them, and
payloads made hostile (cut short, bytes changed, messages run together).

The writer is held to the bytes protobuf's `SerializeToString` gives for the message the Python
path builds of each row (`ParseDict` of its Python value): the same bytes wherever it answers;
a row it leaves is the Python path's to write or refuse.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pool, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_support import required_extension

from pulsar_external_schema._protoc import compile_file
from pulsar_external_schema.codec.protobuf import descriptor_set, message_path
from pulsar_external_schema.errors import ValueOutsideSchemaError
from pulsar_external_schema.reading.types import protobuf_type
from pulsar_external_schema.writing.python_values import protobuf_message, python_values


@pytest.fixture(autouse=True)
def _extension() -> None:
    required_extension()  # the Python leg skips these tests (native_support)


SCALARS = (
    "int32", "sint32", "sfixed32", "uint32", "fixed32", "int64", "sint64", "sfixed64", "uint64",
    "fixed64", "float", "double", "bool", "string", "bytes",
)  # fmt: skip
KEYS = ("int32", "sint64", "uint32", "fixed64", "bool", "string")

RICH = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

enum Status { STATUS_UNKNOWN = 0; PAID = 1; SHIPPED = 5; }

message Line {
  string sku = 1;
  int32 quantity = 2;
  repeated string tags = 3;
}

message Order {
  string id = 1;
  int64 amount = 2;
  Status status = 3;
  repeated Line lines = 4;
  map<string, int64> totals = 5;
  map<int32, Line> by_position = 6;
  oneof payment { string card = 7; string iban = 8; }
  optional string note = 9;
  bytes blob = 10;
  google.protobuf.Timestamp placed = 11;
  repeated int32 counts = 12;
  repeated sint64 deltas = 13 [packed = false];
  Line first = 14;
  double ratio = 15;
  float weight = 16;
  bool gift = 17;
  uint64 big = 18;
  fixed32 small = 19;
  sfixed64 signed = 20;
  repeated google.protobuf.Timestamp stamps = 21;
  map<bool, Status> flags = 22;
}
"""

PROTO2 = """
syntax = "proto2";
package old;
enum Kind { A = 1; B = 2; }
message Item {
  optional int32 n = 1;
  optional string s = 2 [default = "x"];
  optional Kind kind = 3;
  repeated int64 values = 4 [packed = true];
  required bool flag = 5;
}
"""


@functools.lru_cache(maxsize=256)
def message_class(text: str, name: str) -> Any:
    file = compile_file("test.proto", {"test.proto": text})
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import timestamp_pb2

    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def both_paths(cls: Any, bodies: list[bytes]) -> tuple[list[Any], list[bool], list[Any]]:
    """(the extension's rows, which it decoded, the Python path's rows: None where it refuses)."""
    value_type, convert = protobuf_type(cls.DESCRIPTOR)
    spec = ("PROTOBUF", descriptor_set(cls.DESCRIPTOR.file), [(cls.DESCRIPTOR.full_name, "00")], "", 1 << 20)
    column, decoded = required_extension()._testing.values(
        spec, value_type, "", [b"\x00" + body for body in bodies]
    )
    assert column.type == value_type
    python = []
    for body in bodies:
        try:
            row = pa.array([convert(cls.FromString(body))], value_type).to_pylist()[0]
        except Exception:  # any refusal: the Python path's own error
            row = None
        python.append(row)
    return column.to_pylist(), decoded, python


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def assert_held(cls: Any, bodies: list[bytes]) -> list[bool]:
    rows, decoded, python = both_paths(cls, bodies)
    for row, here, reference, body in zip(rows, decoded, python, bodies, strict=True):
        if here:
            assert reference is not None, f"decoded natively, refused by protobuf: {body.hex()}"
            assert same(row, reference), f"{body.hex()}: {row} != {reference}"
        else:
            assert row is None
    return decoded


def test_a_rich_message_reads_as_the_python_path_reads_it() -> None:
    cls = message_class(RICH, "shop.Order")
    full = cls(
        id="o-1",
        amount=-12,
        status=5,
        lines=[{"sku": "a", "quantity": 2, "tags": ["x", "y"]}, {"sku": "b"}],
        totals={"z": 1, "a": -2, "m": 3},
        by_position={3: {"sku": "c"}, -1: {}},
        iban="DE00",
        note="",
        blob=b"\x00\xff",
        counts=[1, -1, 300],
        deltas=[-5, 5],
        first={"quantity": 7},
        ratio=0.5,
        weight=1.25,
        gift=True,
        big=2**63 - 1,
        small=2**32 - 1,
        signed=-(2**63),
        flags={True: 1, False: 0},
    )
    full.placed.FromSeconds(1_700_000_000)
    full.placed.nanos = 123_456_789
    full.stamps.add(seconds=-62_135_596_800)
    unknown_status = cls(status=7)  # an open enum keeps a number it does not name
    bodies = [
        full.SerializeToString(),
        b"",
        cls(card="4111").SerializeToString(),
        unknown_status.SerializeToString(),
    ]
    decoded = assert_held(cls, bodies)
    assert decoded == [True, True, True, True]
    rows, _, _ = both_paths(cls, bodies)
    assert rows[0]["card"] is None and rows[0]["iban"] == "DE00"  # the member not chosen: null
    assert rows[0]["note"] == ""  # an optional set to its default: set
    assert rows[1]["note"] is None and rows[1]["first"] is None and rows[1]["status"] == "STATUS_UNKNOWN"
    assert [k for k, _ in rows[0]["totals"]] == ["a", "m", "z"]  # entries by key, on both paths
    assert rows[3]["status"] == "7"


def test_proto2_presence_defaults_and_closed_enums() -> None:
    cls = message_class(PROTO2, "old.Item")
    closed = b"\x18\x07\x28\x01"  # kind = 7, which the closed enum does not name: protobuf keeps it unknown
    bodies = [
        cls(flag=False).SerializeToString(),
        cls(n=1, kind=2, values=[1, 2], flag=True).SerializeToString(),
        closed,
    ]
    decoded = assert_held(cls, bodies)
    assert decoded == [True, True, False]


def test_what_the_extension_is_not_sure_of_goes_to_the_python_path() -> None:
    cls = message_class(RICH, "shop.Order")
    twice = cls(id="a").SerializeToString() + cls(id="b").SerializeToString()  # protobuf keeps the last
    both_members = cls(card="1").SerializeToString() + cls(iban="2").SerializeToString()
    too_big = cls(big=2**63).SerializeToString()  # past int64: the Python path decides
    not_utf8 = b"\x0a\x01\xff"
    wrong_wire = b"\x12\x01\x00"  # field 2 (an int64) as a length: protobuf keeps it as an unknown field
    truncated = cls(id="abc").SerializeToString()[:-1]
    decoded = assert_held(cls, [twice, both_members, too_big, not_utf8, truncated, wrong_wire])
    assert decoded == [False] * 6


def test_message_indexes_and_a_message_the_file_does_not_hold() -> None:
    cls = message_class(RICH, "shop.Order")
    file = compile_file("test.proto", {"test.proto": RICH})
    assert message_path(file, "shop.Order") == [1]
    assert message_path(file, "shop.Missing") is None
    value_type, _ = protobuf_type(cls.DESCRIPTOR)
    spec = ("PROTOBUF", descriptor_set(cls.DESCRIPTOR.file), [("shop.Order", "020200")], "", 1 << 20)
    body = cls(id="x").SerializeToString()
    _, decoded = required_extension()._testing.values(
        spec, value_type, "", [b"\x02\x02\x00" + body, b"\x00" + body]
    )
    assert decoded == [True, False]  # another message's indexes: the Python path's


# -- generated files and values --------------------------------------------------------------


@st.composite
def proto_files(draw: st.DrawFn) -> str:
    """A proto3 file: message `g.M` of drawn fields, a nested message `g.N`, an enum `g.E`."""
    n_fields = draw(st.integers(1, 5))
    inner = "\n".join(
        f"  {kind} n{i} = {i + 1};"
        for i, kind in enumerate(draw(st.lists(st.sampled_from(SCALARS), min_size=1, max_size=4)))
    )
    numbers = draw(st.lists(st.integers(1, 3000), min_size=n_fields + 2, max_size=n_fields + 2, unique=True))
    lines = []
    for i in range(n_fields):
        kind = draw(st.sampled_from((*SCALARS, "E", "N", "google.protobuf.Timestamp", "map")))
        label = draw(st.sampled_from(("", "repeated ", "optional ")))
        if kind == "map":
            value = draw(st.sampled_from((*SCALARS, "E", "N")))
            lines.append(f"  map<{draw(st.sampled_from(KEYS))}, {value}> f{i} = {numbers[i]};")
        else:
            packed = (
                " [packed = false]"
                if label == "repeated " and kind in SCALARS[:13] and draw(st.booleans())
                else ""
            )
            lines.append(f"  {label}{kind} f{i} = {numbers[i]}{packed};")
    if draw(st.booleans()):
        a, b = draw(st.sampled_from(SCALARS)), draw(st.sampled_from((*SCALARS, "N")))
        lines.append(f"  oneof choice {{ {a} c0 = {numbers[-2]}; {b} c1 = {numbers[-1]}; }}")
    body = "\n".join(lines)
    return (
        'syntax = "proto3";\npackage g;\nimport "google/protobuf/timestamp.proto";\n'
        "enum E { E0 = 0; E1 = 1; E9 = 9; }\n"
        f"message N {{\n{inner}\n}}\nmessage M {{\n{body}\n}}\n"
    )


def scalar_values(field: Any) -> st.SearchStrategy[Any]:
    t = field.type
    if t in (5, 15, 17):
        return st.integers(-(2**31), 2**31 - 1)
    if t in (3, 16, 18):
        return st.integers(-(2**63), 2**63 - 1)
    if t in (13, 7):
        return st.integers(0, 2**32 - 1)
    if t in (4, 6):
        return st.integers(0, 2**64 - 1)
    if t == 2:
        return st.floats(width=32)
    if t == 1:
        return st.floats()
    if t == 8:
        return st.booleans()
    if t == 9:
        return st.text(max_size=8)
    if t == 12:
        return st.binary(max_size=8)
    if t == 14:
        return st.sampled_from([0, 1, 9, 3])  # 3: a number the open enum does not name
    raise AssertionError(t)


def fill(draw: Callable[..., Any], message: Any, depth: int = 0) -> None:
    for field in message.DESCRIPTOR.fields:
        if depth > 2 or not draw(st.booleans()):
            continue
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            target = getattr(message, field.name)
            for _ in range(draw(st.integers(0, 3))):
                key = draw(scalar_values(entry.fields_by_name["key"]))
                value_field = entry.fields_by_name["value"]
                if value_field.message_type is not None:
                    fill(draw, target[key], depth + 1)
                else:
                    target[key] = draw(scalar_values(value_field))
        elif field.message_type is not None:
            if field.message_type.full_name == "google.protobuf.Timestamp":
                stamps = (
                    [getattr(message, field.name)]
                    if not field.is_repeated
                    else [getattr(message, field.name).add() for _ in range(draw(st.integers(0, 2)))]
                )
                for stamp in stamps:
                    stamp.seconds = draw(st.integers(-62_135_596_800 - 5, 253_402_300_799 + 5))
                    stamp.nanos = draw(st.integers(0, 999_999_999))
            elif field.is_repeated:
                for _ in range(draw(st.integers(0, 2))):
                    fill(draw, getattr(message, field.name).add(), depth + 1)
            else:
                child = getattr(message, field.name)
                child.SetInParent()
                fill(draw, child, depth + 1)
        elif field.is_repeated:
            getattr(message, field.name).extend(draw(st.lists(scalar_values(field), max_size=3)))
        else:
            setattr(message, field.name, draw(scalar_values(field)))


def hostile(draw: Callable[..., Any], body: bytes, other: bytes) -> bytes:
    how = draw(st.sampled_from(("as is", "cut", "change", "insert", "join")))
    if how == "cut" and body:
        return body[: draw(st.integers(0, len(body) - 1))]
    if how == "change" and body:
        at = draw(st.integers(0, len(body) - 1))
        return body[:at] + bytes([draw(st.integers(0, 255))]) + body[at + 1 :]
    if how == "insert":
        at = draw(st.integers(0, len(body)))
        inserted: bytes = draw(st.binary(min_size=1, max_size=4))
        return body[:at] + inserted + body[at:]
    if how == "join":
        return body + other  # protobuf merges: repeated fields join, a singular one's last wins
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=proto_files(), data=st.data())
def test_generated_files_and_values_read_as_the_python_path_reads_them(
    text: str, data: st.DataObject
) -> None:
    cls = message_class(text, "g.M")
    bodies = []
    for _ in range(4):
        message = cls()
        fill(data.draw, message)
        other = cls()
        fill(data.draw, other)
        bodies.append(message.SerializeToString())
        bodies.append(hostile(data.draw, message.SerializeToString(), other.SerializeToString()))
    assert_held(cls, bodies)


def test_deep_nesting_within_the_limits_and_past_them() -> None:
    text = 'syntax = "proto3"; package d; message Leaf { int32 v = 1; }\n'
    names = ["Leaf"]
    for i in range(40):  # pyarrow imports struct types up to 64 deep
        text += f"message L{i} {{ {names[-1]} c = 1; }}\n"
        names.append(f"L{i}")
    cls = message_class(text, f"d.{names[-1]}")
    inner = b"\x08\x01"
    for _ in range(40):
        inner = b"\x0a" + bytes([len(inner)]) + inner
    assert assert_held(cls, [inner]) == [True]

    def groups(depth: int) -> bytes:  # unknown field 99's groups, nested: skipped, up to a depth
        return b"\x9b\x06" * depth + b"\x9c\x06" * depth

    leaf = message_class(text, "d.Leaf")
    assert assert_held(leaf, [groups(10) + b"\x08\x02", groups(70) + b"\x08\x02"]) == [True, False]


# -- the writer: Arrow rows into Protobuf bodies ------------------------------------------------


def python_bodies(cls: Any, column: pa.Array) -> list[bytes | None]:
    """The Python path's bodies of a `value` column (`writing/python_values.py`): each row's
    message as `protobuf_message` builds it, serialized; None where it refuses the row."""
    bodies: list[bytes | None] = []
    for value in python_values(column):
        try:
            message = protobuf_message(cls, value)
        except ValueOutsideSchemaError:  # the Python path's own refusal
            bodies.append(None)
            continue
        bodies.append(message.SerializeToString())
    return bodies


def assert_written(cls: Any, column: pa.Array) -> list[bool]:
    """The extension's bodies of `column` are the Python path's, where it gives one; which it gave."""
    encoder = required_extension().ProtobufEncoder(
        descriptor_set(cls.DESCRIPTOR.file), cls.DESCRIPTOR.full_name, column.type, b"\x07"
    )
    native = encoder.encode(column).to_pylist()
    for ours, theirs, value in zip(native, python_bodies(cls, column), column.to_pylist(), strict=True):
        if ours is not None:
            assert theirs is not None, f"written natively, refused by ParseDict: {value}"
            assert ours == b"\x07" + theirs, f"{value}: {ours.hex()} != {theirs.hex()}"
    return [body is not None for body in native]


def test_rows_are_written_as_protobuf_writes_the_message_of_the_python_path() -> None:
    cls = message_class(RICH, "shop.Order")
    value_type, convert = protobuf_type(cls.DESCRIPTOR)
    full = cls(id="o-1", amount=-12, status=5, lines=[{"sku": "a", "quantity": -2, "tags": ["x"]}, {}])
    full.placed.FromMicroseconds(-1)  # before the epoch: seconds -1, nanos 999999000
    full.stamps.add(seconds=1_700_000_000, nanos=5_000)
    rows = [
        convert(full),
        convert(cls()),
        convert(cls(card="", note="", ratio=-0.0, weight=1.5, gift=True, big=2**63 - 1, small=2**32 - 1)),
        convert(cls(signed=-(2**63), counts=[0, -1, 2**31 - 1], deltas=[-(2**63), 0], blob=b"\x00")),
        convert(cls(first={}, iban="x")),
    ]
    assert assert_written(cls, pa.array(rows, value_type)) == [True] * len(rows)


def test_a_table_of_python_records_pairs_by_name_with_its_own_types() -> None:
    cls = message_class(RICH, "shop.Order")
    records: list[dict[str, Any]] = [
        {"gift": True, "id": "a", "amount": 5, "small": 7, "ratio": 2.5, "weight": 0.1, "status": "PAID"},
        {"id": "b", "small": -1},  # out of a fixed32's range: ParseDict refuses it
        {"id": "c", "weight": 1e39},  # past a float's range: refused
        {"id": "d", "ratio": float("nan")},  # NaN: refused
        {"id": "e", "status": "NO_SUCH"},  # a name the enum does not have
        {"id": "f", "card": "1", "iban": "2"},  # two members of a oneof
    ]
    names = ["gift", "id", "amount", "small", "ratio", "weight", "status", "card", "iban"]
    column = pa.Table.from_pylist([{name: r.get(name) for name in names} for r in records]).to_struct_array()
    column = column.combine_chunks()
    assert pa.types.is_int64(column.type.field("small").type)  # pyarrow's own types, paired by name
    assert assert_written(cls, column) == [True, False, False, False, False, False]
    assert python_bodies(cls, column)[1:] == [None] * 5  # refused on the Python path too


def test_the_python_path_refuses_what_protobuf_refuses_naming_the_field_not_the_value() -> None:
    cls = message_class(RICH, "shop.Order")
    with pytest.raises(ValueOutsideSchemaError, match="at field status") as refused:
        protobuf_message(cls, {"id": "e", "status": "NO_SUCH"}, "orders", "orders-value")
    assert "NO_SUCH" not in str(refused.value) and "orders-value" in str(refused.value)
    with pytest.raises(ValueOutsideSchemaError, match="at field small") as refused:
        protobuf_message(cls, {"small": -12345})
    assert "12345" not in str(refused.value)
    # a field the message does not have is dropped, as fastavro drops a key its record lacks
    assert protobuf_message(cls, {"id": "x", "extra": 1, "first": {"sku": "s", "more": 2}}) == cls(
        id="x", first={"sku": "s"}
    )


def test_what_the_writer_is_not_sure_of_goes_to_the_python_path() -> None:
    cls = message_class(RICH, "shop.Order")
    value_type, convert = protobuf_type(cls.DESCRIPTOR)
    with_map = convert(cls(id="m", totals={"a": 1}))
    listed = pa.array(
        [{"id": "l", "counts": [1, None]}], pa.struct([("id", pa.string()), ("counts", pa.list_(pa.int32()))])
    )
    assert assert_written(cls, pa.array([with_map], value_type)) == [False]  # protobuf's own map order
    assert assert_written(cls, listed) == [False]  # ParseDict refuses a None in a list
    extension = required_extension()
    unknown = pa.struct([("id", pa.string()), ("nope", pa.int32())])
    with pytest.raises(extension.NativeError, match="nope"):  # ParseDict would drop it: not paired
        extension.ProtobufEncoder(descriptor_set(cls.DESCRIPTOR.file), "shop.Order", unknown, b"")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=proto_files(), data=st.data())
def test_generated_files_and_values_are_written_as_protobuf_writes_them(
    text: str, data: st.DataObject
) -> None:
    cls = message_class(text, "g.M")
    value_type, convert = protobuf_type(cls.DESCRIPTOR)
    rows = []
    for _ in range(4):
        message = cls()
        fill(data.draw, message)
        try:
            rows.append(convert(message))
        except (OverflowError, ValueError):  # a value the reader's column refuses (a time past 9999)
            continue
    try:
        column = pa.array(rows, value_type)
    except (pa.ArrowException, OverflowError):  # a uint64 past int64: the reader refuses the row
        return
    assert_written(cls, column)
