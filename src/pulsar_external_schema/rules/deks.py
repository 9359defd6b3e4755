"""The DEKs of a forwarded version, registered under the subject it is forwarded to.

An ENCRYPT (or ENCRYPT_PAYLOAD) rule encrypts with a DEK that the registry keeps per KEK, subject
and version, and a reader looks the DEK up under its own subject: its topic's. The validation
tools forward messages untouched to a topic of another subject (`topic_schemas.ForwardedSchemas`),
so that topic's readers found no DEK there: with the rule's usual `ERROR,NONE` they read
ciphertext, with `ERROR` nothing, whatever secret they held. So, where the version is registered
under the target subject, each DEK version its root rules wrote under the source subject is
registered under the target one too, with the same key material, wrapped as it was by its KEK:
no KMS is asked and the job needs no secret. Referenced schemas' rules need nothing: their DEKs
are under the referenced subject, whatever the topic (`referenced.py`).

A target subject that already has another DEK of that KEK and version (a producer of its own
encrypted with it) cannot take the forwarded messages: its readers would decrypt them with the
wrong key. That is a `ConfigError`, and nothing is forwarded.

DEK versions that a producer makes after the first forwarded message of a version (DEK rotation,
`encrypt.dek.expiry.days`) are registered by the next run of the job.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from .. import _confluent
from ..errors import ConfigError
from ..registry import registry_error

__all__ = ["share_deks"]

#: The rule types that encrypt with a DEK, and the parameters that name it (as confluent-kafka's
#: executor reads them: the rule's params, then the schema's metadata properties).
ENCRYPT_TYPES = ("ENCRYPT", "ENCRYPT_PAYLOAD")
KEK_NAME = "encrypt.kek.name"
DEK_ALGORITHM = "encrypt.dek.algorithm"
DEFAULT_ALGORITHM = "AES256_GCM"


def share_deks(client: Any, schema: Schema, source: str, target: str, *, topic: str, url: str) -> None:
    """Register under `target` every DEK version that `schema`'s root ENCRYPT rules have under
    `source` and `target` lacks."""
    if source == target:
        return
    for kek, algorithm in _deks_of(schema):
        try:
            versions = _get(client, f"dek-registry/v1/keks/{_q(kek)}/deks/{_q(source)}/versions", algorithm)
            for version in versions or []:
                _share(client, kek, algorithm, int(version), source, target, topic)
        except ConfigError:
            raise
        except Exception as error:
            failed = registry_error(
                error,
                f"could not register the DEKs of KEK {kek} under {target} (from {source})",
                url,
                topic=topic,
                subject=target,
            )
            if failed is None:
                raise
            raise failed from None


def _deks_of(schema: Schema) -> set[tuple[str, str]]:
    """(KEK name, DEK algorithm) of each ENCRYPT rule of the schema itself."""
    rule_set = schema.rule_set
    rules = [*(rule_set.domain_rules or []), *(rule_set.encoding_rules or [])] if rule_set else []
    properties = {}
    if schema.metadata is not None and schema.metadata.properties is not None:
        properties = dict(schema.metadata.properties.properties or {})
    found = set()
    for rule in rules:
        if rule.type not in ENCRYPT_TYPES:
            continue
        params = dict(rule.params.params or {}) if rule.params is not None else {}
        kek = params.get(KEK_NAME) or properties.get(KEK_NAME)
        if kek:
            found.add((kek, params.get(DEK_ALGORITHM) or properties.get(DEK_ALGORITHM) or DEFAULT_ALGORITHM))
    return found


def _share(client: Any, kek: str, algorithm: str, version: int, source: str, target: str, topic: str) -> None:
    path = f"dek-registry/v1/keks/{_q(kek)}/deks"
    dek = _get(client, f"{path}/{_q(source)}/versions/{version}", algorithm)
    if dek is None:
        return
    material = dek.get("encryptedKeyMaterial")
    body = {"subject": target, "version": version, "algorithm": algorithm, "encryptedKeyMaterial": material}
    try:
        _confluent.rest_post(client, path, body)
        return
    except SchemaRegistryError as error:
        if error.http_status_code != 409:
            raise
    there = _get(client, f"{path}/{_q(target)}/versions/{version}", algorithm)
    if there is None or there.get("encryptedKeyMaterial") != material:
        raise ConfigError(
            f"{target} has a DEK of KEK {kek} (version {version}, {algorithm}) of its own, not the one "
            f"{source}'s messages are encrypted with: {target}'s readers could not decrypt them, so "
            f"nothing was forwarded to {topic}. Forward to a topic whose subject has no DEK of that KEK",
            topic=topic,
            subject=target,
        )


def _get(client: Any, path: str, algorithm: str) -> Any:
    """The registry's answer, or None where it has no such KEK or DEK (404)."""
    try:
        return _confluent.rest_get(client, path, {"algorithm": algorithm})
    except SchemaRegistryError as error:
        if error.http_status_code == 404:
            return None
        raise


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")
