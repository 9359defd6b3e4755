"""JSON Schema topics read natively (`native/src/json_values.rs`) held to the Python path, on the
real broker and registry: `read_table(reader="native")` and `read_table(reader="python")` of the
same topic give the same table, column for column, for generated schemas of every typed column
(strings, integers, numbers, booleans, string enums, nested objects, maps, arrays, nullable
unions) and payloads in and around them: values the schema refuses, integers written `1.0`,
integers a float64 cannot hold, runs of 19 digits, escapes, duplicate keys, bodies that are not
JSON. The rows the extension is not sure of are the Python path's; the rest it decodes itself.
A second test holds a subject of two versions, one part of each a referenced subject's schema.
"""

from __future__ import annotations

import json
from typing import Any

import json_schemas
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import Services
from contracts import unique
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_support import required_extension
from spark_support import Spy, assert_same

from pulsar_external_schema import schema_id as ids
from pulsar_external_schema.arrow import read_table

pytestmark = pytest.mark.integration

names = json_schemas.names


def _leaf() -> Any:
    return st.one_of(
        st.sampled_from(
            [
                {"type": "string"},
                {"type": "integer"},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "string", "maxLength": 3},
                {"type": "integer", "minimum": 0},
                {"type": "number", "maximum": 10},
                {"type": "string", "pattern": "^[a-z]*$"},
                {"enum": ["a", "b", "é"]},
            ]
        ),
    )


typed_schemas = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(
            lambda props, required: {
                "type": "object",
                "properties": props,
                **({"required": sorted(set(required) & set(props))} if set(required) & set(props) else {}),
            },
            st.dictionaries(names, inner, min_size=1, max_size=3),
            st.lists(names, max_size=2),
        ),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda values: {"type": "object", "additionalProperties": values}, inner),
        st.builds(lambda x: {"anyOf": [{"type": "null"}, x]}, inner),
    ),
    max_leaves=6,
)

#: Any JSON value (`json_schemas.values`), and scalars with the edges of a float64 column.
scalars = json_schemas.scalars | st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 0, -0.0, 1.0, 2.5, 1e300])


def shaped(schema: dict[str, Any]) -> Any:
    """Values of the schema's shape, with the scalars of any type in its leaves."""
    if schema.get("type") == "object" and "properties" in schema:
        return st.fixed_dictionaries({}, optional={k: shaped(v) for k, v in schema["properties"].items()})
    if schema.get("type") == "object":
        return st.dictionaries(names, shaped(schema["additionalProperties"]), max_size=3)
    if schema.get("type") == "array":
        return st.lists(shaped(schema["items"]), max_size=3)
    if "anyOf" in schema:
        return st.none() | shaped(schema["anyOf"][1])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | scalars
    typed = {
        "string": st.text(max_size=4),
        "integer": st.integers(-(2**64), 2**64) | st.integers(-5, 20),
        "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**60), 2**60),
        "boolean": st.booleans(),
    }[schema["type"]]
    return st.one_of(typed, typed, scalars)  # mostly of the leaf's type, within its bounds or not


ODD_BODIES = [
    b'{"id": 1e2}',
    b'{"id": 12345678901234567890}',
    b'{"id": 1, "id": 2}',
    b'{"name": "\\u00e9\\ud83d\\ude00"}',
    b'{"name": "\\ud800"}',
    b'  {"tags": []}  ',
    b"not json",
    b"[1, 2]",
    b"null",
    b"",
    b'{"amount": 9007199254740993}',
    b'{"amount": -0.0, "id": -0}',
]


