"""Plans: what one (topic, writer schema, reader schema) needs per message, resolved once.

A `WritePlan` is learnt from the first message of a topic that the reference serializer encoded:
the serializer resolved the subject, the writer schema (registered, pinned with `use.schema.id`
/ `use.latest.*`, or the local one with the registered version's rules), and the schema id, so
the plan holds exactly what the reference used. A `ReadPlan` is built for a (topic, schema id)
with the deserializer's own calls: subject, pinned reader version, writer schema, migrations.

Either is a `Reference` instead when something in the schema's rule set does not compile
(`steps.py`): its messages then take the reference path, and the plan says why once in the log.

Plans are kept in a `PlanCache` of bounded size (`PLAN_CACHE_SIZE` per schema and side), and so
are the serdes' parsed schemas (`part.py` bounds confluent-kafka's cache, which keeps every one),
so a consumer that sees 100k schema ids holds at most that many. With `cache.latest.ttl.sec`, a plan
expires after that many seconds, as the registry client's cache of latest versions does, and the
next message resolves it again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from time import monotonic
from typing import Any, Generic, TypeVar

from confluent_kafka.serialization import SerializationContext

from .limits import Guard
from .steps import Steps

#: Plans kept per schema and side (encode: one per topic; decode: one per topic and writer id).
#: A full cache drops its oldest plan: a hit must not write, so that the per-message path takes no
#: lock, and a dropped plan is rebuilt from the registry client's caches without a request.
PLAN_CACHE_SIZE = 1000


@dataclass(frozen=True, slots=True)
class WritePlan:
    subject: str
    schema_id: bytes
    """The Confluent id bytes (magic byte + id, + Protobuf message indexes): `EncodeData.schema_id`."""
    prefix: bytes
    """Prepended to every payload: the id in prefix mode, else nothing."""
    steps: Steps
    """The compiled rule steps, in the order the rule engine runs them (none when `write` runs
    them, counting them for rule metrics)."""
    write: Callable[[Any], bytes]
    expires: float
    """`monotonic()` after which the plan is resolved again; 0: never."""
    rules: bool = False
    """Whether rules run for its messages (in `steps` or in `write`)."""
    columnar: ColumnarWrite | None = None
    """How a columnar encoder writes the same payloads; None where none can (another format,
    rules other than conditions in the everyday CEL subset, rule metrics, a `to_dict`, a key)."""


@dataclass(frozen=True, slots=True)
class ColumnarWrite:
    """What a columnar encoder (`write_table`'s native one) needs to write a plan's values into the
    payloads `encode` gives: the writer schema (Avro: one self-contained Avro JSON text; Protobuf:
    the message's descriptor set, base64), the Confluent id bytes (`EncodeData.schema_id`), what
    each payload starts with (the id in prefix mode, else nothing), and the WRITE conditions in the
    everyday CEL subset, in the order they run. A value it cannot write as the plan would, or that
    a condition does not pass (false, or not judged), takes the plan, which decides its outcome."""

    writer: str
    schema_id: bytes
    prefix: bytes
    conditions: tuple[str, ...] = ()
    format: str = "AVRO"
    """The schema type: AVRO or PROTOBUF."""
    message: str = ""
    """Protobuf: the full name of the message written."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """What a producer stamps on a topic's messages: the subject, the id bytes, and the
    registered version when the serializer knows it (a pinned or rule-carrying writer)."""

    subject: str
    schema_id: bytes
    version: int | None


@dataclass(frozen=True, slots=True)
class Columnar:
    """What a columnar decoder (the native reader) needs to read a plan's messages into the
    values the plan gives: the writer and reader schemas (Avro: self-contained Avro JSON; JSON
    Schema: the reader schema the values are checked against, twice, with its references), the
    longest payload that passes the decoding limits unchecked, and the READ conditions in the
    everyday CEL subset, in the order they run. A row a condition does not pass (false, or not
    judged) takes the plan's per-message path, which decides its outcome."""

    writer: str
    reader: str
    longest: int
    conditions: tuple[str, ...]
    format: str = "AVRO"
    """The schema type: AVRO or JSON."""
    references: tuple[tuple[str, str], ...] = ()
    """JSON Schema: (URI, text) of each schema the reader schema refers to."""
    base_uri: str = ""
    """JSON Schema: what the reader schema's relative references resolve against."""


@dataclass(frozen=True, slots=True)
class ReadPlan:
    subject: str
    steps: Steps
    read: Callable[[bytes], Any]
    expires: float
    final_errors: bool = False
    """The format library's errors are the reference's own (the same call on the same schemas,
    unwrapped): a payload it refuses is not decoded a second time on the reference path."""
    guard: Guard | None = None
    """Checks a payload against the decoding limits before anything reads it (`limits.py`)."""
    columnar: Columnar | None = None
    """How a columnar decoder reads the same values; None where none can (another format, rules
    outside the subset, migrations, rule metrics on)."""
    rules: Callable[[SerializationContext, Any, bytes], Any] | None = None
    """Where every step is a READ condition (pure: a value passes or not, unchanged): the plan's
    READ rules run by the rule engine on a value decoded here, as the reference path runs them on
    the value it decodes, given (context, value, the framed message). A value a condition does
    not pass gets its outcome (action, error, `__rule.*` words) from the engine itself, without
    the message decoded again. None: such a value takes the reference path."""


@dataclass(frozen=True, slots=True)
class Reference:
    """Messages of this schema take the reference path (confluent-kafka's serde), for `reason`."""

    reason: str
    expires: float = 0.0
    guard: Guard | None = None
    """A read plan's decoding limits: the reference path reads with the same library."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Messages of this (topic, schema id) are refused, for `reason`: the id names a schema of
    another format, or is not registered under the subject the topic's strategy names
    (`schema.id.subject.check`)."""

    reason: str
    expires: float


#: How long a refusal is kept (unless `cache.latest.ttl.sec` is shorter): the id may be
#: registered under the topic's subject later, and a storm of refused messages must not ask the
#: registry once each.
REFUSAL_TTL = 60.0

Key = TypeVar("Key", bound=Hashable)
Plan = TypeVar("Plan", WritePlan | Reference, ReadPlan | Reference | Refused)


def expiry(ttl: float | None) -> float:
    return monotonic() + ttl if ttl else 0.0


def remaining(expires: float) -> float | None:
    """Seconds until `expires` (an `expiry`) on the plans' clock; None for never."""
    return expires - monotonic() if expires else None


class PlanCache(Generic[Key, Plan]):
    """Plans by key, at most `size`; `get` takes no lock (a dict lookup and an expiry check)."""

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.plans: dict[Key, Plan] = {}
        """The plans by key, for lookups on the per-message path (check `expires`); add with `put`."""
        self._size = size
        self._lock = threading.Lock()
        self.building = threading.Lock()
        """Held while a plan is built, so that each is built once."""

    def __len__(self) -> int:
        return len(self.plans)

    def get(self, key: Key) -> Plan | None:
        plan = self.plans.get(key)
        if plan is not None and plan.expires and plan.expires < monotonic():
            return None
        return plan

    def drop(self, key: Key) -> None:
        with self._lock:
            self.plans.pop(key, None)

    def put(self, key: Key, plan: Plan) -> None:
        plans = self.plans
        with self._lock:
            plans.pop(key, None)
            while len(plans) >= self._size:
                del plans[next(iter(plans))]
            plans[key] = plan
