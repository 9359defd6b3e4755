"""Compiled codecs: every message at the speed of the format library, rules included.

confluent-kafka's serdes do, for every message, work that depends only on the schema: they name
the subject, look the writer and reader schemas up (in caches), recompute the schema's inline
tags, build a rule context per rule and decide again whether each rule is disabled and which
actions it has. This package does that once per (topic, writer schema, reader schema), in a
*plan* (`plans.py`), and per message runs only the format library's own call (`avro.py`,
`json.py`, `protobuf.py`) and the compiled rule steps that apply (`steps.py`), in `part.py`;
`bridge.py` is the bridge `ExternalSchema` calls, with the reference path behind the codec, and
`recheck.py` the producer's re-check of the schema ids it stamps.
Before either path reads a payload, it passes the decoding limits of its writer schema
(`limits.py`): no payload makes a decoder allocate more than `decode.max.bytes`.

confluent-kafka's serdes stay the reference: they resolve a topic's writer on its first message,
and they run every message the plan does not compile or that fails, so errors, rule actions and
DLQ copies are theirs. `_confluent.py` is the one module that reads their private members.
"""

from .limits import DEFAULT_LIMITS, DecodeLimits, LimitExceeded, recursion_error
from .part import FALLBACK, ForeignSchema, PartCodec, PayloadError
from .plans import PLAN_CACHE_SIZE, Columnar, ColumnarWrite, PlanCache, ReadPlan, Reference, WritePlan

__all__ = [
    "DEFAULT_LIMITS",
    "FALLBACK",
    "PLAN_CACHE_SIZE",
    "Columnar",
    "ColumnarWrite",
    "DecodeLimits",
    "ForeignSchema",
    "LimitExceeded",
    "PartCodec",
    "PayloadError",
    "PlanCache",
    "ReadPlan",
    "Reference",
    "WritePlan",
    "recursion_error",
]
