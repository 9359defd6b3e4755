"""`produce` and `consume`: JSON lines in and out of a topic, through its external schemas.

The Pulsar counterparts of Confluent's `kafka-avro-console-producer` and `-consumer`. Every record
goes through the data contract of its schema; a record that fails is reported on stderr as one
line with its line number (or message number and id), is never lost (the console producer never
sent it; the console consumer leaves it unacknowledged or copies it to `--dead-letter-topic`),
and makes the exit code 1.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

import pulsar

from .._signal import InternalSignal
from ..consumer import consume
from ..deadletter import RULE_MODE, RULE_NAME, RULE_TOPIC, Fate, fate
from ..errors import (
    ConfigError,
    DeadLetteredError,
    ExternalSchemaError,
    RegistryUnavailableError,
    SubjectNotFoundError,
)
from ..producer import create_producer
from ..schema_id import SCHEMA_ID_PROPERTY
from ..subjects import split_topic
from . import signals
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    CommandError,
    UsageError,
    connection,
    fail,
    json_argument,
    plural,
    require,
    schema_config,
    schema_text,
    serve_rule_metrics,
)
from .habits import settle
from .progress import Progress
from .records import RecordError, decode_line, dumps
from .schemas import Resolved, SchemaArguments, for_consume, for_produce

# -- produce -----------------------------------------------------------------------------------


def run_produce(args: argparse.Namespace) -> int:
    try:
        settle(args, producing=True)
        connection(args)
        require(args, "service_url", "registry_url")
        _check_service_url(args.service_url)
        serve_rule_metrics(args)
        given = _schema_arguments(args, producing=True)
        source = _open_input(args.input) if args.message is None else _given_records(args.message)
        client = _client(args)
    except CommandError as error:
        return fail("produce", error)
    try:
        return _produce(args, client, given, source)
    except (CommandError, ExternalSchemaError) as error:
        return fail("produce", error)
    finally:
        client.close()
        if source is not sys.stdin.buffer:
            source.close()


class _Delivery:
    """The broker's answers to asynchronous sends, by line number."""

    def __init__(self) -> None:
        self.failures: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def callback(self, line: int) -> Callable[[Any, Any], None]:
        def done(result: Any, _message_id: Any) -> None:
            if result != pulsar.Result.Ok:
                with self._lock:
                    self.failures.append((line, str(result)))

        return done


def _produce(args: argparse.Namespace, client: Any, given: SchemaArguments, source: BinaryIO) -> int:
    resolved = for_produce(
        schema_config(args), client, args.topic, given, lambda: _check_topic(client, args, registering=True)
    )
    try:
        producer = _pulsar_call(
            lambda: create_producer(client, args.topic, resolved.schema, block_if_queue_full=True),
            f"creating a producer on {args.topic} at {args.service_url}",
            args,
        )
        delivery = _Delivery()
        progress = Progress("produced", "record", 0 if args.quiet else args.progress)
        sent = rejected = 0
        stopped: str | None = None
        try:
            for number, raw in enumerate(source, 1):
                if not raw.strip():
                    continue
                try:
                    record, extra = _record(args, resolved, decode_line(raw))
                    producer.send_async(record, delivery.callback(number), **extra)
                    sent += 1
                except (RegistryUnavailableError, ConfigError) as error:
                    stopped = (
                        f"line {number}: {error}; stopped: this line and the ones after it were not sent"
                    )
                    break
                except DeadLetteredError as error:
                    rejected += 1
                    _report(f"line {number}: dead-lettered to {error.dlq_topic}: {error}")
                except (RecordError, ExternalSchemaError) as error:
                    rejected += 1
                    _report(f"line {number}: {error}")
                    if args.stop_on_error:
                        stopped = (
                            f"stopped at line {number} (--stop-on-error): the lines before it were sent; "
                            f"fix it and resume from line {number}"
                        )
                        break
                progress.update(sent, rejected)
        except KeyboardInterrupt:
            stopped = f"stopped by {_signal_name()}: the lines after the last one read were not sent"
        _pulsar_call(producer.flush, f"flushing the producer of {args.topic}")
        producer.close()
    finally:
        resolved.close()
    for number, result in sorted(delivery.failures):
        _report(f"line {number}: not persisted by the broker: {result}")
    failed = rejected + len(delivery.failures)
    if stopped:
        _report(stopped)
    if args.output == "json":
        produced_count = sent - len(delivery.failures)
        _summary(command="produce", topic=args.topic, sent=produced_count, failed=failed, stopped=stopped)
    elif not args.quiet:
        early = ", stopped early" if stopped else ""
        produced = plural(sent - len(delivery.failures), "record")
        _report(f"produced {produced} to {args.topic}, {failed} failed{early}")
    return EXIT_FAILED if failed or stopped else EXIT_OK


