"""connections.py: Pulsar's client configuration read as `pulsar-client` reads it, and what it
builds (a `pulsar.Client`'s arguments, the admin API's TLS and credentials). Against the real
secured brokers: tests/integration/test_secured_tls.py."""

from __future__ import annotations

import ssl
from pathlib import Path

import pulsar
import pytest

from pulsar_external_schema.config import ExternalSchemaConfig
from pulsar_external_schema.connections import AUTH_TLS, AUTH_TOKEN, ClientConf, connect
from pulsar_external_schema.errors import ConfigError

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl"


@pytest.fixture
def pem(tmp_path: Path) -> Path:
    """Files where PEM files would be (their contents are not read until a connection)."""
    for name in ("ca.crt", "client.crt", "client.key"):
        (tmp_path / name).write_text(f"-----BEGIN {name}-----\n")
    return tmp_path


def write_conf(path: Path, text: str) -> Path:
    conf = path / "client.conf"
    conf.write_text(text)
    return conf


def test_a_client_conf_is_read_as_pulsars_tools_read_it(pem: Path) -> None:
    conf = ClientConf.read(
        write_conf(
            pem,
            "# Configuration for pulsar-client and pulsar-admin CLI tools\n"
            "webServiceUrl=https://pulsar.example:8443/\n"
            "brokerServiceUrl = pulsar+ssl://pulsar.example:6651/\n"
            "authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationTls\n"
            f"authParams=tlsCertFile:{pem}/client.crt,\\\n    tlsKeyFile:{pem}/client.key\n"
            "! a comment too\n"
            f"tlsTrustCertsFilePath: {pem}/ca.crt\n"
            "tlsAllowInsecureConnection=false\n"
            "tlsEnableHostnameVerification=true\n"
            "tlsCertificateFilePath=\n"
            "useKeyStoreTls=false\n"
            "tlsTrustStoreType=JKS\n"
            "tlsTrustStorePassword=\n"
            "webserviceTlsProvider=\n",
        )
    )

    assert conf.service_url == "pulsar+ssl://pulsar.example:6651/"
    assert conf.web_service_url == "https://pulsar.example:8443/"
    assert conf.uses_tls and conf.plugin == AUTH_TLS
    assert conf.client_certificate() == (f"{pem}/client.crt", f"{pem}/client.key")
    assert conf.tls_trust_certs_file_path == f"{pem}/ca.crt"
    assert conf.tls_enable_hostname_verification and not conf.tls_allow_insecure_connection
    assert conf.tls_certificate_file_path is None  # empty: unset, as in Pulsar's own file


def test_the_pulsar_client_gets_pulsar_clients_own_tls_and_authentication(pem: Path) -> None:
    conf = ClientConf.from_options(
        {
            "brokerServiceUrl": "pulsar+ssl://127.0.0.1:6651",
            "tlsTrustCertsFilePath": f"{pem}/ca.crt",
            "tlsEnableHostnameVerification": "true",
            "tlsCertificateFilePath": f"{pem}/client.crt",
            "tlsKeyFilePath": f"{pem}/client.key",
            "operationTimeoutMs": "5000",
        }
    )

    args = conf.pulsar_client_args()

    assert isinstance(args.pop("authentication"), pulsar.AuthenticationTLS)
    assert args == {
        "use_tls": True,
        "tls_allow_insecure_connection": False,
        "tls_validate_hostname": True,
        "tls_trust_certs_file_path": f"{pem}/ca.crt",
        "operation_timeout_seconds": 5,
    }


@pytest.mark.parametrize(
    "params", [f"token:{TOKEN}", TOKEN, f'{{"token": "{TOKEN}"}}', "file:///{dir}/token", "file:{dir}/token"]
)
def test_a_token_is_given_as_pulsar_clients_token_plugin_takes_it(tmp_path: Path, params: str) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    conf = ClientConf.from_options(
        {"authPlugin": "token", "authParams": params.replace("{dir}", str(tmp_path)).replace("////", "///")}
    )

    assert conf.plugin == AUTH_TOKEN
    assert conf.token() == TOKEN
    assert conf.admin_headers() == {"Authorization": f"Bearer {TOKEN}"}
    assert isinstance(conf.pulsar_client_args()["authentication"], pulsar.AuthenticationToken)


