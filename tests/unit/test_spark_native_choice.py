"""Which reader a query takes (reading/native.py `choose`): the native one where it can read the
query, else the Python path, with the reason said once; `reader=native` refuses instead."""

from __future__ import annotations

import json
import logging
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")

from spark_support import offline_options

from pulsar_external_schema import _native
from pulsar_external_schema.errors import ConfigError
from pulsar_external_schema.reading import native
from pulsar_external_schema.reading.decoders import arrow_value_type
from pulsar_external_schema.registered_schema import RegisteredSchema

RECORD = {"type": "record", "name": "A", "fields": [{"name": "n", "type": "long"}]}


def reader(schema: Any = RECORD, schema_type: str = "AVRO", references: Any = ()) -> RegisteredSchema:
    text = json.dumps(schema)
    return RegisteredSchema("a-value", schema_type, text, 1, 1, references=references)


def why(schema: RegisteredSchema, **options: str) -> str | None:
    source = offline_options(**options)
    value_type, _ = arrow_value_type(schema, source)
    return native.why_not(source, schema, value_type)


def test_an_avro_subject_on_pulsar_is_read_natively(native_extension: ModuleType) -> None:
    assert why(reader()) is None


def test_what_falls_back_says_why(native_extension: ModuleType) -> None:
    assert "has no typed column" in (why(reader({"type": "object"}, "JSON")) or "")
    assert why(reader(), **{"service.url": "pulsar+ssl://x:6651"}) is None  # TLS: rustls
    union = {**RECORD, "fields": [{"name": "u", "type": ["long", "string"]}]}
    assert "no native reading" in (why(reader(union)) or "")
    plain = {"type": "record", "name": "P", "namespace": "", "fields": [{"name": "n", "type": "long"}]}
    mixed = {"type": "record", "name": "A", "namespace": "app", "fields": [{"name": "p", "type": plain}]}
    assert "null namespace" in (why(reader(mixed)) or "")


KIND = {"type": "enum", "name": "Kind", "namespace": "shared", "symbols": ["A", "B"]}
ADDRESS = {
    "type": "record",
    "name": "Address",
    "namespace": "shared",
    "fields": [{"name": "street", "type": "string"}, {"name": "kind", "type": "shared.Kind"}],
}
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "app",
    "fields": [
        {"name": "home", "type": "shared.Address"},
        {"name": "work", "type": ["null", "shared.Address"], "default": None},
        {"name": "kinds", "type": {"type": "array", "items": "shared.Kind"}},
    ],
}


def test_a_schema_with_references_is_read_natively_as_one_text(native_extension: ModuleType) -> None:
    """References, and references of references, are written into the text the extension takes:
    each named type at its first use (as a name and its namespace), by its full name after,
    nothing left to look up."""
    import fastavro

    referencing = reader(
        ORDER, references=(("shared.Kind", json.dumps(KIND)), ("shared.Address", json.dumps(ADDRESS)))
    )
    assert why(referencing) is None
    text = native.reader_json(referencing)
    assert text is not None
    standalone = json.loads(text)
    fastavro.parse_schema(standalone)  # no named_schemas: it defines what it uses
    home = standalone["fields"][0]["type"]
    kind = home["fields"][1]["type"]
    assert (home["name"], home["namespace"], kind["name"], kind["namespace"]) == (
        "Address",
        "shared",
        "Kind",
        "shared",
    )
    assert standalone["fields"][1]["type"] == ["null", "shared.Address"]
    assert standalone["fields"][2]["type"]["items"] == "shared.Kind"


def test_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_native, "extension", lambda: None)
    assert "the native extension is" in (why(reader()) or "")


