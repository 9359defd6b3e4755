"""What a rule action needs to know about the Pulsar message a serde is working on.

confluent-kafka hands `SerializationContext.headers` to every rule as `ctx.ser_ctx.headers`. We
pass a `MessageContext` there: a dict of the message properties (so confluent-kafka's own DLQ
replay check finds `__rule.name`), with attributes for what Kafka headers cannot say: the
original bytes of a consumed message, its key, and the Pulsar client to dead-letter through.
"""

from __future__ import annotations

from typing import Any


class MessageContext(dict[str, str]):
    """The properties of one Pulsar message, plus where it came from; one per encode or decode."""

    __slots__ = (
        "encoding_failure",
        "event_timestamp",
        "message_id",
        "ordering_key",
        "original_data",
        "partition_key",
        "pulsar_client",
        "schema_id",
        "topic",
        "writer",
    )

    def __init__(
        self,
        topic: str,
        properties: dict[str, str] | None = None,
        *,
        schema_id: bytes | None = None,
        original_data: bytes | None = None,
        partition_key: str | None = None,
        ordering_key: str | None = None,
        event_timestamp: int | None = None,
        message_id: Any = None,
        pulsar_client: Any = None,
    ) -> None:
        super().__init__(properties or {})
        self.topic = topic
        self.schema_id = schema_id
        """The Confluent id bytes of the writer schema (set by the serde once it knows it)."""
        self.original_data = original_data
        """On consume: the payload exactly as it was on the topic."""
        self.partition_key = partition_key
        self.ordering_key = ordering_key
        self.event_timestamp = event_timestamp
        self.message_id = message_id
        self.pulsar_client = pulsar_client
        """The `_pulsar.Client` a DLQ copy is published through (None: the factory's)."""
        self.writer: tuple[str, Any] | None = None
        """On produce: (subject, registered writer schema or None for the local one), as the
        serializer resolved them; the codec builds its plan from this (see `codec/`)."""
        self.encoding_failure: str | None = None
        """On consume: an encoding rule (ENCRYPT_PAYLOAD) that failed and whose action (NONE) let
        the payload go on as it was, said as a decode error adds it (`codec/serdes.py`)."""

    def copy(self) -> MessageContext:
        """The same message for another serde (the key of a key/value message): its own schema id."""
        return MessageContext(
            self.topic,
            self,
            original_data=self.original_data,
            partition_key=self.partition_key,
            ordering_key=self.ordering_key,
            event_timestamp=self.event_timestamp,
            message_id=self.message_id,
            pulsar_client=self.pulsar_client,
        )