def test_java_client_names_are_taken_as_their_client_conf_keys_in_any_case() -> None:
    conf = ClientConf.from_options(
        {
            "serviceUrl": "pulsar://h:6650",
            "AUTHPLUGINCLASSNAME": AUTH_TOKEN,
            "authparams": "token:x",
            "tlshostnameverificationenable": "true",
        }
    )

    assert conf.service_url == "pulsar://h:6650" and conf.plugin == AUTH_TOKEN
    assert conf.tls_enable_hostname_verification


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tlsTrustCertFilePath": "/x"},
         "unknown Pulsar client key 'tlsTrustCertFilePath'.*did you mean 'tlsTrustCertsFilePath'"),
        ({"brokerServiceUrl": "http://h:8080"},
         "'brokerServiceUrl'.* takes a pulsar:// or pulsar\\+ssl:// URL"),
        ({"tlsAllowInsecureConnection": "yes"},
         "'tlsAllowInsecureConnection'.*takes true or false, not 'yes'"),
        ({"useKeyStoreTls": "true"},
         "'useKeyStoreTls'.*KeyStore TLS.*give PEM files with tlsTrustCertsFilePath"),
        ({"serviceUrl": "pulsar://a:1", "brokerServiceUrl": "pulsar://b:1"}, "given twice"),
        ({"operationTimeoutMs": "0"}, "positive number of milliseconds"),
    ],
)  # fmt: skip
def test_a_bad_key_or_value_is_one_error_that_names_it(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClientConf.from_options(values, where="in client.conf")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"tlsTrustCertsFilePath": "/nowhere/ca.crt"},
         "'tlsTrustCertsFilePath'.*cannot read /nowhere/ca.crt: No such file"),
        ({"authPlugin": AUTH_TLS, "authParams": "tlsCertFile:/nowhere/c.crt,tlsKeyFile:/nowhere/c.key"},
         "cannot read /nowhere/c.crt"),
        ({"tlsCertificateFilePath": "{dir}/client.crt"}, "mutual TLS needs a certificate and its key"),
        ({"authPlugin": AUTH_TLS}, "AuthenticationTls but no certificate is given"),
        ({"authPlugin": "token", "authParams": "file:///nowhere/token"},
         "cannot read the token file /nowhere/token"),
        ({"authPlugin": "token", "authParams": "token:"}, "gives no token"),
        ({"authPlugin": "kerberos"}, "an auth plugin this package does not know: 'kerberos'"),
        ({"authPlugin": "token", "authParams": "{not json"},
         "is not valid JSON \\(its value is a secret: not shown\\)"),
    ],
)  # fmt: skip
def test_a_file_that_does_not_read_or_a_credential_that_does_not_parse_fails_before_connecting(
    pem: Path, values: dict[str, str], message: str
) -> None:
    conf = ClientConf.from_options(
        {k: v.replace("{dir}", str(pem)) for k, v in values.items()}, where="in client.conf"
    )

    with pytest.raises(ConfigError, match=message) as raised:
        conf.check()
    assert "in client.conf" in str(raised.value)


def test_no_secret_shows_in_repr_or_errors(tmp_path: Path) -> None:
    conf = ClientConf.from_options({"authPlugin": "token", "authParams": f"token:{TOKEN}"})
    broken = ClientConf.from_options({"authPlugin": "oauth2", "authParams": '{"clientSecret": "hush", '})

    assert TOKEN not in repr(conf) and "****" in repr(conf)
    with pytest.raises(ConfigError) as raised:
        broken.check()
    assert "hush" not in str(raised.value)


def test_flags_override_the_file_and_the_file_keeps_the_rest(pem: Path) -> None:
    from_file = ClientConf.read(
        write_conf(pem, f"brokerServiceUrl=pulsar+ssl://a:6651\ntlsTrustCertsFilePath={pem}/ca.crt\n")
    )

    given = from_file.with_values(service_url="pulsar+ssl://b:6651", web_service_url=None)

    assert given.service_url == "pulsar+ssl://b:6651"
    assert given.tls_trust_certs_file_path == f"{pem}/ca.crt"


def test_the_admin_api_trusts_the_ca_file_and_checks_hostnames_as_the_file_says(tmp_path: Path) -> None:
    plain = ClientConf().admin_tls()
    insecure = ClientConf.from_options({"tlsAllowInsecureConnection": "true"}).admin_tls()
    checked = ClientConf.from_options({"tlsEnableHostnameVerification": "true"}).admin_tls()

    assert plain.verify_mode == ssl.CERT_REQUIRED and not plain.check_hostname  # Pulsar's default
    assert insecure.verify_mode == ssl.CERT_NONE
    assert checked.check_hostname


