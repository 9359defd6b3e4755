#!/usr/bin/env python3
"""Side-by-side measurements, printed as one table of ratios (and written to docs/benchmarks.md).

Every figure is measured in the same run as its baseline, on the same machine:

1. CEL engines: one evaluation of a rule expression on cel-expr-python (ours, compiled),
   cel-python (confluent-kafka's) and, if installed, common-expression-language (Rust).
2. Serdes, in process: encode and decode of one record in Avro, JSON Schema and Protobuf, with
   no rule, one CEL condition, one CEL_FIELD transform and one JSONata migration: the format's
   own library (fastavro, jsonschema-rs + orjson, protobuf) vs confluent-kafka's serializer vs
   ours, and ours with `cel.engine=cel-python`; JSON Schema also against Python's `json` +
   `jsonschema`.
3. End to end through the real broker: produce + consume messages/s with ours (Avro + one CEL
   rule) vs a BYTES schema vs pulsar-client's native AvroSchema vs the work itself (fastavro and
   a bare CEL evaluation around a BYTES producer and consumer); the consume loop (`consume`) on
   the same messages vs a BYTES consumer; and a dead-letter storm (every message fails:
   `consume` copies each to its DLQ topic) vs that topic's produce rate.
4. Registry requests per 1k and per 100k messages encoded and decoded.

Needs the services (scripts/services up; eval "$(scripts/services env)"). Usage:

    .venv/bin/python benchmarks/run.py            # print the table
    .venv/bin/python benchmarks/run.py --write    # and write docs/benchmarks.md
    .venv/bin/python benchmarks/run.py --quick    # fewer messages end to end (a smoke run)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import io
import itertools
import json
import os
import platform
import sys
import time
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import jsonschema
import jsonschema_rs
import orjson
import pulsar
from confluent_kafka.schema_registry import (
    ConfigCompatibilityLevel,
    Metadata,
    MetadataProperties,
    Schema,
    SchemaRegistryClient,
    ServerConfig,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor as ConfluentCel
from confluent_kafka.schema_registry.rules.cel.cel_field_executor import CelFieldExecutor as ConfluentCelField
from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor as ConfluentJsonata
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from pulsar_external_schema import (
    ExternalSchemaError,
    SchemaRegistrySchemaFactory,
    consume,
    create_producer,
    metrics,
)
from pulsar_external_schema import schema_id as ids
from pulsar_external_schema._pulsar_client import raw_client
from pulsar_external_schema.deadletter import DeadLetterPublisher, copy_to_dead_letter_topic
from pulsar_external_schema.protobuf_text import file_descriptor_proto, render_proto

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from registry_proxy import counting_proxy  # noqa: E402  (the tests' counting proxy, reused)

for _builtin in (ConfluentCel, ConfluentCelField, ConfluentJsonata):  # confluent-kafka's own baseline
    _builtin.register()  # type: ignore[no-untyped-call]

MAJOR = "application.major.version"
RUN = uuid.uuid4().hex[:8]

# -- the record ------------------------------------------------------------------------------------

FIELDS = [
    ("name", "string"),
    ("email", "string"),
    ("city", "string"),
    ("note", "string"),
    ("age", "int"),
    ("score", "double"),
    ("active", "boolean"),
]
VALUE: dict[str, Any] = {
    "name": "Alice Smith",
    "email": "alice@example.com",
    "city": "Springfield",
    "note": "",
    "age": 42,
    "score": 97.5,
    "active": True,
}


def avro_schema(id_field: str = "email") -> dict[str, Any]:
    fields = [{"name": id_field if name == "email" else name, "type": kind} for name, kind in FIELDS]
    return {"type": "record", "name": "Person", "namespace": "bench", "fields": fields}


_JSON_TYPES = {"string": "string", "int": "integer", "double": "number", "boolean": "boolean"}


def json_schema(id_field: str = "email") -> dict[str, Any]:
    properties = {
        (id_field if name == "email" else name): {"type": _JSON_TYPES[kind]} for name, kind in FIELDS
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Person",
        "type": "object",
        "properties": properties,
        "required": list(properties),
    }


def person_class() -> Any:
    t = descriptor_pb2.FieldDescriptorProto
    kinds = {"string": t.TYPE_STRING, "int": t.TYPE_INT32, "double": t.TYPE_DOUBLE, "boolean": t.TYPE_BOOL}
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"bench/person{RUN}.proto", package="bench", syntax="proto3"
    )
    message = proto.message_type.add(name="Person")
    for number, (name, kind) in enumerate(FIELDS, 1):
        message.field.add(name=name, number=number, type=kinds[kind], label=t.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("bench.Person"))


PERSON = person_class()

# -- rules -------------------------------------------------------------------------------------------


def rule(name: str, kind: str, type_: str, mode: str, expr: str) -> dict[str, Any]:
    return {"name": name, "kind": kind, "type": type_, "mode": mode, "expr": expr}


RULES: dict[str, list[dict[str, Any]]] = {
    "no rule": [],
    "CEL condition": [rule("checkLen", "CONDITION", "CEL", "WRITEREAD", "size(message.name) < 50")],
    "CEL_FIELD transform": [
        rule(
            "populateDefault",
            "TRANSFORM",
            "CEL_FIELD",
            "WRITEREAD",
            "typeName == 'STRING' ; value == '' ? 'unspecified' : value",
        )
    ],
}


def rename(old: str, new: str) -> str:
    """Confluent's documented JSONata migration: drop `old`, add `new` with its value."""
    return f"$merge([$sift($, function($v, $k) {{$k != '{old}'}}), {{'{new}': $.'{old}'}}])"


# -- the rules' own work: bare cel-expr-python evaluations ---------------------------------------------

CONDITION_EXPR = "size(message.name) < 50"
FIELD_BODY = "value == '' ? 'unspecified' : value"  # the CEL_FIELD rule's body (its guard: STRING)
STRING_FIELDS = [name for name, kind in FIELDS if kind == "string"]


def bare_rule(fmt: str, variant: str) -> Callable[[], Any] | None:
    """The evaluations a rule needs per message, on cel-expr-python with nothing around them: one
    condition (the field it reads converted as ours converts it), or the field transform's body
    once per string field (its guard is decided by the field's type, once)."""
    from cel_expr_python import cel as cel_cpp

    from pulsar_external_schema.rules.cel import to_cel

    message = PERSON(**VALUE) if fmt == "protobuf" else None
    pool = PERSON.DESCRIPTOR.file.pool if fmt == "protobuf" else None
    env = cel_cpp.NewEnv(
        descriptor_pool=pool, variables={"message": cel_cpp.Type.DYN, "value": cel_cpp.Type.DYN}
    )
    if variant == "CEL condition":
        program = env.compile(CONDITION_EXPR)
        if message is not None:
            return lambda: program.eval(data={"message": message}).value()
        return lambda: program.eval(data={"message": {"name": to_cel(VALUE["name"])}}).value()
    if variant == "CEL_FIELD transform":
        body = env.compile(FIELD_BODY)
        values = [VALUE[name] for name in STRING_FIELDS]
        return lambda: [body.eval(data={"value": to_cel(value)}).value() for value in values]
    if variant == "JSONata migration":  # one evaluation of the rename, parsed once
        import jsonata

        expression = jsonata.Jsonata(rename("email", "contact"))
        return lambda: expression.evaluate(VALUE)
    return None


