"""`sitemapd init`: a small working configuration for one site.

It finds a static-site generator's project by its marker files (Hugo, Jekyll, Pelican,
Nikola, MkDocs, Sphinx, Eleventy) and so its output folder, and names sitemapd's index
so that it collides with no file the generator writes there (their own `sitemap.xml`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sitemapd.errors import ConfigError

# Index names tried in turn: the first no generator file holds is sitemapd's.
_INDEX_NAMES = ("sitemap.xml", "sitemapd.xml", "sitemapd-index.xml")


@dataclass(frozen=True, slots=True)
class Generator:
    """A site generator: files that mark its project, where it writes the site, and the
    sitemap files it writes there itself (by default or with its usual plugin)."""

    name: str
    markers: tuple[str, ...]
    outputs: tuple[str, ...]
    sitemaps: tuple[str, ...]
    # Text one marker must hold, when markers are shared (a Sphinx or Nikola conf.py).
    marker_text: str = ""


GENERATORS = (
    Generator("Hugo", ("hugo.toml", "hugo.yaml", "hugo.json"), ("public",), ("sitemap.xml",)),
    Generator("Jekyll", ("_config.yml", "_config.yaml"), ("_site",), ("sitemap.xml",)),
    Generator("Pelican", ("pelicanconf.py",), ("output",), ("sitemap.xml",)),
    Generator("Nikola", ("conf.py",), ("output",), ("sitemap.xml", "sitemapindex.xml"), "nikola"),
    Generator(
        "MkDocs", ("mkdocs.yml", "mkdocs.yaml"), ("site",), ("sitemap.xml", "sitemap.xml.gz")
    ),
    Generator(
        "Sphinx",
        ("conf.py", "source/conf.py", "docs/conf.py"),
        ("_build/html", "build/html", "docs/_build/html"),
        ("sitemap.xml",),
    ),
    Generator(
        "Eleventy",
        (".eleventy.js", "eleventy.config.js", "eleventy.config.mjs", "eleventy.config.cjs"),
        ("_site",),
        ("sitemap.xml",),
    ),
)


@dataclass(frozen=True, slots=True)
class Found:
    """A generator's project found in a folder, and its output folder if it is built."""

    generator: Generator
    output: Path | None


def detect(project: Path) -> Found | None:
    """Return the generator whose marker files are in `project`, with its output folder
    (the first that exists, else None), or None when none is found."""
    for generator in GENERATORS:
        if not any(_marks(project / marker, generator) for marker in generator.markers):
            continue
        outputs = [project / out for out in generator.outputs]
        return Found(generator, next((out for out in outputs if out.is_dir()), None))
    return None


def _marks(path: Path, generator: Generator) -> bool:
    """True when `path` is one of `generator`'s marker files."""
    if not path.is_file():
        return False
    if not generator.marker_text:
        return True
    try:
        return generator.marker_text in path.read_text("utf-8", "replace").lower()
    except OSError:
        return False


def index_name(output: Path, generator: Generator | None) -> str:
    """Return a name for sitemapd's index that no file in `output` (nor one `generator`
    writes there) has, shards included."""
    taken = set(generator.sitemaps) if generator else set()
    if output.is_dir():
        taken |= {path.name for path in output.iterdir()}
    for name in _INDEX_NAMES:
        stem = name.removesuffix(".xml")
        if name not in taken and not any(t.startswith(stem + "-") for t in taken):
            return name
    raise ConfigError(f"{output}: every index name sitemapd tries is taken: {_INDEX_NAMES}")


def generator_sitemaps(output: Path, generator: Generator | None) -> list[Path]:
    """Return the generator's own sitemap files found in `output` (to import lastmods
    from)."""
    names = generator.sitemaps if generator else ("sitemap.xml",)
    return [output / name for name in names if (output / name).is_file()]


@dataclass(frozen=True, slots=True)
class Answers:
    """What a configuration for one site needs; paths as they go into the file."""

    base_url: str
    output_dir: str
    state_dir: str
    index: str
    content: str | None = None
    url_list: str | None = None
    generator: str | None = None


def render(answers: Answers) -> str:
    """Return the TOML text of a small configuration for `answers`."""
    made_for = f" for a {answers.generator} site" if answers.generator else ""
    lines = [
        f"# sitemapd configuration{made_for}, written by `sitemapd init`.",
        "# Every other setting: config.example.toml. Check it: sitemapd check-config -c FILE",
        "",
        "[site]",
        f"base_url = {_toml(answers.base_url)}",
        "# Relative paths resolve against this file's folder.",
        f"output_dir = {_toml(answers.output_dir)}",
        "# The ledger: keep it across deploys, out of the web root.",
        f"state_dir = {_toml(answers.state_dir)}",
        "",
        "[sitemap]",
    ]
    if answers.index != "sitemap.xml":
        lines.append("# Not sitemap.xml: the site generator writes its own under that name.")
    lines += [f"index = {_toml(answers.index)}", "", "[[source]]"]
    if answers.url_list is not None:
        lines += ['type = "urllist"', f"path = {_toml(answers.url_list)}"]
    else:
        assert answers.content is not None
        lines += ['type = "directory"', f"root = {_toml(answers.content)}"]
    return "\n".join(lines) + "\n"


def _toml(value: str) -> str:
    """Return `value` as a TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value, ensure_ascii=False)


def relative(path: Path, base: Path) -> str:
    """Return `path` relative to `base` when it lies below it, else absolute."""
    path, base = path.resolve(), base.resolve()
    return str(path.relative_to(base)) if path.is_relative_to(base) else str(path)
