"""What a Spark worker keeps between tasks (tasks/executor.py): its decoding schema, rare collections."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


from pulsar_external_schema import ExternalSchemaError
from pulsar_external_schema.tasks.options import SourceOptions


def test_a_worker_keeps_its_decoding_schema_for_the_next_task_of_the_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pulsar_external_schema import _confluent
    from pulsar_external_schema.registered_schema import RegisteredSchema
    from pulsar_external_schema.tasks import executor

    def options_of(registry: str) -> SourceOptions:
        return SourceOptions.parse({"service.url": "pulsar://x:6650", "schema.registry.url": registry})

    options = options_of("mock://kept-schemas")
    text = json.dumps({"type": "record", "name": "A", "fields": [{"name": "n", "type": "long"}]})

    def reader(version: int, schema_id: int | None = None) -> RegisteredSchema:
        return RegisteredSchema("a-value", "AVRO", text, schema_id or version, version)

    monkeypatch.setattr(executor.schemas, "most", 2)
    # Nothing is registered in this mock registry: the versions are not looked up to pin them.
    monkeypatch.setattr(_confluent, "pin_schema_id", lambda *args: None)
    try:
        first = executor.decoding_schema(options, reader(1))
        assert executor.decoding_schema(options, reader(1)) is first  # the next task's
        second = executor.decoding_schema(options, reader(2))  # another reader version: its own
        assert second is not first
        # a version that only adds rules may keep the id (AxonOps): its own schema too
        assert executor.decoding_schema(options, reader(3, schema_id=1)) is not first
        executor.close_all()
        first = executor.decoding_schema(options, reader(1))
        second = executor.decoding_schema(options, reader(2))
        other = SourceOptions.parse(
            {**{"service.url": "pulsar://x:6650", "topic": "a"}, "schema.registry.url": "mock://other"}
        )
        executor.decoding_schema(other, reader(1))  # a third: the least recently used is closed
        with pytest.raises(ExternalSchemaError, match="closed"):
            first.decode("a", b"\x02", b"\xff\x00\x00\x00\x00\x01")
        assert executor.decoding_schema(options, reader(2)) is second
    finally:
        executor.close_all()
    with pytest.raises(ExternalSchemaError, match="closed"):
        second.decode("a", b"\x02", b"\xff\x00\x00\x00\x00\x01")


def test_reading_a_partition_makes_collections_rare_and_restores_them() -> None:
    import gc

    from pulsar_external_schema.tasks.executor import RareCollections

    before = gc.get_threshold()
    rare = RareCollections()
    assert gc.get_threshold()[0] == max(before[0], RareCollections.YOUNG)
    assert gc.get_threshold()[1:] == before[1:]
    rare.close()
    assert gc.get_threshold() == before
    rare = RareCollections()
    gc.set_threshold(5_000)  # changed meanwhile by someone else: theirs stays
    rare.close()
    assert gc.get_threshold()[0] == 5_000
    gc.set_threshold(*before)