def with_rule(raw: Callable[[], Any], rule_work: Callable[[], Any] | None) -> Callable[[], Any]:
    """The work itself: the format library's call and the rule's bare evaluations, in one call."""
    if rule_work is None:
        return raw
    return lambda: (raw(), rule_work())


# -- timing ------------------------------------------------------------------------------------------


def per_call_us(fn: Callable[[], Any]) -> float:
    """Best of 5 runs of as many calls as fill ~0.2 s, in microseconds per call."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number * 1e6


@dataclass
class Row:
    name: str
    raw: float | None = None
    confluent: float | None = None
    ours: float | None = None
    interpreted: float | None = None
    note: str = ""
    #: Ours without the native extension (its Python path), where the row measures both.
    python_path: float | None = None


def _measure(fn: Callable[[], Any] | None) -> float | None:
    return None if fn is None else per_call_us(fn)


#: Rounds of `measured_together`: this machine's CPU is shared (steal time comes and goes for
#: seconds), so a baseline timed in a quiet second and ours in a busy one says nothing.
ROUNDS = 3


def measured_together(**fns: Callable[[], Any] | None) -> dict[str, float | None]:
    """Each function's best per-call time, timed in turns (every round times each once, best of 3
    runs), so that each had the same quiet and busy moments; None stays None."""
    timers = {name: timeit.Timer(fn) for name, fn in fns.items() if fn is not None}
    numbers = {name: timer.autorange()[0] for name, timer in timers.items()}
    best: dict[str, float | None] = dict.fromkeys(fns)
    for _ in range(ROUNDS):
        for name, timer in timers.items():
            took = min(timer.repeat(repeat=3, number=numbers[name])) / numbers[name] * 1e6
            found = best[name]
            best[name] = took if found is None else min(found, took)
    return best


# -- 1. CEL engines ----------------------------------------------------------------------------------


def cel_engine_rows() -> list[Row]:
    import celpy
    from cel_expr_python import cel as cel_cpp
    from confluent_kafka.schema_registry.rules.cel.cel_executor import msg_to_cel
    from confluent_kafka.schema_registry.rules.cel.cel_field_presence import InterpretedRunner
    from confluent_kafka.schema_registry.rules.cel.extra_func import EXTRA_FUNCS

    from pulsar_external_schema.rules.cel import message_fields, to_cel

    wide = {f"f{i}": ("x" * 20 if i % 3 == 0 else i if i % 3 == 1 else [1, 2, 3]) for i in range(60)}
    rows = []
    for label, record, expression in (
        ("CEL eval: size(message.name) < 50, 7 fields", VALUE, "size(message.name) < 50"),
        ("CEL eval: size(message.f0) < 30, 60 fields", wide, "size(message.f0) < 30"),
    ):
        env = cel_cpp.NewEnv(variables={"message": cel_cpp.Type.DYN})
        compiled = env.compile(expression)
        fields = message_fields(expression) or frozenset()
        ours = per_call_us(
            lambda c=compiled, r=record, f=fields: c.eval(  # type: ignore[misc]
                data={"message": {k: to_cel(r[k]) for k in f}}
            ).value()
        )
        whole = per_call_us(lambda c=compiled, r=record: c.eval(data={"message": to_cel(r)}).value())  # type: ignore[misc]
        interp_env = celpy.Environment(runner_class=InterpretedRunner)
        program = interp_env.program(interp_env.compile(expression), functions=EXTRA_FUNCS)
        interpreted = per_call_us(lambda p=program, r=record: p.evaluate({"message": msg_to_cel(r)}))  # type: ignore[misc]
        note = f"cel-cpp with the whole record converted: {whole:.1f} us"
        try:
            import cel as cel_rust  # common-expression-language

            rust_program = cel_rust.compile(expression)
            rust = per_call_us(lambda p=rust_program, r=record: p.execute({"message": r}))  # type: ignore[misc]
            note += f"; common-expression-language (Rust), whole record: {rust:.1f} us"
        except ImportError:
            note += "; common-expression-language not installed (pip install -e '.[bench]')"
        rows.append(Row(label, ours=ours, interpreted=interpreted, note=note))
    return rows


# -- 2. serdes ---------------------------------------------------------------------------------------


@dataclass
class Codec:
    """One format's four ways to encode and decode the record."""

    raw_encode: Callable[[], Any]
    raw_decode: Callable[[], Any]
    confluent_encode: Callable[[], Any] | None
    confluent_decode: Callable[[], Any] | None
    ours_encode: Callable[[], Any] | None
    ours_decode: Callable[[], Any] | None
    interpreted_encode: Callable[[], Any] | None = None
    interpreted_decode: Callable[[], Any] | None = None


def _raw_avro() -> tuple[Callable[[], Any], Callable[[], Any]]:
    parsed = fastavro.parse_schema(avro_schema())
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, VALUE)
    payload = buffer.getvalue()

    def encode() -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, VALUE)
        return out.getvalue()

    return encode, lambda: fastavro.schemaless_reader(io.BytesIO(payload), parsed, None)


def _json_pair(
    validate: Callable[[Any], Any], dumps: Callable[[Any], bytes], loads: Callable[[bytes], Any]
) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Encode and decode of the record with a JSON library and a validator built once."""
    payload = dumps(VALUE)

    def encode() -> bytes:
        validate(VALUE)
        return dumps(VALUE)

    def decode() -> Any:
        value = loads(payload)
        validate(value)
        return value

    return encode, decode


def _raw_json() -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The work itself for JSON Schema: jsonschema-rs's validation and orjson, what ours runs."""
    validator = jsonschema_rs.validator_for(json_schema(), validate_formats=False)
    return _json_pair(validator.validate, orjson.dumps, orjson.loads)


def _python_json() -> tuple[Callable[[], Any], Callable[[], Any]]:
    """JSON Schema with Python's libraries: `json` and the `jsonschema` package's Draft7Validator
    (confluent-kafka's validator), as ours ran before jsonschema-rs and orjson."""
    validator = jsonschema.Draft7Validator(json_schema())
    return _json_pair(validator.validate, lambda value: json.dumps(value).encode(), json.loads)


