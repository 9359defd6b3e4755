"""The Pulsar admin REST API, the few calls this package makes: declaring a topic's schema
EXTERNAL (PIP-420) here, and the Spark data source's planning calls (tasks/topic_metadata.py).

`declare_external(topic)` is what a Java PIP-420 client does on connect: it stores a SchemaInfo of
type EXTERNAL (empty data) for the topic, if the topic has none; a broker before 4.1 has no such
type, and the declaration is refused there (`UnsupportedBrokerError`, naming its version).
Measured on a 4.2 broker, the declaration makes the broker refuse a producer or consumer with a
native schema (Avro, JSON, String, ...) with `IncompatibleSchema`, so nobody writes a second kind
of payload on an external-schema topic, while this package's clients (which declare no schema:
pulsar-client's BYTES) go on as before.
"""

from __future__ import annotations

import contextlib
import functools
import re
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import certifi
import httpx

from . import subjects
from .config import ADMIN_TOKEN_KEY, ExternalSchemaConfig, token_given_as
from .connections import AUTH_OAUTH2, AUTH_TOKEN, ClientConf
from .errors import ConfigError, PulsarAdminError, UnsupportedBrokerError
from .subjects import TopicName

__all__ = [
    "EXTERNAL_SINCE",
    "PulsarAdmin",
    "PulsarAdminError",
    "UnsupportedBrokerError",
    "declare_external",
    "full_topic_name",
    "lacks_external_type",
    "require_external_type",
]


def full_topic_name(topic: str) -> str:
    """`orders` -> `persistent://public/default/orders` (`subjects.full_topic_name`), where a topic
    that is no topic name is a `ConfigError`."""
    try:
        return subjects.full_topic_name(topic)
    except ValueError as error:
        raise ConfigError(str(error)) from None


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CA bundle), made once a process: loading the bundle
    took tens of milliseconds, paid by every admin client (a Spark query made two to plan), for
    http:// too."""
    return ssl.create_default_context(cafile=certifi.where())


class _Credentials(httpx.Auth):
    """The client configuration's credentials on each request (an OAuth2 token expires)."""

    def __init__(self, client: ClientConf) -> None:
        self._client = client

    def auth_flow(self, request: httpx.Request) -> Any:
        request.headers.update(self._client.admin_headers())
        yield request


#: The broker's answers while a topic or bundle is in transit (unloaded, moved, its ledger
#: reopened), and the waits before a call is made again (seconds).
_BUSY = frozenset({500, 502, 503, 504})
_BUSY_RETRIES = (0.25, 0.5, 1.0, 2.0, 4.0)


