"""Errors that say what went wrong and where: topic, subject, schema id, and the cause.

Confluent's serdes raise `SerializationError()` with empty or bare messages; every error here
carries its context as attributes *and* in its message, so a log line alone is enough to act.

Every error the package raises is an `ExternalSchemaError` (`except ExternalSchemaError` catches
them all); the built-in or confluent-kafka class in brackets is a second base, for code that
catches those. Every class is defined here and exported by the package root:

    ExternalSchemaError
    ├── ConfigError (ValueError)           a config key, schema or rule set given wrongly
    │   ├── SchemaParseError               a schema does not parse, found when it is made
    │   │   └── JsonSchemaError            a JSON Schema the evolution checks cannot read
    │   ├── RuleSetError                   a rule set or metadata that cannot run as written
    │   ├── SubjectNotFoundError (LookupError)   a topic's subject has no version
    │   ├── UnsupportedProtobufError       a descriptor the .proto renderer cannot write
    │   └── SparkTypeError                 a schema with no Spark type, or a value that does not fit
    ├── SchemaIdError (ValueError)         schema id bytes missing or malformed
    │   ├── MissingSchemaIdError
    │   └── ForeignSchemaIdError           an id of another subject's schema
    ├── UnknownSchemaIdError (LookupError) an id the registry does not hold
    ├── RegistryUnavailableError (ConnectionError)   the registry did not answer
    ├── EncodeError (ValueError)           a value the schema cannot encode
    │   └── ValueOutsideSchemaError        a value outside the schema's types (an Avro int given 2.5)
    ├── DecodeError (ValueError)           a payload the schema cannot decode
    │   └── DecodeLimitError               a payload over decode.max.bytes / decode.max.depth
    ├── RuleViolationError (SerializationError)   a rule failed (its action: ERROR)
    │   └── DeadLetteredError              ... and its message is in a DLQ topic
    ├── IncompatibleSchemaError            a JSON schema change that breaks a reader or a writer
    ├── CelEvaluationError                 a CEL expression, inside a rule's failure
    │   └── CelCompileError                an expression the compiled engine does not compile
    ├── JsonataError                       a JSONata expression, likewise
    ├── PulsarAdminError                   the Pulsar admin REST API refused or did not answer
    │   └── UnsupportedBrokerError         the broker's Pulsar is too old for what was asked (< 4.1)
    └── PublishError                       a Function's output not persisted

`_signal.InternalSignal` is the other root, of exceptions the package raises and catches itself (a plan
that falls back to the reference serde, a limit a payload went over, the console tools' own
`CommandError` and `RecordError`, which end as one line on stderr and an exit code): none
reaches a user, and none is exported. tests/unit/test_error_hierarchy.py holds every exception
class of the package to one of the two roots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from confluent_kafka.serialization import SerializationError

if TYPE_CHECKING:
    from .evolution.differences import Difference


class ExternalSchemaError(Exception):
    """Base class of every error this package raises about a message or a schema."""

    def __init__(
        self,
        message: str,
        *,
        topic: str | None = None,
        subject: str | None = None,
        schema_id: str | None = None,
    ) -> None:
        self.reason = message
        self.topic = topic
        self.subject = subject
        self.schema_id = schema_id
        super().__init__(self._render())

    def _render(self) -> str:
        where = [
            f"{name} {value}"
            for name, value in (
                ("topic", self.topic),
                ("subject", self.subject),
                ("schema id", self.schema_id),
            )
            if value
        ]
        return f"{self.reason} ({', '.join(where)})" if where else self.reason


class ConfigError(ExternalSchemaError, ValueError):
    """A configuration key is unknown, missing, or has a value of the wrong type."""


class SchemaParseError(ConfigError):
    """A schema given to the factory does not parse (not JSON, an unknown Avro type, ...): found
    when the schema is made, before anything is registered or sent."""


class JsonSchemaError(SchemaParseError):
    """A JSON Schema the evolution checks cannot read: not JSON, not a schema, or a `$ref` that
    does not resolve."""


class UnsupportedProtobufError(ConfigError):
    """The descriptor uses a feature the .proto renderer does not produce (e.g. editions, groups)."""


class SparkTypeError(ConfigError):
    """A registry schema has no Spark type (recursion), or a value does not fit its column."""


class RuleSetError(ConfigError):
    """A rule set or metadata to register does not say what it means (an unknown key, a mode of the
    wrong list, an expression that does not compile): found before anything is registered."""


class SubjectNotFoundError(ConfigError, LookupError):
    """A topic's subject has no registered version to read or write with (nothing was produced
    with an external schema yet, or the topic holds another topic's messages)."""


class SchemaIdError(ExternalSchemaError, ValueError):
    """Schema id bytes (PIP-420 metadata or Confluent prefix) are missing or malformed."""


class MissingSchemaIdError(SchemaIdError):
    """A message carries no `__schema_id` property and no Confluent prefix."""


class ForeignSchemaIdError(SchemaIdError):
    """A message's schema id is registered, but not under the subject its topic's strategy names:
    decoding with it could turn the payload into another subject's record without an error
    (`schema.id.subject.check`)."""


class UnknownSchemaIdError(ExternalSchemaError, LookupError):
    """The registry has no schema with this id (or not under this subject)."""


class RegistryUnavailableError(ExternalSchemaError, ConnectionError):
    """The schema registry could not be reached or answered with a server error."""


class EncodeError(ExternalSchemaError, ValueError):
    """A value could not be serialized: it does not match the schema, or the schema is not registered."""


