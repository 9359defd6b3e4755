"""One validated configuration object, spelled with Confluent's key names.

Every key has one spelling, one type and one documented default; an unknown key or a value of
the wrong type is rejected when the config is built, with the key named (and a suggestion for a
likely typo). Values may also be given as strings ("true", "30"), which is how Pulsar Functions
pass schema properties.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._deprecated import renamed_key
from ._secrets import mask_urls, masked, shown, split_userinfo
from ._settings import boolean, integer
from .connections import ClientConf
from .errors import ConfigError
from .rules.settings import COMPONENT_KEY, RuleSettings, parse_rule_settings
from .subjects import SubjectNameStrategy, resolve_strategy

SchemaIdLocation = Literal["metadata", "prefix", "header"]


@dataclass(frozen=True)
class _Key:
    kind: Literal["str", "int", "bool", "metadata", "mapping", "callable", "strategy", "location", "names"]
    section: Literal["registry", "serde", "rules", "ours"]
    target: str  # the key's name in confluent-kafka's client or serde config
    doc: str


def _registry(kind: Any, target: str, doc: str) -> _Key:
    return _Key(kind, "registry", target, doc)


def _serde(kind: Any, doc: str, target: str = "") -> _Key:
    return _Key(kind, "serde", target, doc)


#: `decode.max.bytes` default: 64 MiB of decoded objects per message (codec/limits.py).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: `decode.max.depth` default: as the Protobuf runtime's own recursion limit.
DEFAULT_MAX_DEPTH = 100

#: `http.connect.timeout.ms` / `http.read.timeout.ms` defaults (confluent-kafka's client waits
#: forever): a hung registry fails each attempt after this long, and a request after
#: `max.retries` + 1 attempts.
DEFAULT_REGISTRY_TIMEOUT_MS = 10_000

#: `schema.id.recheck.sec` default: a producer whose registry lost its store stamps its old id
#: for at most about this long (confluent-kafka's serializers keep an id for their life).
DEFAULT_RECHECK_SEC = 60

#: The config key of the admin API's token.
ADMIN_TOKEN_KEY = "pulsar.admin.token"

#: The prefix of Pulsar's client configuration keys (`connections.py`): `pulsar.client.conf`, a
#: `client.conf` file, and `pulsar.client.<key>` for each of its keys (StreamNative's Spark
#: connector's prefix).
CLIENT_PREFIX = "pulsar.client."

#: Other spellings of a key, accepted as that key (docs/configuration.md lists them): the keys of
#: confluent-kafka's `SchemaRegistryClient` config, which a Python user may bring as they are.
ALIASES: dict[str, str] = {
    "url": "schema.registry.url",
    "ssl.ca.location": "schema.registry.ssl.ca.location",
    "ssl.certificate.location": "schema.registry.ssl.certificate.location",
    "ssl.key.location": "schema.registry.ssl.key.location",
    "ssl.key.password": "schema.registry.ssl.key.password",
    "proxy": "schema.registry.proxy",
}

#: This package's earlier names of a key, accepted as that key with a DeprecationWarning for a
#: minor release (CHANGELOG.md's "Deprecated" lists them).
RENAMED: dict[str, str] = {
    "latest.cache.ttl.sec": "cache.latest.ttl.sec",
    "dead.letter.topic": "dlq.topic",  # a Pulsar Function's user config called it so
}
_RENAMED_USED = {old: renamed_key(old, new, "the config") for old, new in RENAMED.items()}


def key_named(spelling: str) -> str:
    """The key a spelling stands for (`ALIASES`, `RENAMED`: an earlier name warns); itself else.
    Every reader of a key under its other spellings comes here: `from_dict`, and a Pulsar
    Function's user config (`read_key`)."""
    if spelling in RENAMED:
        _RENAMED_USED[spelling]()
        return RENAMED[spelling]
    return ALIASES.get(spelling, spelling)


def _two_spellings(given: str, key: str) -> ConfigError:
    return ConfigError(f"config keys {given!r} and {key!r} are the same setting: give one")


