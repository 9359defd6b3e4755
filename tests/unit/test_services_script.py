"""scripts/services: clear errors for missing tools and bad arguments, parsing its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SERVICES_SCRIPT, parse_service_urls


def run_services(
    *args: str, path: str, cache: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": path,
        "PES_CACHE_DIR": str(cache),
        "PES_RUN_DIR": str(cache / "run"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, str(SERVICES_SCRIPT), *args], capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture
def bare_path(tmp_path: Path) -> str:
    """A PATH with no java, mvn or go on it."""
    empty = tmp_path / "bin"
    empty.mkdir()
    return str(empty)


@pytest.mark.parametrize(
    ("only", "tool", "hint"),
    [("pulsar", "mvn", "apt-get install maven"), ("registry", "go", "Install Go 1.26")],
)
def test_up_names_the_missing_tool_and_how_to_install_it(
    tmp_path: Path, bare_path: str, only: str, tool: str, hint: str
) -> None:
    result = run_services("up", "--only", only, path=bare_path, cache=tmp_path / "cache")

    assert result.returncode == 2
    assert f"`{tool}` was not found on PATH" in result.stderr
    assert hint in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_up_refuses_java_older_than_17(tmp_path: Path, bare_path: str) -> None:
    fake = Path(bare_path)
    for name in ("mvn", "java"):
        script = fake / name
        script.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
        script.chmod(0o755)

    result = run_services("up", "--only", "pulsar", path=bare_path, cache=tmp_path / "cache")

    assert result.returncode == 2
    assert "needs Java 17 or newer" in result.stderr
    assert '"11.0.2"' in result.stderr


def test_env_of_a_stopped_instance_says_how_to_start_it(tmp_path: Path, bare_path: str) -> None:
    result = run_services("env", "--instance", "nothing-here", path=bare_path, cache=tmp_path)

    assert result.returncode == 2
    assert "'nothing-here' is not running" in result.stderr
    assert "scripts/services up" in result.stderr


def test_status_of_a_stopped_instance_fails(tmp_path: Path, bare_path: str) -> None:
    result = run_services("status", path=bare_path, cache=tmp_path)

    assert result.returncode == 1
    assert "pulsar    not started" in result.stdout


def test_instance_names_are_restricted(tmp_path: Path, bare_path: str) -> None:
    result = run_services("up", "--instance", "../escape", path=bare_path, cache=tmp_path)

    assert result.returncode == 2
    assert "--instance takes letters" in result.stderr


def test_parse_service_urls_reads_only_url_lines() -> None:
    output = "PULSAR_SERVICE_URL=pulsar://127.0.0.1:1\nnoise\nSCHEMA_REGISTRY_URL=http://127.0.0.1:2\n"

    assert parse_service_urls(output) == {
        "PULSAR_SERVICE_URL": "pulsar://127.0.0.1:1",
        "SCHEMA_REGISTRY_URL": "http://127.0.0.1:2",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--namespace", "geo", "a", "b"], "--namespace takes TENANT/NAMESPACE, not 'geo'"),
        (["--namespace", "geo/ns", "a"], "needs at least two different instances"),
        (["--namespace", "geo/ns", "a", "a"], "needs at least two different instances"),
        (
            ["--namespace", "geo/ns", "standalone", "cluster-b"],
            "Pulsar of instance 'standalone' is not running; start it with "
            "`scripts/services up --instance standalone --only pulsar`",
        ),
    ],
)
def test_replicate_explains_what_is_missing(
    tmp_path: Path, bare_path: str, args: list[str], message: str
) -> None:
    result = run_services("replicate", *args, path=bare_path, cache=tmp_path)

    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_replicate_checks_instance_names(tmp_path: Path, bare_path: str) -> None:
    result = run_services("replicate", "--namespace", "geo/ns", "a", "../b", path=bare_path, cache=tmp_path)

    assert result.returncode == 2
    assert "instance names take letters, digits" in result.stderr


def test_restart_of_a_stopped_instance_says_how_to_start_it(tmp_path: Path, bare_path: str) -> None:
    result = run_services(
        "restart", "--instance", "nothing-here", "--only", "pulsar", path=bare_path, cache=tmp_path
    )

    assert result.returncode == 2
    assert "pulsar of instance 'nothing-here' is not running" in result.stderr
    assert "scripts/services up --instance nothing-here" in result.stderr
    assert "Traceback" not in result.stderr


def test_oauth2_goes_alone_or_with_tls(tmp_path: Path, bare_path: str) -> None:
    result = run_services("up", "--only", "pulsar", "--oauth2", "--mtls", path=bare_path, cache=tmp_path)

    assert result.returncode == 2
    assert "--oauth2 goes alone or with --tls" in result.stderr


def test_a_secured_instance_without_openssl_or_node_says_what_to_install(
    tmp_path: Path, bare_path: str
) -> None:
    """The broker's jars found in the cache, so that the missing tool is the first thing met."""
    version = os.environ.get("PES_PULSAR_VERSION", "4.2.4")
    lib = tmp_path / f"pulsar-{version}" / "lib"
    lib.mkdir(parents=True)
    (lib / f"pulsar-broker-{version}.jar").write_text("")

    tls = run_services("up", "--only", "pulsar", "--tls", path=bare_path, cache=tmp_path)
    oauth2 = run_services("up", "--only", "pulsar", "--oauth2", path=bare_path, cache=tmp_path)

    assert tls.returncode == 2 and "`openssl` was not found on PATH" in tls.stderr
    assert oauth2.returncode == 2 and "`npm` was not found on PATH" in oauth2.stderr
    assert "Traceback" not in tls.stderr + oauth2.stderr


