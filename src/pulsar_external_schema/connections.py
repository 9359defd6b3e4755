"""Connections to Pulsar, in one place: Pulsar's own client configuration (`client.conf`).

A Pulsar user describes a cluster once, in a `client.conf` as `pulsar-client` and `pulsar-admin`
read it (`brokerServiceUrl`, `webServiceUrl`, `authPlugin` + `authParams`, `tlsTrustCertsFilePath`,
...). `ClientConf` holds those keys, read from such a file (`ClientConf.read`), from options
(`ClientConf.from_options`: the console's flags, Spark's `pulsar.client.<key>` options, the
factory config's `pulsar.client.*` keys) or several (`layered`: flags over a file, a file over the
environment, with a notice where a file's or the environment's URL is used over another's), and
builds from them everything that connects to the cluster:

- `pulsar_client()`: a `pulsar.Client` (pulsar-client's TLS and `Authentication` objects);
- `admin_tls()` / `admin_headers()`: the admin REST API's TLS context and credentials;
- `native_options()`: the native extension's wire client's options.

Nothing else in the package parses an auth plugin's parameters or a certificate path.

The names are Pulsar's: the `client.conf` keys, and, as aliases, the Java client's
`ClientConfigurationData` names that `ClientBuilder.loadConf` and the StreamNative Spark connector
take (`serviceUrl`, `authPluginClassName`, `tlsHostnameVerificationEnable`). Keys are matched
without regard to case (Spark lowercases options). A key of Pulsar's `client.conf` this package
does not use (KeyStore TLS, the Java web service's TLS provider) is accepted at its default; a
key that is no key is an error with the nearest name.
"""

from __future__ import annotations

import base64
import difflib
import functools
import hashlib
import json
import logging
import os
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ._secrets import MASK, mask_urls
from ._settings import boolean, integer
from .errors import ConfigError

__all__ = [
    "AUTH_OAUTH2",
    "AUTH_TLS",
    "AUTH_TOKEN",
    "CLIENT_CONF_ENV",
    "CLIENT_KEYS",
    "URL_FIELDS",
    "ClientConf",
    "Layer",
    "Layered",
    "OAuth2",
    "connect",
    "layered",
]

log = logging.getLogger(__name__)

#: The environment variable naming a `client.conf`, as Pulsar's own tools read it.
CLIENT_CONF_ENV = "PULSAR_CLIENT_CONF"

#: The auth plugins, by the Java class names `client.conf` gives (pulsar-client's short names too).
AUTH_TOKEN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
AUTH_TLS = "org.apache.pulsar.client.impl.auth.AuthenticationTls"
AUTH_OAUTH2 = "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2"
_PLUGINS = {
    AUTH_TOKEN.lower(): AUTH_TOKEN,
    "token": AUTH_TOKEN,
    AUTH_TLS.lower(): AUTH_TLS,
    "tls": AUTH_TLS,
    AUTH_OAUTH2.lower(): AUTH_OAUTH2,
    "oauth2": AUTH_OAUTH2,
}


@dataclass(frozen=True)
class _ClientKey:
    attribute: str
    kind: str  # "str", "path", "url", "bool", "ms"
    help: str


#: The keys this package reads, by their `client.conf` names.
CLIENT_KEYS: dict[str, _ClientKey] = {
    "brokerServiceUrl": _ClientKey(
        "service_url", "url", "the binary protocol's URL, pulsar:// or pulsar+ssl://"
    ),
    "webServiceUrl": _ClientKey("web_service_url", "url", "the admin REST API's URL, http:// or https://"),
    "authPlugin": _ClientKey(
        "auth_plugin",
        "str",
        "AuthenticationToken, AuthenticationTls or oauth2.AuthenticationOAuth2 (Java names)",
    ),
    "authParams": _ClientKey("auth_params", "str", "the plugin's parameters (a secret: masked)"),
    "tlsTrustCertsFilePath": _ClientKey("tls_trust_certs_file_path", "path", "PEM file of the CAs to trust"),
    "tlsAllowInsecureConnection": _ClientKey(
        "tls_allow_insecure_connection", "bool", "trust any server certificate (default false)"
    ),
    "tlsEnableHostnameVerification": _ClientKey(
        "tls_enable_hostname_verification",
        "bool",
        "the server's certificate must name its host (default false)",
    ),
    "tlsCertificateFilePath": _ClientKey(
        "tls_certificate_file_path", "path", "PEM client certificate (mutual TLS)"
    ),
    "tlsKeyFilePath": _ClientKey("tls_key_file_path", "path", "PEM key of the client certificate"),
    "operationTimeoutMs": _ClientKey(
        "operation_timeout_ms", "ms", "how long an operation may take (default 30000)"
    ),
    "connectionTimeoutMs": _ClientKey(
        "connection_timeout_ms", "ms", "how long opening a connection may take (default 10000)"
    ),
}