def test_the_reader_option(native_extension: ModuleType, caplog: pytest.LogCaptureFixture) -> None:
    json_schema = reader({"type": "object"}, "JSON")
    value_type, _ = arrow_value_type(json_schema, offline_options())
    with caplog.at_level(logging.INFO, logger=native.__name__):
        assert native.choose(offline_options(), json_schema, value_type) is False
    assert "read on the Python path" in caplog.text and "has no typed column" in caplog.text
    with pytest.raises(ConfigError, match="reader=native: a part of the JSON Schema has no typed column"):
        native.choose(offline_options(reader="native"), json_schema, value_type)
    typed = reader(
        {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}, "JSON"
    )
    assert native.choose(offline_options(), typed, arrow_value_type(typed, offline_options())[0]) is True
    avro = reader()
    avro_type, _ = arrow_value_type(avro, offline_options())
    assert native.choose(offline_options(reader="python"), avro, avro_type) is False
    assert native.choose(offline_options(), avro, avro_type) is True
    with pytest.raises(ConfigError, match="option 'reader' takes auto, native, python"):
        offline_options(reader="fast")


def _planned_source(monkeypatch: pytest.MonkeyPatch, schema: RegisteredSchema, **options: str) -> Any:
    """The data source as Spark pickles it once it has asked its schema (`create_data_source`),
    its reader schema resolved offline."""
    from pulsar_external_schema.reading import decoders, planning
    from pulsar_external_schema.spark import source

    monkeypatch.setattr(decoders, "resolve_reader_schema", lambda *_: schema)
    monkeypatch.setattr(planning.Planner, "topics", lambda *_: ["persistent://public/default/t"])
    planned = source.PulsarExternalDataSource(
        {
            "service.url": "pulsar://x:6650",
            "admin.url": "http://x:8080",
            "schema.registry.url": "http://r",
            "topic": "t",
            **options,
        }
    )
    planned.schema()
    return planned


def pickled(thing: Any) -> bytes:
    """`thing` pickled as Spark's cloudpickle pickles an instance of an importable class."""
    import pickle

    return pickle.dumps(thing)


#: What a read's executors load and planning never uses: the serdes, the codec, the registry's
#: client, the extension, pulsar-client.
EXECUTORS_ONLY = (
    "pulsar_external_schema.codec",
    "pulsar_external_schema.factory",
    "pulsar_external_schema.reading.rows",
    "pulsar_external_schema.reading.native",
    "confluent_kafka.schema_registry",
    "_pulsar_external_schema_native",
    "fastavro",
    "pulsar",
)


def test_a_streaming_querys_planner_loads_none_of_the_executors_modules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Spark starts a fresh process for each streaming query to plan its offsets
    (`python_streaming_source_runner`): it unpickles the data source and makes the stream reader.
    The executors' modules cost that process ~0.4 s of imports a query, which planning never
    uses."""
    import subprocess
    import sys

    planned = _planned_source(monkeypatch, reader())
    (tmp_path / "source.pickle").write_bytes(pickled(planned))
    (tmp_path / "schema.json").write_text(planned.schema().json())
    runner = f"""
