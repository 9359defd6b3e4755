"""The producer's re-check of the schema ids it stamps (`schema.id.recheck.sec`).

A write plan keeps the id the serializer resolved for a subject until the plan expires. When it
expires and the serializer stamps the same id again, `SchemaIdRecheck.later` asks the registry,
on a thread of its own, whether it still holds that id for that subject: a registry that lost
its store hands ids out again, to whichever subject comes first, and a producer that kept its
id would then stamp its messages with another schema's. If the registry answers that it does
not, the serializer forgets the subject and `stale(subject)` drops the plans that stamp it; the
next message registers or looks up its schema again. No answer (an outage, a hang): the
producer goes on with the id it has, and checks again after the next interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from .. import _confluent
from .. import schema_id as ids
from ..registry import describe, failure_kind
from .plans import Stamp

__all__ = ["SchemaIdRecheck"]

log = logging.getLogger(__name__)


class SchemaIdRecheck:
    """Re-checks of one serializer's stamps, each on a thread of its own, one at a time a stamp."""

    def __init__(self, serializer: Any, schema_type: str, stale: Callable[[str], None]) -> None:
        self._serializer = serializer
        self._type = schema_type
        self._stale = stale
        self._under_way: set[Stamp] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def later(self, stamp: Stamp) -> None:
        """Re-check `stamp` on a thread of its own: the registry may hang for its full timeout,
        and the producer goes on with the id it has meanwhile (as through a registry outage)."""
        number = ids.confluent_int_id(stamp.schema_id)
        with self._lock:
            if stamp in self._under_way or number is None:
                return  # being checked; or a GUID, which no other schema can ever take
            self._under_way.add(stamp)
            thread = threading.Thread(
                target=self.check, args=(stamp, number), name="pulsar-external-schema-id-check", daemon=True
            )
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def check(self, stamp: Stamp, schema_id: int) -> None:
        """Whether the registry still holds `stamp`'s id for its subject (module doc)."""
        try:
            try:
                held = self._holds(stamp, schema_id)
            except Exception as error:
                if failure_kind(error) != "not found":
                    log.info(
                        "could not re-check schema id %d of subject %s: %s",
                        schema_id,
                        stamp.subject,
                        describe(error),
                    )
                    return
                held = False
            if held:
                return
            log.warning(
                "the registry no longer holds schema id %d for subject %s (did it lose its store?); "
                "the producer registers or looks up its schema again",
                schema_id,
                stamp.subject,
            )
            self._serializer.forget(stamp.subject)
            self._stale(stamp.subject)
        finally:
            with self._lock:
                self._under_way.discard(stamp)

    def _holds(self, stamp: Stamp, schema_id: int) -> bool:
        if stamp.version is None and self._type == "PROTOBUF":
            # A Protobuf schema is registered with references the serializer computes while
            # registering; the id's subjects are asked instead of looking the text up.
            return stamp.subject in _confluent.subjects_of(self._serializer, schema_id)
        local = None if stamp.version is not None else _confluent.local_schema(self._serializer)[0]
        return _confluent.registered_id(self._serializer, stamp.subject, stamp.version, local) == schema_id

    def join(self, timeout: float) -> bool:
        """Wait for the re-checks under way (tests, and a producer that closes); True if none is left."""
        for thread in list(self._threads):
            thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)