#: The Java client's `ClientConfigurationData` names (`loadConf`, pulsar-spark's `pulsar.client.*`).
_ALIASES = {
    "serviceUrl": "brokerServiceUrl",
    "authPluginClassName": "authPlugin",
    "tlsHostnameVerificationEnable": "tlsEnableHostnameVerification",
}

#: Keys of Pulsar's `client.conf` for the Java client only: accepted at these values, refused
#: otherwise with what to give instead.
_JAVA_ONLY = {
    "useTls": None,  # the URL's scheme says it
    "useKeyStoreTls": "false",
    "tlsTrustStoreType": None,
    "tlsTrustStorePath": "",
    "tlsTrustStorePassword": "",
    "tlsKeyStoreType": None,
    "tlsKeyStorePath": "",
    "tlsKeyStorePassword": "",
    "webserviceTlsProvider": None,
}

_BY_LOWER = {name.lower(): name for name in [*CLIENT_KEYS, *_ALIASES, *_JAVA_ONLY]}


def _canonical_key(key: str, where: str) -> str | None:
    """The `client.conf` name of `key` (None for a Java-only key), or a `ConfigError` with the
    nearest name."""
    name = _BY_LOWER.get(key.lower())
    if name is None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,39}", key):  # keys are camelCase
        raise ConfigError(
            f"a line {where} is no `key=value` of a Pulsar client key (not shown: it may hold a secret)"
        )
    if name is None:
        close = difflib.get_close_matches(key.lower(), _BY_LOWER, n=1, cutoff=0.6)
        hint = (
            f"; did you mean {_BY_LOWER[close[0]]!r}?" if close else f" (it takes {', '.join(CLIENT_KEYS)})"
        )
        raise ConfigError(f"unknown Pulsar client key {key!r} {where}{hint}")
    if name in _JAVA_ONLY:
        return None
    return _ALIASES.get(name, name)