class ValueOutsideSchemaError(EncodeError):
    """A value outside the writer schema's types, refused before anything is written: an Avro `int`
    given 2.5 or 2**40, a `boolean` given "yes", a JSON number given NaN. fastavro and Python's
    `json` would write these changed (2, a varint no 32-bit reader takes, true, the text NaN); Java's
    writers refuse them, and so does this package.

    `path` is the field's place in the value (`items[1].cost`; "" for the whole value),
    `value_type` the Python type given, `schema_type` what the schema takes there. The value itself
    is never in the error: it may be a PII field's.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str,
        value_type: str,
        schema_type: str,
        topic: str | None = None,
        subject: str | None = None,
        schema_id: str | None = None,
    ) -> None:
        self.path = path
        self.value_type = value_type
        self.schema_type = schema_type
        super().__init__(message, topic=topic, subject=subject, schema_id=schema_id)

    def placed(self, *, topic: str, subject: str | None, schema_id: str | None) -> ValueOutsideSchemaError:
        """The same refusal, naming where it happened."""
        return ValueOutsideSchemaError(
            self.reason,
            path=self.path,
            value_type=self.value_type,
            schema_type=self.schema_type,
            topic=topic,
            subject=subject,
            schema_id=schema_id,
        )


class DecodeError(ExternalSchemaError, ValueError):
    """A payload could not be deserialized with its writer schema (truncated, corrupt, wrong format)."""


class DecodeLimitError(DecodeError):
    """A payload would decode into more than `decode.max.bytes` or nest deeper than
    `decode.max.depth`; `key` names the config key that raises the limit. Refused before the
    decoder allocates anything."""

    def __init__(
        self,
        message: str,
        *,
        key: str,
        topic: str | None = None,
        subject: str | None = None,
        schema_id: str | None = None,
    ) -> None:
        self.key = key
        super().__init__(message, topic=topic, subject=subject, schema_id=schema_id)


class RuleViolationError(ExternalSchemaError, SerializationError):
    """A data-contract rule failed (or its action said so): raised by the ERROR action, and by DLQ.

    Carries the rule's name and the mode it ran in, besides topic, subject and schema id; `cause` is
    the executor's error or the failed condition; `path`, for a referenced schema's rule, where the
    part it ran on sits in the message (`Order.items[1].product`; `subject` is then the referenced
    one). It is also a confluent-kafka `SerializationError`, which is what its rule engine lets
    through.
    """

    def __init__(
        self,
        message: str,
        *,
        rule: str | None = None,
        mode: str | None = None,
        topic: str | None = None,
        subject: str | None = None,
        schema_id: str | None = None,
        cause: str | None = None,
        path: str | None = None,
    ) -> None:
        self.rule = rule
        self.mode = mode
        self.cause = cause
        self.path = path
        super().__init__(message, topic=topic, subject=subject, schema_id=schema_id)


class DeadLetteredError(RuleViolationError):
    """A rule failed with the DLQ action and the message is now safely in the DLQ topic.

    On consume, a message that raised this may be acknowledged: `dlq_message_id` says where its
    copy is. On produce, the value was not sent to its topic (as with Confluent's serdes).
    """

    def __init__(self, message: str, *, dlq_topic: str, dlq_message_id: object, **where: str | None) -> None:
        self.dlq_topic = dlq_topic
        self.dlq_message_id = dlq_message_id
        super().__init__(message, **where)


class IncompatibleSchemaError(ExternalSchemaError):
    """A schema change breaks a reader or a writer: `differences` lists every reason, with its path.

    Raised by `JsonSchemaEvolution` (and by producers and consumers that use it) before anything is
    registered or read; each difference names the kind of change, where it is, and the registered
    version and direction (backward / forward / view) it was found against.
    """

    def __init__(
        self,
        message: str,
        differences: Sequence[Difference],
        *,
        topic: str | None = None,
        subject: str | None = None,
    ) -> None:
        self.differences = list(differences)
        super().__init__(message, topic=topic, subject=subject)

    @property
    def summary(self) -> str:
        """The one-line verdict, without the list of differences."""
        return self.reason

    def _render(self) -> str:
        return super()._render() + "".join(f"\n  - {difference}" for difference in self.differences)

    def on_topic(self, topic: str) -> IncompatibleSchemaError:
        """The same error, naming the topic whose producer or consumer ran into it."""
        return IncompatibleSchemaError(self.summary, self.differences, topic=topic, subject=self.subject)


class CelEvaluationError(ExternalSchemaError):
    """A CEL expression did not compile or did not evaluate; the message names it and says why."""


class CelCompileError(CelEvaluationError):
    """The compiled engine rejected an expression (a syntax or type error, or an unknown function)."""


class JsonataError(ExternalSchemaError):
    """A JSONata expression did not parse, did not evaluate, or went over a limit."""


class PulsarAdminError(ExternalSchemaError):
    """The Pulsar admin REST API refused a request or could not be reached."""


class UnsupportedBrokerError(PulsarAdminError):
    """The broker's Pulsar release lacks what was asked of it: the EXTERNAL schema type (PIP-420)
    before 4.1. `broker_version` is the version its admin API reports (None: it did not say)."""

    def __init__(self, message: str, *, broker_version: str | None) -> None:
        self.broker_version = broker_version
        super().__init__(message)


class PublishError(ExternalSchemaError):
    """A Function's output or DLQ copy was not persisted; raised so that the runtime redelivers
    the input."""