def _raw_protobuf() -> tuple[Callable[[], Any], Callable[[], Any]]:
    message = PERSON(**VALUE)
    payload = message.SerializeToString()
    return message.SerializeToString, lambda: PERSON.FromString(payload)


class Serdes:
    """Registers the record's schema with a rule set, then builds both clients' serdes for it."""

    def __init__(self, registry_url: str) -> None:
        self.url = registry_url
        self.client = SchemaRegistryClient({"url": registry_url})
        self.factories: list[SchemaRegistrySchemaFactory] = []

    def factory(self, **conf: Any) -> SchemaRegistrySchemaFactory:
        factory = SchemaRegistrySchemaFactory({"schema.registry.url": self.url, **conf})
        self.factories.append(factory)
        return factory

    def codec(self, fmt: str, variant: str) -> Codec:
        topic = f"bench-{fmt}-{variant.split()[0].lower()}-{RUN}"
        subject = f"public.default.{topic}-value"
        ctx = SerializationContext(topic, MessageField.VALUE)
        pinned = {"use.latest.version": True, "auto.register.schemas": False}
        if variant == "JSONata migration":
            return self._migration(fmt, topic, subject, ctx)
        rules = RULES[variant]
        rule_set = {"ruleSet": {"domainRules": rules}} if rules else {}
        # Our subject is {tenant}.{namespace}.{topic}-value, confluent-kafka's {topic}-value.
        subjects = (subject, f"{topic}-value")
        if fmt == "avro":
            text = json.dumps(avro_schema())
            for name in subjects:
                self.client.register_schema(
                    name, Schema.from_dict({"schema": text, "schemaType": "AVRO", **rule_set})
                )
            serializer = AvroSerializer(self.client, text, conf=pinned)
            deserializer = AvroDeserializer(self.client, conf={"use.latest.version": True})
            value: Any = VALUE
            raw = _raw_avro()
            make = lambda factory: factory.avro(text)  # noqa: E731
        elif fmt == "json":
            text = json.dumps(json_schema())
            for name in subjects:
                self.client.register_schema(
                    name, Schema.from_dict({"schema": text, "schemaType": "JSON", **rule_set})
                )
            serializer = JSONSerializer(text, self.client, conf=pinned)
            deserializer = JSONDeserializer(
                None, schema_registry_client=self.client, conf={"use.latest.version": True}
            )
            value = VALUE
            raw = _raw_json()
            make = lambda factory: factory.json(text)  # noqa: E731
        else:
            text = render_proto(file_descriptor_proto(PERSON))
            for name in subjects:
                self.client.register_schema(
                    name, Schema.from_dict({"schema": text, "schemaType": "PROTOBUF", **rule_set})
                )
            serializer = ProtobufSerializer(
                PERSON, self.client, conf={**pinned, "use.deprecated.format": False}
            )
            # A client of its own (the one above cached the .proto text it registered under the
            # id, which this deserializer would then parse as a serialized descriptor), and no
            # use.latest.version: confluent-kafka then looks the writer schema up in its serialized
            # form, which AxonOps cannot compile. It runs the writer schema's rules instead.
            deserializer = ProtobufDeserializer(
                PERSON,
                conf={"use.deprecated.format": False},
                schema_registry_client=SchemaRegistryClient({"url": self.url}),
            )
            value = PERSON(**VALUE)
            raw = _raw_protobuf()
            make = lambda factory: factory.protobuf(PERSON)  # noqa: E731
        confluent_encode, confluent_decode = _confluent(serializer, deserializer, value, ctx)
        ours = make(self.factory(**pinned))
        interpreted = make(self.factory(**pinned, **{"cel.engine": "cel-python"}))
        ours_encode, ours_decode = _ours(ours, topic, value)
        interpreted_encode, interpreted_decode = _ours(interpreted, topic, value) if rules else (None, None)
        return Codec(
            *raw,
            confluent_encode,
            confluent_decode,
            ours_encode,
            ours_decode,
            interpreted_encode,
            interpreted_decode,
        )

    def _migration(self, fmt: str, topic: str, subject: str, ctx: SerializationContext) -> Codec:
        """Data written in major version 1 (`email`), read by a consumer on 2 (`contact`)."""
        if fmt == "protobuf":
            raise NotImplementedError("JSONata migrations of Protobuf are not measured")
        schema_type = "AVRO" if fmt == "avro" else "JSON"
        shape = avro_schema if fmt == "avro" else json_schema
        migrations = {
            "migrationRules": [
                rule("up", "TRANSFORM", "JSONATA", "UPGRADE", rename("email", "contact")),
                rule("down", "TRANSFORM", "JSONATA", "DOWNGRADE", rename("contact", "email")),
            ]
        }
        majors = ((1, shape("email"), {}), (2, shape("contact"), migrations))
        for (major, schema, rule_set), name in itertools.product(majors, (subject, f"{topic}-value")):
            self.client.set_config(
                name,
                ServerConfig(
                    compatibility=ConfigCompatibilityLevel.BACKWARD,
                    compatibility_group=MAJOR,
                    override_metadata=Metadata(None, MetadataProperties({MAJOR: str(major)}), None),
                ),
            )
            self.client.register_schema(
                name,
                Schema.from_dict(
                    {"schema": json.dumps(schema), "schemaType": schema_type, "ruleSet": rule_set}
                ),
            )
        v1 = json.dumps(shape("email"))
        writer_conf = {"use.latest.with.metadata": {MAJOR: "1"}, "auto.register.schemas": False}
        reader_conf = {"use.latest.with.metadata": {MAJOR: "2"}}
        if fmt == "avro":
            serializer: Any = AvroSerializer(self.client, v1, conf=writer_conf)
            deserializer: Any = AvroDeserializer(self.client, conf=reader_conf)
            raw = _raw_avro()
        else:
            serializer = JSONSerializer(v1, self.client, conf=writer_conf)
            deserializer = JSONDeserializer(None, schema_registry_client=self.client, conf=reader_conf)
            raw = _raw_json()
        payload = serializer(VALUE, ctx)
        assert "contact" in deserializer(payload, ctx), "the migration did not run"
        meta = {"use.latest.with.metadata": f"{MAJOR}=1", "auto.register.schemas": False}
        reader_meta = {"use.latest.with.metadata": f"{MAJOR}=2"}
        writer = self.factory(**meta).avro(v1) if fmt == "avro" else self.factory(**meta).json(v1)
        v2 = json.dumps(shape("contact"))
        reader = (
            self.factory(**reader_meta).avro(v2) if fmt == "avro" else self.factory(**reader_meta).json(v2)
        )
        encoded = writer.encode(topic, VALUE)
        assert "contact" in reader.decode(topic, encoded.data, encoded.schema_id)
        return Codec(
            raw[0],
            raw[1],
            None,
            lambda: deserializer(payload, ctx),
            None,
            lambda: reader.decode(topic, encoded.data, encoded.schema_id),
        )

    def close(self) -> None:
        for factory in self.factories:
            factory.close()


