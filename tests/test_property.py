"""Property: random edits of a URL list keep invariants 2-5 after every build (in-process).

A model of the list predicts, after each `Engine.build()`, every shard's members and
lastmods, which files the build must rewrite or remove, and the index; the real output
must match it exactly, stay valid and within the limits, and equal a fresh publish of a
copy of the ledger byte for byte.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import NS, assert_valid, read_xml, snapshot, write_atomic
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sitemapd.config import Config, load, parse
from sitemapd.engine.engine import Engine
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.shards import Limits
from sitemapd.publish.publisher import Publisher

ROOT = "https://example.com/"
INDEX = "sitemap.xml"
NOW0 = datetime(2026, 1, 1, tzinfo=UTC)
# List datetimes are hours after this; the largest run past NOW0 (clipped to `now`).
DT0 = datetime(2025, 1, 1, tzinfo=UTC)
MTIME0 = 1_700_000_000 * 10**9
# Shards leave room for the longer envelope, which declares the xhtml and image
# namespaces, whatever their entries hold: a shard never outgrows its limit by gaining one.
URLSET_ENVELOPE = len(
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml" '
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
    "</urlset>\n"
)
# No `%`, `?`, `#`, tab or dot: distinct paths give distinct canonical URLs.
PATH_CHARS = "ab&' é中-_/"
SAFE = "!$&'()*+,;=:@/~-._"


def canonical(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def stamp(hours: int) -> str:
    return canonical(DT0 + timedelta(hours=hours))


def spelled(hours: int, fmt: int) -> str:
    """Return the list-file spelling of a datetime: the same instant in four W3C forms."""
    moment = DT0 + timedelta(hours=hours)
    if fmt == 0:
        return canonical(moment)
    if fmt == 1:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    offset = timedelta(hours=2) if fmt == 2 else -timedelta(hours=5, minutes=30)
    return (moment + offset).strftime("%Y-%m-%dT%H:%M:%S") + ("+02:00" if fmt == 2 else "-05:30")


def entry_bytes(loc: str) -> int:
    escaped = loc.replace("&", "&amp;").replace("'", "&apos;")
    return len(f"<url><loc>{escaped}</loc><lastmod>{stamp(0)}</lastmod></url>\n")


def shard_name(shard_id: int, gz: bool) -> str:
    return f"sitemap-{shard_id}.xml" + (".gz" if gz else "")


@dataclass
class Record:
    """One path of the list as the model knows it."""

    path: str
    loc: str
    hours: int | None  # the datetime currently written in the file
    fmt: int
    stored: str | None = None  # the ledger's source_time
    lastmod: str | None = None
    live: bool = False
    shard: int | None = None


@dataclass
class Model:
    max_urls: int
    max_bytes: int
    records: dict[str, Record] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # paths in file order
    shards: dict[int, dict[str, str]] = field(default_factory=dict)  # id -> {loc: lastmod}
    sizes: dict[int, int] = field(default_factory=dict)  # id -> bytes of entries

    def text(self) -> str:
        out = []
        for path in self.lines:
            rec = self.records[path]
            line = ROOT + path
            if rec.hours is not None:
                line += "\t" + spelled(rec.hours, rec.fmt)
            out.append(line + "\n")
        return "".join(out)

    def view(self) -> dict[int, dict[str, str]]:
        return {shard_id: dict(members) for shard_id, members in self.shards.items()}

    def index(self) -> list[tuple[int, str]]:
        return [(i, max(m.values())) for i, m in sorted(self.shards.items())]

    def _place(self, rec: Record) -> None:
        assert rec.lastmod is not None
        size = entry_bytes(rec.loc)
        open_id = max(self.shards, default=0)
        if (
            not open_id
            or len(self.shards[open_id]) >= self.max_urls
            or URLSET_ENVELOPE + self.sizes[open_id] + size > self.max_bytes
        ):
            open_id += 1
            self.shards[open_id], self.sizes[open_id] = {}, 0
        self.shards[open_id][rec.loc] = rec.lastmod
        self.sizes[open_id] += size
        rec.shard, rec.live = open_id, True

    def observe(self, now: str) -> None:
        """Apply a full read of the list file at build time `now`."""
        listed = set(self.lines)
        for path in self.lines:
            rec = self.records[path]
            st = None if rec.hours is None else stamp(rec.hours)
            if rec.lastmod is None:  # first sight
                rec.lastmod, rec.stored = min(st or now, now), st
                self._place(rec)
                continue
            if st is not None and st != rec.stored:
                if rec.stored is None or st > rec.stored:  # moved forward: a change
                    rec.lastmod = max(rec.lastmod, min(st, now))
                rec.stored = st
            if not rec.live:  # back after being gone
                self._place(rec)
            else:
                assert rec.shard is not None
                self.shards[rec.shard][rec.loc] = rec.lastmod
        for path, rec in self.records.items():
            if rec.live and path not in listed:
                assert rec.shard is not None
                del self.shards[rec.shard][rec.loc]
                self.sizes[rec.shard] -= entry_bytes(rec.loc)
                rec.live, rec.shard = False, None
        for shard_id in [i for i, members in self.shards.items() if not members]:
            del self.shards[shard_id], self.sizes[shard_id]


# -- operations ----------------------------------------------------------------------

INDEXES = st.integers(0, 10**6)
URL_SPECS = st.tuples(
    st.text(PATH_CHARS, max_size=6),
    st.integers(0, 1900),  # padding, used by long-URL examples only
    st.one_of(st.none(), st.integers(0, 8000)),
    st.integers(0, 3),
)
OPS = st.one_of(
    st.tuples(st.just("add"), st.lists(URL_SPECS, min_size=1, max_size=4), INDEXES),
    st.tuples(st.just("forward"), INDEXES, st.integers(1, 600)),
    st.tuples(st.just("backward"), INDEXES, st.integers(1, 600)),
    st.tuples(st.just("drop_time"), INDEXES),
    st.tuples(st.just("delete"), st.lists(INDEXES, min_size=1, max_size=3)),
    st.tuples(st.just("readd"), INDEXES, st.sampled_from(["same", "none", "later", "earlier"])),
    st.tuples(st.just("reformat"), INDEXES, st.integers(0, 3)),
    st.tuples(st.just("shuffle"), st.randoms(use_true_random=False)),
    st.just(("rebuild",)),
    st.just(("touch",)),
    st.just(("rewrite",)),
)


def new_records(model: Model, specs: list[Any], pad_urls: bool) -> list[str]:
    paths = []
    for text, pad, hours, fmt in specs:
        # The serial keeps paths distinct; the drawn text gives them hard characters.
        serial = len(model.records)
        path = f"p{serial}" + ("x" * pad if pad_urls else "") + text + "z"
        loc = ROOT + quote(path, safe=SAFE)
        model.records[path] = Record(path, loc, hours, fmt)
        paths.append(path)
    return paths


def edit(model: Model, op: tuple[Any, ...], pad_urls: bool) -> str:
    """Change the model's list file for `op`; return "write", "touch" or "none"."""
    kind = op[0]
    listed = model.lines
    if kind == "add":
        at = op[2] % (len(listed) + 1)
        listed[at:at] = new_records(model, op[1], pad_urls)
    elif kind in ("forward", "backward", "drop_time", "reformat"):
        rec = model.records[listed[op[1] % len(listed)]]
        if kind == "reformat":
            rec.fmt = op[2]
        elif kind == "drop_time":
            rec.hours = None
        elif kind == "forward":
            rec.hours = (rec.hours or 0) + op[2]
        elif rec.hours is not None:
            rec.hours = max(rec.hours - op[2], 0)
    elif kind == "delete":
        for n in op[1]:
            if len(listed) > 1:  # an empty index is not schema-valid: keep one URL
                listed.pop(n % len(listed))
    elif kind == "readd":
        gone = sorted(p for p in model.records if p not in listed)
        if gone:
            rec = model.records[gone[op[1] % len(gone)]]
            if op[2] == "none":
                rec.hours = None
            elif op[2] == "later":
                rec.hours = (rec.hours or 0) + 48
            elif op[2] == "earlier" and rec.hours is not None:
                rec.hours = max(rec.hours - 48, 0)
            listed.append(rec.path)
    elif kind == "shuffle":
        op[1].shuffle(listed)
    elif kind in ("touch", "rebuild"):
        return kind.replace("rebuild", "none")
    return "write"