def _record(args: argparse.Namespace, resolved: Resolved, line: str) -> tuple[Any, dict[str, Any]]:
    """The value to send for a line, and `send_async`'s keyword arguments (key, properties)."""
    extra: dict[str, Any] = {}
    if args.message_property:
        extra["properties"] = dict(args.message_property)
    if not args.parse_key:
        if args.key is not None:
            extra["partition_key"] = args.key
        return resolved.records.read(line), extra
    key, sep, value = line.rstrip("\r\n").partition(args.key_separator)
    if not sep:
        raise RecordError(f"no key separator {args.key_separator!r} in the line (--parse-key)")
    if resolved.records.key_value:
        return resolved.records.read_key_value(key, value), extra
    extra["partition_key"] = key
    return resolved.records.read(value), extra


# -- consume -----------------------------------------------------------------------------------


def run_consume(args: argparse.Namespace) -> int:
    try:
        settle(args, producing=False)
        connection(args)
        require(args, "service_url", "registry_url")
        _check_service_url(args.service_url)
        if args.dead_letter_topic and not args.subscription:
            raise UsageError("--dead-letter-topic needs --subscription (a reader acknowledges nothing)")
        serve_rule_metrics(args)
        given = _schema_arguments(args, producing=False)
        client = _client(args)
    except CommandError as error:
        return fail("consume", error)
    try:
        return _consume(args, client, given)
    except (CommandError, ExternalSchemaError) as error:
        return fail("consume", error)
    finally:
        client.close()


def _consume(args: argparse.Namespace, client: Any, given: SchemaArguments) -> int:
    _check_topic(client, args)
    resolved = None
    if not args.raw:
        schema_topic = args.schema_topic or args.topic
        try:
            resolved = for_consume(schema_config(args), client, schema_topic, given, key_value=args.key_value)
        except SubjectNotFoundError as error:
            if args.schema_topic is not None:
                raise
            source = _source_of_copies(client, args)
            if source is None:
                raise CommandError(
                    f"{error}. If {args.topic} holds another topic's messages (the output of `validate`, "
                    "a mirror), add --schema-topic SOURCE_TOPIC; --raw prints them undecoded"
                ) from None
            # A DLQ topic: each copy names the topic it failed on (`__rule.topic`), whose subject
            # decodes it (`decode_message`); the first one tells the format.
            resolved = for_consume(schema_config(args), client, source, given, key_value=args.key_value)
        if args.schema_topic is not None:
            resolved.schema = resolved.schema.reading_as(args.schema_topic)
    try:
        return _ConsoleConsumer(args, client, resolved).run()
    finally:
        if resolved is not None:
            resolved.close()


def _source_of_copies(client: Any, args: argparse.Namespace) -> str | None:
    """The `__rule.topic` of the topic's first message, if it is a DLQ copy (else None)."""
    reader = _pulsar_call(
        lambda: client.create_reader(args.topic, pulsar.MessageId.earliest),
        f"creating a reader on {args.topic} at {args.service_url}",
        args,
    )
    try:
        if not reader.has_message_available():  # an empty topic: no wait for a first message
            return None
        first = reader.read_next(int(args.connect_timeout * 1000))
    except pulsar.Timeout:
        return None
    finally:
        reader.close()
    source: str | None = first.properties().get(RULE_TOPIC) or None
    return source


class _Stop(InternalSignal):
    """The registry cannot be reached: the tool stops (the message is redelivered later)."""


class _Held:
    """The console's consumer, or reader (which acknowledges nothing), as `consume` calls it. The
    console holds signals while it prints a message and settles it (`signals.hold`); a signal that
    came meanwhile stops the tool when it next waits, so a subscription acknowledges exactly what
    was printed."""

    def __init__(self, consumer: Any, *, reader: bool) -> None:
        self._consumer = consumer
        self._reader = reader

    def receive(self, timeout_millis: int | None = None) -> Any:
        signals.release()
        wait = self._consumer.read_next if self._reader else self._consumer.receive
        return wait() if timeout_millis is None else wait(timeout_millis)

    def acknowledge(self, msg: Any) -> None:
        if not self._reader:
            self._consumer.acknowledge(msg)

    def negative_acknowledge(self, msg: Any) -> None:
        if not self._reader:
            self._consumer.negative_acknowledge(msg)

    def close(self) -> None:
        self._consumer.close()