def _fresh(value: Any) -> Callable[[], Any]:
    """A new copy per call: confluent-kafka's field transforms rewrite the value they are given."""
    if isinstance(value, dict):
        return lambda: dict(value)
    return lambda: value


def _confluent(serializer: Any, deserializer: Any, value: Any, ctx: SerializationContext) -> tuple[Any, Any]:
    fresh = _fresh(value)
    payload = serializer(fresh(), ctx)
    deserializer(payload, ctx)
    return (lambda: serializer(fresh(), ctx)), (lambda: deserializer(payload, ctx))


def _ours(schema: Any, topic: str, value: Any) -> tuple[Any, Any]:
    """Ours is given the value itself: it never changes the caller's value (a WRITE transform
    copies the records it rewrites), so it needs no fresh copy per call."""
    for _ in range(2):  # the first message resolves the writer and builds the plans
        encoded = schema.encode(topic, value)
        schema.decode(topic, encoded.data, encoded.schema_id)
    return (lambda: schema.encode(topic, value)), (
        lambda: schema.decode(topic, encoded.data, encoded.schema_id)
    )


def serde_rows(registry_url: str) -> list[Row]:
    serdes = Serdes(registry_url)
    rows = []
    try:
        for fmt in ("avro", "json", "protobuf"):
            for variant in (*RULES, "JSONata migration"):
                try:
                    codec = serdes.codec(fmt, variant)
                except NotImplementedError as reason:
                    rows.append(Row(f"{fmt} {variant}", note=str(reason)))
                    continue
                rule_work = bare_rule(fmt, variant)
                for op in ("encode", "decode"):
                    confluent = getattr(codec, f"confluent_{op}")
                    ours = getattr(codec, f"ours_{op}")
                    if confluent is None and ours is None:
                        continue
                    times = measured_together(
                        raw=with_rule(getattr(codec, f"raw_{op}"), rule_work),
                        confluent=confluent,
                        ours=ours,
                        interpreted=getattr(codec, f"interpreted_{op}"),
                    )
                    rows.append(Row(f"{fmt} {op}, {variant}", **times))
        rows.extend(encryption_rows(serdes))
    finally:
        serdes.close()
    return rows


#: The JSON rows measured against Python's own JSON libraries too (`json_library_rows`).
PYTHON_JSON_VARIANTS = ("no rule", "CEL condition")


def json_library_rows(registry_url: str) -> list[Row]:
    """Ours on JSON Schema against `json` + `jsonschema` (+ the rule's bare evaluation), the
    libraries ours ran before jsonschema-rs and orjson, timed in turns; and ours without the
    native extension (its plans built with the extension hidden), where it is installed."""
    from pulsar_external_schema import _native

    serdes = Serdes(registry_url)
    rows = []
    try:
        python = dict(zip(("encode", "decode"), _python_json(), strict=True))
        for variant in PYTHON_JSON_VARIANTS:
            codec = serdes.codec("json", variant)
            without: Codec | None = None
            if _native.extension() is not None:
                found = _native.extension
                _native.extension = lambda: None
                try:
                    without = serdes.codec("json", variant)
                finally:
                    _native.extension = found
            for op in ("encode", "decode"):
                theirs = with_rule(python[op], bare_rule("json", variant))
                times = measured_together(
                    python=theirs,
                    ours=getattr(codec, f"ours_{op}"),
                    python_path=getattr(without, f"ours_{op}") if without is not None else None,
                )
                rows.append(
                    Row(
                        f"json {op}, {variant}",
                        raw=times["python"],
                        ours=times["ours"],
                        python_path=times["python_path"],
                    )
                )
    finally:
        serdes.close()
    return rows


def value_check_rows() -> dict[str, float | None]:
    """What checking a value against the writer schema's types costs (codec/value_checks.py) on the
    benchmark record (4 strings, an int, a double, a boolean): fastavro's public writer (the work
    itself), the plan's writer without the check (fastavro's `write_data` prepared once) and with
    it, and the check alone; timed in turns."""
    from pulsar_external_schema import _fastavro
    from pulsar_external_schema.codec.value_checks import avro_check

    parsed = fastavro.parse_schema(avro_schema())
    public, _ = _raw_avro()
    options = {"strict": False, "strict_allow_default": False, "disable_tuple_notation": False}
    unchecked = _fastavro.prepared_writer(parsed, options)
    check = avro_check(parsed)
    assert check is not None and unchecked is not None

    def checked() -> bytes:
        check(VALUE)
        return unchecked(VALUE)

    assert checked() == public()
    return measured_together(
        public=public, unchecked=lambda: unchecked(VALUE), checked=checked, check=lambda: check(VALUE)
    )


#: The rows of `metrics_rows`: (format, rule variant) measured with rule metrics off and on.
METRICS_ROWS = (("avro", "CEL condition"), ("avro", "CEL_FIELD transform"))


def metrics_rows(registry_url: str) -> list[Row]:
    """Ours with rule metrics off (`raw`) and on (`ours`): a schema each, built in that state
    (plans are metered when they are built), timed in turns. The cost of counting every rule
    execution on the compiled path: a clock read per rule, one lock per message."""
    serdes = Serdes(registry_url)
    rows = []
    try:
        for fmt, variant in METRICS_ROWS:
            off = serdes.codec(fmt, variant)
            metrics.enable_rule_metrics()
            try:
                on = serdes.codec(fmt, variant)
                for op in ("encode", "decode"):
                    times = measured_together(off=getattr(off, f"ours_{op}"), on=getattr(on, f"ours_{op}"))
                    rows.append(Row(f"{fmt} {op}, {variant}", raw=times["off"], ours=times["on"]))
            finally:
                metrics.disable_rule_metrics()
    finally:
        serdes.close()
    return rows


#: The string fields the ENCRYPT rows encrypt (tagged PII in the subject's metadata).
ENCRYPTED = ["name", "email", "city"]
KMS_SECRET = "a-local-kms-secret-for-benchmarks"


