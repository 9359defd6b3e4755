"""What an executor's Python worker keeps from one task to the next: Pulsar clients and the
schemas it decodes with (`kept.py`).

Every task used to build its own Pulsar client, factory and schema, and close them at its end.
The factory alone took a tenth of a second or more: each of its registry clients (the schema's,
and one per encryption executor) loads the system's CA certificates even for an `http://`
registry. Then the schema's plans were fetched from the registry again. For a 100k-row partition
that was a fifth of its read; for a streaming micro-batch of a few hundred rows, most of it.

So a worker keeps them, a few of each, for the options and reader schema of a query: a new reader
version or other options make a new one. A kept schema is what a long-running consumer is: its
plans expire with `cache.latest.ttl.sec` and its rules are the registry's, as for every consumer
of this package.
"""

from __future__ import annotations

import gc
import json
from typing import TYPE_CHECKING, Any

from .kept import Kept
from .kept import close_all as close_all
from .options import SourceOptions

if TYPE_CHECKING:  # the schema's modules load where a task decodes (`decoding_schema`)
    from ..schema import ExternalSchema
    from ..topic_schemas import ForwardedSchemas
    from .schemas import ReaderSchema

#: Pulsar clients kept per worker (one per service URL and credentials).
MAX_CLIENTS = 4
#: Decoding schemas kept per worker (one per query's options and reader schema version).
MAX_SCHEMAS = 8


def _close_client(client: Any) -> None:
    close = getattr(client, "close", None)  # a native client holds nothing to close
    if close is not None:
        close()


def _close_schema(made: tuple[Any, ExternalSchema]) -> None:
    factory, schema = made
    schema.close()
    factory.close()


clients: Kept[Any] = Kept(MAX_CLIENTS, _close_client)
schemas: Kept[tuple[Any, ExternalSchema]] = Kept(MAX_SCHEMAS, _close_schema)
forwarding: Kept[ForwardedSchemas] = Kept(MAX_CLIENTS, lambda kept: kept.close())


def pulsar_client(options: SourceOptions) -> Any:
    """The worker's Pulsar client for `options.client` (the URL, TLS and credentials); the caller
    must not close it."""
    import pulsar  # imported on the executor

    def make() -> Any:
        return options.client.pulsar_client(logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))

    return clients.get(options.client, make)


def native_client(options: SourceOptions, module: Any) -> Any:
    """The worker's client of the native extension `module` (`native.py`) for
    `options.service_url` and token; the caller must not close it. It holds no connection: each
    range read opens its own."""

    def make() -> Any:
        return module.Client(options.service_url, **options.client.native_options())

    return clients.get(("native", options.client), make)


def decoding_schema(options: SourceOptions, reader: ReaderSchema) -> ExternalSchema:
    """The worker's schema that decodes into `reader` with the query's options (`make_schema`);
    the caller must not close it."""
    # The version too: a registry may give versions that differ only in their rules one id.
    key = json.dumps(
        [options.config, options.protobuf_message_class, reader.subject, reader.schema_id, reader.version],
        sort_keys=True,
        default=str,
    )
    from .schemas import make_schema

    return schemas.get(key, lambda: make_schema(options, reader))[1]


def forwarded_schemas(options: SourceOptions, source_topic: str | None) -> ForwardedSchemas:
    """The worker's record of the writer versions registered under the topics it forwards to from
    `source_topic` (`topic_schemas.ForwardedSchemas`), for the query's registry config; the caller
    must not close it. Kept, as a long-running forwarder keeps it: each micro-batch's tasks would
    otherwise make a factory and ask the registry about every version again."""

    def make() -> ForwardedSchemas:
        from ..factory import SchemaRegistrySchemaFactory
        from ..topic_schemas import ForwardedSchemas

        return ForwardedSchemas(SchemaRegistrySchemaFactory(dict(options.config)), source_topic=source_topic)

    return forwarding.get(json.dumps([options.config, source_topic], sort_keys=True, default=str), make)


class RareCollections:
    """CPython's cyclic garbage collector made rare while a task reads a partition; `close()`
    restores it.

    A batch's rows (a dict per value, tuples, lists of properties) all survive until the batch
    becomes Arrow, and none is part of a cycle. With the default thresholds the collector runs every
    ~150 rows and promotes them all, and its older generations then scan every row kept so far:
    measured, the largest single cost of a row on the Python path (cProfile shows it as fastavro's
    time, where the allocations are; docs/spark.md). A young collection every 100,000 allocations
    instead leaves what cycles there are to be collected a little later. The thresholds go back as
    they were when the read is done, unless something else changed them meanwhile. (Writing, a row's
    encode and send cost ten times as much, and the same change measured no difference.)"""

    YOUNG = 100_000

    def __init__(self) -> None:
        self._before = gc.get_threshold()
        self._set = (max(self._before[0], self.YOUNG), *self._before[1:])
        gc.set_threshold(*self._set)

    def close(self) -> None:
        if gc.get_threshold() == self._set:
            gc.set_threshold(*self._before)