class PulsarAdmin:
    """A small synchronous client of the admin REST API (`pulsar.admin.url`, Spark's `admin.url`)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        token_key: str = ADMIN_TOKEN_KEY,
        client: ClientConf | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`token_key`: the option that gives `token`, named when the API refuses a call for want
        of a token or for the token given. `client`: the cluster's client configuration, whose
        TLS (trust file, client certificate) the calls use, and its credentials where no `token`
        is given. `transport`: httpx's, for tests (an `httpx.MockTransport` plays the broker)."""
        verify = _tls() if client is None else client.admin_tls()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        auth = None
        if not token and client is not None and client.plugin in (AUTH_TOKEN, AUTH_OAUTH2):
            client.check()
            auth, token_key = _Credentials(client), "authParams"  # an OAuth2 token is fetched again
        self._token_key, self._has_token = token_key, bool(headers) or auth is not None
        self._trust = (
            "the CAs of tlsTrustCertsFilePath"
            if client and client.tls_trust_certs_file_path
            else "the system's CAs"
        )
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url, headers=headers, auth=auth, timeout=timeout, transport=transport, verify=verify
        )

    def close(self) -> None:
        self._http.close()

    def _request(
        self, method: str, path: str, what: str, body: Any = None, busy: frozenset[int] = _BUSY
    ) -> httpx.Response:
        """One call; a GET or PUT (each call this client makes with them can be made again) that the
        broker answers 500/502/503/504 (`busy`) is made again after `_BUSY_RETRIES` waits (~8 s in
        all): while a topic is unloaded or its bundle moves, the broker answers 500 "ManagedLedger
        ... has already been closed" or 503 for a second or two. The last answer is the caller's."""
        for wait in _BUSY_RETRIES if method in ("GET", "PUT") else ():
            response = self._send(method, path, what, body)
            if response.status_code not in busy:
                return response
            time.sleep(wait)
        return self._send(method, path, what, body)

    def _send(self, method: str, path: str, what: str, body: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, json=body)
        except httpx.HTTPError as error:
            hint = ""
            if "CERTIFICATE_VERIFY_FAILED" in str(error):
                hint = f" (its TLS certificate is not one of {self._trust}, or does not name its host)"
            elif isinstance(error.__context__, ssl.SSLError) or "SSL" in str(error):
                hint = " (a TLS handshake failed: a broker of mutual TLS wants a client certificate)"
            raise PulsarAdminError(
                f"cannot reach the Pulsar admin API at {self.url} to {what}: {error}{hint}"
            ) from None

    def _refused(self, response: httpx.Response, what: str) -> PulsarAdminError:
        reason = _reason(response)
        status = response.status_code
        hint = ""
        if status == 401:
            hint = (
                f" (it refused the token given with '{self._token_key}')"
                if self._has_token
                else f" (it wants a token: set '{self._token_key}')"
            )
        elif status == 403:
            hint = f" (the role of the token given with '{self._token_key}' may not do this)"
        return PulsarAdminError(
            f"the Pulsar admin API at {self.url} could not {what}: HTTP {status} {reason}{hint}"
        )

    def _get(self, path: str, what: str) -> Any:
        response = self._request("GET", path, what)
        if response.status_code != 200:
            raise self._refused(response, what)
        return response.json()

    @staticmethod
    def _path(topic: str) -> str:
        scheme, tenant, namespace, local = subjects.split_topic(topic)
        return f"/admin/v2/{scheme}/{tenant}/{namespace}/{local}"

    def deduplicated(self, topic: str) -> bool:
        """Whether the broker drops a message to `topic` whose sequence id it persisted for its
        producer name (Pulsar's deduplication): the policy it applies to the topic (the topic's,
        else its namespace's, else the broker's), or, for a topic not created yet, its namespace's
        (unset: off, the broker's default)."""
        what = f"read the deduplication policy of {topic}"
        response = self._request("GET", f"{self._path(topic)}/deduplicationEnabled?applied=true", what)
        if response.status_code == 200:
            return response.json() is True
        if response.status_code != 404:
            raise self._refused(response, what)
        _, tenant, namespace, _ = subjects.split_topic(topic)
        response = self._request("GET", f"/admin/v2/namespaces/{tenant}/{namespace}/deduplication", what)
        if response.status_code != 200:
            raise self._refused(response, what)
        return response.content.strip() == b"true"

    def create_subscription(self, topic: str, name: str) -> bool:
        """Create the durable subscription `name` on `topic` at its first message (creating the
        topic where the broker creates topics on use), as pulsar-client's
        `ConsumerDeadLetterPolicy(initial_subscription_name=)` does for a dead-letter topic: the
        broker then keeps what is sent there until that subscription has it. True: created now;
        False: it was there."""
        what = f"create the subscription {name!r} on {topic}"
        earliest = {"ledgerId": -1, "entryId": -1, "partitionIndex": -1}
        path = f"{self._path(topic)}/subscription/{quote(name, safe='')}"
        # 412 too: a topic unloaded while its cursor is made answers "unable to persist
        # readPosition for cursor reset" (a retry after a partial make: 409, it is there)
        response = self._request("PUT", path, what, earliest, busy=_BUSY | {412})
        if response.status_code == 409:
            return False
        if response.status_code >= 300:
            raise self._refused(response, what)
        return True

    def kept_unread(self, topic: str) -> bool:
        """Whether the broker keeps what is sent to `topic` until someone reads it: the topic has a
        subscription, or retention applies to it. A topic with neither keeps its messages only
        until its ledger rolls over (an unload, a restart, a full ledger), then deletes them.
        A topic not created yet: its namespace's retention."""
        what = f"read the subscriptions and retention of {topic}"
        response = self._request("GET", f"{self._path(topic)}/subscriptions", what)
        if response.status_code == 200 and response.json():
            return True
        if response.status_code not in (200, 404):
            raise self._refused(response, what)
        path = f"{self._path(topic)}/retention?applied=true"
        if response.status_code == 404:
            _, tenant, namespace, _ = subjects.split_topic(topic)
            path = f"/admin/v2/namespaces/{tenant}/{namespace}/retention"
        response = self._request("GET", path, what)
        if response.status_code != 200:
            raise self._refused(response, what)
        retention = response.json() if response.content.strip() else {}  # a namespace without: empty
        return any(retention.get(key) for key in ("retentionTimeInMinutes", "retentionSizeInMB"))

    def broker_version(self) -> str | None:
        """The Pulsar release of the broker behind the API, as it reports it (`4.0.7`); None where
        it does not say (a proxy in front, a refused call)."""
        try:
            response = self._http.get("/admin/v2/brokers/version")
        except httpx.HTTPError:
            return None
        version = response.text.strip().strip('"')
        return version if response.status_code == 200 and _release(version) is not None else None

    def declare_external(self, topic: str) -> bool:
        """Store an EXTERNAL SchemaInfo for `topic` if it has no schema; True: the topic's schema is
        EXTERNAL afterwards (it was, or now is).

        Raises `UnsupportedBrokerError` on a broker older than 4.1, which has no EXTERNAL type,
        and `PulsarAdminError` when the topic already has another schema (a native Avro or JSON
        producer wrote to it), when the namespace does not exist, or the API refuses."""
        topic = full_topic_name(topic)
        name = TopicName.parse(topic)  # a topic's partitions share its schema
        path = f"/admin/v2/schemas/{name.tenant}/{name.namespace}/{name.local_name}/schema"
        what = f"declare the schema of {topic} EXTERNAL"
        current = self._request("GET", path, f"read the schema of {topic}")
        if current.status_code == 200 and str(current.json().get("type", "")).upper() == "EXTERNAL":
            return True
        if current.status_code not in (200, 404):
            raise self._refused(current, f"read the schema of {topic}")
        response = self._request("POST", path, what, {"type": "EXTERNAL", "schema": "", "properties": {}})
        if response.status_code in (200, 204):
            return True
        reason = _reason(response)
        if response.status_code == 409:
            raise PulsarAdminError(
                f"{topic} already has a schema of type {_schema_type(current)} on the broker, so it "
                f"cannot be declared EXTERNAL: {reason}. A producer with a native Pulsar schema wrote to it; "
                "use another topic, or delete the topic's schema (pulsar-admin schemas delete) first"
            )
        # A broker before 4.1 answers 500 "No enum constant ...SchemaType.EXTERNAL": its version
        # says why, or, where it does not say it (a proxy in front), those words
        version = self.broker_version()
        if lacks_external_type(version) or (version is None and "SchemaType.EXTERNAL" in reason):
            raise self._without_external(f"cannot declare {topic} EXTERNAL", version)
        raise self._refused(response, what)

    def _without_external(self, what: str, version: str | None) -> UnsupportedBrokerError:
        runs = f"runs Pulsar {version}" if version else "has no EXTERNAL schema type"
        return UnsupportedBrokerError(
            f"{what}: the broker at {self.url} {runs}, and the EXTERNAL schema type (PIP-420) needs "
            f"Pulsar {EXTERNAL_SINCE[0]}.{EXTERNAL_SINCE[1]} or newer; leave out 'pulsar.admin.url' "
            "to go on without the declaration",
            broker_version=version,
        )

    def require_external_type(self) -> None:
        """Raises `UnsupportedBrokerError` where the broker's version is known and older than 4.1,
        so that every declaration would be refused."""
        version = self.broker_version()
        if lacks_external_type(version):
            raise self._without_external("cannot declare topics EXTERNAL", version)


