"""The Pulsar admin REST API, the few calls this package makes: declaring a topic's schema
EXTERNAL (PIP-420) here, and the Spark data source's planning calls (spark/topic_metadata.py).

`declare_external(topic)` is what a Java PIP-420 client does on connect: it stores a SchemaInfo of
type EXTERNAL (empty data) for the topic, if the topic has none. Measured on a 4.2 broker, that
makes the broker refuse a producer or consumer with a native schema (Avro, JSON, String, ...)
with `IncompatibleSchema`, so nobody writes a second kind of payload on an external-schema topic,
while this package's clients (which declare no schema: pulsar-client's BYTES) go on as before.
"""

from __future__ import annotations

import functools
import logging
import ssl
import threading
from typing import Any

import certifi
import httpx

from . import subjects
from .config import ADMIN_TOKEN_KEY, ExternalSchemaConfig, token_given_as
from .connections import AUTH_OAUTH2, AUTH_TOKEN, ClientConf
from .errors import ConfigError, PulsarAdminError
from .subjects import TopicName

log = logging.getLogger(__name__)

__all__ = ["PulsarAdmin", "PulsarAdminError", "declare_external", "full_topic_name"]


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

    def _request(self, method: str, path: str, what: str, body: Any = None) -> httpx.Response:
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

    def declare_external(self, topic: str) -> bool:
        """Store an EXTERNAL SchemaInfo for `topic` if it has no schema; True when the topic's
        schema is EXTERNAL afterwards (it was, or now is), False on a broker older than 4.1,
        which has no EXTERNAL type (logged once per call: the package works without it).

        Raises `PulsarAdminError` when the topic already has another schema (a native Avro or
        JSON producer wrote to it), when the namespace does not exist, or the API refuses."""
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
        if "SchemaType.EXTERNAL" in reason or ("EXTERNAL" in reason and response.status_code >= 500):
            log.warning(
                "the broker at %s has no EXTERNAL schema type (Pulsar before 4.1): %s is not declared "
                "EXTERNAL; this package works without it, but the broker cannot refuse native-schema "
                "producers on the topic",
                self.url,
                topic,
            )
            return False
        if response.status_code == 409:
            raise PulsarAdminError(
                f"{topic} already has a schema of type {_schema_type(current)} on the broker, so it "
                f"cannot be declared EXTERNAL: {reason}. A producer with a native Pulsar schema wrote to it; "
                "use another topic, or delete the topic's schema (pulsar-admin schemas delete) first"
            )
        raise self._refused(response, what)


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


def declare_external(config: ExternalSchemaConfig, topic: str) -> None:
    """With `pulsar.admin.url`, declare `topic`'s schema EXTERNAL on the broker, once per process
    (this module's docstring says what that changes); without it, nothing. `create_producer` and
    `subscribe` call it. Raises `PulsarAdminError` when the
    topic has a native schema already, or the admin API refuses or cannot be reached."""
    if config.pulsar_admin_url is None:
        return
    key = (config.pulsar_admin_url, TopicName.parse(full_topic_name(topic)).qualified)
    with _DECLARED_LOCK:
        if key in _DECLARED:
            return
        token = config.pulsar_admin_token
        admin = PulsarAdmin(
            config.pulsar_admin_url, token=token, token_key=token_given_as(token), client=config.pulsar_client
        )
        try:
            admin.declare_external(topic)
        finally:
            admin.close()
        _DECLARED.add(key)
