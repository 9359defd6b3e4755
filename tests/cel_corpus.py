"""The CEL conformance corpus: expressions, the record they read, and what each should return.

One record ("Person") is written in Avro, JSON Schema and Protobuf with the same data, encoded
and decoded with the format's own library, and every expression is evaluated over each decoded
form by both engines (tests/unit/test_cel_conformance.py). A case states the CEL result; where
the formats legitimately differ (JSON has no bytes or timestamps, a Protobuf enum is a number, an
unset proto3 field reads as its default) the expectation is given per format, and where the two
engines differ the case carries the interpreted engine's result and the reason (`Differs`),
which docs/data-contracts.md lists.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
from dataclasses import dataclass, field
from typing import Any

import fastavro
from confluent_kafka.schema_registry.serde import FieldType
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
from google.protobuf.message_factory import GetMessageClass

FORMATS = ("avro", "json", "protobuf")


class _Error:
    def __repr__(self) -> str:
        return "ERROR"


#: The expected result of an expression that must fail (to compile or to evaluate).
ERROR: Any = _Error()

CREATED = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.UTC)
BIRTHDAY = datetime.date(1990, 2, 3)
BIRTHDAY_DAYS = (BIRTHDAY - datetime.date(1970, 1, 1)).days  # 7338
BLOB = b"\x00\x01abc"

#: The record, as an Avro/Protobuf producer holds it (JSON: see `json_record`).
RECORD: dict[str, Any] = {
    "name": "Alice Smith",
    "email": "alice@example.com",
    "age": 42,
    "count": 9_000_000_000,
    "score": 97.5,
    "ratio": 0.5,
    "active": True,
    "visits": 7,
    "tags": ["a", "b", "pii"],
    "nickname": None,
    "middle": "Q",
    "empty": "",
    "blob": BLOB,
    "created": CREATED,
    "created_text": "2024-05-06T07:08:09.123Z",
    "birthday": BIRTHDAY,
    "address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"},
    "scores": {"math": 90, "art": 75},
    "status": "ACTIVE",
    "ip4": "192.168.0.1",
    "ip6": "2001:db8::1",
    "host": "example.com",
    "site": "https://example.com/docs",
    "ref": "docs/intro",
    "id": "123e4567-e89b-12d3-a456-426614174000",
}

AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Person",
    "namespace": "corpus",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "email", "type": "string"},
        {"name": "age", "type": "int"},
        {"name": "count", "type": "long"},
        {"name": "score", "type": "double"},
        {"name": "ratio", "type": "float"},
        {"name": "active", "type": "boolean"},
        {"name": "visits", "type": "int"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "nickname", "type": ["null", "string"], "default": None},
        {"name": "middle", "type": ["null", "string"], "default": None},
        {"name": "empty", "type": "string"},
        {"name": "blob", "type": "bytes"},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "created_text", "type": "string"},
        {"name": "birthday", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "street", "type": "string"},
                    {"name": "city", "type": "string"},
                    {"name": "zip", "type": "string"},
                ],
            },
        },
        {"name": "scores", "type": {"type": "map", "values": "int"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["ACTIVE", "INACTIVE"]}},
        *({"name": name, "type": "string"} for name in ("ip4", "ip6", "host", "site", "ref", "id")),
    ],
}

JSON_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": "string"},
        "age": {"type": "integer"},
        "count": {"type": "integer"},
        "score": {"type": "number"},
        "ratio": {"type": "number"},
        "active": {"type": "boolean"},
        "visits": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "nickname": {"type": ["null", "string"]},
        "middle": {"type": ["null", "string"]},
        "empty": {"type": "string"},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "created": {"type": "string", "format": "date-time"},
        "created_text": {"type": "string"},
        "birthday": {"type": "string", "format": "date"},
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string"},
                "city": {"type": "string"},
                "zip": {"type": "string"},
            },
        },
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
        "status": {"type": "string", "enum": ["ACTIVE", "INACTIVE"]},
        **{name: {"type": "string"} for name in ("ip4", "ip6", "host", "site", "ref", "id")},
    },
}


def avro_record() -> dict[str, Any]:
    """The record written and read back with fastavro, as the Avro deserializer hands it over."""
    schema = fastavro.parse_schema(AVRO_SCHEMA)
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, schema, RECORD)
    buffer.seek(0)
    decoded = fastavro.schemaless_reader(buffer, schema, schema)
    assert isinstance(decoded, dict)
    return decoded


def json_record() -> dict[str, Any]:
    """The record as JSON text and parsed back: no bytes, dates or timestamps, only strings."""
    plain = {
        **RECORD,
        "blob": base64.b64encode(BLOB).decode(),
        "created": RECORD["created_text"],
        "birthday": BIRTHDAY.isoformat(),
    }
    decoded: dict[str, Any] = json.loads(json.dumps(plain))
    return decoded


_T = descriptor_pb2.FieldDescriptorProto


def person_proto_class() -> Any:
    """The Protobuf form (proto3), built at run time like the registry's own descriptors."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto(
        name="corpus/person.proto",
        package="corpus",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    status = proto.enum_type.add(name="Status")
    for number, symbol in enumerate(("STATUS_UNSPECIFIED", "ACTIVE", "INACTIVE")):
        status.value.add(name=symbol, number=number)
    address = proto.message_type.add(name="Address")
    for number, name in enumerate(("street", "city", "zip"), 1):
        address.field.add(name=name, number=number, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    person = proto.message_type.add(name="Person")
    entry = person.nested_type.add(name="ScoresEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_T.TYPE_STRING, label=_T.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_T.TYPE_INT32, label=_T.LABEL_OPTIONAL)
    fields: list[tuple[str, int, dict[str, Any]]] = [
        ("name", _T.TYPE_STRING, {}),
        ("email", _T.TYPE_STRING, {}),
        ("age", _T.TYPE_INT32, {}),
        ("count", _T.TYPE_INT64, {}),
        ("score", _T.TYPE_DOUBLE, {}),
        ("ratio", _T.TYPE_FLOAT, {}),
        ("active", _T.TYPE_BOOL, {}),
        ("visits", _T.TYPE_UINT32, {}),
        ("tags", _T.TYPE_STRING, {"label": _T.LABEL_REPEATED}),
        ("nickname", _T.TYPE_STRING, {"proto3_optional": True, "oneof_index": 0}),
        ("middle", _T.TYPE_STRING, {"proto3_optional": True, "oneof_index": 1}),
        ("empty", _T.TYPE_STRING, {}),
        ("blob", _T.TYPE_BYTES, {}),
        ("created", _T.TYPE_MESSAGE, {"type_name": ".google.protobuf.Timestamp"}),
        ("created_text", _T.TYPE_STRING, {}),
        ("birthday", _T.TYPE_INT32, {}),
        ("address", _T.TYPE_MESSAGE, {"type_name": ".corpus.Address"}),
        ("scores", _T.TYPE_MESSAGE, {"type_name": ".corpus.Person.ScoresEntry", "label": _T.LABEL_REPEATED}),
        ("status", _T.TYPE_ENUM, {"type_name": ".corpus.Status"}),
        *((name, _T.TYPE_STRING, {}) for name in ("ip4", "ip6", "host", "site", "ref", "id")),
    ]
    person.oneof_decl.add(name="_nickname")
    person.oneof_decl.add(name="_middle")
    for number, (name, type_, extra) in enumerate(fields, 1):
        person.field.add(name=name, number=number, type=type_, **{"label": _T.LABEL_OPTIONAL, **extra})
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("corpus.Person"))


def protobuf_record() -> Any:
    """The record as a Protobuf message, serialized and parsed back."""
    cls = person_proto_class()
    values = {
        key: value
        for key, value in RECORD.items()
        if key not in ("nickname", "created", "birthday", "address", "scores", "status")
    }
    record = cls(**values, birthday=BIRTHDAY_DAYS, status=1, scores=RECORD["scores"])
    record.created.FromDatetime(CREATED)
    record.address.street, record.address.city, record.address.zip = RECORD["address"].values()
    return cls.FromString(record.SerializeToString())


def decoded_records() -> dict[str, Any]:
    return {"avro": avro_record(), "json": json_record(), "protobuf": protobuf_record()}


def for_format(value: Any, fmt: str) -> Any:
    """`value`, or its entry for `fmt` if it is a per-format dict (see `per`)."""
    if isinstance(value, dict) and value and set(value) <= set(FORMATS):
        return value[fmt]
    return value


@dataclass(frozen=True)
class Differs:
    """A documented difference: what cel-python returns instead (may be per format), and why."""

    interpreted: Any
    why: str


@dataclass(frozen=True)
class Case:
    """An expression and its CEL result; `expected` may be a per-format dict."""

    expr: str
    expected: Any = True
    kind: str = "CEL"  # or CEL_FIELD
    field: str = ""  # CEL_FIELD: the field the rule runs on
    tags: frozenset[str] = frozenset()
    condition: bool = False  # run as a CONDITION rule (guards), else evaluate the expression
    differs: Differs | None = None
    formats: tuple[str, ...] = FORMATS
    group: str = ""

    def expected_for(self, fmt: str) -> Any:
        return for_format(self.expected, fmt)

    def interpreted_for(self, fmt: str) -> Any:
        """What cel-python returns: the CEL result, unless a documented difference says otherwise."""
        return self.expected_for(fmt) if self.differs is None else for_format(self.differs.interpreted, fmt)


def _group(name: str, *cases: Case) -> list[Case]:
    return [Case(**{**case.__dict__, "group": name}) for case in cases]


def per(avro: Any, json_: Any, protobuf: Any) -> dict[str, Any]:
    return {"avro": avro, "json": json_, "protobuf": protobuf}


def binary(expected: Any, json_: Any = ERROR) -> dict[str, Any]:
    """Avro and Protobuf hold bytes, timestamps and dates; JSON holds strings there."""
    return per(expected, json_, expected)


NO_STRINGS_EXT = Differs(
    ERROR,
    "cel-python has no strings extension (trim, lowerAscii, upperAscii, replace, split, join, "
    "substring, indexOf, lastIndexOf, charAt), which Confluent's Java executor and cel-cpp load",
)
NO_ENCODERS_EXT = Differs(ERROR, "cel-python has no encoders extension (base64.encode/decode)")
NO_THREE_ARG_MAP = Differs(ERROR, "cel-python has no three-argument map(x, filter, transform) macro")
TYPE_NAMES = Differs(
    False,
    "cel-python answers false to type(x) == string and type(x) == double (its type values for "
    "strings and doubles are not the type names)",
)
PROTO_AS_MAP_WHY = (
    "confluent-kafka hands cel-python a Protobuf message as a map, so indexing it, iterating its "
    "field names and has() of an undeclared field work; cel-cpp sees the message itself, which "
    "(as in the Java client) has fields, not keys"
)
HETEROGENEOUS_WHY = (
    "cel-python lacks CEL's heterogeneous equality: comparing an int with a uint, or a number with "
    "a string, is an error where cel-cpp compares the numbers or answers false"
)

CASES: list[Case] = [
    *_group(
        "literals and arithmetic",
        Case("1 + 2 == 3"),
        Case("2 * 3 - 1", 5),
        Case("7 / 2", 3),
        Case("7 % 3", 1),
        Case("-5 + 2", -3),
        Case("2.5 * 2.0", 5.0),
        Case("1.0 / 4.0", 0.25),
        Case("0x10 == 16"),
        Case("1e3 == 1000.0"),
        Case("-(3) == -3"),
        Case("3u + 4u == 7u"),
        Case("10u - 3u", 7),
        Case("1 / 0", ERROR),
        Case("1 % 0", ERROR),
        Case("9223372036854775807 + 1", ERROR),
        Case("-9223372036854775808 - 1", ERROR),
        Case("1 == 1.0", ERROR),
        Case("1 + 1.0", ERROR),
        Case("1.0 / 0.0 > 1e308"),
    ),
    *_group(
        "logic and comparison",
        Case("true && false", False),
        Case("true || false"),
        Case("!false"),
        Case("1 < 2 && 2 < 3"),
        Case("'a' < 'b'"),
        Case("b'a' < b'b'"),
        Case("1 != 2"),
        Case("true ? 1 : 2", 1),
        Case("false ? 1 : 2", 2),
        Case("null == null"),
        Case("false && (1 / 0 == 1)", False),
        Case("true || (1 / 0 == 1)"),
        Case("(1 / 0 == 1) || true"),
        Case("'abc' == 'abc' && 'abc' != 'abd'"),
        Case("2 >= 2 && 2 <= 2 && !(2 > 2)"),
    ),
    *_group(
        "conversions and types",
        Case("int('42')", 42),
        Case("double('1.5')", 1.5),
        Case("string(42)", "42"),
        Case("string(1.5)", "1.5"),
        Case("string(true)", "true"),
        Case("uint(3)", 3),
        Case("int(3.9)", 3),
        Case("int(-3.9)", -3),
        Case("bool('true')"),
        Case("int('x')", ERROR),
        Case("uint(-1)", ERROR),
        Case("type(1) == int"),
        Case("type('a') == string", differs=TYPE_NAMES),
        Case("type(1.0) == double", differs=TYPE_NAMES),
        Case("type([]) == list"),
        Case("type({}) == map"),
        Case("type(b'a') == bytes"),
        Case("type(null) == null_type"),
        Case("dyn(1) == 1"),
        Case("string(b'abc')", "abc"),
        Case("bytes('abc') == b'abc'"),
        Case("type(message.age) == int"),
        Case("type(message.name) == string", differs=TYPE_NAMES),
        Case("type(message.score) == double", differs=TYPE_NAMES),
        Case("type(message.tags) == list"),
        Case("type(message.active) == bool"),
    ),
    *_group(
        "message fields",
        Case("message.name", "Alice Smith"),
        Case("size(message.name) == 11"),
        Case("message.name.size()", 11),
        Case("message.age", 42),
        Case("message.age > 18"),
        Case("message.age + 1", 43),
        Case("message.age * 2 == 84"),
        Case("message.count", 9_000_000_000),
        Case("message.count > 2147483647"),
        Case("message.score", 97.5),
        Case("message.score > 90.0"),
        Case("message.ratio == 0.5"),
        Case("message.active"),
        Case("!message.active", False),
        Case("message.active == true"),
        Case("message.tags", ["a", "b", "pii"]),
        Case("size(message.tags)", 3),
        Case("message.tags[0]", "a"),
        Case("message.tags[2] == 'pii'"),
        Case("message.tags[5]", ERROR),
        Case("'pii' in message.tags"),
        Case("'x' in message.tags", False),
        Case("message.address.city", "Springfield"),
        Case("message.address.zip.size() == 5"),
        Case("message.address.street.contains('Main')"),
        Case("message.scores['math']", 90),
        Case("message.scores.math", 90),
        Case("'art' in message.scores"),
        Case("size(message.scores)", 2),
        Case("message.scores['history']", ERROR),
        Case("message.scores.math + message.scores.art", 165),
        Case("message.nope", ERROR),
        Case("message.nope == 1", ERROR),
        Case("message.address.nope", ERROR),
        Case("message.empty == ''"),
        Case("size(message.empty) == 0"),
        Case("message.middle", "Q"),
        Case(
            "message['name']",
            per("Alice Smith", "Alice Smith", ERROR),
            differs=Differs("Alice Smith", PROTO_AS_MAP_WHY),
        ),
        Case("message.age == 42 && message.name.startsWith('Alice')"),
        Case("message.status", per("ACTIVE", "ACTIVE", 1)),
        Case(
            "message.status == 'ACTIVE'",
            per(True, True, False),
            differs=Differs(per(True, True, ERROR), HETEROGENEOUS_WHY),
        ),
        Case("message.visits == 7", differs=Differs(per(True, True, ERROR), HETEROGENEOUS_WHY)),
        Case("message.visits == 7u", differs=Differs(per(ERROR, ERROR, True), HETEROGENEOUS_WHY)),
        Case("message.visits > 5"),
        Case("message.age == message.age"),
        Case("message.name != message.email"),
    ),
    *_group(
        "null, missing fields and has()",
        Case("message.nickname == null", per(True, True, False)),
        Case("message.nickname", per(None, None, "")),
        Case("has(message.nickname)", per(True, True, False)),
        Case("has(message.middle)"),
        Case("has(message.name)"),
        Case("has(message.nope)", per(False, False, ERROR), differs=Differs(False, PROTO_AS_MAP_WHY)),
        Case("has(message.address.city)"),
        Case("has(message.scores.math)"),
        Case("has(message.scores.history)", False),
        Case("message.nickname != null ? message.nickname : 'none'", per("none", "none", "")),
        Case("message.middle != null && size(message.middle) == 1"),
        Case("message.nope == null", ERROR),
        Case("[null][0] == null"),
        Case("null", None),
        Case("has(message.empty)", per(True, True, False)),
        Case("has(message.active)"),
        Case("has(message.tags)"),
    ),
    *_group(
        "strings",
        Case("'Hello'.startsWith('He')"),
        Case("'Hello'.endsWith('lo')"),
        Case("'Hello'.contains('ell')"),
        Case("'hello'.matches('^h.*o$')"),
        Case("'hello'.matches('^x')", False),
        Case("message.email.matches('^[^@]+@[^@]+$')"),
        Case("message.name.matches('[0-9]')", False),
        Case("matches(message.host, 'example')"),
        Case("size('héllo') == 5"),
        Case("'abc' + 'def'", "abcdef"),
        Case("message.name + '!'", "Alice Smith!"),
        Case("'abc'.contains('')"),
        Case("'a' < 'ab'"),
        Case("message.name.startsWith('Bob')", False),
        Case("message.id.size() == 36"),
        Case("'  x '.trim()", "x", differs=NO_STRINGS_EXT),
        Case("'Hello'.lowerAscii()", "hello", differs=NO_STRINGS_EXT),
        Case("'Hello'.upperAscii()", "HELLO", differs=NO_STRINGS_EXT),
        Case("'a,b,c'.split(',')", ["a", "b", "c"], differs=NO_STRINGS_EXT),
        Case("['a', 'b'].join('-')", "a-b", differs=NO_STRINGS_EXT),
        Case("'hello'.replace('l', 'L')", "heLLo", differs=NO_STRINGS_EXT),
        Case("'hello'.substring(1, 3)", "el", differs=NO_STRINGS_EXT),
        Case("'hello'.indexOf('l')", 2, differs=NO_STRINGS_EXT),
        Case("'hello'.lastIndexOf('l')", 3, differs=NO_STRINGS_EXT),
        Case("'hello'.charAt(1)", "e", differs=NO_STRINGS_EXT),
        Case("message.name.lowerAscii() == 'alice smith'", differs=NO_STRINGS_EXT),
        Case("message.tags.join(',')", "a,b,pii", differs=NO_STRINGS_EXT),
        Case("message.email.split('@')[1]", "example.com", differs=NO_STRINGS_EXT),
        Case("'x'.nope()", ERROR),
        Case("size(b'abc')", 3),
    ),
    *_group(
        "bytes",
        Case("size(message.blob) == 5", binary(True, False)),
        Case("message.blob == b'\\x00\\x01abc'", binary(True, False)),
        Case("message.blob", binary(BLOB, "AAFhYmM=")),
        Case("message.blob + b'!'", binary(BLOB + b"!")),
        Case("b'\\x00\\x01' + b'abc' == b'\\x00\\x01abc'"),
        Case("message.blob.size()", binary(5, 8)),
        Case("base64.encode(b'hi')", "aGk=", differs=NO_ENCODERS_EXT),
        Case("base64.decode('aGk=')", b"hi", differs=NO_ENCODERS_EXT),
        Case(
            "base64.decode(message.blob) == b'\\x00\\x01abc'",
            per(ERROR, True, ERROR),
            differs=NO_ENCODERS_EXT,
        ),
        Case("type(message.blob) == bytes", binary(True, False)),
    ),
    *_group(
        "lists, maps and macros",
        Case("[1, 2, 3].all(x, x > 0)"),
        Case("[1, 2, 3].exists(x, x == 2)"),
        Case("[1, 2, 3].exists_one(x, x > 2)"),
        Case("[1, 2, 3].exists(x, x > 5)", False),
        Case("[1, 2, 3].map(x, x * 2)", [2, 4, 6]),
        Case("[1, 2, 3].filter(x, x % 2 == 1)", [1, 3]),
        Case("[1, 2, 3].map(x, x > 1, x * 10)", [20, 30], differs=NO_THREE_ARG_MAP),
        Case("size([1, 2, 3])", 3),
        Case("[1, 2] + [3]", [1, 2, 3]),
        Case("[1, 2, 3][1]", 2),
        Case("[] == []"),
        Case("size([]) == 0"),
        Case("[[1, 2], [3]].map(l, size(l))", [2, 1]),
        Case("[1, 2] == [1, 2]"),
        Case("1 in [1, 2, 3]"),
        Case("{'a': 1} == {'a': 1}"),
        Case("'a' in {'a': 1}"),
        Case("{'a': 1}.a", 1),
        Case("{'a': 1}['a']", 1),
        Case("{'a': 1}['b']", ERROR),
        Case("size({'a': 1, 'b': 2})", 2),
        Case("{'a': 1, 'b': 2}.all(k, k != '')"),
        Case("{'a': {'b': 2}}.a.b", 2),
        Case("message.tags.all(t, size(t) >= 1)"),
        Case("message.tags.exists(t, t == 'pii')"),
        Case("message.tags.exists_one(t, t.startsWith('p'))"),
        Case("message.tags.map(t, t + '!')", ["a!", "b!", "pii!"]),
        Case("message.tags.filter(t, t != 'pii')", ["a", "b"]),
        Case("message.scores.all(k, message.scores[k] > 50)"),
        Case("message.scores.exists(k, k == 'art')"),
        Case("size(message.scores.filter(k, message.scores[k] > 80))", 1),
        Case("message.tags[size(message.tags) - 1] == 'pii'"),
        Case("message.tags + ['c']", ["a", "b", "pii", "c"]),
        Case("[message.age, message.visits]", [42, 7]),
        Case("{'n': message.name}.n", "Alice Smith"),
        Case(
            "message.address.all(k, k != '')", per(True, True, ERROR), differs=Differs(True, PROTO_AS_MAP_WHY)
        ),
        Case("[1, 2, 3].all(x, x / 0 > 1)", ERROR),
        Case("[].all(x, x > 0)"),
        Case("[].exists(x, x > 0)", False),
    ),
    *_group(
        "Confluent built-ins",
        Case("message.email.isEmail()"),
        Case("isEmail(message.email)"),
        Case("'not-an-email'.isEmail()", False),
        Case("'a@@b.com'.isEmail()", False),
        Case("'alice@example.com'.isEmail()"),
        Case("message.host.isHostname()"),
        Case("'-bad.example.com'.isHostname()", False),
        Case("'123'.isHostname()", False),
        Case("'a..b'.isHostname()", False),
        Case("isHostname('sub.example.org')"),
        Case("message.ip4.isIpv4()"),
        Case("'256.1.1.1'.isIpv4()", False),
        Case("message.ip6.isIpv4()", False),
        Case("isIpv4('10.0.0.255')"),
        Case("message.ip6.isIpv6()"),
        Case("'::1'.isIpv6()"),
        Case("message.ip4.isIpv6()", False),
        Case("isIpv6('fe80::1ff:fe23:4567:890a')"),
        Case("message.site.isUri()"),
        Case("'example.com'.isUri()", False),
        Case("isUri('ftp://files.example.com/a.txt')"),
        Case("message.ref.isUriRef()"),
        Case("message.site.isUriRef()"),
        Case("'#frag'.isUriRef()", False),
        Case("message.id.isUuid()"),
        Case("'123e4567'.isUuid()", False),
        Case("isUuid('00000000-0000-0000-0000-000000000000')"),
        Case("message.age.isEmail()", ERROR),
        Case("message.tags.all(t, !t.isEmail())"),
        Case("message.email.isEmail() && message.host.isHostname() && message.id.isUuid()"),
    ),
    *_group(
        "timestamps and durations",
        Case("message.created > timestamp('2024-01-01T00:00:00Z')", binary(True)),
        Case("message.created.getFullYear()", binary(2024)),
        Case("message.created.getMonth()", binary(4)),
        Case("message.created.getDayOfMonth()", binary(5)),
        Case("message.created.getHours()", binary(7)),
        Case("message.created.getMinutes()", binary(8)),
        Case("message.created.getSeconds()", binary(9)),
        Case("message.created.getMilliseconds()", binary(123)),
        Case("message.created", binary(CREATED, "2024-05-06T07:08:09.123Z")),
        Case("timestamp(message.created_text) == message.created", binary(True, False)),
        Case("timestamp(message.created_text).getFullYear()", 2024),
        Case("message.created - timestamp('2024-05-06T00:00:00Z') > duration('7h')", binary(True)),
        Case("now > timestamp('2024-01-01T00:00:00Z')"),
        Case("timestamp('2024-05-06T07:08:09Z').getFullYear()", 2024),
        Case("duration('1h') == duration('60m')"),
        Case("duration('90s') > duration('1m')"),
        Case("timestamp('2024-01-01T00:00:00Z') + duration('24h') == timestamp('2024-01-02T00:00:00Z')"),
        Case("string(timestamp('2024-01-01T00:00:00Z'))", "2024-01-01T00:00:00Z"),
        Case("int(timestamp('1970-01-01T00:00:10Z'))", 10),
        Case("duration('1h').getMinutes()", 60),
        Case("timestamp('not a time')", ERROR),
        Case("message.birthday", per(BIRTHDAY_DAYS, "1990-02-03", BIRTHDAY_DAYS)),
        Case("message.birthday > 7000", per(True, ERROR, True)),
    ),
    *_group(
        "guards (conditions)",
        Case("message.age > 18 ; message.name != ''", condition=True),
        Case("false ; false", condition=True),
        Case("true ; false", False, condition=True),
        Case(" ; true", condition=True),
        Case("message.nope > 1 ; false", condition=True),
        Case("message.age > 100 ; message.nope > 1", condition=True),
        Case("message.age < 100 ; message.name.size() > 100", False, condition=True),
        Case("size(message.name) < 10", False, condition=True),
        Case("size(message.name) < 20", condition=True),
        Case("message.name", ERROR, condition=True),
        Case("message.email.isEmail() ; message.age >= 18", condition=True),
    ),
]

FIELD_CASES: list[Case] = _group(
    "CEL_FIELD",
    Case("name == 'name'", kind="CEL_FIELD", field="name"),
    Case("typeName == 'STRING'", kind="CEL_FIELD", field="name"),
    Case("fullName.endsWith('name')", kind="CEL_FIELD", field="name"),
    Case("value", "Alice Smith", kind="CEL_FIELD", field="name"),
    Case("size(value) > 3", kind="CEL_FIELD", field="name"),
    Case("typeName == 'STRING' ; value + '!'", "Alice Smith!", kind="CEL_FIELD", field="name"),
    Case("typeName == 'INT' ; value + '!'", "Alice Smith", kind="CEL_FIELD", field="name"),
    Case("'PII' in tags", kind="CEL_FIELD", field="name", tags=frozenset({"PII"})),
    Case("tags.exists(t, t == 'PII')", kind="CEL_FIELD", field="name", tags=frozenset({"PII"})),
    Case("size(tags) == 0", kind="CEL_FIELD", field="name"),
    Case("value.matches('^[A-Z]')", kind="CEL_FIELD", field="name"),
    Case("message.age == 42", kind="CEL_FIELD", field="name"),
    Case("message.name == value", kind="CEL_FIELD", field="name"),
    Case("value > 40", kind="CEL_FIELD", field="age"),
    Case("value * 2", 84, kind="CEL_FIELD", field="age"),
    Case("typeName == 'INT'", kind="CEL_FIELD", field="age"),
    Case("value + 0.5", 98.0, kind="CEL_FIELD", field="score"),
    Case("typeName == 'DOUBLE'", kind="CEL_FIELD", field="score"),
    Case("!value", False, kind="CEL_FIELD", field="active"),
    Case("typeName == 'BOOLEAN'", kind="CEL_FIELD", field="active"),
    Case("typeName == 'STRING' ; value.isEmail()", kind="CEL_FIELD", field="email"),
    Case("value.isEmail()", False, kind="CEL_FIELD", field="name"),
    Case("value == null", per(True, True, False), kind="CEL_FIELD", field="nickname"),
    Case("value == b'\\x00\\x01abc'", binary(True, False), kind="CEL_FIELD", field="blob"),
    Case(
        "typeName == 'STRING' ; value.upperAscii()",
        "ALICE SMITH",
        kind="CEL_FIELD",
        field="name",
        differs=NO_STRINGS_EXT,
    ),
    Case("value == 'x' ; 'never'", "Alice Smith", kind="CEL_FIELD", field="name"),
    Case("value.nope()", ERROR, kind="CEL_FIELD", field="name"),
)

ALL_CASES = CASES + FIELD_CASES

#: FieldType of each field a CEL_FIELD case runs on, per format.
FIELD_TYPES: dict[str, FieldType] = {
    "name": FieldType.STRING,
    "email": FieldType.STRING,
    "nickname": FieldType.STRING,
    "age": FieldType.INT,
    "score": FieldType.DOUBLE,
    "active": FieldType.BOOLEAN,
    "blob": FieldType.BYTES,
}


@dataclass
class Counts:
    """How many expression evaluations the corpus holds (a case runs once per format)."""

    expressions: int = 0
    evaluations: int = 0
    groups: dict[str, int] = field(default_factory=dict)


def counts() -> Counts:
    result = Counts()
    for case in ALL_CASES:
        result.expressions += 1
        result.evaluations += len(case.formats)
        result.groups[case.group] = result.groups.get(case.group, 0) + 1
    return result