@dataclass(frozen=True, repr=False)
class ClientConf:
    """Pulsar's client configuration for one cluster (see the module's docstring).

    Every field is None (or its default) when not given; `where` says where the values came from,
    for errors (`in /etc/pulsar/client.conf`, `in option 'pulsar.client.*'`)."""

    service_url: str | None = None
    web_service_url: str | None = None
    auth_plugin: str | None = None
    auth_params: str | None = None
    tls_trust_certs_file_path: str | None = None
    tls_allow_insecure_connection: bool = False
    tls_enable_hostname_verification: bool = False
    tls_certificate_file_path: str | None = None
    tls_key_file_path: str | None = None
    operation_timeout_ms: int | None = None
    connection_timeout_ms: int | None = None
    where: str = field(default="", compare=False)
    given: frozenset[str] = field(default=frozenset(), compare=False)
    """The fields set (by a file, options or flags), which `merged` takes over another's."""

    # -- reading ----------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> ClientConf:
        """A `client.conf` file, read as Java's `Properties` reads one (`key=value` or `key: value`
        lines, `#` and `!` comments, a trailing `\\` continues a line). Empty values are unset."""
        text = _read_text(str(path), "the Pulsar client configuration")
        values: dict[str, str] = {}
        pending = ""
        for raw in text.splitlines():
            if not pending and raw.strip().startswith(("#", "!")):
                continue  # a comment ends at its line, a trailing \\ or not
            line = pending + raw.strip()
            pending = ""
            if line.endswith("\\") and not line.endswith("\\\\"):
                pending = line[:-1]
                continue
            if not line:
                continue
            match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)", line)
            if match is None:
                values[line] = ""
                continue
            values[match.group(1)] = match.group(2).strip()
        return cls.from_options(values, where=f"in {path}")

    @classmethod
    def from_options(cls, values: Mapping[str, Any], *, where: str = "") -> ClientConf:
        """`values` by `client.conf` key (any case; the Java aliases too). Empty values are unset."""
        given: dict[str, Any] = {}
        use_tls = False
        for key, value in values.items():
            name = _canonical_key(str(key), where)
            if name is None:
                _check_java_only(str(key), value, where)
                use_tls = use_tls or (str(key).lower() == "usetls" and str(value).strip().lower() == "true")
                continue
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            spec = CLIENT_KEYS[name]
            if spec.attribute in given:
                raise ConfigError(
                    f"Pulsar client key {name!r} is given twice {where} (once under another name)"
                )
            given[spec.attribute] = _parse(name, spec, value, where)
        if use_tls and str(given.get("service_url", "")).startswith("pulsar://"):
            raise ConfigError(
                f"Pulsar client key 'useTls' {where} is true and brokerServiceUrl is pulsar://: this "
                "package speaks TLS to pulsar+ssl:// URLs (the URL says it, not useTls); give one"
            )
        return cls(**given, where=where, given=frozenset(given))

    @classmethod
    def from_prefixed(cls, values: Mapping[str, Any], prefix: str, what: str) -> ClientConf | None:
        """The keys of `values` that start with `prefix` (any case): `<prefix>conf`, a
        `client.conf` file, then each `<prefix><client.conf key>` over it. None when none is
        given. `what`: how errors name such a key (`option`, `config key`)."""
        mine = {k: v for k, v in values.items() if k.lower().startswith(prefix.lower())}
        if not mine:
            return None
        return layered(*cls.prefixed_layers(values, prefix, what)).conf

    @classmethod
    def prefixed_layers(cls, values: Mapping[str, Any], prefix: str, what: str) -> list[Layer]:
        """`from_prefixed`'s sources, for `layered`: the `<prefix><key>` keys over the file of
        `<prefix>conf` (none of either: no layer)."""
        mine = {k: v for k, v in values.items() if k.lower().startswith(prefix.lower())}
        path = next((v for k, v in mine.items() if k.lower() == f"{prefix}conf".lower()), None)
        keys = {k[len(prefix) :]: v for k, v in mine.items() if k.lower() != f"{prefix}conf".lower()}
        for key, value in keys.items():  # each error names the key as it was given
            cls.from_options({key: value}, where=f"(given as {what} '{prefix}{key}')")
        layers = []
        if keys:
            conf = cls.from_options(keys, where=f"(a {what} '{prefix}*')")
            names = {  # the key's own spelling (Spark's options come lowercased)
                CLIENT_KEYS[name].attribute: f"{what} '{prefix}{name}'"
                for key in keys
                if (name := _canonical_key(key, "")) is not None
            }
            layers.append(Layer(conf, f"the {what}s '{prefix}*'", names))
        if path:
            layers.append(Layer(cls.read(path), f"{what} '{prefix}conf' {path}"))
        return layers

    def merged(self, other: ClientConf) -> ClientConf:
        """This configuration with every value `other` sets (flags over a file). An auth plugin
        `other` names comes with its own parameters: this one's are not kept beside it."""
        changes = {name: getattr(other, name) for name in other.given}
        given = self.given | other.given
        if "auth_plugin" in other.given and "auth_params" not in other.given:
            changes["auth_params"] = None
            given -= {"auth_params"}
        where = " and ".join(w for w in (self.where, other.where) if w and changes) or self.where
        return replace(self, **changes, where=where, given=given)

    def with_values(self, **values: Any) -> ClientConf:
        """This configuration with the given fields set where they are given (flags; None and ""
        are not: an empty environment variable gives nothing, as in Pulsar's file)."""
        changes = {k: v for k, v in values.items() if v is not None and v != ""}
        return replace(self, **changes, given=self.given | frozenset(changes))

    def overridden(
        self, *, service_url: str | None, web_service_url: str | None, token: str | None
    ) -> ClientConf:
        """This configuration under the URLs and token given apart from it (the console's
        flags, Spark's `service.url`, `admin.url` and `pulsar.auth.token`): a token given
        replaces its credentials."""
        return self.with_values(
            service_url=service_url,
            web_service_url=web_service_url,
            auth_plugin=AUTH_TOKEN if token else None,
            auth_params=f"token:{token}" if token else None,
        )

    def as_options(self, prefix: str) -> dict[str, str]:
        """The fields set, as `<prefix><client.conf key>` options (what `from_prefixed` reads):
        the file read once, for processes that may not have it (Spark's executors)."""
        keys = {spec.attribute: key for key, spec in CLIENT_KEYS.items()}
        shown = {True: "true", False: "false"}
        return {
            f"{prefix}{keys[name]}": shown.get(value, str(value)) if isinstance(value, bool) else str(value)
            for name in sorted(self.given)
            if (value := getattr(self, name)) is not None
        }

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={MASK if f.name == 'auth_params' else getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name not in ("where", "given") and getattr(self, f.name) != f.default
        )
        return f"ClientConf({shown})"

    # -- what it means ----------------------------------------------------------------------

    def _key(self, attribute: str) -> str:
        """How an error names a field: its `client.conf` key and where it was given."""
        name = next(key for key, spec in CLIENT_KEYS.items() if spec.attribute == attribute)
        return f"{name!r} {self.where}".rstrip()

    @property
    def uses_tls(self) -> bool:
        return bool(self.service_url and self.service_url.startswith("pulsar+ssl://"))

    @property
    def plugin(self) -> str | None:
        """The auth plugin's Java class name, or None."""
        if not self.auth_plugin:
            return AUTH_TLS if self.tls_certificate_file_path else None
        plugin = _PLUGINS.get(self.auth_plugin.lower())
        if plugin is None:
            raise ConfigError(
                f"{self._key('auth_plugin')} names an auth plugin this package does not know: "
                f"{self.auth_plugin!r} (it takes {AUTH_TOKEN}, {AUTH_TLS} or {AUTH_OAUTH2})"
            )
        return plugin

    def _params(self) -> dict[str, str]:
        """`authParams` as a map: JSON, or the `key:value,key2:value2` form."""
        text = (self.auth_params or "").strip()
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise ConfigError(
                    f"{self._key('auth_params')} is not valid JSON (its value is a secret: not shown)"
                ) from None
            if not isinstance(parsed, dict):
                raise ConfigError(f"{self._key('auth_params')} is JSON but not an object")
            return {str(k): str(v) for k, v in parsed.items()}
        params: dict[str, str] = {}
        for pair in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = pair.partition(":")
            if not sep:
                raise ConfigError(
                    f"{self._key('auth_params')}: a parameter has no ':' (key:value,key2:value2)"
                )
            params[name.strip()] = value.strip()
        return params

    def token(self) -> str | None:
        """The token to show: `AuthenticationToken`'s (`token:...`, `file:///path`, or the token
        itself), read now (a token file is read again for every connection, as Java's client
        does); or `AuthenticationOAuth2`'s, fetched from the issuer and kept until shortly before
        it expires (`OAuth2.token`)."""
        plugin = self.plugin
        if plugin == AUTH_OAUTH2:
            return self.oauth2().token()
        if plugin != AUTH_TOKEN:
            return None
        return self._token_source()()

    def oauth2(self) -> OAuth2:
        """`AuthenticationOAuth2`'s parameters: Java's (`issuerUrl`, `privateKey`: a credentials
        file, `audience`, `scope`) or the C++ client's (`issuer_url`, `private_key` or `client_id`
        and `client_secret`, ...); the client credentials grant only."""
        params = self._params()
        where = self._key("auth_params")
        kind = params.get("type", "client_credentials")
        if kind != "client_credentials":
            raise ConfigError(f"{where}: OAuth2 type {kind!r}: only client_credentials is supported")
        issuer = params.get("issuerUrl") or params.get("issuer_url") or ""
        key_file = params.get("privateKey") or params.get("private_key")
        client_id, client_secret = params.get("client_id"), params.get("client_secret")
        if key_file:
            credentials = _credentials(key_file, where)
            client_id = credentials.get("client_id") or client_id
            client_secret = credentials.get("client_secret") or client_secret
            issuer = issuer or credentials.get("issuer_url", "")
        if not issuer.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: OAuth2 needs issuerUrl, the issuer's http:// or https:// URL")
        if not client_id or not client_secret:
            raise ConfigError(
                f"{where}: OAuth2 needs a client's credentials: privateKey, a file of client_id and "
                "client_secret (file:///path or data:application/json;base64,...)"
            )
        return OAuth2(
            issuer.rstrip("/"),
            client_id,
            client_secret,
            params.get("audience") or None,
            params.get("scope") or None,
        )

    def _token_source(self) -> Callable[[], str]:
        text = (self.auth_params or "").strip()
        if text.startswith("{"):
            params = self._params()
            text = f"token:{params['token']}" if "token" in params else f"file:{params.get('file', '')}"
        if text.startswith("file:"):
            path, where = _file_path(text), self._key("auth_params")

            def from_file() -> str:
                return _read_text(path, "the token file", where).strip()

            from_file()  # a missing file is an error now, not at the first connection
            return from_file
        token = text[6:] if text.startswith("token:") else text
        if not token:
            raise ConfigError(f"{self._key('auth_params')} gives no token (token:JWT or file:///path)")
        return lambda: token

    def client_certificate(self) -> tuple[str, str] | None:
        """(certificate, key) files of mutual TLS: `AuthenticationTls`'s `tlsCertFile` and
        `tlsKeyFile`, else `tlsCertificateFilePath` and `tlsKeyFilePath`; each must be readable."""
        if self.plugin == AUTH_TLS and self.auth_params:
            params = self._params()
            pair = (params.get("tlsCertFile", ""), params.get("tlsKeyFile", ""))
            what = f"{self._key('auth_params')} (tlsCertFile, tlsKeyFile)"
        elif self.tls_certificate_file_path or self.tls_key_file_path:
            pair = (self.tls_certificate_file_path or "", self.tls_key_file_path or "")
            what = f"{self._key('tls_certificate_file_path')} and 'tlsKeyFilePath'"
        else:
            return None
        if not all(pair):
            raise ConfigError(f"mutual TLS needs a certificate and its key: {what} gives only one")
        for path in pair:
            _readable(path, what)
        return pair[0], pair[1]

    def trust_file(self) -> str | None:
        if self.tls_trust_certs_file_path:
            _readable(self.tls_trust_certs_file_path, self._key("tls_trust_certs_file_path"))
        return self.tls_trust_certs_file_path

    def check(self) -> ClientConf:
        """Every file named exists and every credential parses, before anything connects."""
        self.trust_file()
        plugin = self.plugin
        if plugin == AUTH_TOKEN:
            self._token_source()
        elif plugin == AUTH_TLS:
            if self.client_certificate() is None:
                raise ConfigError(
                    f"{self._key('auth_plugin')} is AuthenticationTls but no certificate is given "
                    "(authParams tlsCertFile:...,tlsKeyFile:..., or tlsCertificateFilePath and "
                    "tlsKeyFilePath)"
                )
        elif plugin == AUTH_OAUTH2:
            self.oauth2()
        return self

    # -- what it builds ---------------------------------------------------------------------

    def pulsar_client_args(self) -> dict[str, Any]:
        """Keyword arguments of `pulsar.Client` (without the URL and the logger)."""
        import pulsar

        self.check()
        args: dict[str, Any] = {}
        plugin = self.plugin
        if plugin == AUTH_TOKEN:
            args["authentication"] = pulsar.AuthenticationToken(self._token_source())
        elif plugin == AUTH_TLS:
            certificate = self.client_certificate()
            assert certificate is not None  # check() said so
            args["authentication"] = pulsar.AuthenticationTLS(*certificate)
        elif plugin == AUTH_OAUTH2:  # pulsar-client fetches and refreshes its own tokens
            args["authentication"] = pulsar.AuthenticationOauth2(self.oauth2().cpp_params())
        if plugin != AUTH_TLS and self.tls_certificate_file_path:  # shown beside a token
            certificate = self.client_certificate()
            assert certificate is not None  # check() said so
            args["tls_certificate_file_path"], args["tls_private_key_file_path"] = certificate
        if self.uses_tls:
            args["use_tls"] = True
            args["tls_allow_insecure_connection"] = self.tls_allow_insecure_connection
            args["tls_validate_hostname"] = self.tls_enable_hostname_verification
            if self.tls_trust_certs_file_path:
                args["tls_trust_certs_file_path"] = self.tls_trust_certs_file_path
        if self.operation_timeout_ms is not None:
            args["operation_timeout_seconds"] = max(1, round(self.operation_timeout_ms / 1000))
        if self.connection_timeout_ms is not None:
            args["connection_timeout_ms"] = self.connection_timeout_ms
        return args

    def pulsar_client(self, **extra: Any) -> Any:
        """A `pulsar.Client` for `service_url` (`extra`: more of its keyword arguments, e.g.
        `logger`); a bad URL is a `ConfigError`."""
        import pulsar

        if not self.service_url:
            raise ConfigError("no Pulsar service URL: give brokerServiceUrl (or the service URL option)")
        try:
            return pulsar.Client(self.service_url, **{**self.pulsar_client_args(), **extra})
        except ValueError as error:  # the C++ client's own check of the URL
            raise ConfigError(
                f"{self.service_url!r} is not a Pulsar service URL ({error}), e.g. pulsar://127.0.0.1:6650"
            ) from None

    def native_options(self) -> dict[str, Any]:
        """Keyword arguments of the native extension's `Client` (after the URL): where its token
        comes from (`token`, asked at each connection and auth challenge: an OAuth2 token fetched
        again before it expires, a token file read again), and for `pulsar+ssl://` the TLS files
        and checks (rustls: `native/src/tls.rs`). Without a trust file, certifi's CAs (the admin
        API's too)."""
        import certifi

        self.check()
        options: dict[str, Any] = {
            "auth_token": self.token if self.plugin in (AUTH_TOKEN, AUTH_OAUTH2) else None
        }
        if self.uses_tls:
            certificate = self.client_certificate()
            options.update(
                tls_trust_certs_file_path=self.trust_file() or certifi.where(),
                tls_certificate_file_path=certificate[0] if certificate else None,
                tls_key_file_path=certificate[1] if certificate else None,
                tls_hostname_verification=self.tls_enable_hostname_verification,
                tls_allow_insecure_connection=self.tls_allow_insecure_connection,
            )
        if self.operation_timeout_ms is not None:
            options["operation_timeout_ms"] = self.operation_timeout_ms
        if self.connection_timeout_ms is not None:
            options["connection_timeout_ms"] = self.connection_timeout_ms
        return options

    def admin_tls(self) -> ssl.SSLContext:
        """The admin REST API's TLS context: the trust file's CAs (else certifi's), the client
        certificate of mutual TLS, hostname verification as `tlsEnableHostnameVerification` says
        (Pulsar's default: off) and none of it with `tlsAllowInsecureConnection`."""
        return _ssl_context(
            self.trust_file(),
            self.client_certificate(),
            self.tls_enable_hostname_verification,
            self.tls_allow_insecure_connection,
            self._key("tls_trust_certs_file_path"),
        )

    def admin_headers(self) -> dict[str, str]:
        """The admin REST API's credentials: a token's `Authorization` header (OAuth2's fetched
        again shortly before it expires: ask for them at each request)."""
        token = self.token()
        return {"Authorization": f"Bearer {token}"} if token else {}


