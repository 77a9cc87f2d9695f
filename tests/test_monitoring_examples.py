"""The Grafana dashboard and Prometheus alert rules in examples/ name only metrics a
running daemon exposes on /metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from conftest import Site, page
from daemon_harness import http_port, request, start

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_METRIC = re.compile(r"\bsitemapd_[a-z0-9_]+")
_TYPE = re.compile(r"^# TYPE (\S+) (\S+)$", re.M)
# The series Prometheus derives from one histogram.
_HISTOGRAM = ("_bucket", "_sum", "_count")


def exprs(node: Any) -> Iterator[str]:
    """Yield every `expr` string in a decoded JSON or YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr" and isinstance(value, str):
                yield value
            else:
                yield from exprs(value)
    elif isinstance(node, list):
        for item in node:
            yield from exprs(item)


def exposed(text: str) -> set[str]:
    """Return the series names the exposition `text` declares, samples or not (a
    labelled family without samples yet is declared all the same)."""
    names = set()
    for name, kind in _TYPE.findall(text):
        names.add(name)
        if kind == "histogram":
            names.update(name + suffix for suffix in _HISTOGRAM)
    return names


def test_dashboard_and_alerts_name_real_metrics(site: Site) -> None:
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    rules = yaml.safe_load((EXAMPLES / "prometheus-alerts.yml").read_text())
    panels = dashboard["panels"]
    assert panels
    assert all(panel["targets"] for panel in panels)
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert {"SitemapdPublishFailing", "SitemapdChangelogLag", "SitemapdRemovalHeld"} <= {
        rule["alert"] for rule in alerts
    }
    assert all(rule["labels"]["severity"] and rule["annotations"]["summary"] for rule in alerts)
    named = {m for expr in [*exprs(dashboard), *exprs(rules)] for m in _METRIC.findall(expr)}

    site.configure(extra='[http]\nlisten = "127.0.0.1:0"\n')
    site.write("a.html", page("A"))
    daemon = start(site)
    try:
        status, _, body = request(http_port(daemon), "/metrics")
        assert status == 200
        metrics = exposed(body.decode())
    finally:
        assert daemon.stop() == 0
    assert "sitemapd_changelog_backlog" in metrics  # declared before any change log reads
    assert named - metrics == set()
    # Every metric the daemon exposes is on the dashboard (counters' _created aside).
    shown = {name for name in metrics if not name.endswith("_created")}
    assert shown - named - {"sitemapd_batch_seconds"} == set()