def fake_maven(bin_dir: Path, resolves: str, asked: Path) -> None:
    """`java` of release 17 that exits at once when run (no broker starts), and `mvn` that records
    each release asked for (and the SLF4J binding) in `asked`, and resolves only `resolves`."""
    (bin_dir / "java").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-version" ]; then echo \'openjdk version "17.0.9" 2023-10-17\' >&2; exit 0; fi\n'
        "exit 1\n"
    )
    (bin_dir / "mvn").write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do case $arg in\n'
        f'  -Dpulsar.version=*) version=${{arg#*=}}; echo "$version" >> {asked} ;;\n'
        f'  -Dslf4j.binding=*) echo "${{arg#*=}}" >> {asked} ;;\n'
        "  -DoutputDirectory=*) out=${arg#*=} ;;\n"
        "esac; done\n"
        f'if [ "$version" = "{resolves}" ]; then\n'
        '  /bin/mkdir -p "$out"; : > "$out/pulsar-broker-$version.jar"; exit 0\n'
        "fi\n"
        "echo '[ERROR] Could not transfer artifact org.apache.pulsar:jetcd-core-shaded'; exit 1\n"
    )
    for name in ("java", "mvn"):
        (bin_dir / name).chmod(0o755)


def served(tmp_path: Path, *releases: str) -> str:
    """A file:// URL of Maven's metadata listing `releases` of pulsar-broker."""
    listing = tmp_path / "maven-metadata.xml"
    listing.write_text(
        "<metadata><versioning><versions>"
        + "".join(f"<version>{r}</version>" for r in releases)
        + "</versions></versioning></metadata>"
    )
    return listing.as_uri()


def test_a_release_maven_central_lacks_is_replaced_by_the_next_served_one_down_and_said(
    tmp_path: Path, bare_path: str
) -> None:
    asked = tmp_path / "asked"
    fake_maven(Path(bare_path), "4.0.7", asked)
    env = {"PES_PULSAR_RELEASES_URL": served(tmp_path, "4.0.5", "4.0.7", "4.0.8", "4.2.4")}

    result = run_services(
        "up", "--only", "pulsar", "--pulsar-version", "4.0.9", path=bare_path, cache=tmp_path / "c", env=env
    )

    assert asked.read_text().split() == [
        "4.0.9", "log4j-slf4j2-impl", "4.0.8", "log4j-slf4j2-impl", "4.0.7", "log4j-slf4j2-impl"
    ]  # fmt: skip
    assert "Pulsar 4.0.9 does not resolve from Maven Central; trying 4.0.8" in result.stderr
    assert "took Pulsar 4.0.7: 4.0.9 does not resolve from Maven Central" in result.stderr
    assert "pulsar exited during start-up" in result.stderr  # the fake java: the release it ran
    assert (tmp_path / "c" / "pulsar-4.0.7" / "lib" / "pulsar-broker-4.0.7.jar").exists()


def test_no_release_resolving_is_an_error_with_what_to_do_after_a_bounded_number_of_tries(
    tmp_path: Path, bare_path: str
) -> None:
    asked = tmp_path / "asked"
    fake_maven(Path(bare_path), "none", asked)
    env = {"PES_PULSAR_RELEASES_URL": served(tmp_path, *(f"4.0.{patch}" for patch in range(9)))}

    result = run_services(
        "up", "--only", "pulsar", "--pulsar-version", "4.0.8", path=bare_path, cache=tmp_path / "c", env=env
    )

    assert result.returncode == 2
    assert asked.read_text().split()[::2] == ["4.0.8", "4.0.7", "4.0.6", "4.0.5"]  # three below, no more
    assert "Maven could not resolve org.apache.pulsar:pulsar-broker:4.0.8" in result.stderr
    assert "(nor did 4.0.7, 4.0.6, 4.0.5)" in result.stderr
    assert "set PES_PULSAR_VERSION (or --pulsar-version) to another release" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_release_before_3_1_gets_log4js_binding_of_slf4j_1(tmp_path: Path, bare_path: str) -> None:
    asked = tmp_path / "asked"
    fake_maven(Path(bare_path), "3.0.7", asked)

    run_services("up", "--only", "pulsar", "--pulsar-version", "3.0.7", path=bare_path, cache=tmp_path / "c")

    assert asked.read_text().split() == ["3.0.7", "log4j-slf4j-impl"]


@pytest.mark.parametrize("version", ["4.0", "latest", "4.0.7-SNAPSHOT"])
def test_a_release_is_major_minor_patch(tmp_path: Path, bare_path: str, version: str) -> None:
    result = run_services(
        "up", "--only", "pulsar", "--pulsar-version", version, path=bare_path, cache=tmp_path
    )

    assert result.returncode == 2
    assert f"a Pulsar release is MAJOR.MINOR.PATCH (e.g. 4.0.7), not {version!r}" in result.stderr