# -- reading the output ----------------------------------------------------------------


def read_output(out: Path, gz: bool) -> tuple[list[tuple[int, str]], dict[int, dict[str, str]]]:
    """Return the index as `[(shard id, lastmod)]` and every shard's `{loc: lastmod}`."""
    index, shards = [], {}
    for entry in read_xml(out / INDEX).iter(f"{NS}sitemap"):
        loc, lastmod = entry.findtext(f"{NS}loc") or "", entry.findtext(f"{NS}lastmod") or ""
        name = loc.removeprefix(ROOT)
        assert loc.startswith(ROOT), loc
        assert name.startswith("sitemap-"), loc
        assert name.endswith(".xml.gz" if gz else ".xml"), loc
        shard_id = int(name.removeprefix("sitemap-").split(".")[0])
        assert name == shard_name(shard_id, gz)
        index.append((shard_id, lastmod))
        members: dict[str, str] = {}
        for url in read_xml(out / name).iter(f"{NS}url"):
            loc_text = url.findtext(f"{NS}loc") or ""
            assert loc_text not in members, f"{loc_text} twice in {name}"
            members[loc_text] = url.findtext(f"{NS}lastmod") or ""
        shards[shard_id] = members
    return index, shards


def uncompressed(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def fresh_publish(base: Path, raw: dict[str, Any], config: Config, now: str) -> Path:
    """Publish a copy of the ledger, its publish records erased, into a new folder."""
    copy = base / "copy"
    fresh = base / "fresh"
    for folder in (copy, fresh):
        shutil.rmtree(folder, ignore_errors=True)
    copy.mkdir()
    for suffix in ("", "-wal"):
        source = Path(str(config.ledger_path) + suffix)
        if source.exists():
            shutil.copyfile(source, copy / (config.ledger_path.name + suffix))
    fresh_raw = {**raw, "site": {**raw["site"], "output_dir": "fresh", "state_dir": "copy"}}
    fresh_config = parse(fresh_raw, base / "fresh.toml")
    limits = Limits(config.sitemap.max_urls, config.sitemap.max_bytes)
    ledger = Ledger(copy / config.ledger_path.name, limits)
    try:
        ledger.conn.execute("DELETE FROM published")
        Publisher(fresh_config, ledger).publish(now)
    finally:
        ledger.close()
    return fresh


# -- the property ------------------------------------------------------------------------


def toml_config(raw: dict[str, Any]) -> str:
    lines = []
    for table in ("site", "sitemap"):
        lines.append(f"[{table}]")
        for key, value in raw[table].items():
            text = str(value).lower() if isinstance(value, bool) else repr(value)
            lines.append(f"{key} = {text}".replace("'", '"'))
    lines += ["[[source]]", 'type = "urllist"', 'path = "urls.txt"', 'name = "list"']
    return "\n".join(lines) + "\n"


# Steps that change no URL's membership or lastmod: nothing may be rewritten.
NO_OPS = ("touch", "rebuild", "rewrite", "reformat", "shuffle", "backward", "drop_time")

LIMITS = {
    # Count-bound shards of short URLs.
    "count": st.tuples(st.integers(3, 7), st.just(52_428_800), st.just(False)),
    # Byte-bound shards of long URLs, sometimes count-bound too.
    "bytes": st.tuples(st.sampled_from([50_000, 4, 6]), st.integers(16384, 20000), st.just(True)),
}


# Four quarters of 30 examples each (kind of limit, compressed or not) rather than one
# test of 120: the suite's workers share them.
@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True], ids=["xml", "gz"])
@pytest.mark.parametrize("bound", sorted(LIMITS))
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=st.data(),
    level=st.integers(1, 9),
    initial=st.lists(URL_SPECS, min_size=3, max_size=14),
    ops=st.lists(OPS, min_size=8, max_size=25),
)
def test_random_edits_keep_invariants(
    bound: str,
    gz: bool,
    data: st.DataObject,
    level: int,
    initial: list[Any],
    ops: list[tuple[Any, ...]],
) -> None:
    max_urls, max_bytes, pad_urls = data.draw(LIMITS[bound], label="limits")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        out, listing = base / "out", base / "urls.txt"
        raw: dict[str, Any] = {
            "site": {"base_url": ROOT, "output_dir": "out", "state_dir": "state"},
            "sitemap": {
                "max_urls": max_urls,
                "max_bytes": max_bytes,
                "gzip": gz,
                "gzip_level": level,
            },
            "source": [{"type": "urllist", "path": "urls.txt", "name": "list"}],
        }
        (base / "sitemapd.toml").write_text(toml_config(raw))
        config = load(base / "sitemapd.toml")
        assert (config.sitemap.max_urls, config.sitemap.max_bytes) == (max_urls, max_bytes)
        model = Model(max_urls, max_bytes)
        model.lines = new_records(model, initial, pad_urls)

        for step, op in enumerate([("add", [], 0), *ops]):
            action = edit(model, op, pad_urls)
            mtime = MTIME0 + step * 10**9  # every edit gives the file a new scan key
            if action == "write":
                write_atomic(listing, model.text())
            if action in ("write", "touch"):
                os.utime(listing, ns=(mtime, mtime))
            now = canonical(NOW0 + timedelta(seconds=5 * (step + 1)))
            before_view, before_index = model.view(), model.index()
            before = snapshot(out) if out.exists() else {}

            engine = Engine(config)
            try:
                report = engine.build(now=now).report
            finally:
                engine.close()
            if action != "none":
                model.observe(now)
            after = snapshot(out)
            where = f"step {step} {op[0]} (now {now})"

            # The published URLs and lastmods, shard by shard, are the model's.
            index, shards = read_output(out, gz)
            assert shards == model.shards, where
            assert index == model.index(), where

            # Invariant 2: exactly the changed shards, and the index if it changed, rewritten.
            changed = {
                shard_name(i, gz)
                for i, members in model.shards.items()
                if before_view.get(i) != members
            }
            if model.index() != before_index:
                changed.add(INDEX)
            gone_files = {shard_name(i, gz) for i in before_view if i not in model.shards}
            rewritten = {n for n in after if before.get(n) != after[n]}
            assert rewritten == changed, where
            assert set(before) - set(after) == gone_files, where
            assert sorted(report.written) == sorted(changed), where
            assert sorted(report.removed) == sorted(gone_files), where
            if action == "none" or op[0] in NO_OPS:
                assert rewritten == set(), where

            # Invariant 3: the index names exactly the shard files on disk, all valid.
            assert set(after) == {INDEX} | {shard_name(i, gz) for i, _ in index}, where
            assert_valid(out, INDEX)

            # Invariant 5: every shard within the limits, uncompressed.
            for shard_id, members in shards.items():
                assert len(members) <= max_urls, where
                assert len(uncompressed(out / shard_name(shard_id, gz))) <= max_bytes, where

            event(f"op {op[0]} rewrote {len(rewritten)} files")
            event(f"shards after the step: {min(len(shards), 9)}")

            # Invariant 4: a fresh publish of the same ledger gives the same bytes.
            fresh = fresh_publish(base, raw, config, now)
            assert {n: d[2] for n, d in snapshot(fresh).items()} == {
                n: d[2] for n, d in after.items()
            }, where
            # And the same manifests, whether a shard's was spliced or read from the ledger.
            manifests = Path(".sitemapd") / "manifest"
            assert {n: d[2] for n, d in snapshot(fresh / manifests).items()} == {
                n: d[2] for n, d in snapshot(out / manifests).items()
            }, where


def test_model_spells_one_instant_four_ways() -> None:
    """The four list spellings of a datetime name the same canonical instant."""
    from sitemapd.core import w3c

    for hours in (0, 5, 8000):
        assert {w3c.parse(spelled(hours, fmt)) for fmt in range(4)} == {stamp(hours)}