class _ConsoleConsumer:
    """`consume()` with a console's handler: the same policy for failed messages (`deadletter.fate`),
    and the same asynchronous DLQ copies, acknowledged once persisted."""

    def __init__(self, args: argparse.Namespace, client: Any, resolved: Resolved | None) -> None:
        self.args = args
        self.client = client
        self.resolved = resolved
        where = f"{args.topic} at {args.service_url}"
        schema = resolved.schema if resolved is not None else pulsar.schema.BytesSchema()
        if args.subscription:
            position = (
                pulsar.InitialPosition.Earliest if args.from_beginning else pulsar.InitialPosition.Latest
            )
            subscribed = _pulsar_call(
                lambda: client.subscribe(
                    args.topic, args.subscription, schema=schema, initial_position=position
                ),
                f"subscribing {args.subscription} to {where}",
                args,
            )
            self.consumer = _Held(subscribed, reader=False)
        else:
            start = pulsar.MessageId.earliest if args.from_beginning else pulsar.MessageId.latest
            reading = _pulsar_call(
                lambda: client.create_reader(args.topic, start, schema=schema),
                f"creating a reader on {where}",
                args,
            )
            self.consumer = _Held(reading, reader=True)
        self.progress = Progress("consumed", "message", 0 if args.quiet else args.progress)
        self.printed = self.failed = 0

    def run(self) -> int:
        args = self.args
        stopped: str | None = None
        closed = False
        interrupted: str | None = None
        result = None
        try:
            result = consume(
                self.consumer,
                self._handle,
                max_messages=args.max_messages,
                timeout_millis=args.timeout_ms,
                dead_letter_topic=args.dead_letter_topic,
                client=self.client,
                on_error=self._failed,
            )
        except (KeyboardInterrupt, pulsar.Interrupted):  # SIGINT or SIGTERM (`signals`)
            interrupted = _signal_name()
        except BrokenPipeError:  # `consume ... | head`: the reader of stdout has what it wanted
            signals.silence_stdout()
            closed = True  # not a failure: `set -o pipefail` scripts go on (the message is redelivered)
        except _Stop as stop:
            stopped = str(stop)
        finally:
            self.consumer.close()
        if stopped:
            _report(stopped)
        if args.output == "json":
            _summary(
                command="consume",
                topic=args.topic,
                printed=self.printed,
                failed=self.failed,
                dead_lettered=result.dead_lettered if result is not None else 0,
                redelivered=result.redelivered if result is not None else 0,
                stopped=stopped or ("stdout was closed" if closed else interrupted),
            )
        elif not args.quiet:
            early = ", stopped early" if stopped else ", stopped: stdout was closed" if closed else ""
            if interrupted and not stopped:
                early = f", stopped by {interrupted}"
            copied = ""
            if result is not None and args.dead_letter_topic:
                copied = f" ({result.dead_lettered} dead-lettered, {result.redelivered} redelivered later)"
            _report(
                f"consumed {plural(self.printed, 'message')} from {args.topic}, "
                f"{self.failed} failed{copied}{early}"
            )
        return EXIT_FAILED if self.failed or stopped else EXIT_OK

    def _handle(self, msg: Any, value: Any) -> None:
        signals.hold()  # until the next receive: printed, then acknowledged
        self._print(msg, value)
        self.printed += 1
        self.progress.update(self.printed, self.failed)

    def _failed(self, msg: Any, error: ExternalSchemaError) -> None:
        """Reports a message `consume` could not decode, before it settles it (`fate`)."""
        signals.hold()  # until the next receive: reported, then settled
        number = self.printed + self.failed + 1
        if isinstance(error, RegistryUnavailableError):
            self.consumer.negative_acknowledge(msg)  # redelivered later, never dead-lettered
            raise _Stop(f"message {number} {msg.message_id()}: {error}; stopped{self._unacked}")
        self.failed += 1
        _report(f"message {number} {msg.message_id()}: {self._explain(msg, error)}{self._outcome(error)}")
        self.progress.update(self.printed, self.failed)

    def _explain(self, msg: Any, error: ExternalSchemaError) -> str:
        """The error, or what the message is when that says more than the error."""
        properties = msg.properties()
        if properties.get(RULE_MODE) == "WRITE" and SCHEMA_ID_PROPERTY not in properties:
            return (
                f"a copy that WRITE rule {properties.get(RULE_NAME, '?')!r} dead-lettered from "
                f"{properties.get(RULE_TOPIC, '?')}: the record as its producer gave it (JSON), never "
                "encoded, so it carries no schema id; print it with --raw"
            )
        key_value = properties.get(SCHEMA_ID_PROPERTY, "").startswith("fe")
        hint = "; its key has a schema too: add --key-value" if key_value and not self.args.key_value else ""
        return f"{error}{hint}"

    @property
    def _unacked(self) -> str:
        return " (negatively acknowledged: redelivered later)" if self.args.subscription else ""

    def _outcome(self, error: ExternalSchemaError) -> str:
        """Where `deadletter.fate` sends a failed message (a reader acknowledges nothing)."""
        if not self.args.subscription:
            return ""
        verdict = fate(error, self.args.dead_letter_topic)
        if verdict is Fate.ACKNOWLEDGE:
            return ""
        if verdict is Fate.REDELIVER:
            return self._unacked
        return f"; copying it to {self.args.dead_letter_topic} (acknowledged once persisted)"

    def _print(self, msg: Any, value: Any) -> None:
        document: Any
        if self.resolved is None:  # --raw: the payload beside the metadata
            document = {**_metadata(msg), **_raw_document(value)}
        else:
            document = self.resolved.records.document(value)
            if self.args.print_metadata:
                document = {**_metadata(msg), "value": document}
        if not self.args.print_key:
            print(dumps(document), flush=True)
            return
        if self.resolved is not None and self.resolved.records.key_value and not self.args.print_metadata:
            key, document = dumps(document["key"]), document["value"]
        else:
            key = msg.partition_key() or "null"
        print(f"{key}{self.args.key_separator}{dumps(document)}", flush=True)


