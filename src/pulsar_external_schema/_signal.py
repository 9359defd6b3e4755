"""The root of the package's internal signals (errors.py draws the public hierarchy).

Its own module, with no imports, because the console tools' exceptions derive from it and a
console tool starts without confluent-kafka, which errors.py imports for `RuleViolationError`'s
second base (`SerializationError`).
"""

__all__ = ["InternalSignal"]


class InternalSignal(Exception):
    """Raised and caught inside the package: never reaches a user, and is not part of its API."""