def encryption_rows(serdes: Serdes) -> list[Row]:
    """Avro with one ENCRYPT rule (AES-256-GCM, the local KMS) on three string fields. The work
    itself: fastavro, and per field one Tink AES-GCM call with its primitive built once, and base64."""
    import base64

    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
    from tink import aead, new_keyset_handle

    FieldEncryptionExecutor.register()  # type: ignore[no-untyped-call]
    LocalKmsDriver.register()  # type: ignore[no-untyped-call]
    topic = f"bench-avro-encrypt-{RUN}"
    encrypt = {
        "name": "encryptPII",
        "kind": "TRANSFORM",
        "type": "ENCRYPT",
        "mode": "WRITEREAD",
        "tags": ["PII"],
        "params": {
            "encrypt.kek.name": f"bench-{RUN}",
            "encrypt.kms.type": "local-kms",
            "encrypt.kms.key.id": "mykey",
        },
    }
    text = json.dumps(avro_schema())
    registered = {
        "schema": text,
        "schemaType": "AVRO",
        "ruleSet": {"domainRules": [encrypt]},
        "metadata": {"tags": {f"bench.Person.{name}": ["PII"] for name in ENCRYPTED}},
    }
    for subject in (f"public.default.{topic}-value", f"{topic}-value"):
        serdes.client.register_schema(subject, Schema.from_dict(registered))
    ctx = SerializationContext(topic, MessageField.VALUE)
    pinned = {"use.latest.version": True, "auto.register.schemas": False}
    rule_conf = {"secret": KMS_SECRET}
    serializer = AvroSerializer(serdes.client, text, conf=pinned, rule_conf=rule_conf)
    deserializer = AvroDeserializer(serdes.client, conf={"use.latest.version": True}, rule_conf=rule_conf)
    confluent_encode, confluent_decode = _confluent(serializer, deserializer, VALUE, ctx)
    ours = serdes.factory(**pinned, **{"rule.executors._default_.param.secret": KMS_SECRET}).avro(text)
    ours_encode, ours_decode = _ours(ours, topic, VALUE)
    aead.register()
    cipher = new_keyset_handle(aead.aead_key_templates.AES256_GCM_RAW).primitive(aead.Aead)
    plaintexts = [VALUE[name].encode() for name in ENCRYPTED]
    ciphertexts = [base64.b64encode(cipher.encrypt(text, b"")).decode() for text in plaintexts]
    raw_encode, raw_decode = _raw_avro()
    work = {
        "encode": lambda: (
            raw_encode(),
            [base64.b64encode(cipher.encrypt(p, b"")).decode() for p in plaintexts],
        ),
        "decode": lambda: (
            raw_decode(),
            [cipher.decrypt(base64.b64decode(c), b"").decode() for c in ciphertexts],
        ),
    }
    ways = {"encode": (confluent_encode, ours_encode), "decode": (confluent_decode, ours_decode)}
    return [
        Row(
            f"avro {op}, ENCRYPT field rule ({len(ENCRYPTED)} fields)",
            **measured_together(raw=work[op], confluent=ways[op][0], ours=ways[op][1]),
        )
        for op in ("encode", "decode")
    ]


#: The record's schema with one CEL condition: what the end-to-end, consume-side and registry
#: request figures encode and decode.
CONTRACT = Schema.from_dict(
    {
        "schema": json.dumps(avro_schema()),
        "schemaType": "AVRO",
        "ruleSet": {"domainRules": RULES["CEL condition"]},
    }
)


# -- 3. end to end -----------------------------------------------------------------------------------


class NativePerson(pulsar.schema.Record):  # type: ignore[misc]
    _avro_namespace = "bench"
    name = pulsar.schema.String()
    email = pulsar.schema.String()
    city = pulsar.schema.String()
    note = pulsar.schema.String()
    age = pulsar.schema.Integer()
    score = pulsar.schema.Double()
    active = pulsar.schema.Boolean()


@dataclass
class Throughput:
    name: str
    produce: float
    consume: float

    @property
    def both(self) -> float:
        return 1 / (1 / self.produce + 1 / self.consume)


def _sent(result: Any, message_id: Any) -> None:
    if result != pulsar.Result.Ok:
        raise RuntimeError(f"send failed: {result}")


def _pump(
    name: str,
    producer: Any,
    consumer: Any,
    send: Callable[[], None],
    read: Callable[[Any], Any],
    count: int,
) -> Throughput:
    """`count` sends, flushed; then `count` receives, each read and acknowledged."""
    started = time.perf_counter()
    for _ in range(count):
        send()
    producer.flush()
    produced = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(count):
        message = consumer.receive(timeout_millis=30_000)
        read(message)
        consumer.acknowledge(message)
    consumed = time.perf_counter() - started
    producer.close()
    consumer.close()
    return Throughput(name, count / produced, count / consumed)


def _values(producer: Any, value: Any) -> tuple[Callable[[], None], Callable[[Any], Any]]:
    """Send `value` through the producer's schema; read each message's `value()`."""
    return (lambda: producer.send_async(value, _sent)), (lambda message: message.value())


def _work_itself(producer: Any, schema_id: str) -> tuple[Callable[[], None], Callable[[Any], Any]]:
    """What a message costs with nothing of ours: fastavro and one bare cel-expr-python
    evaluation of the rule per send and per receive, the id set as a property by hand."""
    parsed = fastavro.parse_schema(avro_schema())
    check = bare_rule("avro", "CEL condition")
    assert check is not None
    properties = {ids.SCHEMA_ID_PROPERTY: schema_id}

    def send() -> None:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, VALUE)
        check()
        producer.send_async(out.getvalue(), _sent, properties=properties)

    return send, _read_itself()


def _read_itself() -> Callable[[Any], Any]:
    """A received message's value with nothing of ours: fastavro and one bare evaluation."""
    parsed = fastavro.parse_schema(avro_schema())
    check = bare_rule("avro", "CEL condition")
    assert check is not None

    def read(message: Any) -> Any:
        value = fastavro.schemaless_reader(io.BytesIO(message.data()), parsed, None)
        check()
        return value

    return read


def _decode_alone() -> Callable[[Any], Any]:
    """A received message's value with fastavro's public call and nothing else: no rule, no id."""
    parsed = fastavro.parse_schema(avro_schema())
    return lambda message: fastavro.schemaless_reader(io.BytesIO(message.data()), parsed, None)


#: The rows of `end_to_end`, in order; the targets compare ours (the last) with each of the others.
E2E_ROWS = (
    "BYTES schema (Avro bytes made beforehand)",
    "pulsar-client AvroSchema (no rules)",
    "the work itself: BYTES + fastavro + one bare CEL evaluation per send and per receive",
    "ours: Avro + one CEL rule (WRITEREAD)",
)