def _metadata(msg: Any) -> dict[str, Any]:
    return {
        "message_id": str(msg.message_id()),
        "publish_time": msg.publish_timestamp(),
        "event_time": msg.event_timestamp() or None,
        "key": msg.partition_key() or None,
        "properties": msg.properties(),
    }


def _raw_document(data: bytes) -> dict[str, str]:
    """`--raw`: the payload as text when it is UTF-8 (a JSON DLQ copy), else base64."""
    try:
        return {"data": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"data_base64": base64.b64encode(data).decode("ascii")}


# -- shared ------------------------------------------------------------------------------------


def _schema_arguments(args: argparse.Namespace, *, producing: bool) -> SchemaArguments:
    if not producing:
        return SchemaArguments(args.format, None, protobuf_message=args.protobuf_message)
    return SchemaArguments(
        format=args.format,
        value_schema=schema_text(args.value_schema, args.value_schema_file, "--value-schema"),
        key_schema=schema_text(args.key_schema, args.key_schema_file, "--key-schema"),
        rule_set=json_argument(args.value_rule_set, "--value-rule-set"),
        metadata=json_argument(args.value_metadata, "--value-metadata"),
        protobuf_message=args.protobuf_message,
    )


def _given_records(records: list[str]) -> BinaryIO:
    """`-m` records, one per line as if they came from a file (a line break inside one is JSON
    whitespace, so it becomes a space)."""
    return io.BytesIO("".join(" ".join(record.splitlines()) + "\n" for record in records).encode())


def _open_input(path: str) -> BinaryIO:
    """Bytes, not text: a line that is not UTF-8 is that line's error, not the end of the input.
    From a terminal, says what it waits for: a user who typed `produce` alone sees a prompt."""
    if path == "-":
        if sys.stdin.isatty():
            print(
                "reading records from the terminal: one JSON value per line, sent as each line ends; "
                "Ctrl-D to finish (--input FILE reads a file)",
                file=sys.stderr,
                flush=True,
            )
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # closed by run_produce
    except OSError as error:
        raise UsageError(f"--input: cannot read {path}: {error.strerror or error}") from None


