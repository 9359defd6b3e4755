"""ENCRYPT field rules compiled for the per-message path (`codec/field_transforms.py` walks the fields).

confluent-kafka's `FieldEncryptionExecutor` builds, for every message, a cryptor (a Tink key
registry and key template), looks its KEK and DEK up in the DEK client's cache, and then, for
every field it encrypts or decrypts, a Tink primitive from the DEK's raw key. None of that
depends on the message. `CompiledEncryption` gets the DEK once (through the executor's own
`_get_or_create_dek`, so it is the same DEK, created or fetched the same way, on the first message
that needs it) and builds its cipher once; per field only the cipher runs, with the encodings
the executor uses: a STRING field's ciphertext is base64 text, a BYTES field's is raw, and with
`encrypt.dek.expiry.days` the ciphertext starts with the DEK's version (0x00 + 4 bytes), and a
DEK older than that many days is replaced (on WRITE) as the executor replaces it.

Anything it does not do itself raises, and the message goes to the reference path, which runs
it again and reports it: a field type encryption does not take, a ciphertext without a version,
a DEK or KEK the registry or KMS cannot give (an outage), a ciphertext that does not decrypt.
"""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

from confluent_kafka.schema_registry.schema_registry_client import RuleMode
from confluent_kafka.schema_registry.serde import RuleContext

from .. import _confluent
from .._signal import InternalSignal

#: As confluent-kafka's executor: a DEK expires this many ms per `encrypt.dek.expiry.days`.
MILLIS_IN_DAY = 24 * 60 * 60 * 1000

#: How long a READ takes a DEK it could not get (no KMS secret, another one, an outage) as still
#: missing: its messages go straight to the reference path, which tries once more and reports.
DEK_RETRY_SECONDS = 10.0

_TEXT = "STRING"
_BYTES = "BYTES"


class NotEncrypted(InternalSignal):
    """The compiled rule does not handle this value; the reference path does (and says why)."""


class _Dek:
    __slots__ = ("decrypt", "encrypt", "expires", "version")

    def __init__(self, transform: Any, key: bytes, version: int, created: int, expiry_days: int) -> None:
        self.encrypt, self.decrypt = _confluent.dek_cipher(transform, key)
        self.version = version
        self.expires = created + expiry_days * MILLIS_IN_DAY if expiry_days else 0
        """When a WRITE must use a new DEK (the executor's clock, ms); 0: never."""


class CompiledEncryption:
    """One ENCRYPT rule in one mode, with the interface of `rules.cel.CompiledFieldTransform`
    (`guard_for`, `passes_guard`, `apply`) so that the same field walks carry it."""

    __slots__ = ("_ctx", "_deks", "_expiry_days", "_lock", "_missing", "_transform", "_write", "_writer")

    def __init__(self, executor: Any, ctx: RuleContext) -> None:
        self._ctx = ctx
        self._write = ctx.rule_mode == RuleMode.WRITE
        self._transform = _confluent.encryption_transform(executor, ctx)  # raises for a bad rule
        self._expiry_days = _confluent.dek_expiry_days(self._transform)
        self._writer: _Dek | None = None
        self._deks: dict[int | None, _Dek] = {}  # READ: by the version a ciphertext names
        self._missing: dict[int | None, float] = {}  # READ: versions not to ask for before then
        self._lock = threading.Lock()

    def guard_for(self, constants: dict[str, Any]) -> bool | None:
        """True where the rule reads or writes the field: strings and bytes (and a union's null,
        which it returns as it is); on WRITE every field it is tagged on, as the executor
        refuses the other types (the reference path reports it), on READ it leaves them."""
        return self._write or constants["typeName"] in (_TEXT, _BYTES, "NULL")

    def passes_guard(self, value: Any, message: Any, constants: dict[str, Any]) -> bool:
        return True  # never asked: `guard_for` is never None

    def apply(self, value: Any, message: Any, constants: dict[str, Any]) -> Any:
        if value is None:
            return None
        kind = constants["typeName"]
        if self._write:
            return self._encrypted(value, kind)
        return self._decrypted(value, kind)

    def _encrypted(self, value: Any, kind: str) -> Any:
        if kind == _TEXT and type(value) is str:
            plaintext = value.encode("utf-8")
        elif kind == _BYTES and type(value) is bytes:
            plaintext = value
        else:
            raise NotEncrypted(kind)
        dek = self._writer
        if dek is None or (dek.expires and _confluent.encryption_now(self._transform) - dek.expires > 0):
            dek = self._writer = self._dek(-1 if self._expiry_days else None)
        ciphertext = dek.encrypt(plaintext)
        if self._expiry_days:
            ciphertext = b"\x00" + dek.version.to_bytes(4, "big") + ciphertext
        return base64.b64encode(ciphertext).decode("utf-8") if kind == _TEXT else ciphertext

    def _decrypted(self, value: Any, kind: str) -> Any:
        if kind == _TEXT and type(value) is str:
            ciphertext = base64.b64decode(value)
        elif kind == _BYTES and type(value) is bytes:
            ciphertext = value
        elif kind in (_TEXT, _BYTES):
            raise NotEncrypted(kind)
        else:
            return value
        version = None
        if self._expiry_days:
            if len(ciphertext) < 5:
                raise NotEncrypted("no DEK version in the ciphertext")
            version, ciphertext = int.from_bytes(ciphertext[1:5], "big"), ciphertext[5:]
        dek = self._deks.get(version)
        if dek is None:
            dek = self._readable(version)
        plaintext = dek.decrypt(ciphertext)
        return plaintext.decode("utf-8") if kind == _TEXT else plaintext

    def _readable(self, version: int | None) -> _Dek:
        """The DEK a READ decrypts with. One it could not get is not asked for again for
        `DEK_RETRY_SECONDS`: a reader without the secret (a validation job that judges the other
        fields) then costs the reference path's one attempt per message, not three (and one of
        confluent-kafka's warnings, not three; docs/benchmarks.md has what that saved)."""
        missing = self._missing.get(version)
        if missing is not None and time.monotonic() < missing:
            raise NotEncrypted("its DEK could not be had moments ago")
        try:
            dek = self._deks[version] = self._dek(version)
        except Exception:
            self._missing[version] = time.monotonic() + DEK_RETRY_SECONDS
            raise
        return dek

    def _dek(self, version: int | None) -> _Dek:
        """The DEK, from the executor (its DEK client caches, the registry, the KMS): once per
        version on READ, once per expiry on WRITE."""
        with self._lock:
            key, found, created = _confluent.dek_key(self._transform, self._ctx, version)
            return _Dek(self._transform, key, found, created, self._expiry_days if self._write else 0)