def read_key(get: Callable[[str], Any], key: str) -> Any:
    """`key`'s value as `get(spelling)` gives it under any of its spellings (None or "": not
    given), for a config read key by key (a Pulsar Function's user config); one setting under
    two spellings is an error, as in `from_dict`."""
    found: tuple[str, Any] | None = None
    for spelling in (key, *(s for s, k in (*ALIASES.items(), *RENAMED.items()) if k == key)):
        value = get(spelling)
        if value is None or value == "":
            continue
        key_named(spelling)  # an earlier name warns, given alone or beside the key
        if found is not None:
            raise _two_spellings(spelling, found[0])
        found = (spelling, value)
    return None if found is None else found[1]


#: confluent-kafka's `timeout` (seconds, for every phase of a request), taken as both of ours.
_CONFLUENT_TIMEOUT = "timeout"
_TIMEOUT_KEYS = ("http.connect.timeout.ms", "http.read.timeout.ms")


def _canonical(conf: Mapping[str, Any]) -> dict[str, Any]:
    """`conf` with every alias (and confluent-kafka's `timeout`) under this package's key."""
    out: dict[str, Any] = {}
    for key, value in conf.items():
        name = key_named(key) if isinstance(key, str) else key
        if name in out or (name != key and name in conf):
            raise _two_spellings(key, name)
        if key == _CONFLUENT_TIMEOUT:
            given = [k for k in _TIMEOUT_KEYS if k in conf]
            if given:
                raise ConfigError(
                    "config key 'timeout' (confluent-kafka's, in seconds) sets "
                    f"{' and '.join(_TIMEOUT_KEYS)}; give either it or {given[0]!r}"
                )
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ConfigError(f"config key 'timeout' takes a number of seconds, not {shown(key, value)}")
            try:
                milliseconds = round(float(value) * 1000)
            except ValueError:
                raise ConfigError(f"config key 'timeout' takes a number of seconds, not {value!r}") from None
            if milliseconds <= 0:
                raise ConfigError(f"config key 'timeout' takes a positive number of seconds, not {value!r}")
            out.update(dict.fromkeys(_TIMEOUT_KEYS, milliseconds))
            continue
        out[name] = value
    return out