def test_the_factory_config_takes_pulsar_client_keys_and_a_client_conf_file(pem: Path) -> None:
    conf_file = write_conf(pem, f"tlsTrustCertsFilePath={pem}/ca.crt\nbrokerServiceUrl=pulsar+ssl://a:6651\n")

    config = ExternalSchemaConfig.from_dict(
        {
            "schema.registry.url": "http://r:8081",
            "pulsar.client.conf": str(conf_file),
            "pulsar.client.tlsEnableHostnameVerification": "true",
        }
    )

    assert config.pulsar_client is not None
    assert config.pulsar_client.tls_trust_certs_file_path == f"{pem}/ca.crt"
    assert config.pulsar_client.tls_enable_hostname_verification
    with pytest.raises(
        ConfigError, match=r"'pulsar\.client\.tlsTrustCertFilePath'.*did you mean 'tlsTrustCertsFilePath'"
    ):
        ExternalSchemaConfig.from_dict(
            {"schema.registry.url": "http://r:8081", "pulsar.client.tlsTrustCertFilePath": "x"}
        )
    with pytest.raises(ConfigError, match=r"cannot read the Pulsar client configuration /nowhere\.conf"):
        ExternalSchemaConfig.from_dict(
            {"schema.registry.url": "http://r:8081", "pulsar.client.conf": "/nowhere.conf"}
        )


def test_connect_reads_the_file_pulsar_client_conf_names(pem: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULSAR_CLIENT_CONF", raising=False)
    with pytest.raises(ConfigError, match="set PULSAR_CLIENT_CONF"):
        connect()
    monkeypatch.setenv("PULSAR_CLIENT_CONF", str(write_conf(pem, "brokerServiceUrl=pulsar://127.0.0.1:1\n")))

    client = connect()  # pulsar-client connects lazily

    client.close()


@pytest.mark.parametrize(
    "params",
    [
        '{{"type": "client_credentials", "issuerUrl": "https://issuer.example/", '
        '"privateKey": "file://{creds}", "audience": "urn:pulsar"}}',
        '{{"issuerUrl": "https://issuer.example", "privateKey": "data:application/json;base64,{encoded}", '
        '"audience": "urn:pulsar"}}',
        '{{"issuer_url": "https://issuer.example", "client_id": "app", "client_secret": "hush", '
        '"audience": "urn:pulsar"}}',
    ],
)
def test_oauth2_takes_the_java_and_the_cpp_clients_parameters(tmp_path: Path, params: str) -> None:
    import base64
    import json

    credentials = json.dumps({"type": "client_credentials", "client_id": "app", "client_secret": "hush"})
    (tmp_path / "creds.json").write_text(credentials)
    text = params.format(
        creds=tmp_path / "creds.json", encoded=base64.b64encode(credentials.encode()).decode()
    )
    conf = ClientConf.from_options({"authPlugin": "oauth2", "authParams": text})

    oauth2 = conf.check().oauth2()

    assert (oauth2.issuer_url, oauth2.client_id, oauth2.client_secret) == (
        "https://issuer.example",
        "app",
        "hush",
    )
    assert oauth2.audience == "urn:pulsar"
    assert json.loads(oauth2.cpp_params()) == {
        "type": "client_credentials",
        "issuer_url": "https://issuer.example",
        "client_id": "app",
        "client_secret": "hush",
        "audience": "urn:pulsar",
    }
    assert "hush" not in repr(oauth2) and "hush" not in repr(conf)
    assert isinstance(conf.pulsar_client_args()["authentication"], pulsar.AuthenticationOauth2)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ('{"issuerUrl": "https://i", "privateKey": "file:///nowhere/creds.json"}',
         "cannot read the OAuth2 credentials file /nowhere/creds.json"),
        ('{"privateKey": "data:application/json;base64,e30="}', "needs issuerUrl"),
        ('{"issuerUrl": "https://i", "client_id": "app"}', "needs a client's credentials"),
        ('{"type": "jwt_bearer", "issuerUrl": "https://i"}', "only client_credentials is supported"),
    ],
)  # fmt: skip
def test_an_oauth2_parameter_missing_or_unreadable_is_named_before_any_request(
    params: str, message: str
) -> None:
    conf = ClientConf.from_options({"authPlugin": "oauth2", "authParams": params}, where="in client.conf")

    with pytest.raises(ConfigError, match=message) as raised:
        conf.check()
    assert "'authParams' in client.conf" in str(raised.value)


def test_an_option_turns_a_files_true_back_to_false(pem: Path) -> None:
    from_file = ClientConf.read(
        write_conf(pem, "tlsAllowInsecureConnection=true\ntlsEnableHostnameVerification=true\n")
    )

    given = from_file.merged(ClientConf.from_options({"tlsallowinsecureconnection": "false"}))

    assert not given.tls_allow_insecure_connection and given.tls_enable_hostname_verification


