"""Rows on an executor (reading/rows.py): a value that does not fit its column; a message the client
delivers again after a reconnect."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[spark,dev]'")


from pulsar_external_schema.errors import ExternalSchemaError
from pulsar_external_schema.reading.rows import Rows
from pulsar_external_schema.reading.types import json_type


class _Id:
    def __init__(self, ledger: int, entry: int, batch: int) -> None:
        self.place = (ledger, entry, batch)

    def ledger_id(self) -> int:
        return self.place[0]

    def entry_id(self) -> int:
        return self.place[1]

    def batch_index(self) -> int:
        return self.place[2]


class _Message:
    """What the range reader asks of pulsar-client's messages."""

    def __init__(self, ledger: int, entry: int, batch: int, value: Any = None) -> None:
        self.id = _Id(ledger, entry, batch)
        self.value = value

    def message_id(self) -> _Id:
        return self.id

    def properties(self) -> dict[str, str]:
        return {}

    def partition_key(self) -> str:
        return ""

    def publish_timestamp(self) -> int:
        return 1_000

    def event_timestamp(self) -> int:
        return 0

    def data(self) -> bytes:
        return b""


def test_a_value_that_does_not_fit_its_column_makes_its_row_invalid_not_the_batch() -> None:
    import pyarrow as pa

    from pulsar_external_schema.tasks.columns import read_schema

    value_type, convert = json_type(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    arrow = read_schema(value_type, include_data=False)
    rows = Rows(False, None, "persistent://t/n/a", 0)

    for i, value in enumerate([{"n": 1}, {"n": "one"}, {"n": 3}, {"n": 2**63}]):
        rows.add(_Message(1, i, -1, value), (1, i), -1, lambda msg, properties: msg.value)
    batch = rows.batch(arrow, arrow.field("value").type, convert)
    assert batch.schema == arrow
    table = pa.Table.from_batches([batch]).to_pylist()
    assert [r["_valid"] for r in table] == [True, False, True, False]  # 2**63: past an int64
    assert [r["value"] for r in table] == [{"n": 1}, None, {"n": 3}, None]
    error = table[1]["_error"]
    assert "message ledger 1 entry 1 batch index -1 of persistent://t/n/a" in error
    assert "does not fit the value column typed from the reader schema: expected an integer" in error
    assert dict(table[1]["_failure"])["__rule.topic"] == "persistent://t/n/a"


class _RedeliveringReader:
    """pulsar-client's reader after a reconnect: what it had received comes again."""

    def __init__(self, places: list[tuple[int, int, int]]) -> None:
        self.messages = [_Message(*place) for place in places]

    def has_message_available(self) -> bool:
        return bool(self.messages)

    def read_next(self, timeout_ms: int) -> _Message:
        return self.messages.pop(0)

    def close(self) -> None:
        pass


def _read_all(
    monkeypatch: pytest.MonkeyPatch, reader: _RedeliveringReader, end: tuple[int, int]
) -> list[Any]:
    from spark_support import offline_options

    from pulsar_external_schema.reading import rows
    from pulsar_external_schema.reading.planning import TopicPartitionRange
    from pulsar_external_schema.tasks.offsets import EARLIEST, Bound
    from pulsar_external_schema.tasks.schemas import ReaderSchema

    class Client:
        def create_reader(self, *args: Any, **kwargs: Any) -> _RedeliveringReader:
            return reader

    class Schema:
        def decode_message(self, msg: _Message, **kwargs: Any) -> dict[str, int]:
            return {"n": msg.id.place[2]}

    monkeypatch.setattr(rows, "pulsar_client", lambda options: Client())
    monkeypatch.setattr(rows, "decoding_schema", lambda options, reader: Schema())
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    reader_schema = ReaderSchema("s-value", "JSON", json.dumps(schema), 1, 1)
    value_type, _ = json_type(json.dumps(schema))
    part = TopicPartitionRange("persistent://t/n/a", EARLIEST, Bound(*end, -1, True))
    options = offline_options(topic="persistent://t/n/a", **{"read.timeout.ms": "3000"})
    batches = list(rows.read_partition(options, reader_schema, value_type, part))
    return [tuple(m.values()) for b in batches for m in b.column("messageId").to_pylist()]


class _UnloadedReader(_RedeliveringReader):
    """A reader whose broker cannot say, for a while, whether more messages follow (pulsar-client
    raises while its topic is unloaded)."""

    def __init__(self, places: list[tuple[int, int, int]], failures: list[Exception]) -> None:
        super().__init__(places)
        self.failures = failures

    def has_message_available(self) -> bool:
        if self.failures:
            raise self.failures.pop(0)
        return super().has_message_available()


def test_a_broker_that_cannot_say_whether_more_follow_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulsar

    failures: list[Exception] = [pulsar.BrokerMetadataError("x"), pulsar.NotConnected("y")]
    reader = _UnloadedReader([(5, 0, -1), (5, 1, -1)], failures)
    assert _read_all(monkeypatch, reader, (5, 1)) == [(5, 0, -1), (5, 1, -1)]
    gone = _UnloadedReader([(5, 0, -1)], [pulsar.TopicNotFound("deleted")])
    with pytest.raises(ExternalSchemaError) as raised:
        _read_all(monkeypatch, gone, (5, 1))
    assert str(raised.value).startswith("partition persistent://t/n/a: the broker could not say")
    assert "TopicNotFound" in str(raised.value)


def test_a_message_the_client_delivers_again_after_a_reconnect_is_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # entries 5:0 and 5:1 of three messages each; the reader reconnects after 5:0:1, then after
    # 5:1:2, and is given 5:0:1 and 5:1:1..2 again
    delivered = [(5, 0, 0), (5, 0, 1), (5, 0, 1), (5, 0, 2), (5, 1, 0), (5, 1, 1), (5, 1, 2)]
    delivered += [(5, 1, 1), (5, 1, 2), (5, 2, -1)]
    assert _read_all(monkeypatch, _RedeliveringReader(delivered), (5, 2)) == sorted(set(delivered))