#: Every key the config accepts; docs/configuration.md lists each (a test keeps them in step).
KEYS: dict[str, _Key] = {
    # -- registry connection (confluent-kafka SchemaRegistryClient) --------------------------
    "schema.registry.url": _registry("str", "url", "Registry URL(s), comma-separated. Required."),
    "basic.auth.user.info": _registry("str", "basic.auth.user.info", "`user:password` for HTTP basic auth."),
    "bearer.auth.credentials.source": _registry(
        "str", "bearer.auth.credentials.source", "STATIC_TOKEN, OAUTHBEARER or CUSTOM."
    ),
    "bearer.auth.token": _registry("str", "bearer.auth.token", "Static bearer token."),
    "bearer.auth.issuer.endpoint.url": _registry(
        "str", "bearer.auth.issuer.endpoint.url", "OAuth token endpoint."
    ),
    "bearer.auth.client.id": _registry("str", "bearer.auth.client.id", "OAuth client id."),
    "bearer.auth.client.secret": _registry("str", "bearer.auth.client.secret", "OAuth client secret."),
    "bearer.auth.scope": _registry("str", "bearer.auth.scope", "OAuth scope."),
    "bearer.auth.logical.cluster": _registry(
        "str", "bearer.auth.logical.cluster", "Confluent Cloud logical cluster."
    ),
    "bearer.auth.identity.pool.id": _registry(
        "str", "bearer.auth.identity.pool.id", "Confluent Cloud identity pool."
    ),
    "bearer.auth.custom.provider.function": _registry(
        "callable", "bearer.auth.custom.provider.function", "Callable returning bearer fields (CUSTOM)."
    ),
    "bearer.auth.custom.provider.config": _registry(
        "mapping", "bearer.auth.custom.provider.config", "Config passed to the custom provider."
    ),
    "schema.registry.ssl.ca.location": _registry(
        "str", "ssl.ca.location", "CA bundle to verify the registry."
    ),
    "schema.registry.ssl.certificate.location": _registry(
        "str", "ssl.certificate.location", "Client certificate (mutual TLS)."
    ),
    "schema.registry.ssl.key.location": _registry("str", "ssl.key.location", "Client key (mutual TLS)."),
    "schema.registry.ssl.key.password": _registry("str", "ssl.key.password", "Password of the client key."),
    "schema.registry.proxy": _registry("str", "proxy", "HTTP proxy for registry requests."),
    "max.retries": _registry(
        "int", "max.retries", "Retries of a failed registry request (client default 3)."
    ),
    "retries.wait.ms": _registry("int", "retries.wait.ms", "First retry back-off (client default 1000)."),
    "retries.max.wait.ms": _registry(
        "int", "retries.max.wait.ms", "Largest retry back-off (client default 20000)."
    ),
    "http.connect.timeout.ms": _Key(
        "int", "ours", "", "Longest wait to connect to the registry, per attempt (default 10000)."
    ),
    "http.read.timeout.ms": _Key(
        "int", "ours", "", "Longest wait for a registry response, per attempt (default 10000)."
    ),
    "cache.capacity": _registry(
        "int", "cache.capacity", "Schemas kept in the client cache (client default 1000)."
    ),
    "cache.latest.ttl.sec": _registry(
        "int", "cache.latest.ttl.sec", "Seconds `use.latest.*` lookups stay cached (default: until restart)."
    ),
    # -- serdes (confluent-kafka serializers and deserializers) --------------------------------
    "auto.register.schemas": _serde("bool", "Register the producer's schema if needed (default true)."),
    "normalize.schemas": _serde(
        "bool", "Normalize schemas before registering or looking up (default false)."
    ),
    "use.schema.id": _serde("int", "Produce with this registered schema id."),
    "use.latest.version": _serde("bool", "Produce/read with the subject's latest version (default false)."),
    "use.latest.with.metadata": _serde(
        "metadata", "Produce/read with the latest version whose metadata has these properties (`k=v,k2=v2`)."
    ),
    # -- data-contract rules -------------------------------------------------------------------
    "dlq.topic": _Key(
        "str", "rules", "dlq.topic", "DLQ topic for every rule with the DLQ action (wins over rule params)."
    ),
    "dlq.redact.rule.types": _Key(
        "str",
        "rules",
        "dlq.redact.rule.types",
        "Rule types whose tagged fields are redacted in DLQ copies (default ENCRYPT,ENCRYPT_PAYLOAD).",
    ),
    "rules.referenced": _Key(
        "bool",
        "rules",
        "rules.referenced",
        "Run the domain rules of referenced schemas on the parts of a message of their type "
        "(default false, as Confluent; a schema's metadata property of that name wins).",
    ),
    "cel.engine": _Key(
        "str",
        "rules",
        "cel.engine",
        "CEL engine: `cel-expr-python` (default, compiled) or `cel-python` (confluent-kafka's interpreter).",
    ),
    "jsonata.timeout.ms": _Key(
        "int", "rules", "jsonata.timeout.ms", "Longest a JSONata rule may run, in ms (default 60000)."
    ),
    "jsonata.max.depth": _Key(
        "int", "rules", "jsonata.max.depth", "Deepest a JSONata rule may recurse (default 1000)."
    ),
    "rule.executors": _Key("names", "rules", "", "Executors configured by `rule.executors.<name>.*`."),
    "rule.actions": _Key("names", "rules", "", "Actions configured by `rule.actions.<name>.*`."),
    # -- this package ------------------------------------------------------------------------
    "schema.id.location": _Key(
        "location",
        "ours",
        "",
        "`metadata` (default: PIP-420 `__schema_id` property), `prefix` (Confluent, in the payload) or "
        "`header` (Confluent's `__value_schema_id`/`__key_schema_id`, as properties).",
    ),
    "pulsar.admin.url": _Key(
        "str",
        "ours",
        "",
        "Pulsar admin REST URL: `create_producer` then declares the topic's schema EXTERNAL (PIP-420), "
        "so the broker refuses native-schema clients on it (docs/wire-format.md).",
    ),
    ADMIN_TOKEN_KEY: _Key("str", "ours", "", "Bearer token for `pulsar.admin.url` (a secret: masked)."),
    "schema.id.subject.check": _Key(
        "bool",
        "ours",
        "",
        "Refuse a message whose schema id is not registered under its topic's subject (default true).",
    ),
    "schema.id.recheck.sec": _Key(
        "int",
        "ours",
        "",
        "Seconds after which a producer asks the registry again whether its schema id is still "
        "registered under the subject (default 60; -1: never, as confluent-kafka).",
    ),
    "subject.name.strategy": _Key(
        "strategy",
        "ours",
        "",
        "`topic` (default), `short-topic`, `full-topic`, `record`, `topic-record`, or a callable.",
    ),
    "json.evolution": _Key(
        "str",
        "ours",
        "",
        "`registry` (default: the registry checks compatibility) or `producer-consumer` (JSON schemas: "
        "closed producer schemas checked client-side, open consumer schemas; docs/evolution.md).",
    ),
    "decode.max.bytes": _Key(
        "int",
        "ours",
        "",
        "Most bytes of objects one decoded message may take, checked before decoding (default 64 MiB).",
    ),
    "decode.max.depth": _Key(
        "int", "ours", "", "Deepest records, arrays and maps may nest in one decoded message (default 100)."
    ),
    "json.evolution.checks": _Key(
        "str",
        "ours",
        "",
        "With `json.evolution=producer-consumer`: `full` (default), `backward` or `forward` checks of a "
        "new producer schema against every registered one.",
    ),
}

