"""The native extension's TLS checks (native/src/tls.rs) against a TLS server of the test's own
(Python's `ssl`, certificates made by `openssl` in the test): a certificate that does not name the
host is refused with hostname verification on and taken with it off (Pulsar's default), as
`tlsEnableHostnameVerification` says; a certificate of another CA is refused either way, and
`tlsAllowInsecureConnection` takes it. Against real brokers: tests/spark/test_spark_tls.py."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from native_support import required_extension

EXTENSIONS = """
[ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
[server]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:broker.example
"""


def openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def certificates(directory: Path, ca: str) -> None:
    """`ca`.crt, and server.crt of it, for broker.example only (not 127.0.0.1)."""
    (directory / "extensions.cnf").write_text(EXTENSIONS)
    for name, subject in ((ca, f"{ca} for tests"), ("server", "broker.example")):
        openssl(directory, "req", "-new", "-newkey", "rsa:2048", "-noenc", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", "-subj", f"/CN={subject}")  # fmt: skip
        signer = ["-key", f"{ca}.key"] if name == ca else ["-CA", f"{ca}.crt", "-CAkey", f"{ca}.key"]
        kind = "ca" if name == ca else "server"
        openssl(directory, "x509", "-req", "-in", f"{name}.csr", *signer, "-days", "1", "-out",
                f"{name}.crt", "-extfile", "extensions.cnf", "-extensions", kind)  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A TLS server on 127.0.0.1 whose certificate names broker.example; it closes each
    connection after its handshake. (its URL, the directory of ca.crt and other-ca.crt)"""
    required_extension()  # before any certificate is made
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on the PATH")
    directory = tmp_path_factory.mktemp("tls")
    certificates(directory, "ca")
    other = directory / "other"
    other.mkdir()
    certificates(other, "other-ca")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "server.crt", directory / "server.key")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            try:
                with context.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(1)  # the client's first bytes, then closed: no broker here
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"pulsar+ssl://127.0.0.1:{listener.getsockname()[1]}", directory
    stop.set()
    thread.join()
    listener.close()


def drained(url: str, trust: Path, **options: bool) -> str:
    """What the extension's client says of the server: it fails where the extension is missing
    (and skips in the Python leg), as every test of the extension does."""
    extension = required_extension()
    client = extension.Client(
        url,
        tls_trust_certs_file_path=str(trust),
        operation_timeout_ms=2_000,
        connection_timeout_ms=2_000,
        **options,
    )
    with pytest.raises(Exception) as failed:
        extension._testing.drain(client, "persistent://public/default/t")
    return str(failed.value)


def test_a_certificate_that_does_not_name_the_host_is_refused_with_hostname_verification(
    server: tuple[str, Path],
) -> None:
    url, directory = server

    refused = drained(url, directory / "ca.crt", tls_hostname_verification=True)

    assert "the TLS handshake with 127.0.0.1 failed" in refused and "not valid for name" in refused
    assert "does not name this host: tlsEnableHostnameVerification is on" in refused


def test_without_hostname_verification_the_chain_is_still_checked(server: tuple[str, Path]) -> None:
    url, directory = server

    taken = drained(url, directory / "ca.crt", tls_hostname_verification=False)
    other_ca = drained(url, directory / "other" / "other-ca.crt", tls_hostname_verification=False)
    insecure = drained(url, directory / "other" / "other-ca.crt", tls_allow_insecure_connection=True)

    assert "TLS handshake" not in taken  # the handshake passed; the server then closed
    assert "UnknownIssuer" in other_ca and "not signed by a CA of tlsTrustCertsFilePath" in other_ca
    assert "TLS handshake" not in insecure
