"""JSON Schema validation at native speed: jsonschema-rs decides, jsonschema explains.

confluent-kafka's JSON serdes validate with the `jsonschema` package, which costs many times the
rest of a message's work; jsonschema-rs (Rust) gives the same verdict in a small fraction of that
(docs/benchmarks.md measures both). So each serde's validator is a `JsonValidator`: jsonschema-rs
says whether a value is valid, and only a value it refuses goes to the `jsonschema` validator
confluent-kafka built, whose error is raised: the words users and tests know ("'amount' is a
required property"), with its path. Where the two disagree, jsonschema-rs's verdict stands;
tests/unit/test_json_differential.py holds them together and lists the cases where they part (NaN is
not a JSON number; the specification agrees).

What is kept from the reference, so that the verdicts are the same:
* the draft: each library reads `$schema` and takes 2020-12 where there is none;
* formats are annotations, not assertions (confluent-kafka gives `jsonschema` no format checker);
* `$ref`s resolve to the registry's referenced versions (confluent-kafka's `referencing` registry,
  by each reference's name) and to nothing else: jsonschema-rs is built offline, so a `$ref` to
  anything not given fails its build, and `jsonschema` alone judges that schema's values, over
  the given versions only (confluent-kafka's registry would fetch any other `$ref` over HTTP):
  such a `$ref` is an error naming it;
* a Python value jsonschema-rs cannot take (a set, an object, a dict with int keys) is the
  reference validator's to judge, as before.

Where the native extension is installed, each validator also carries the extension's check of the
same schema (`native`: the `jsonschema` crate reading Python objects in place, built as
jsonschema-rs is here), and the JSON codec (`json.py`) writes and reads through it, one call a
message: it answers plain JSON that the schema takes and hands the rest to this module's path.
tests/unit/test_json_native.py holds its verdicts to jsonschema-rs's.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.parse
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema_rs
import referencing

from .. import _native
from .value_checks import explain_json

__all__ = ["BASE_URI", "JsonValidator", "fast_validator"]

log = logging.getLogger(__name__)

#: jsonschema-rs's base URI for a schema without `$id`; a reference named `address.json` resolves
#: against it as `referencing` resolves it against the empty base.
BASE_URI = "json-schema:///"


class JsonValidator:
    """`validate` and `iter_errors` as the `jsonschema` validator it wraps answers them, decided by
    `fast`: jsonschema-rs's validator, or, where it cannot build the schema, `jsonschema`'s."""

    __slots__ = ("_fast", "_reference", "fast_is_valid", "native", "native_source", "schema")

    def __init__(self, fast: Any, reference: Any, native: Any = None, native_source: Any = None) -> None:
        self._fast = fast
        self._reference = reference
        self.schema = reference.schema
        #: jsonschema-rs's verdict alone (raises ValueError for a value it cannot convert).
        self.fast_is_valid = fast.is_valid
        #: The native extension's `JsonSchemaCheck` of the same schema, or None.
        self.native = native
        #: What `native` was built from, (the schema's text, ((URI, text) of each reference), the
        #: base URI), for the native reader's own check of the same schema (`json.columnar_schemas`).
        self.native_source: tuple[str, tuple[tuple[str, str], ...], str] | None = native_source

    def is_valid(self, instance: Any) -> bool:
        try:
            return bool(self._fast.is_valid(instance))
        except ValueError:  # a Python value jsonschema-rs cannot convert
            return bool(self._reference.is_valid(instance))

    def validate(self, instance: Any) -> None:
        try:  # is_valid's first step, without its call: this runs for every message
            if self.fast_is_valid(instance):
                return
        except ValueError:
            if self._reference.is_valid(instance):
                return
        self._reference.validate(instance)  # raises the reference's error, in its words
        raise self._refusal(instance)  # the reference takes what jsonschema-rs refuses

    def iter_errors(self, instance: Any) -> Iterator[Any]:
        if self.is_valid(instance):
            return
        errors = list(self._reference.iter_errors(instance))
        yield from errors or [self._refusal(instance)]

    def _refusal(self, instance: Any) -> jsonschema.ValidationError:
        """What jsonschema-rs refuses and jsonschema takes, said without the value: a NaN or an
        infinity (which jsonschema-rs words as `null`), or else its first error's path and kind."""
        problem = explain_json(instance)
        if problem is not None:
            path = [int(p) if p.isdigit() else p for p in re.split(r"[.\[\]]+", problem.path) if p]
            return jsonschema.ValidationError(problem.message(), path=path)
        error = next(iter(self._fast.iter_errors(instance)))
        where = "/".join(map(str, error.instance_path))
        what = f"field {where}" if where else "the value"
        kind = type(error.kind).__name__  # MaxItems: the keyword, capitalised
        keyword = kind[:1].lower() + kind[1:]
        return jsonschema.ValidationError(
            f"{what}: fails its schema's {keyword!r}", path=list(error.instance_path)
        )


def fast_validator(parsed_schema: Any, references: Any, reference: Any) -> JsonValidator:
    """A `JsonValidator` over `reference`, the `jsonschema` validator confluent-kafka built for
    the schema with `references`, its registry of referenced versions."""
    given = [(name, references[name]) for name in references]
    try:
        fast = jsonschema_rs.validator_for(
            parsed_schema,
            validate_formats=False,
            registry=jsonschema_rs.Registry([(_uri(n), r.contents) for n, r in given]) if given else None,
            base_uri=BASE_URI,
            offline=True,
        )
    except Exception as error:
        log.debug("jsonschema-rs cannot build this schema (%s); validating with jsonschema", error)
        offline = type(reference)(parsed_schema, registry=referencing.Registry().with_resources(given))
        return JsonValidator(offline, offline)
    return JsonValidator(fast, reference, *_native_check(parsed_schema, given))


def _native_check(parsed_schema: Any, given: list[tuple[str, Any]]) -> tuple[Any, Any]:
    """The extension's check of the schema jsonschema-rs built, and what it was built from; or
    None, None (no extension, or a schema it cannot build: the Python path then checks every
    value)."""
    module = _native.extension()
    if module is None:
        return None, None
    references = tuple((_uri(name), json.dumps(r.contents)) for name, r in given)
    source = (json.dumps(parsed_schema), references, BASE_URI)
    try:
        return module.JsonSchemaCheck(source[0], list(references), BASE_URI), source
    except ValueError as error:
        log.debug("the native extension cannot build this schema (%s); checking in Python", error)
        return None, None


def _uri(name: str) -> str:
    """Where a reference's name is found: itself if absolute, else under `BASE_URI`."""
    return name if urllib.parse.urlsplit(name).scheme else urllib.parse.urljoin(BASE_URI, name)