#: The fields that say where to connect: two sources that give them differently get a notice.
URL_FIELDS = ("service_url", "web_service_url")

_KEY_OF = {spec.attribute: key for key, spec in CLIENT_KEYS.items()}


@dataclass(frozen=True)
class Layer:
    """Client settings from one source (flags, a file, the environment) for `layered`, and how
    a notice names a field of it: `names` by field (`--service-url`), else `<client.conf key>
    from <source>` (`brokerServiceUrl from --client-conf tls.conf`). An `explicit` layer holds
    what the call itself spells out (a flag, an argument, a Spark option): a URL of it is used
    with no notice, as typed; a file's or the environment's used over another's gets one."""

    conf: ClientConf
    source: str
    names: Mapping[str, str] = field(default_factory=dict)
    explicit: bool = False

    def name(self, attribute: str) -> str:
        return self.names.get(attribute) or f"{_KEY_OF[attribute]} from {self.source}"


@dataclass(frozen=True)
class Layered:
    """The configuration `layered` made of its layers (the first over the rest), and where each
    field came from."""

    conf: ClientConf
    layers: tuple[Layer, ...]

    def source_of(self, attribute: str) -> Layer | None:
        """The layer whose value of `attribute` is used (None: no layer gives one)."""
        return next((layer for layer in self.layers if attribute in layer.conf.given), None)

    def notices(self, attributes: tuple[str, ...] = URL_FIELDS) -> list[str]:
        """A line for each of `attributes` (the URLs) that two layers give differently, the one
        used not an explicit layer's: which was used, and what the others say (`using
        brokerServiceUrl from --client-conf tls.conf (PULSAR_SERVICE_URL in the environment says
        pulsar://127.0.0.1:6650)`)."""
        return [line for _, line in self._notices(attributes)]

    def announce(
        self, attributes: tuple[str, ...] = URL_FIELDS, say: Callable[[str], None] | None = None
    ) -> None:
        """Each notice said once a process (`say`: a line on stderr; by default this module's
        logger, at WARNING), whatever the sources are called: a Spark query parses its options
        more than once, and the console's `validate` hands the URLs it chose on to one."""
        for fact, line in self._notices(attributes):
            with _ANNOUNCED_LOCK:
                if fact in _ANNOUNCED:
                    continue
                _ANNOUNCED.add(fact)
            (say or log.warning)(line)

    def _notices(self, attributes: tuple[str, ...]) -> list[tuple[tuple[Any, ...], str]]:
        """(what was chosen over what, the line that says so), for `attributes`."""
        found = []
        for attribute in attributes:
            used = self.source_of(attribute)
            if used is None or used.explicit:  # as typed: nothing to tell
                continue
            value = getattr(used.conf, attribute)
            others = [
                (layer.name(attribute), getattr(layer.conf, attribute))
                for layer in self.layers
                if layer is not used
                and attribute in layer.conf.given
                and getattr(layer.conf, attribute) != value
            ]
            if others:
                said = "; ".join(f"{name} says {other}" for name, other in others)
                fact = (attribute, value, frozenset(other for _, other in others))
                found.append((fact, mask_urls(f"using {used.name(attribute)} ({said})")))
        return found


