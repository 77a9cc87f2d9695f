"""The Kubernetes recipes in examples/kubernetes/ are checked: every manifest validates
offline against the Kubernetes schemas (kubernetes-validate), the sitemapd configs they
carry pass `check-config`, and `partition = "auto/K"` takes the partition from a
StatefulSet pod's host name."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from conftest import REPO

EXAMPLES = sorted((REPO / "examples" / "kubernetes").glob("*.yaml"))
# The oldest release with native sidecars on by default; the newest the package knows.
VERSIONS = ["1.29.0", kubernetes_validate.latest_version()]


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc["kind"] in ("Deployment", "StatefulSet"):
        spec: dict[str, Any] = doc["spec"]["template"]["spec"]
        return spec
    return None


def configs(path: Path) -> dict[str, str]:
    """Return the sitemapd configs the ConfigMaps of `path` carry, by key."""
    return {
        key: text
        for doc in documents(path)
        if doc["kind"] == "ConfigMap"
        for key, text in doc["data"].items()
        if key.endswith(".toml")
    }


def check_config(config: Path, hostname: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `sitemapd check-config`, under `hostname` when given (its own UTS namespace)."""
    command = [sys.executable, "-m", "sitemapd", "check-config", "-c", str(config)]
    if hostname is not None:
        unshare = hostname_namespace()
        assert unshare is not None
        shell = 'hostname "$0" && exec "$@"'
        command = [*unshare, "sh", "-c", shell, hostname, *command]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@functools.cache
def hostname_namespace() -> tuple[str, ...] | None:
    """Return the `unshare` command that gives a process a host name of its own: a UTS
    namespace (root), or one inside a user namespace (anyone, where the kernel lets
    them); None when neither works here."""
    if shutil.which("unshare") is None:
        return None
    for command in (("unshare", "--uts"), ("unshare", "--user", "--map-root-user", "--uts")):
        probe = subprocess.run([*command, "hostname", "probe"], capture_output=True)
        if probe.returncode == 0:
            return command
    return None


def can_set_hostname() -> bool:
    return hostname_namespace() is not None


def test_there_are_recipes() -> None:
    assert {path.name for path in EXAMPLES} == {"fleet.yaml", "partitions.yaml", "sidecar.yaml"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_every_manifest_validates_offline(path: Path, version: str) -> None:
    for doc in documents(path):
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_sitemapd_runs_unprivileged_with_probes_and_requests(path: Path) -> None:
    specs = [spec for doc in documents(path) if (spec := pod_spec(doc)) is not None]
    assert specs
    for spec in specs:
        assert spec["securityContext"]["runAsNonRoot"] is True
        containers = spec.get("initContainers", []) + spec["containers"]
        sitemapd = [c for c in containers if c["name"] in ("sitemapd",)]
        assert len(sitemapd) == 1
        (container,) = sitemapd
        if container in spec.get("initContainers", []):
            assert container["restartPolicy"] == "Always", "a native sidecar"
        assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
        assert "readinessProbe" not in container or (
            container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        )
        for each in containers:
            assert each["securityContext"]["readOnlyRootFilesystem"] is True
            assert each["securityContext"]["allowPrivilegeEscalation"] is False
            assert each["resources"]["requests"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_the_configs_they_carry_pass_check_config(path: Path, tmp_path: Path) -> None:
    found = configs(path)
    assert found
    for key, text in found.items():
        config = tmp_path / key
        config.write_text(text)
        partitioned = 'partition = "auto/' in text
        if partitioned and not can_set_hostname():
            if os.environ.get("CI") == "true":
                raise AssertionError("unshare --uts is needed to set a pod's host name")
            pytest.skip("cannot set a host name here (unshare --uts)")
        result = check_config(config, "sitemaps-0" if partitioned else None)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith("ok: ")


def test_auto_partition_comes_from_the_pod_ordinal(tmp_path: Path) -> None:
    if not can_set_hostname():
        if os.environ.get("CI") == "true":
            raise AssertionError("unshare --uts is needed to set a pod's host name")
        pytest.skip("cannot set a host name here (unshare --uts)")
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        configs(REPO / "examples" / "kubernetes" / "partitions.yaml")["sitemapd.toml"]
    )
    # Ordinals count from 0, partitions from 1.
    result = check_config(config, "sitemaps-2")
    assert result.returncode == 0, result.stderr
    assert "index sitemap-p3of4.xml" in result.stdout
    assert "index sitemap-p1of4.xml" in check_config(config, "sitemaps-0").stdout
    beyond = check_config(config, "sitemaps-4")
    assert beyond.returncode == 2
    assert "site.partition" in beyond.stderr
    unnamed = check_config(config, "sitemaps")
    assert unnamed.returncode == 2
    assert "site.partition" in unnamed.stderr
    assert "host name ending in -<ordinal>" in unnamed.stderr
