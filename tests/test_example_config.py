"""config.example.toml: unedited, a small valid config; with every commented-out setting
turned on, still valid: the complete reference."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, run_cli

from sitemapd import config
from sitemapd.config.sources import ChangelogSource

EXAMPLE = REPO / "config.example.toml"
# A commented-out table header or `key = value` line (prose comments never look so).
_SETTING = re.compile(r"# (\[\[?[a-z.]+\]\]?|[a-z_]+ = .*)")


def test_the_unedited_example_is_small() -> None:
    cfg = config.load(EXAMPLE)
    assert [source.name for source in cfg.sources] == ["directory:/var/www/example/html"]
    assert cfg.feed is None
    assert cfg.news is None
    assert cfg.indexnow is None
    assert cfg.publish.s3 is None
    assert cfg.site.robots_txt is None
    assert not cfg.http.listen
    assert "ok:" in run_cli("check-config", "-c", str(EXAMPLE)).stdout


def test_every_setting_turned_on_is_still_valid(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    lines = [
        line[2:] if _SETTING.fullmatch(line) else line for line in text.splitlines(keepends=False)
    ]
    turned_on = sum(a != b for a, b in zip(text.splitlines(), lines, strict=True))
    full = tmp_path / "full.toml"
    full.write_text("\n".join(lines) + "\n")
    cfg = config.load(full)
    assert turned_on > 60
    # Pages, a URL list, a change table, a binlog and a logical stream, a WordPress site,
    # an access log.
    assert len(cfg.sources) == 7
    modes = {source.spec.mode for source in cfg.sources if isinstance(source, ChangelogSource)}
    assert modes == {"table", "binlog", "logical"}
    presets = {source.spec.preset for source in cfg.sources if isinstance(source, ChangelogSource)}
    assert presets == {"", "wordpress"}
    assert cfg.feed is not None
    assert cfg.news is not None
    assert cfg.indexnow is not None
    assert cfg.publish.s3 is not None
    assert cfg.site.partition is not None