import json, sys
import pyspark.sql.datasource
from pyspark.serializers import CloudPickleSerializer
from pyspark.sql.types import _parse_datatype_json_string
source = CloudPickleSerializer().loads(open({str(tmp_path / "source.pickle")!r}, "rb").read())
reader = source.streamReader(_parse_datatype_json_string(open({str(tmp_path / "schema.json")!r}).read()))
reader.getDefaultReadLimit()
print(json.dumps(sorted(sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", runner], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "pulsar_external_schema.spark.reader" in loaded
    assert [m for m in loaded if any(m == e or m.startswith(e + ".") for e in EXECUTORS_ONLY)] == []


def test_the_path_is_chosen_where_spark_pickles_the_reader_for_its_executors(
    native_extension: ModuleType, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Once a query, on the driver: the executors get the choice, and `reader=native` on a
    subject it cannot read fails the query there, not in each task."""
    import pickle

    planned = _planned_source(monkeypatch, reader({"type": "object"}, "JSON"))
    with caplog.at_level(logging.INFO, logger=native.__name__):
        shipped = pickle.loads(pickled(planned.reader(planned.schema())))
    assert shipped.__dict__["native"] is False
    assert caplog.text.count("read on the Python path") == 1
    avro = _planned_source(monkeypatch, reader())
    assert pickle.loads(pickled(avro.streamReader(avro.schema()))).__dict__["native"] is True
    refused = _planned_source(monkeypatch, reader({"type": "object"}, "JSON"), reader="native")
    stream = refused.streamReader(refused.schema())  # the offsets' planner makes it, and chooses nothing
    with pytest.raises(ConfigError, match="reader=native: a part of the JSON Schema has no typed column"):
        pickled(stream)


#: The columns the validation job forwards (`pipeline._FORWARDED_COLUMNS`, less the ones it drops).
FORWARDED: dict[str, Any] = {
    "key": "string",
    "data": "binary",
    "properties": ("map", "string", "string"),
    "eventTime": "timestamp",
}
TYPES = {"string": "string", "binary": "binary", "int": "int32", "timestamp": None}


def sink_why(
    monkeypatch: pytest.MonkeyPatch, columns: dict[str, Any] = FORWARDED, **options: str
) -> str | None:
    """Why the sink's task would send `data` rows with pulsar-client (`writing.native`)."""
    import pyarrow as pa

    from pulsar_external_schema.writing.native import why_not_native

    def arrow(kind: Any) -> pa.DataType:  # as Spark gives its columns
        if isinstance(kind, tuple):
            return pa.map_(arrow(kind[1]), arrow(kind[2]))
        return pa.timestamp("us", tz="UTC") if kind == "timestamp" else pa.type_for_alias(TYPES[kind])

    schema = pa.schema([(name, arrow(kind)) for name, kind in columns.items()])
    return why_not_native(offline_options(topic="t", **options).writer, schema)


def test_the_sinks_data_rows_are_sent_natively_where_they_can_be(
    native_extension: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sink_why(monkeypatch) is None
    assert sink_why(monkeypatch, {"data": "binary"}) is None
    assert sink_why(monkeypatch, writer="python") == "option writer=python"
    assert sink_why(monkeypatch, FORWARDED, **{"service.url": "pulsar+ssl://x:6651"}) is None
    assert "key column is int32" in (sink_why(monkeypatch, {**FORWARDED, "key": "int"}) or "")
    assert "not map<string, string>" in (
        sink_why(monkeypatch, {**FORWARDED, "properties": ("map", "string", "int")}) or ""
    )
    monkeypatch.setattr(_native, "extension", lambda: None)
    assert "the native extension is" in (sink_why(monkeypatch) or "")


def test_the_writer_option(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    import pyarrow as pa

    from pulsar_external_schema.writing import rows as writer

    schema = pa.schema([("data", pa.binary())])
    monkeypatch.setattr(_native, "extension", lambda: None)
    for given, expected in (("native", "ConfigError"), ("auto", None), ("python", None)):
        task = writer.TaskWriter(offline_options(topic="t", writer=given), 1, 0)
        try:
            with caplog.at_level(logging.INFO, logger=writer.__name__):
                if expected:
                    with pytest.raises(ConfigError, match="option writer=native: the native extension is "):
                        task._native_producer("persistent://public/default/t", schema)
                else:
                    assert task._native_producer("persistent://public/default/t", schema) is None
        finally:
            task.close()
    assert caplog.text.count("are sent by pulsar-client") == 1  # auto says why; python was asked for
    with pytest.raises(ConfigError, match="option 'writer' takes auto, native, python"):
        offline_options(writer="fast")


def test_writer_native_refuses_rows_that_name_their_topics() -> None:
    import pyarrow as pa

    from pulsar_external_schema.writing import rows as writer

    task = writer.TaskWriter(offline_options(topic="t", writer="native"), 1, 0)
    rows = pa.RecordBatch.from_pydict({"topic": ["a"], "data": [b"x"]})
    try:
        with pytest.raises(ConfigError, match="writer=native: the rows have a 'topic' column"):
            task.write(rows)
    finally:
        task.close()