def end_to_end(service_url: str, registry_url: str, count: int, rounds: int = 3) -> list[Throughput]:
    """Each row of `E2E_ROWS` on a topic of its own, `rounds` times in turns (the order reversed
    every other round); per row, the round with the best produce + consume rate."""
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    batching = {"batching_enabled": True, "batching_max_publish_delay_ms": 5, "block_if_queue_full": True}
    payload = _raw_avro()[0]()
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    ours = factory.avro(CONTRACT)
    native = pulsar.schema.AvroSchema(NativePerson)

    def topic(kind: str, round_: int) -> str:
        return f"persistent://public/default/bench-{kind}-{RUN}-{round_}"

    def raw_bytes(round_: int) -> Throughput:
        consumer = client.subscribe(topic("bytes", round_), "bench")
        producer = client.create_producer(topic("bytes", round_), **batching)
        send = lambda: producer.send_async(payload, _sent)  # noqa: E731
        return _pump(E2E_ROWS[0], producer, consumer, send, lambda m: m.value(), count)

    def pulsar_avro(round_: int) -> Throughput:
        consumer = client.subscribe(topic("native", round_), "bench", schema=native)
        producer = client.create_producer(topic("native", round_), schema=native, **batching)
        return _pump(E2E_ROWS[1], producer, consumer, *_values(producer, NativePerson(**VALUE)), count)

    def itself(round_: int) -> Throughput:
        consumer = client.subscribe(topic("itself", round_), "bench")
        producer = client.create_producer(topic("itself", round_), **batching)
        schema_id = ids.to_property(ours.encode(topic("itself", round_), VALUE).schema_id or b"")
        return _pump(E2E_ROWS[2], producer, consumer, *_work_itself(producer, schema_id), count)

    def with_ours(round_: int) -> Throughput:
        consumer = client.subscribe(topic("ours", round_), "bench", schema=ours)
        producer = create_producer(client, topic("ours", round_), ours, **batching)
        return _pump(E2E_ROWS[3], producer, consumer, *_values(producer, VALUE), count)

    ways = [raw_bytes, pulsar_avro, itself, with_ours]
    best: list[Throughput | None] = [None] * len(ways)
    try:
        for round_ in range(rounds):
            order = list(enumerate(ways))
            for index, way in order if round_ % 2 == 0 else reversed(order):
                result = way(round_)
                found = best[index]
                if found is None or result.both > found.both:
                    best[index] = result
    finally:
        ours.close()
        factory.close()
        client.close()
    return [result for result in best if result is not None]


#: The rows of `consume_side`, in order.
CONSUME_ROWS = (
    "BYTES: receive + acknowledge",
    "the work itself: receive + fastavro + one bare CEL evaluation + acknowledge",
    "ours, Avro + one CEL rule: receive + `value()` + acknowledge",
    "ours: `consume(consumer, handle)`",
    "the decode alone: receive + fastavro `schemaless_reader` + acknowledge (no rule)",
)


def consume_side(service_url: str, registry_url: str, count: int, rounds: int = 3) -> dict[str, float]:
    """msg/s of each way to consume one topic's messages (Avro + one CEL rule), each on a
    subscription of its own; in turns, `rounds` times `count / rounds` messages each, best round."""
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    try:
        ours = factory.avro(CONTRACT)
        topic = f"persistent://public/default/bench-consume-{RUN}"
        subscriptions = [
            client.subscribe(topic, f"way-{i}", schema=ours if i in (2, 3) else pulsar.schema.BytesSchema())
            for i in range(len(CONSUME_ROWS))
        ]
        producer = create_producer(client, topic, ours, batching_enabled=True, block_if_queue_full=True)
        for _ in range(count):
            producer.send_async(VALUE, _sent)
        producer.flush()
        producer.close()
        chunk = count // rounds

        def receiving(consumer: Any, read: Callable[[Any], Any]) -> Callable[[], None]:
            def run() -> None:
                for _ in range(chunk):
                    message = consumer.receive(timeout_millis=30_000)
                    read(message)
                    consumer.acknowledge(message)

            return run

        def looping(consumer: Any) -> Callable[[], None]:
            def run() -> None:
                done = consume(
                    consumer, lambda message, value: None, max_messages=chunk, timeout_millis=30_000
                )
                assert done.processed == chunk, done

            return run

        ways = [
            receiving(subscriptions[0], lambda message: message.data()),
            receiving(subscriptions[1], _read_itself()),
            receiving(subscriptions[2], lambda message: message.value()),
            looping(subscriptions[3]),
            receiving(subscriptions[4], _decode_alone()),
        ]
        best = dict.fromkeys(CONSUME_ROWS, 0.0)
        for round_ in range(rounds):
            order = list(zip(CONSUME_ROWS, ways, strict=True))
            for name, way in order if round_ % 2 == 0 else reversed(order):
                started = time.perf_counter()
                way()
                best[name] = max(best[name], chunk / (time.perf_counter() - started))
        for consumer in subscriptions:
            consumer.close()
        return best
    finally:
        factory.close()
        client.close()


@dataclass
class Storm:
    count: int
    produce: float
    """BYTES produce msg/s of the same payloads: the DLQ topic's produce rate."""
    one_by_one: float
    """consume msg/s when each DLQ copy is sent and awaited in turn (how `consume` worked before)."""
    ours: float
    """`consume(..., dead_letter_topic=...)` msg/s."""


def dead_letter_storm(service_url: str, registry_url: str, count: int) -> Storm:
    """Every message fails to decode (no schema id): how fast `consume` dead-letters them."""
    client = pulsar.Client(service_url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    batching = {"batching_enabled": True, "batching_max_publish_delay_ms": 5, "block_if_queue_full": True}
    payload = _raw_avro()[0]()
    factory = SchemaRegistrySchemaFactory({"schema.registry.url": registry_url})
    schema = factory.avro(json.dumps(avro_schema()))
    rates = []
    try:
        for variant in ("one-by-one", "ours"):
            topic = f"persistent://public/default/bench-storm-{variant}-{RUN}"
            consumer = client.subscribe(topic, "bench", schema=schema)
            producer = client.create_producer(topic, **batching)
            started = time.perf_counter()
            for _ in range(count):
                producer.send_async(payload, _sent)
            producer.flush()
            rates.append(count / (time.perf_counter() - started))
            producer.close()
            started = time.perf_counter()
            if variant == "ours":
                consume(
                    consumer, lambda msg, value: None, max_messages=count, dead_letter_topic=f"{topic}-dlq"
                )
            else:
                publisher = DeadLetterPublisher(raw_client(client))
                for _ in range(count):
                    msg = consumer.receive(timeout_millis=30_000)
                    try:
                        msg.value()
                    except ExternalSchemaError as error:
                        copy_to_dead_letter_topic(publisher, f"{topic}-dlq", msg, error)
                    consumer.acknowledge(msg)
                publisher.close()
            rates.append(count / (time.perf_counter() - started))
            consumer.close()
    finally:
        factory.close()
        client.close()
    return Storm(count, max(rates[0], rates[2]), rates[1], rates[3])


# -- 4. registry requests ----------------------------------------------------------------------------


def registry_requests(registry_url: str, counts: tuple[int, ...]) -> dict[int, int]:
    found = {}
    for count in counts:
        with counting_proxy(registry_url) as proxy:
            topic = f"bench-requests-{count}-{RUN}"
            writer = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url})
            reader = SchemaRegistrySchemaFactory({"schema.registry.url": proxy.url})
            producer_schema = writer.avro(CONTRACT)
            consumer_schema = reader.avro(json.dumps(avro_schema()))
            for _ in range(count):
                encoded = producer_schema.encode(topic, VALUE)
                consumer_schema.decode(topic, encoded.data, encoded.schema_id)
            found[count] = proxy.total
            writer.close()
            reader.close()
    return found