_ANNOUNCED: set[tuple[Any, ...]] = set()
_ANNOUNCED_LOCK = threading.Lock()


def layered(*layers: Layer | None) -> Layered:
    """The configuration of `layers`, each over the ones after it, field by field (a file named
    on the command line over the environment's variables: what is given closer to the call
    wins); None layers are left out."""
    given = tuple(layer for layer in layers if layer is not None)
    conf = ClientConf()
    for layer in reversed(given):
        conf = conf.merged(layer.conf)
    return Layered(conf, given)


@dataclass(frozen=True, repr=False)
class OAuth2:
    """A client of an OAuth2 issuer (the client credentials grant), as Pulsar's `AuthenticationOAuth2`
    is: its tokens are fetched here for the admin API and the native extension, kept per issuer,
    client, audience and scope, and fetched again when less than a fifth of their life (at most a
    minute) is left. pulsar-client fetches its own."""

    issuer_url: str
    client_id: str
    client_secret: str
    audience: str | None
    scope: str | None

    def __repr__(self) -> str:
        shown = f"issuer_url={self.issuer_url!r}, client_id={self.client_id!r}, audience={self.audience!r}"
        return f"OAuth2({shown})"

    def cpp_params(self) -> str:
        """pulsar-client's (the C++ client's) parameters of `AuthenticationOauth2`."""
        params = {
            "type": "client_credentials",
            "issuer_url": self.issuer_url,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
        }
        params.update({k: v for k, v in (("audience", self.audience), ("scope", self.scope)) if v})
        return json.dumps(params)

    def token(self) -> str:
        secret = hashlib.sha256(self.client_secret.encode()).hexdigest()  # another secret: its own
        key = (self.issuer_url, self.client_id, secret, self.audience, self.scope)
        with _TOKENS_LOCK:
            kept = _TOKENS.get(key)
            if kept is not None and time.monotonic() < kept[1]:
                return kept[0]
            token, lifetime = self._fetch()
            _TOKENS[key] = (token, time.monotonic() + lifetime - min(60.0, lifetime / 5))
            return token

    def _fetch(self) -> tuple[str, float]:
        """A new token and its life in seconds: the issuer's discovery document names its token
        endpoint (as pulsar-client finds it), which gets the client's credentials."""
        import certifi
        import httpx

        verify = ssl.create_default_context(cafile=certifi.where())  # an issuer's CAs are public ones
        discovery = f"{self.issuer_url}/.well-known/openid-configuration"
        with httpx.Client(timeout=OAUTH2_TIMEOUT_SECONDS, verify=verify) as http:
            try:
                found = http.get(discovery)
            except httpx.HTTPError as error:
                raise ConfigError(f"cannot reach the OAuth2 issuer {self.issuer_url}: {error}") from None
            endpoint = _json_object(found).get("token_endpoint") if found.status_code == 200 else None
            if not isinstance(endpoint, str):
                raise ConfigError(
                    f"the OAuth2 issuer {self.issuer_url} gives no token endpoint in {discovery} "
                    f"(HTTP {found.status_code}): check issuerUrl"
                )
            form = {
                "grant_type": "client_credentials",
                "client_id": self.client_id,
                "client_secret": self.client_secret,
            }
            form.update({k: v for k, v in (("audience", self.audience), ("scope", self.scope)) if v})
            try:
                answer = http.post(endpoint, data=form)
            except httpx.HTTPError as error:
                raise ConfigError(
                    f"cannot reach the OAuth2 issuer's token endpoint {endpoint}: {error}"
                ) from None
        body = _json_object(answer)
        if answer.status_code != 200 or not isinstance(body.get("access_token"), str):
            reason = " ".join(str(body.get(k, "")) for k in ("error", "error_description")).strip()
            if answer.status_code == 200:
                reason = "an answer without an access_token"
            raise ConfigError(
                f"the OAuth2 issuer {self.issuer_url} refused client {self.client_id!r}: HTTP "
                f"{answer.status_code} {reason or answer.reason_phrase}".rstrip()
            )
        lifetime = body.get("expires_in")
        if isinstance(lifetime, int | float) and not isinstance(lifetime, bool) and lifetime > 0:
            return body["access_token"], float(lifetime)
        return body["access_token"], 3600.0