#: The first Pulsar release with PIP-420's EXTERNAL schema type.
EXTERNAL_SINCE = (4, 1)


def lacks_external_type(version: str | None) -> bool:
    """Whether Pulsar `version` (`4.0.7`, as a broker reports it) is older than 4.1; False where
    the version is not known."""
    release = _release(version) if version else None
    return release is not None and release < EXTERNAL_SINCE


def _release(version: str) -> tuple[int, int] | None:
    """`4.0.7` (or `4.1.0-SNAPSHOT`) -> (4, 0); None for what is no version."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _schema_type(response: httpx.Response) -> str:
    try:
        return str(response.json().get("type", "native"))
    except ValueError:
        return "native"


def _reason(response: httpx.Response) -> str:
    """The broker's reason: its JSON `reason`, or the title of its HTML error page."""
    try:
        document = response.json()
    except ValueError:
        text = response.text
        start, end = text.find("<title>"), text.find("</title>")
        return text[start + 7 : end].strip() if start >= 0 < end else " ".join(text.split())[:300]
    reason = document.get("reason") if isinstance(document, dict) else None
    return " ".join(str(reason or document).split())[:300]


_DECLARED: set[tuple[str, str]] = set()
_DECLARED_LOCK = threading.Lock()


@contextlib.contextmanager
def _admin(config: ExternalSchemaConfig, url: str) -> Iterator[PulsarAdmin]:
    """The admin API of `pulsar.admin.url` (`url`), with its token or the client.conf's credentials."""
    token = config.pulsar_admin_token
    admin = PulsarAdmin(url, token=token, token_key=token_given_as(token), client=config.pulsar_client)
    try:
        yield admin
    finally:
        admin.close()


def declare_external(config: ExternalSchemaConfig, topic: str) -> None:
    """With `pulsar.admin.url`, declare `topic`'s schema EXTERNAL on the broker, once per process
    (this module's docstring says what that changes); without it, nothing. `create_producer` and
    `subscribe` call it. Raises `UnsupportedBrokerError` on a broker before 4.1, and
    `PulsarAdminError` when the topic has a native schema already, or the admin API refuses or
    cannot be reached."""
    if config.pulsar_admin_url is None:
        return
    key = (config.pulsar_admin_url, TopicName.parse(full_topic_name(topic)).qualified)
    with _DECLARED_LOCK:
        if key in _DECLARED:
            return
        with _admin(config, config.pulsar_admin_url) as admin:
            admin.declare_external(topic)
        _DECLARED.add(key)


def require_external_type(config: ExternalSchemaConfig) -> None:
    """With `pulsar.admin.url`, refuse a broker before 4.1 up front (`UnsupportedBrokerError`),
    where every declaration would be: Spark's writers and the validation job ask on the driver,
    so that the user reads one line before any task runs, not a task's failure in Spark's log.
    A broker that does not say its version passes (its declarations say it then)."""
    if config.pulsar_admin_url is None:
        return
    with _admin(config, config.pulsar_admin_url) as admin:
        admin.require_external_type()