# -- output ------------------------------------------------------------------------------------------


def _us(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"


def _ratio(numerator: float | None, denominator: float | None, suffix: str = "x") -> str:
    if numerator is None or denominator is None:
        return ""
    return f"{numerator / denominator:.2f}{suffix}"


def versions() -> str:
    names = (
        "pulsar-external-schema",
        "pulsar-client",
        "confluent-kafka",
        "fastavro",
        "jsonschema",
        "protobuf",
        "cel-expr-python",
        "cel-python",
        "jsonata-python",
    )
    found = []
    for name in names:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found.append(f"{name} {importlib.metadata.version(name)}")
    return ", ".join(found)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{cpu}, {os.cpu_count()} cores, {system}, Python {platform.python_version()}"


def settled(*, busy: float = 0.15, window: float = 2.0, bound: float = 180.0) -> float:
    """Waits until the machine is quiet (at most `busy` of its cores in use over `window`
    seconds, from /proc/stat), at most `bound` seconds; returns the seconds waited. After a
    benchmark writes a topic, the broker on this machine goes on for a while (its ledgers
    flushed, its garbage collected) and takes a core the read would have."""

    def ticks() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            values = [int(v) for v in stat.readline().split()[1:]]
        return sum(values), values[3] + values[4]  # all, idle + iowait

    started = time.monotonic()
    while time.monotonic() - started < bound:
        total, idle = ticks()
        time.sleep(window)
        total_after, idle_after = ticks()
        if total_after > total and 1 - (idle_after - idle) / (total_after - total) <= busy:
            break
    return time.monotonic() - started


def render(
    cel: list[Row],
    serdes: list[Row],
    e2e: list[Throughput],
    requests: dict[int, int],
    count: int,
    storm: Storm | None = None,
    consumed: dict[str, float] | None = None,
    metered: list[Row] | None = None,
    checks: dict[str, float | None] | None = None,
    python_json: list[Row] | None = None,
) -> str:
    lines = [
        "| measurement (us per call) | the work itself | confluent-kafka | ours | ours, cel-python engine "
        "| ours / the work itself | ours / confluent-kafka | cel-python / ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in cel + serdes:
        if row.ours is None and row.confluent is None and row.interpreted is None:
            lines.append(f"| {row.name} | | | | | | | {row.note} |")
            continue
        cells = [_us(row.raw), _us(row.confluent), _us(row.ours), _us(row.interpreted)]
        cells += [
            _ratio(row.ours, row.raw),
            _ratio(row.ours, row.confluent),
            _ratio(row.interpreted, row.ours),
        ]
        lines.append(f"| {row.name} | {' | '.join(cells)} |")
    notes = [f"- {row.name}: {row.note}" for row in cel if row.note]
    bytes_rate = e2e[0].both if e2e else None
    flow = [
        f"| end to end, {count:,} messages | produce msg/s | consume msg/s | produce + consume msg/s "
        "| vs BYTES |",
        "|---|---:|---:|---:|---:|",
    ]
    for result in e2e:
        flow.append(
            f"| {result.name} | {result.produce:,.0f} | {result.consume:,.0f} | {result.both:,.0f} "
            f"| {_ratio(result.both, bytes_rate)} |"
        )
    if consumed:
        received = consumed[CONSUME_ROWS[0]]
        flow += [
            "",
            f"| consume side, {count:,} messages in turns (best of 3 rounds) | msg/s | vs BYTES receive "
            "+ acknowledge |",
            "|---|---:|---:|",
            *(f"| {name} | {rate:,.0f} | {_ratio(rate, received)} |" for name, rate in consumed.items()),
        ]
    if storm is not None:
        flow += [
            "",
            f"| dead-letter storm: {storm.count:,} messages, every one failing | msg/s | vs the DLQ "
            "topic's produce rate |",
            "|---|---:|---:|",
            f"| BYTES produce of the same payloads (the DLQ topic's produce rate) | {storm.produce:,.0f} "
            "| 1.00x |",
            f"| each copy sent and awaited in turn (`consume` before) | {storm.one_by_one:,.0f} "
            f"| {_ratio(storm.one_by_one, storm.produce)} |",
            f"| `consume(..., dead_letter_topic=...)`: copies sent together, originals acknowledged "
            f"on persistence | {storm.ours:,.0f} | {_ratio(storm.ours, storm.produce)} |",
        ]
    if metered:
        flow += [
            "",
            "| rule metrics (us per call, ours) | off | on | on / off |",
            "|---|---:|---:|---:|",
            *(
                f"| {row.name} | {_us(row.raw)} | {_us(row.ours)} | {_ratio(row.ours, row.raw)} |"
                for row in metered
            ),
        ]
    if python_json:
        flow += [
            "",
            "| JSON Schema against Python's libraries (us per call) | json + jsonschema | ours "
            "| ours / them | ours without the native extension | its / them |",
            "|---|---:|---:|---:|---:|---:|",
            *(
                f"| {row.name} | {_us(row.raw)} | {_us(row.ours)} | {_ratio(row.ours, row.raw)} "
                f"| {_us(row.python_path)} | {_ratio(row.python_path, row.raw)} |"
                for row in python_json
            ),
        ]
    if checks:
        public = checks["public"]
        flow += [
            "",
            "| value check, avro encode of the 7-field record (us per call) | us | vs fastavro's writer |",
            "|---|---:|---:|",
            f"| fastavro `schemaless_writer` (the work itself) | {_us(public)} | 1.00x |",
            f"| the plan's writer, no check (`write_data` prepared once) | {_us(checks['unchecked'])} "
            f"| {_ratio(checks['unchecked'], public)} |",
            f"| the plan's writer with the value check | {_us(checks['checked'])} "
            f"| {_ratio(checks['checked'], public)} |",
            f"| the value check alone | {_us(checks['check'])} | {_ratio(checks['check'], public)} |",
        ]
    asked = ", ".join(f"{n:,} messages: {total} requests" for n, total in requests.items())
    return "\n".join(
        [
            *lines,
            "",
            *notes,
            "",
            *flow,
            "",
            f"Registry requests (a producer and a consumer factory, encode + decode "
            f"with one CEL rule): {asked}.",
            "",
            "### Against the targets of the compiled codecs",
            "",
            *targets(serdes, e2e, requests, consumed, metered, python_json),
        ]
    )


def _verdict(met: bool) -> str:
    return "**met**" if met else "**missed**"


def targets(
    serdes: list[Row],
    e2e: list[Throughput],
    requests: dict[int, int],
    consumed: dict[str, float] | None,
    metered: list[Row] | None = None,
    python_json: list[Row] | None = None,
) -> list[str]:
    """Each target with the figure this run reached, met or missed."""
    rows = {row.name: row for row in serdes}

    def figures(
        variant: str, formats: tuple[str, ...], figure: Callable[[Row], float]
    ) -> list[tuple[str, float]]:
        found = []
        for fmt in formats:
            for op in ("encode", "decode"):
                row = rows.get(f"{fmt} {op}, {variant}")
                if row is not None and row.ours is not None and row.raw is not None:
                    found.append((f"{fmt} {op}", figure(row)))
        return found

    def line(text: str, found: list[tuple[str, float]], limit: float, unit: str) -> str:
        met = bool(found) and all(value <= limit for _, value in found)
        shown = "; ".join(f"{name} {value:.2f}{unit}" for name, value in found)
        return f"- {text}: {_verdict(met)} ({shown})."

    ratio = lambda row: row.ours / row.raw  # noqa: E731
    out = [
        line(
            "Avro and JSON without rules, at most 1.3x the format library alone",
            figures("no rule", ("avro", "json"), ratio),
            1.3,
            "x",
        ),
        line(
            "Protobuf without rules, at most 1 us above the protobuf library alone",
            figures("no rule", ("protobuf",), lambda row: row.ours - row.raw),
            1.0,
            " us",
        ),
        line(
            "One CEL condition, at most 1.3x (format library + one bare cel-expr-python evaluation)",
            figures("CEL condition", ("avro", "json", "protobuf"), ratio),
            1.3,
            "x",
        ),
        line(
            "One CEL_FIELD transform over the record's fields, at most 3x (format library + the "
            "evaluations it needs)",
            figures("CEL_FIELD transform", ("avro", "json", "protobuf"), ratio),
            3.0,
            "x",
        ),
    ]
    if python_json:
        against = {row.name: row.ours / row.raw for row in python_json if row.ours and row.raw}
        for variant, limit, baseline in (
            ("no rule", 0.25, "json + jsonschema"),
            ("CEL condition", 0.3, "json + jsonschema + one bare cel-expr-python evaluation"),
        ):
            found = [(name.split(",")[0], value) for name, value in against.items() if name.endswith(variant)]
            out.append(line(f"JSON Schema, {variant}, at most {limit}x {baseline}", found, limit, "x"))
    if len(e2e) == len(E2E_ROWS):
        bytes_ratio = e2e[3].both / e2e[0].both
        out.append(
            f"- End to end, Avro with one CEL rule at least 0.6x the BYTES schema: "
            f"{_verdict(bytes_ratio >= 0.6)} ({bytes_ratio:.2f}x; the work itself, with nothing of "
            f"ours, reaches {e2e[2].both / e2e[0].both:.2f}x, and ours is "
            f"{e2e[3].both / e2e[2].both:.2f}x of it)."
        )
        out.append(
            f"- End to end, Avro with one CEL rule faster than pulsar-client's AvroSchema without rules: "
            f"{_verdict(e2e[3].both > e2e[1].both)} ({e2e[3].both:,.0f} vs {e2e[1].both:,.0f} msg/s)."
        )
    if consumed:
        received = consumed[CONSUME_ROWS[0]]
        looped = consumed[CONSUME_ROWS[3]] / received
        out.append(
            f"- Consume loop with one CEL READ rule at least 0.5x a BYTES consumer that only receives "
            f"and acknowledges: {_verdict(looped >= 0.5)} ({looped:.2f}x; the work itself "
            f"{consumed[CONSUME_ROWS[1]] / received:.2f}x; fastavro's decode alone, no rule, "
            f"{consumed[CONSUME_ROWS[4]] / received:.2f}x)."
        )
    if metered:
        costs = [(row.name, row.ours / row.raw) for row in metered if row.ours and row.raw]
        out.append(line("Rule metrics on, at most +10% over the same row with them off", costs, 1.10, "x"))
    out.append(
        f"- Registry requests do not grow with the number of messages: "
        f"{_verdict(len(set(requests.values())) == 1)} ({', '.join(map(str, requests.values()))} requests)."
    )
    from pulsar_external_schema.codec import PLAN_CACHE_SIZE

    out.append(
        f"- Memory: plans are kept per schema and side up to {PLAN_CACHE_SIZE:,} "
        "and confluent-kafka's parsed schemas bounded alike (tests/unit/test_codec_differential.py "
        f"decodes 1,200 distinct schema ids and finds {PLAN_CACHE_SIZE:,} of each)."
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--quick", action="store_true", help="fewer messages end to end")
    parser.add_argument("--messages", type=int, default=0, help="messages end to end (default 50000)")
    args = parser.parse_args()
    service_url = os.environ.get("PULSAR_SERVICE_URL")
    registry_url = os.environ.get("SCHEMA_REGISTRY_URL")
    if not service_url or not registry_url:
        sys.exit(
            'benchmarks: start the services first: scripts/services up && eval "$(scripts/services env)"'
        )
    count = args.messages or (5_000 if args.quick else 50_000)
    started = datetime.datetime.now(datetime.UTC)
    print("CEL engines ...", file=sys.stderr)
    cel = cel_engine_rows()
    print("serdes ...", file=sys.stderr)
    serdes = serde_rows(registry_url)
    print("rule metrics ...", file=sys.stderr)
    metered = metrics_rows(registry_url)
    print("value check ...", file=sys.stderr)
    checks = value_check_rows()
    print("JSON against Python's libraries ...", file=sys.stderr)
    python_json = json_library_rows(registry_url)
    print("end to end ...", file=sys.stderr)
    e2e = end_to_end(service_url, registry_url, count)
    print("consume side ...", file=sys.stderr)
    consumed = consume_side(service_url, registry_url, count)
    print("dead-letter storm ...", file=sys.stderr)
    storm = dead_letter_storm(service_url, registry_url, 2_000 if args.quick else 10_000)
    print("registry requests ...", file=sys.stderr)
    requests = registry_requests(registry_url, (1_000, 10_000 if args.quick else 100_000))
    table = render(cel, serdes, e2e, requests, count, storm, consumed, metered, checks, python_json)
    header = f"Measured {started:%Y-%m-%d} on {machine()}.\n\nVersions: {versions()}.\n"
    print(header)
    print(table)
    if args.write:
        template = (ROOT / "benchmarks" / "benchmarks.md.in").read_text()
        text = template.replace("{{HEADER}}", header.strip()).replace("{{TABLE}}", table)
        (ROOT / "docs" / "benchmarks.md").write_text(text)
        print("wrote docs/benchmarks.md", file=sys.stderr)


if __name__ == "__main__":
    main()