def _json_object(response: Any) -> dict[str, Any]:
    """An HTTP answer's JSON object, or {} (HTML, an array, nothing)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


#: How long a request to an OAuth2 issuer may take.
OAUTH2_TIMEOUT_SECONDS = 10.0
_TOKENS: dict[tuple[str, str, str, str | None, str | None], tuple[str, float]] = {}
_TOKENS_LOCK = threading.Lock()


def _credentials(key_file: str, where: str) -> dict[str, str]:
    """Pulsar's OAuth2 credentials file (`privateKey`): `file:///path`, a path, or
    `data:application/json;base64,...`; JSON with `client_id` and `client_secret`."""
    if key_file.startswith("data:"):
        _, _, encoded = key_file.partition(",")
        try:
            text = base64.b64decode(encoded).decode() if ";base64" in key_file.split(",")[0] else encoded
        except ValueError:
            raise ConfigError(f"{where}: privateKey is a data: URL that does not decode") from None
        shown = "privateKey's data: URL"
    else:
        path = _file_path(key_file)
        text = _read_text(path, "the OAuth2 credentials file", where)
        shown = f"the OAuth2 credentials file {path}"
    try:
        parsed = json.loads(text)
    except ValueError:
        raise ConfigError(f"{where}: {shown} is not JSON (client_id, client_secret)") from None
    if not isinstance(parsed, dict):
        raise ConfigError(f"{where}: {shown} is not a JSON object (client_id, client_secret)")
    return {str(k): str(v) for k, v in parsed.items()}


@functools.lru_cache(maxsize=16)
def _ssl_context(
    trust_file: str | None,
    certificate: tuple[str, str] | None,
    check_hostname: bool,
    insecure: bool,
    trust_key: str,
) -> ssl.SSLContext:
    """`admin_tls`'s context, made once a process for the same files and checks (loading a CA
    bundle takes tens of milliseconds, and a Spark query makes several admin clients)."""
    import certifi

    try:
        context = ssl.create_default_context(cafile=trust_file or certifi.where())
    except ssl.SSLError as error:
        raise ConfigError(f"{trust_key}: {trust_file} holds no PEM certificate ({error.reason})") from None
    context.check_hostname = check_hostname and not insecure
    if insecure:
        context.verify_mode = ssl.CERT_NONE
    if certificate is not None:
        try:
            context.load_cert_chain(*certificate)
        except (ssl.SSLError, OSError) as error:
            raise ConfigError(
                f"the client certificate {certificate[0]} and key {certificate[1]} do not load: {error}"
            ) from None
    return context


def connect(conf: str | os.PathLike[str] | ClientConf | None = None, **client_args: Any) -> Any:
    """A `pulsar.Client` for the cluster a `client.conf` describes (`conf`: its path, a
    `ClientConf`, or None for the file `PULSAR_CLIENT_CONF` names), with TLS and credentials as
    `pulsar-client` and `pulsar-admin` would use them. `client_args`: more of `pulsar.Client`'s
    keyword arguments (`logger`, `io_threads`, ...)."""
    if conf is None:
        path = os.environ.get(CLIENT_CONF_ENV)
        if not path:
            raise ConfigError(f"no client configuration: give its path, or set {CLIENT_CONF_ENV}")
        conf = path
    if not isinstance(conf, ClientConf):
        conf = ClientConf.read(conf)
    return conf.pulsar_client(**client_args)


def _parse(name: str, spec: _ClientKey, value: Any, where: str) -> Any:
    key = f"{name!r} {where}".rstrip()
    if spec.kind == "bool":
        flag = boolean(value)
        if flag is None:
            raise ConfigError(f"Pulsar client key {key} takes true or false, not {value!r}")
        return flag
    if spec.kind == "ms":
        number = integer(value)
        if number is None or number <= 0:
            raise ConfigError(
                f"Pulsar client key {key} takes a positive number of milliseconds, not {value!r}"
            )
        return number
    if not isinstance(value, str):
        raise ConfigError(f"Pulsar client key {key} takes a string, not {type(value).__name__}")
    value = value.strip()
    if spec.kind == "url":
        schemes = (
            ("pulsar://", "pulsar+ssl://") if spec.attribute == "service_url" else ("http://", "https://")
        )
        if not value.startswith(schemes):
            raise ConfigError(f"Pulsar client key {key} takes a {' or '.join(schemes)} URL, not {value!r}")
    return value


def _check_java_only(key: str, value: Any, where: str) -> None:
    name = _BY_LOWER[key.lower()]
    wanted = _JAVA_ONLY[name]
    if wanted is None or str(value).strip().lower() == wanted:
        return
    raise ConfigError(
        f"Pulsar client key {name!r} {where} is the Java client's KeyStore TLS, which this package "
        "does not read: give PEM files with tlsTrustCertsFilePath (and tlsCertificateFilePath and "
        "tlsKeyFilePath for mutual TLS)"
    )


def _file_path(uri: str) -> str:
    """`file:///path`, `file:/path` or a path, as a path."""
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return uri[len("file:") :] if uri.startswith("file:") else uri


def _read_text(path: str, what: str, where: str = "") -> str:
    """The text of the file `what` (`the token file`), or a `ConfigError` naming it and `where`
    it was given."""
    prefix = f"{where}: " if where else ""
    try:
        return Path(path).read_text()
    except OSError as error:
        raise ConfigError(f"{prefix}cannot read {what} {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{prefix}{what} {path} is not a text file") from None


def _readable(path: str, what: str) -> None:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as error:
        raise ConfigError(f"{what}: cannot read {path}: {error.strerror or error}") from None