class Topic:
    """A new topic of one partition, its subject's registry, and both readers of it."""

    def __init__(self, services: Services, pulsar_client: Any, spy: Spy, prefix: str) -> None:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        self.client, self.spy = pulsar_client, spy
        self.registry = SchemaRegistryClient({"url": services.registry_url})
        self.name = f"persistent://public/default/{unique(prefix)}"
        self.subject = f"public.default.{self.name.rsplit('/', 1)[1]}-value"
        self.connection = {
            "service_url": services.pulsar_url,
            "admin_url": services.admin_url,
            "config": {"schema.registry.url": services.registry_url},
        }

    def send(self, bodies: list[tuple[int, bytes]], batch: int) -> None:
        """Each body with the registry's schema id, in batched entries of at most `batch`."""
        producer = self.client.create_producer(self.name, batching_enabled=True, batching_max_messages=batch)
        for schema_id, body in bodies:
            property_ = ids.to_property(ids.confluent_id(schema_id))
            producer.send_async(body, lambda *_: None, properties={ids.SCHEMA_ID_PROPERTY: property_})
        producer.flush()
        producer.close()

    def read_both(self) -> tuple[pa.Table, pa.Table, int]:
        """The native and the Python path's tables (the same, column for column), and the rows
        the extension decoded."""
        before = self.spy.native_rows
        native = read_table(self.name, reader="native", **self.connection)  # type: ignore[arg-type]
        decoded_natively = self.spy.native_rows - before
        python = read_table(self.name, reader="python", **self.connection)  # type: ignore[arg-type]
        assert_same(native, python)
        return native, python, decoded_natively


def test_generated_json_schemas_read_natively_as_the_python_path_reads_them(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from confluent_kafka.schema_registry import Schema

    from pulsar_external_schema.reading.types import json_typed

    required_extension()
    spy = Spy(monkeypatch)
    totals = {"native": 0, "valid": 0}

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: Any) -> None:
        properties = data.draw(st.dictionaries(names, typed_schemas, min_size=1, max_size=4))
        schema = {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": properties,
        }
        assert json_typed(schema)
        values = data.draw(st.lists(shaped(schema) | json_schemas.values, min_size=1, max_size=20))
        odd = data.draw(st.lists(st.sampled_from(ODD_BODIES), max_size=4))
        bodies = [json.dumps(v, ensure_ascii=data.draw(st.booleans())).encode() for v in values] + odd
        topic = Topic(services, pulsar_client, spy, "json-native")
        schema_id = topic.registry.register_schema(topic.subject, Schema(json.dumps(schema), "JSON"))
        topic.send([(schema_id, body) for body in bodies], batch=7)
        _, python, decoded_natively = topic.read_both()
        assert python.num_rows == len(bodies)
        valid = sum(python.column("_valid").to_pylist())
        assert decoded_natively <= valid  # a row the extension decodes is a valid one
        totals["native"] += decoded_natively
        totals["valid"] += valid

    check()
    # most valid rows are plain values orjson reads as serde_json does: the extension's own
    assert totals["native"] >= totals["valid"] // 2 > 0, totals


