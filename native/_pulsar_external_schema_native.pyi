"""Types of the native extension (`native/src/lib.rs`), which only `pulsar_external_schema._native`
imports; through it, its users are `pulsar_external_schema.reading` (`executor`: `Client`;
`native`: `check_reader`, `RangeReader`), `writing.rows` (`Producer`, `AvroEncoder`, `ProtobufEncoder`,
`key_partitions`), `codec.json_validation` (`JsonSchemaCheck`), `codec.json` (`JsonCodec`) and
`codec.part` (`DirectWriter`, `DirectReader`: a compiled plan in one call) and `schema` (`Encoder`). This
stub is the one list of the extension's Python API: tests/unit/test_native_api.py holds the built
module to it, name for name and parameter for parameter.

`_testing` (last) is a submodule of what only the tests and benchmarks call, typed here as a
namespace of its functions: the range reader's and the producer's decisions, which
tests/unit/test_native_twins.py holds to their Python twins, and a client's receiving alone."""

from collections.abc import Callable, Iterator
from typing import Any, TypeAlias

import pyarrow as pa

__version__: str
#: The version of this API, which `pulsar_external_schema._native` checks (bumped with every change here).
ABI: int

class NativeError(Exception): ...

#: (ledger, entry, batch index, inclusive), as `spark.offsets.Bound` (a type of this stub only).
Position: TypeAlias = tuple[int, int, int, bool]

def check_reader(reader_schema: str, value_type: pa.DataType) -> str | None: ...
def key_partitions(keys: pa.Array, partitions: int) -> pa.Int32Array: ...

class AvroEncoder:
    """Arrow rows into Avro bodies as fastavro writes their Python values; raises NativeError
    (why) where it is not sure of the pair of schema and type."""

    def __init__(self, schema: str, value_type: pa.DataType, prefix: bytes) -> None: ...
    def encode(self, column: pa.Array) -> pa.BinaryArray:
        """Each row's body after `prefix`; null for a row the Python path is to write."""

class ProtobufEncoder:
    """Arrow rows into Protobuf bodies as protobuf writes the message the Python path builds of
    each row; raises NativeError (why) where it is not sure of the pair of message and type."""

    def __init__(self, descriptor_set: str, message: str, value_type: pa.DataType, prefix: bytes) -> None: ...
    def encode(self, column: pa.Array) -> pa.BinaryArray:
        """Each row's body after `prefix`; null for a row the Python path is to write."""

class Client:
    def __init__(
        self,
        service_url: str,
        *,
        auth_token: str | Callable[[], str] | None = None,
        tls_trust_certs_file_path: str | None = None,
        tls_certificate_file_path: str | None = None,
        tls_key_file_path: str | None = None,
        tls_hostname_verification: bool = False,
        tls_allow_insecure_connection: bool = False,
        operation_timeout_ms: int = 30_000,
        connection_timeout_ms: int = 10_000,
    ) -> None: ...
    def read(
        self,
        topic: str,
        start: Position | None,
        end: Position,
        schema: pa.Schema,
        reader_schema: str,
        writer: Callable[[int], tuple[str, str, list[tuple[str, str]], str, int] | None],
        *,
        rows_per_batch: int = 8192,
        read_timeout_ms: int = 30_000,
    ) -> RangeReader: ...
    def producer(
        self,
        topic: str,
        producer_name: str | None = None,
        *,
        batching_max_messages: int = 1000,
        batching_max_bytes: int = 131_072,
    ) -> Producer: ...

class RangeReader(Iterator[pa.RecordBatch]):
    def __iter__(self) -> RangeReader: ...
    def __next__(self) -> pa.RecordBatch: ...
    @property
    def handover(self) -> tuple[tuple[int, int, int] | None, str] | None: ...
    def close(self) -> None: ...

class Producer:
    def send(self, batch: pa.RecordBatch, first_sequence_id: int | None = None) -> None: ...
    def flush(self) -> int: ...
    def close(self) -> None: ...

class JsonSchemaCheck:
    def __init__(self, schema: str, resources: list[tuple[str, str]], base_uri: str) -> None: ...
    def takes(self, value: Any) -> bool: ...

class JsonCodec:
    def __init__(
        self,
        check: JsonSchemaCheck,
        *,
        loads: Callable[[bytes], Any],
        dumps: Callable[[Any], bytes],
        read_otherwise: Callable[[Any], Any] | None,
        write_otherwise: Callable[[Any], bytes] | None,
    ) -> None: ...
    def write(self, value: Any) -> bytes: ...
    def read(self, payload: Any) -> Any: ...

class DirectWriter:
    def __init__(
        self,
        write: Callable[[Any], bytes],
        *,
        prefix: bytes,
        schema_id: bytes,
        expires_in: float | None,
        key_parts: list[bool],
        clear_original_key: Callable[[], None],
    ) -> None: ...
    def __call__(self, value: Any) -> tuple[bytes, bytes] | None: ...

class Encoder:
    def __init__(
        self,
        schema: Any,
        *,
        writers: dict[str, tuple[Any, float]],
        encode_data: type[tuple[Any, ...]],
        with_id: bool,
        with_context: bool,
        planned: Callable[..., Any],
        other: Callable[..., Any],
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def close(self) -> None: ...

class DirectReader:
    def __init__(
        self,
        read: Callable[[Any], Any],
        *,
        longest: int,
        check: Callable[[Any], Any] | None,
        expires_in: float | None,
        key_parts: list[bool],
        clear_original_key: Callable[[], None],
        fallback: object,
    ) -> None: ...
    def __call__(self, payload: Any) -> Any: ...

class _testing:
    """A submodule (`_pulsar_external_schema_native._testing`): not the package's API."""

    @staticmethod
    def drain(client: Client, topic: str) -> int:
        """Receives every message of `topic` and drops it; their number."""
    @staticmethod
    def batch_starts(sizes: list[int], batching_max_messages: int, batching_max_bytes: int) -> list[int]: ...
    @staticmethod
    def framing(
        properties: dict[str, str], payload: bytes, schema_id: bytes | None = None
    ) -> tuple[int | None, int, bool]: ...
    @staticmethod
    def values(
        spec: tuple[str, str, list[tuple[str, str]], str, int] | None,
        value_type: pa.DataType,
        reader_schema: str,
        bodies: list[bytes],
    ) -> tuple[pa.Array, list[bool]]:
        """The value column the range reader makes of one writer's bodies (after the Confluent
        id), and which rows it decoded (the rest: null, the Python path's)."""
    @staticmethod
    def range_place(
        start: Position | None, end: Position, last_written: tuple[int, int], place: tuple[int, int, int]
    ) -> tuple[str, bool]: ...