def test_the_file_read_once_travels_as_options(pem: Path) -> None:
    """What Spark's executors get: the keys, not the path of a file they may not have."""
    conf = ClientConf.read(
        write_conf(
            pem, f"brokerServiceUrl=pulsar+ssl://a:6651\ntlsTrustCertsFilePath={pem}/ca.crt\nuseTls=true\n"
        )
    )

    options = conf.as_options("pulsar.client.")

    assert options == {
        "pulsar.client.brokerServiceUrl": "pulsar+ssl://a:6651",
        "pulsar.client.tlsTrustCertsFilePath": f"{pem}/ca.crt",
    }
    assert ClientConf.from_prefixed(options, "pulsar.client.", "option") == conf


def test_java_properties_comments_end_at_their_line(pem: Path) -> None:
    conf = ClientConf.read(
        write_conf(pem, "# a comment that ends in a backslash \\\nbrokerServiceUrl=pulsar://a:6650\n")
    )

    assert conf.service_url == "pulsar://a:6650"


def test_use_tls_with_a_plaintext_url_is_refused_not_ignored() -> None:
    with pytest.raises(
        ConfigError, match=r"'useTls' in client\.conf is true and brokerServiceUrl is pulsar://"
    ):
        ClientConf.from_options(
            {"useTls": "true", "brokerServiceUrl": "pulsar://a:6651"}, where="in client.conf"
        )


def test_a_line_that_is_no_key_is_not_quoted(pem: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        ClientConf.read(write_conf(pem, f"authParams=token:\n{TOKEN}\n"))

    assert TOKEN not in str(raised.value) and "is no `key=value`" in str(raised.value)


def test_a_trust_file_that_is_not_pem_is_named(pem: Path) -> None:
    conf = ClientConf.from_options({"tlsTrustCertsFilePath": f"{pem}/client.key"}, where="in client.conf")

    with pytest.raises(
        ConfigError, match=f"'tlsTrustCertsFilePath' in client.conf: {pem}/client.key holds no PEM"
    ):
        conf.admin_tls()


def test_a_client_certificate_beside_a_token_is_shown_by_pulsar_client_too(pem: Path) -> None:
    conf = ClientConf.from_options(
        {
            "brokerServiceUrl": "pulsar+ssl://a:6651",
            "authPlugin": "token",
            "authParams": f"token:{TOKEN}",
            "tlsCertificateFilePath": f"{pem}/client.crt",
            "tlsKeyFilePath": f"{pem}/client.key",
        }
    )

    args = conf.pulsar_client_args()

    assert isinstance(args["authentication"], pulsar.AuthenticationToken)
    assert (args["tls_certificate_file_path"], args["tls_private_key_file_path"]) == (
        f"{pem}/client.crt",
        f"{pem}/client.key",
    )


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"/.well-known/openid-configuration": (200, "<html>sign in</html>")}, "gives no token endpoint in"),
        ({"/.well-known/openid-configuration": (200, "[1]")}, "gives no token endpoint in"),
        (
            {"/.well-known/openid-configuration": (200, '{"token_endpoint": "{url}/token"}'),
             "/token": (200, "<html/>")},
            "refused client 'app': HTTP 200 an answer without an access_token",
        ),
        (
            {"/.well-known/openid-configuration": (200, '{"token_endpoint": "{url}/token"}'),
             "/token": (401, '{"error": "invalid_client", "error_description": "bad secret"}')},
            "refused client 'app': HTTP 401 invalid_client bad secret",
        ),
    ],
)  # fmt: skip
def test_what_an_issuer_answers_is_said_in_one_line(
    answers: dict[str, tuple[int, str]], message: str
) -> None:
    """A local HTTP server plays the issuer."""
    import http.server
    import threading

    class Issuer(http.server.BaseHTTPRequestHandler):
        def answer(self) -> None:
            status, body = answers.get(self.path, (404, "{}"))
            data = body.replace("{url}", f"http://127.0.0.1:{server.server_port}").encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Issuer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    issuer = f"http://127.0.0.1:{server.server_port}"
    conf = ClientConf.from_options(
        {
            "authPlugin": "oauth2",
            "authParams": f'{{"issuer_url": "{issuer}", "client_id": "app", "client_secret": "s3"}}',
        }
    )
    try:
        with pytest.raises(ConfigError, match=message) as raised:
            conf.token()
    finally:
        server.shutdown()
    assert "s3" not in str(raised.value)