#: `json.evolution` values: the registry's checks, or Creek's producer/consumer model.
JSON_EVOLUTION_MODES = ("registry", "producer-consumer")
JSON_EVOLUTION_CHECKS = ("full", "backward", "forward")


def _parse_bool(key: str, value: Any) -> bool:
    parsed = boolean(value)
    if parsed is None:
        raise ConfigError(f"config key {key!r} takes a boolean (true/false), not {shown(key, value)}")
    return parsed


def _parse_int(key: str, value: Any) -> int:
    parsed = integer(value)
    if parsed is None:
        raise ConfigError(f"config key {key!r} takes an integer, not {shown(key, value)}")
    return parsed


def _parse_metadata(key: str, value: Any) -> dict[str, str]:
    """A dict, the Java client's `k=v,k2=v2` string form, or a JSON object (as on a command line:
    `-p use.latest.with.metadata={"major": "2"}`)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(f"config key {key!r}: {value!r} is not a JSON object ({error})") from None
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            return dict(value)
        raise ConfigError(f"config key {key!r} takes string keys and values, not {shown(key, value)}")
    if isinstance(value, str):
        pairs = [item for item in value.split(",") if item.strip()]
        parsed = {}
        for pair in pairs:
            name, sep, val = pair.partition("=")
            if not sep or not name.strip():
                raise ConfigError(f"config key {key!r}: {pair!r} is not of the form name=value")
            parsed[name.strip()] = val.strip()
        if parsed:
            return parsed
    raise ConfigError(f"config key {key!r} takes a dict or 'name=value,...', not {shown(key, value)}")


def _parse(key: str, spec: _Key, value: Any) -> Any:
    if spec.kind == "str":
        if isinstance(value, str) and value:
            return value
        raise ConfigError(f"config key {key!r} takes a non-empty string, not {shown(key, value)}")
    if spec.kind == "int":
        number = _parse_int(key, value)
        if number < 0 and key != "schema.id.recheck.sec":  # -1 there means never (checked below)
            raise ConfigError(f"config key {key!r} takes a number of 0 or more, not {number}")
        return number
    if spec.kind == "bool":
        return _parse_bool(key, value)
    if spec.kind == "metadata":
        return _parse_metadata(key, value)
    if spec.kind == "mapping":
        if isinstance(value, Mapping):
            return dict(value)
        raise ConfigError(f"config key {key!r} takes a dict, not {shown(key, value)}")
    if spec.kind == "callable":
        if callable(value):
            return value
        raise ConfigError(f"config key {key!r} takes a callable, not {shown(key, value)}")
    if spec.kind == "names":
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        if isinstance(value, list | tuple) and all(isinstance(name, str) for name in value):
            return list(value)
        raise ConfigError(
            f"config key {key!r} takes a comma-separated list of names, not {shown(key, value)}"
        )
    if spec.kind == "strategy":
        if isinstance(value, str) or callable(value):
            return resolve_strategy(value)
        raise ConfigError(f"config key {key!r} takes a strategy name or a callable, not {shown(key, value)}")
    if value not in ("metadata", "prefix", "header"):
        raise ConfigError(
            f"config key {key!r} takes 'metadata', 'prefix' or 'header', not {shown(key, value)}"
        )
    return value


def _registry_url_and_timeouts(registry: dict[str, Any], ours: dict[str, Any]) -> None:
    """Move the URL's user-info into `basic.auth.user.info` (so no URL shown anywhere carries a
    password), and give the client its timeouts (confluent-kafka hands `timeout` to its httpx
    client, which takes a (connect, read, write, pool) tuple)."""
    for one in registry["url"].split(","):
        if not re.match(r"\s*(https?://[^/\s]|mock://)", one):
            raise ConfigError(
                f"config key 'schema.registry.url' takes http:// or https:// URLs (comma-separated), "
                f"not {mask_urls(one.strip())!r}, e.g. http://127.0.0.1:8081"
            )
    url, userinfo = split_userinfo(registry["url"])
    if userinfo is not None:
        if "basic.auth.user.info" in registry:
            raise ConfigError(
                "config key 'schema.registry.url' carries credentials (user:password@) and "
                "'basic.auth.user.info' is set too: give them once"
            )
        registry["url"], registry["basic.auth.user.info"] = url, userinfo
    if ":" not in registry.get("basic.auth.user.info", ":"):
        raise ConfigError(
            "config key 'basic.auth.user.info' takes USER:PASSWORD, and the value given has no ':'"
        )
    seconds = {}
    for key in ("http.connect.timeout.ms", "http.read.timeout.ms"):
        value = ours.pop(key, DEFAULT_REGISTRY_TIMEOUT_MS)
        if value < 1:
            raise ConfigError(f"config key {key!r} takes a positive number of milliseconds, not {value!r}")
        seconds[key] = value / 1000
    read, connect = seconds["http.read.timeout.ms"], seconds["http.connect.timeout.ms"]
    registry["timeout"] = (connect, read, read, connect)  # httpx: (connect, read, write, pool)


@dataclass(frozen=True, repr=False)
class ExternalSchemaConfig:
    """The validated configuration of a schema factory and the schemas it makes."""

    registry: dict[str, Any]
    """Configuration of confluent-kafka's `SchemaRegistryClient` (its own key names)."""
    serde: dict[str, Any]
    """Keys passed to confluent-kafka's serializers and deserializers."""
    schema_id_location: SchemaIdLocation = "metadata"
    subject_name_strategy: SubjectNameStrategy = field(default_factory=lambda: resolve_strategy("topic"))
    rules: RuleSettings = field(default_factory=RuleSettings)
    json_evolution: str = "registry"
    """`producer-consumer`: JSON schemas follow `evolution.JsonSchemaEvolution` (docs/evolution.md)."""
    json_evolution_checks: str = "full"
    decode_max_bytes: int = DEFAULT_MAX_BYTES
    """`decode.max.bytes`: see `codec/limits.py`."""
    decode_max_depth: int = DEFAULT_MAX_DEPTH
    schema_id_subject_check: bool = True
    """`schema.id.subject.check`: a message's id must be registered under its topic's subject."""
    schema_id_recheck_sec: float | None = DEFAULT_RECHECK_SEC
    """`schema.id.recheck.sec`: how often a producer re-checks its schema id (None: never)."""
    pulsar_admin_url: str | None = None
    """`pulsar.admin.url`: where producers declare their topic's schema EXTERNAL (None: they do not)."""
    pulsar_admin_token: str | None = field(default=None, repr=False)
    pulsar_client: ClientConf | None = None
    """`pulsar.client.conf` and `pulsar.client.*`: the cluster's TLS and credentials, which the
    admin API's calls use too (`pulsar.admin.token` over its credentials)."""

    @classmethod
    def from_dict(cls, conf: Mapping[str, Any]) -> ExternalSchemaConfig:
        if not isinstance(conf, Mapping):
            raise ConfigError(
                f"the configuration must be a dict of Confluent-style keys, not {type(conf).__name__}"
            )
        registry: dict[str, Any] = {}
        serde: dict[str, Any] = {}
        ours: dict[str, Any] = {}
        rule_keys: dict[str, Any] = {}
        components: dict[str, Any] = {}
        conf = _canonical(conf)
        client = ClientConf.from_prefixed(
            {k: v for k, v in conf.items() if isinstance(k, str)}, CLIENT_PREFIX, "config key"
        )
        for key, value in conf.items():
            if not isinstance(key, str):
                raise ConfigError(f"config keys are strings, not {key!r}")
            if key.lower().startswith(CLIENT_PREFIX):
                continue
            if COMPONENT_KEY.match(key):
                components[key] = value
                continue
            spec = KEYS.get(key)
            if spec is None:
                raise ConfigError(_unknown_key_message(key))
            parsed = _parse(key, spec, value)
            if spec.section == "registry":
                registry[spec.target] = parsed
            elif spec.section == "serde":
                serde[key] = parsed
            elif spec.section == "rules":
                rule_keys[key] = parsed
            else:
                ours[key] = parsed
        if "url" not in registry:
            raise ConfigError("config key 'schema.registry.url' is required (e.g. http://127.0.0.1:8081)")
        _registry_url_and_timeouts(registry, ours)
        recheck = ours.get("schema.id.recheck.sec", DEFAULT_RECHECK_SEC)
        if recheck == 0 or recheck < -1:
            raise ConfigError(
                f"config key 'schema.id.recheck.sec' takes a positive number of seconds, or -1 for never, "
                f"not {recheck!r}"
            )
        for key in ("decode.max.bytes", "decode.max.depth"):
            if key in ours and ours[key] < 1:
                raise ConfigError(f"config key {key!r} takes a positive number, not {ours[key]!r}")
        for key, allowed in (
            ("json.evolution", JSON_EVOLUTION_MODES),
            ("json.evolution.checks", JSON_EVOLUTION_CHECKS),
        ):
            if key in ours and ours[key] not in allowed:
                raise ConfigError(
                    f"config key {key!r} takes {' or '.join(map(repr, allowed))}, not {ours[key]!r}"
                )
        if ours.get("json.evolution") == "producer-consumer":
            pinned = [key for key in PIN_KEYS if key in serde and pins_a_version({key: serde[key]})]
            if pinned:
                raise ConfigError(
                    "config key 'json.evolution' = 'producer-consumer' makes producers register their own "
                    "schema and consumers read with theirs; it cannot be combined with "
                    f"{', '.join(map(repr, pinned))}"
                )
        return cls(
            registry=registry,
            serde=serde,
            schema_id_location=ours.get("schema.id.location", "metadata"),
            subject_name_strategy=ours.get("subject.name.strategy", resolve_strategy("topic")),
            rules=parse_rule_settings(rule_keys, components),
            json_evolution=ours.get("json.evolution", "registry"),
            json_evolution_checks=ours.get("json.evolution.checks", "full"),
            decode_max_bytes=ours.get("decode.max.bytes", DEFAULT_MAX_BYTES),
            decode_max_depth=ours.get("decode.max.depth", DEFAULT_MAX_DEPTH),
            schema_id_subject_check=ours.get("schema.id.subject.check", True),
            schema_id_recheck_sec=None if recheck == -1 else recheck,
            pulsar_admin_url=ours.get("pulsar.admin.url"),
            pulsar_admin_token=ours.get("pulsar.admin.token"),
            pulsar_client=client,
        )

    @property
    def registry_url(self) -> str:
        return str(self.registry["url"])

    def __repr__(self) -> str:
        """Secrets masked (`_secrets.py`): a config may be logged or shown in a traceback."""
        return (
            f"ExternalSchemaConfig(registry={masked(self.registry)!r}, serde={self.serde!r}, "
            f"schema_id_location={self.schema_id_location!r}, rules={self.rules!r}, "
            f"json_evolution={self.json_evolution!r}, decode_max_bytes={self.decode_max_bytes}, "
            f"decode_max_depth={self.decode_max_depth})"
        )

    @property
    def pins_a_version(self) -> bool:
        """True when the writer schema comes from the registry (`use.schema.id`, `use.latest.*`)."""
        return pins_a_version(self.serde)

    # The serde keys this package reads itself (confluent-kafka's serdes read all of them), each
    # with its default in one place.

    @property
    def cache_latest_ttl_sec(self) -> int | None:
        """`cache.latest.ttl.sec`: how long a `use.latest.*` lookup is kept (None: until restart)."""
        value = self.registry.get("cache.latest.ttl.sec")
        return None if value is None else int(value)

    @property
    def auto_register_schemas(self) -> bool:
        """`auto.register.schemas` (default true)."""
        return bool(self.serde.get("auto.register.schemas", True))

    @property
    def normalize_schemas(self) -> bool:
        """`normalize.schemas` (default false)."""
        return bool(self.serde.get("normalize.schemas", False))

    @property
    def use_schema_id(self) -> int | None:
        """`use.schema.id`: the registered id a producer writes with (None: not pinned)."""
        value = self.serde.get("use.schema.id")
        return None if value is None else int(value)

    @property
    def use_latest_with_metadata(self) -> dict[str, str] | None:
        """`use.latest.with.metadata`: the metadata the version read or written with must have."""
        value = self.serde.get("use.latest.with.metadata")
        return dict(value) if value else None


