"""The native extension's side of a write: `value` columns encoded to Avro bodies in one call
(`columnar_encoder`, the extension's `AvroEncoder`), and a task's rows sent by its producers in
one call a batch (`NativeTopic`, native/src/send.rs), where `why_not_native` finds nothing against
it. `rows.TaskWriter` decides which rows go this way; every other goes through pulsar-client.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .. import _native
from ..tasks.conditions import Evaluation, avro_kinds, compile_conditions
from .routing import DETERMINISTIC_BATCHES, keyless_name, keyless_partition

if TYPE_CHECKING:
    from ..codec.plans import ColumnarWrite

__all__ = ["NativeTopic", "columnar_encoder", "why_not_native"]

log = logging.getLogger(__name__)


def why_not_native(writer: str, schema: pa.Schema) -> str | None:
    """Why the native extension cannot send rows of `schema` (`data`, and the optional `key`,
    `properties`, `eventTime`) under the option `writer` (None: it can)."""
    if writer == "python":
        return "option writer=python"
    if _native.extension() is None:
        return _native.why_absent()
    types = {name: schema.field(name).type for name in schema.names}
    if not pa.types.is_binary(types["data"]) and not pa.types.is_large_binary(types["data"]):
        return f"the data column is {types['data']}, not binary"
    key = types.get("key")
    if key is not None and not (pa.types.is_string(key) or pa.types.is_large_string(key)):
        return f"the key column is {key}, not a string"
    given = types.get("properties")
    if given is not None and not (
        pa.types.is_map(given) and all(pa.types.is_string(t) for t in (given.key_type, given.item_type))
    ):
        return f"the properties column is {given}, not map<string, string>"
    if "eventTime" in types and not pa.types.is_timestamp(types["eventTime"]):
        return f"the eventTime column is {types['eventTime']}, not a timestamp"
    return None


def columnar_encoder(
    topic: str, columnar: ColumnarWrite, value_type: pa.DataType
) -> tuple[Any, Evaluation | None] | None:
    """The extension's `AvroEncoder` (`ProtobufEncoder`) of a column of `value_type` and the
    evaluation of the plan's WRITE conditions over it; None where either is missing (the log says
    why)."""
    module = _native.extension()
    assert module is not None  # the native producer's check
    if _extension_typed(value_type):  # the extension sees the storage, Python the type's own values
        log.info("pulsar-external: values to %s are encoded one by one: an extension type", topic)
        return None
    if columnar.format == "PROTOBUF" and columnar.conditions:
        why = "WRITE conditions over Protobuf values are judged on the Python path"
        log.info("pulsar-external: values to %s are encoded one by one: %s", topic, why)
        return None
    try:
        if columnar.format == "PROTOBUF":
            encoder = module.ProtobufEncoder(columnar.writer, columnar.message, value_type, columnar.prefix)
        else:
            encoder = module.AvroEncoder(columnar.writer, value_type, columnar.prefix)
    except module.NativeError as error:
        log.info("pulsar-external: values to %s are encoded one by one: %s", topic, error)
        return None
    if not columnar.conditions:
        return encoder, None
    from .. import _confluent

    kinds = avro_kinds(_confluent.parse_avro(columnar.writer, {}))
    judge = compile_conditions(columnar.conditions, kinds)
    if judge is None:
        why = "a WRITE condition is outside the everyday CEL subset over this schema's fields"
        log.info("pulsar-external: values to %s are encoded one by one: %s", topic, why)
        return None
    return encoder, judge


def _extension_typed(kind: pa.DataType) -> bool:
    """Whether `kind` is, or holds, an Arrow extension type (`arrow.uuid`, `arrow.bool8`, ...)."""
    if isinstance(kind, pa.BaseExtensionType):
        return True
    return any(_extension_typed(kind.field(i).type) for i in range(kind.num_fields))


class NativeTopic:
    """A task's native producers of one topic's `data` rows, routed as the Python path's
    pulsar-client producers route them, so that a task run again on either path sends each row
    to the partition, producer name and sequence id of the first run: on a partitioned topic, a
    keyed row to the partition of its key's BoostHash (pulsar-client's default hashing, computed
    by the extension), a keyless one to the task's partition (`keyless_partition`) under the
    producer name's `keyless_name`, as `TaskWriter.producer` sends them. Each partition's
    producer cuts its own batches, as each partition's producer of pulsar-client does."""

    def __init__(self, client: Any, partitions: list[str], producer_name: str | None, task: int) -> None:
        self.client = client
        self.partitions = partitions
        self.producer_name = producer_name
        self.task = task
        self.producers: dict[tuple[int, bool], Any] = {}

    def _producer(self, partition: int, keyless: bool) -> Any:
        key = (partition, keyless)
        if key not in self.producers:
            name = self.producer_name
            if keyless and name is not None:
                name = keyless_name(name)
            self.producers[key] = self.client.producer(
                self.partitions[partition],
                name,
                batching_max_messages=DETERMINISTIC_BATCHES["batching_max_messages"],
                batching_max_bytes=DETERMINISTIC_BATCHES["batching_max_allowed_size_in_bytes"],
            )
        return self.producers[key]

    def send(self, batch: pa.RecordBatch, first: int | None) -> None:
        count = len(self.partitions)
        if count == 1:
            self._producer(0, False).send(batch, first)
            return
        if first is not None and "sequence_id" not in batch.schema.names:  # each partition gets a
            # share of the rows: their ids go along
            ids = pa.array(range(first, first + batch.num_rows), pa.int64())
            batch = pa.RecordBatch.from_arrays([*batch.columns, ids], [*batch.schema.names, "sequence_id"])
        module = _native.extension()
        assert module is not None
        keys = batch.column("key") if "key" in batch.schema.names else pa.nulls(batch.num_rows, pa.string())
        routed = module.key_partitions(keys, count)
        for partition in pc.unique(routed.drop_null()).to_pylist():
            self._producer(partition, False).send(batch.filter(pc.equal(routed, partition)), first)
        keyless = pc.is_null(routed)
        if pc.any(keyless).as_py():
            self._producer(keyless_partition(self.task, count), True).send(batch.filter(keyless), first)

    def flush(self) -> None:
        for producer in self.producers.values():
            producer.flush()

    def close(self) -> None:
        for producer in self.producers.values():
            producer.close()