def test_two_versions_with_a_reference_read_natively_as_the_python_path_reads_them(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic written with two versions of a subject, each with a part given by a referenced
    subject (`$ref`), and a second version adding parts: every body checked against its own
    version (two native writers into one column), the column typed from the latest one."""
    from confluent_kafka.schema_registry import Schema

    from pulsar_external_schema.reading.types import json_typed

    required_extension()
    spy = Spy(monkeypatch)
    totals = {"native": 0, "valid": 0}

    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def check(data: Any) -> None:
        part = data.draw(typed_schemas.filter(lambda s: s.get("type") == "object" and "properties" in s))
        first = data.draw(st.dictionaries(names, typed_schemas, min_size=1, max_size=3))
        added = data.draw(st.dictionaries(names, typed_schemas, min_size=1, max_size=2))
        draft = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
        v2_properties = {**added, **first, "part": {"$ref": "part.json"}}
        v1 = {**draft, "properties": {**first, "part": {"$ref": "part.json"}}}
        v2 = {**draft, "properties": v2_properties}
        topic = Topic(services, pulsar_client, spy, "json-native-versions")
        registry, subject, part_subject = topic.registry, topic.subject, f"{topic.subject}-part"
        registry.register_schema(part_subject, Schema(json.dumps(part), "JSON"))
        reference = [{"name": "part.json", "subject": part_subject, "version": 1}]
        ids_ = []
        for version in (v1, v2):
            ids_.append(
                registry.register_schema(
                    subject,
                    Schema.from_dict(
                        {"schema": json.dumps(version), "schemaType": "JSON", "references": reference}
                    ),
                )
            )
            registry.set_compatibility(subject, "NONE")
        assert json_typed(v2, {"part.json": part})
        resolved = {**v2, "properties": {**v2_properties, "part": part}}
        values = data.draw(
            st.lists(
                st.tuples(st.sampled_from(ids_), shaped(resolved) | json_schemas.values),
                min_size=2,
                max_size=20,
            )
        )
        topic.send([(schema_id, json.dumps(value).encode()) for schema_id, value in values], batch=5)
        _, python, decoded_natively = topic.read_both()
        assert python.num_rows == len(values)
        assert set(python.column("schemaId").to_pylist()) <= set(ids_)
        valid = sum(python.column("_valid").to_pylist())
        assert decoded_natively <= valid
        totals["native"] += decoded_natively
        totals["valid"] += valid

    check()
    assert totals["native"] >= totals["valid"] // 2 > 0, totals


def test_read_conditions_over_json_schema_values_judged_over_the_batch(
    services: Services, pulsar_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON Schema subject with READ conditions: those naming required string, integer, boolean
    and list fields are judged over the batch (the rows they pass take no Python step), one
    naming a number is not (its rows are the Python path's); both readers give the same table."""
    from confluent_kafka.schema_registry import Schema

    from pulsar_external_schema.reading import native

    required_extension()
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ok": {"type": "boolean"},
            "score": {"type": "number"},
            "note": {"type": "string"},
        },
        "required": ["id", "name", "tags", "ok", "score"],
    }
    python_rows: list[int] = []
    with_python_rows = native.Finisher._with_python_rows

    def counting(finisher: Any, batch: Any, finished: Any, pending: Any, judged: Any) -> Any:
        python_rows.append(int(pc.sum(pending).as_py()))
        return with_python_rows(finisher, batch, finished, pending, judged)

    monkeypatch.setattr(native.Finisher, "_with_python_rows", counting)
    spy = Spy(monkeypatch)
    values = [
        {
            "id": i,
            "name": "n" * (i % 4),
            "tags": ["t"] * (i % 3),
            "ok": i % 5 != 0,
            "score": i / 2,
            "note": "x",
        }
        for i in range(60)
    ]
    for rules, judged_here in (
        (
            [
                ("short", "size(message.name) < 3 && message.id < 50"),
                ("tagged", "message.ok || size(message.tags) > 0"),
            ],
            True,
        ),
        ([("scored", "message.score < 20.0")], False),
    ):
        topic = Topic(services, pulsar_client, spy, "json-native-rules")
        domain = [
            {"name": n, "kind": "CONDITION", "type": "CEL", "mode": "READ", "expr": e, "onFailure": "ERROR"}
            for n, e in rules
        ]
        schema_id = topic.registry.register_schema(
            topic.subject,
            Schema.from_dict(
                {"schemaType": "JSON", "schema": json.dumps(schema), "ruleSet": {"domainRules": domain}}
            ),
        )
        topic.send([(schema_id, json.dumps(value).encode()) for value in values], batch=16)
        python_rows.clear()
        _, python_table, decoded_natively = topic.read_both()
        failed = python_table.num_rows - sum(python_table.column("_valid").to_pylist())
        assert decoded_natively == len(values)
        if judged_here:
            # `short` fails where the name has 3 letters or the id is 50 or more; `tagged` where
            # neither ok nor tagged (i % 5 == 0 and i % 3 == 0)
            expected = sum(1 for i in range(60) if not (i % 4 < 3 and i < 50) or (i % 5 == 0 and i % 3 == 0))
            assert failed == expected > 0
            assert sum(python_rows) == failed  # only the failing rows took the Python path
        else:
            assert failed == 60 - 40  # score = id / 2 < 20 for ids below 40
            assert sum(python_rows) == 60  # a number: not judged over the batch