#: The keys that pin the registered version a serde writes or reads with.
PIN_KEYS = ("use.schema.id", "use.latest.version", "use.latest.with.metadata")


def pins_a_version(conf: Mapping[str, Any]) -> bool:
    """Whether a config (raw values, as users and the console tools give them, or parsed ones)
    pins a registered version: `use.schema.id` (any id, 0 too), `use.latest.version` when true
    (`"false"` is not), `use.latest.with.metadata`. The one place this is decided."""
    for key in PIN_KEYS:
        value = conf.get(key)
        if value is None:
            continue
        if key != "use.latest.version" or _parse(key, KEYS[key], value):
            return True
    return False


def _unknown_key_message(key: str) -> str:
    close = difflib.get_close_matches(key, KEYS, n=1)
    hint = (
        f"; did you mean {close[0]!r}?"
        if close
        else f" (none of the {len(KEYS)} keys of docs/configuration.md is close to it)"
    )
    return f"unknown config key {key!r}{hint}"


ConfigLike = ExternalSchemaConfig | Mapping[str, Any]


class BorrowedToken(str):
    """The broker's token taken as the admin API's (`with_broker_token`): the token itself, which
    remembers the option the user gave it with, so that the admin API's refusal names that option
    (`--auth-token`, the Spark source's `pulsar.auth.token`) rather than a key they never set.
    Its repr shows no secret."""

    given_as: str

    def __new__(cls, token: str, given_as: str) -> BorrowedToken:
        borrowed = super().__new__(cls, token)
        borrowed.given_as = given_as
        return borrowed

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return str(self), self.given_as  # a Spark source's options travel pickled

    def __repr__(self) -> str:
        return f"BorrowedToken('***', given_as={self.given_as!r})"


def with_broker_token(values: dict[str, Any], token: str | None, given_as: str) -> dict[str, Any]:
    """`values` with the broker's `token` (given as option `given_as`) as the admin API's too,
    unless `pulsar.admin.token` is given: where a write declares its topic EXTERNAL, the broker
    that let the client in wants the same token. The console tools and the Spark source both
    come here."""
    if token and ADMIN_TOKEN_KEY not in values:
        return {**values, ADMIN_TOKEN_KEY: BorrowedToken(token, given_as)}
    return values


def token_given_as(token: str | None) -> str:
    """The option an admin token was given with: `pulsar.admin.token`, unless borrowed."""
    return token.given_as if isinstance(token, BorrowedToken) else ADMIN_TOKEN_KEY


def is_config_key(key: str) -> bool:
    """True for a key this package's config takes (to pick them out of a larger map)."""
    return (
        key in KEYS
        or key in ALIASES
        or key in RENAMED
        or key == _CONFLUENT_TIMEOUT
        or bool(COMPONENT_KEY.match(key))
    )


def as_config(conf: ConfigLike) -> ExternalSchemaConfig:
    return conf if isinstance(conf, ExternalSchemaConfig) else ExternalSchemaConfig.from_dict(conf)