def _check_service_url(service_url: str) -> None:
    """Before any connection: pulsar-client answers a URL without its scheme with a traceback."""
    if not service_url.startswith(("pulsar://", "pulsar+ssl://")):
        raise UsageError(
            f"--service-url {service_url!r} is not a Pulsar service URL: it starts with pulsar:// "
            "(or pulsar+ssl://), e.g. pulsar://127.0.0.1:6650"
        )


def _client(args: argparse.Namespace) -> Any:
    """A client whose C++ log stays quiet unless `--verbose` (then warnings, on stderr, never into
    the records on stdout), and whose connection and lookups give up after `--connect-timeout`.

    Not through a Python `logging.Logger`: pulsar-client calls it from its own threads, and a
    process ending right after `client.close()` then sometimes aborts ("terminate called without
    an active exception")."""
    stderr = "/dev/stderr"
    level = pulsar.LoggerLevel.Warn if args.verbose else pulsar.LoggerLevel.Error
    target = stderr if args.verbose and os.path.exists(stderr) else os.devnull
    logger = pulsar.FileLogger(level, target) if os.path.exists(target) else pulsar.ConsoleLogger(level)
    seconds = max(1, round(args.connect_timeout))
    try:
        return args.connection.pulsar_client(
            logger=logger,
            operation_timeout_seconds=seconds,
            connection_timeout_ms=int(args.connect_timeout * 1000),
        )
    except ConfigError as error:  # the C++ client's own check of the URL: no host, a bad port
        raise UsageError(f"--service-url {error}") from None


def _check_topic(client: Any, args: argparse.Namespace, *, registering: bool = False) -> None:
    """Before anything is registered or waited for: the broker can serve the topic (a topic of a
    tenant or namespace that does not exist is TopicNotFound, which pulsar-client gives without
    the broker's reason)."""
    try:
        _pulsar_call(
            lambda: client.get_topic_partitions(args.topic),
            f"looking {args.topic} up at {args.service_url}",
            args,
            passing=(pulsar.TopicNotFound,),
        )
    except pulsar.TopicNotFound:
        _scheme, tenant, namespace, _local = split_topic(args.topic)
        raise CommandError(
            f"the broker at {args.service_url} has no topic {args.topic} (TopicNotFound): tenant "
            f"{tenant!r} or namespace {tenant}/{namespace} does not exist, or the namespace does not "
            f"create topics on first use; check with `pulsar-admin namespaces list {tenant}`"
            + ("; nothing was registered" if registering else "")
        ) from None


def _pulsar_call(
    call: Callable[[], Any],
    doing: str,
    args: argparse.Namespace | None = None,
    passing: tuple[type[Exception], ...] = (),
) -> Any:
    """`call()`, its pulsar-client errors as a `CommandError` saying what it was `doing`; those of
    `passing` go through as they are, for the caller to say more."""
    try:
        return call()
    except passing:
        raise
    except (pulsar.Timeout, pulsar.ConnectError) as error:
        if args is None:
            raise CommandError(f"{doing}: {error}") from None
        # A broker that refuses a client's token (or its lack of one) closes the connection, and
        # pulsar-client reports that as a timeout too: its log says which it was.
        check = (
            "--service-url, the TLS files of --client-conf (tlsTrustCertsFilePath; a client "
            "certificate where the broker wants one) and its credentials"
            if args.service_url.startswith("pulsar+ssl://")
            else "--service-url and, where the broker wants one, --auth-token"
        )
        raise CommandError(
            f"{doing}: cannot connect to the broker at {args.service_url} within {args.connect_timeout:g} s "
            f"({error}); check {check}, or raise "
            "--connect-timeout" + ("" if args.verbose else " (--verbose shows the client's log)")
        ) from None
    except pulsar.AuthenticationError as error:
        raise CommandError(
            f"{doing}: the broker refused the credentials given (--auth-token, or authPlugin and "
            f"authParams of --client-conf): {error}"
        ) from None
    except pulsar.PulsarException as error:
        raise CommandError(f"{doing}: {error}") from None


def _summary(**counts: Any) -> None:
    """`--output json`: the run's counts as one JSON object on stderr (stdout holds the records)."""
    print(json.dumps(counts), file=sys.stderr, flush=True)


def _report(line: str) -> None:
    """One line per record, even when a library's reason spans several."""
    print(" ".join(part.strip() for part in line.splitlines()), file=sys.stderr, flush=True)


def _signal_name() -> str:
    stopped = signals.received()
    return stopped.name if stopped is not None else "SIGINT"
