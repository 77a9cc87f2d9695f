"""Shards of a first load (of URL lists and change logs), rendered as their rows are
inserted and kept beside the ledger for the publish that follows the load's commit, with
the lines of their publish manifests (publish/manifestfile.py), at hand there too.

Rendering a shard from the ledger costs SQLite a row lookup and a concatenation for
every URL; a first load has each URL and lastmod at hand as it inserts them, and
formatting them there costs a fifth of that. A spooled shard stands in for its rendering
only when it holds what the ledger then holds: its count of URLs and of entry bytes
agree with the shard's, and no row was deleted or repeated since. Any doubt, a full
disk, a crash: the shard is rendered from the ledger, as every later publish does.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

from sitemapd.ledger.shards import ShardState
from sitemapd.render.sitemap import URLSET_HEAD, URLSET_TAIL, plain_entries

log = logging.getLogger("sitemapd.ledger")

# Free space a spool leaves the ledger: a first load's ledger grows by about twice the
# bytes of the sitemaps it renders, so spooling stops well before it could fill the disk.
_RESERVE = 1 << 30
_LEDGER_PER_SPOOLED = 4
_HEAD, _TAIL = URLSET_HEAD.encode(), URLSET_TAIL.encode()


def manifest_lines(
    locs: Sequence[str], fingerprints: Sequence[str | None], lastmods: Sequence[str]
) -> str:
    """Return the publish manifest's lines (publish/manifestfile.py) of URLs read from no
    file: `loc <TAB> fingerprint <TAB> lastmod <TAB>` (no bytes hash), each ended by a
    newline; a fingerprint of None is written empty, as the manifest's query writes it."""
    return "".join(
        [
            f"{loc}\t{fingerprint or ''}\t{lastmod}\t\n"
            for loc, fingerprint, lastmod in zip(locs, fingerprints, lastmods, strict=True)
        ]
    )


def manifest_path(path: Path) -> Path:
    """Return the file of the manifest lines spooled beside the document file `path`."""
    return path.with_name(path.name + ".manifest")


class _Spooled(NamedTuple):
    """A spooled shard: its document file, and the URLs and entry bytes written into it."""

    path: Path
    urls: int
    size: int


class ShardSpool:
    """The `<urlset>` documents of the shards a first load fills, one file a shard, and
    the manifest lines of the same URLs, one file beside it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.shards: dict[int, _Spooled] = {}
        # The shard being filled: its document file and its manifest lines file.
        self._open: tuple[int, BinaryIO, BinaryIO] | None = None
        self._total = 0
        self._stopped = False

    def add(
        self,
        shard: int,
        locs: Sequence[str],
        fingerprints: Sequence[str | None],
        lastmods: Sequence[str],
    ) -> None:
        """Append the entries and manifest lines of URLs read from no file (`locs`, their
        fingerprints and lastmods) to the spool of `shard`; once spooling fails (a full
        disk, a folder that cannot be made), it stops for the load."""
        if self._stopped:
            return
        data = plain_entries(list(zip(locs, lastmods, strict=True))).encode()
        lines = manifest_lines(locs, fingerprints, lastmods)
        try:
            handles = self._handles(shard)
            if handles is None:
                return
            handles[0].write(data)
            handles[1].write(lines.encode())
        except OSError as exc:
            log.debug("%s: shards rendered from the ledger instead (%s)", self.folder, exc)
            self.drop()
            return
        path, spooled, size = self.shards[shard]
        self.shards[shard] = _Spooled(path, spooled + len(locs), size + len(data))
        self._total += len(data)

    def _handles(self, shard: int) -> tuple[BinaryIO, BinaryIO] | None:
        """Return the open document and manifest files of `shard`, opening them (and
        closing the last) on the first entries of a shard; None when there is no room."""
        if self._open is not None and self._open[0] == shard:
            return self._open[1], self._open[2]
        self._close()
        if shard in self.shards:
            # Shards fill in turn: entries coming back to a closed one mean other writes.
            self.drop()
            return None
        self.folder.mkdir(exist_ok=True)
        if shutil.disk_usage(self.folder).free < _RESERVE + _LEDGER_PER_SPOOLED * self._total:
            self._stopped = True
            return None
        path = self.folder / f"shard-{shard}"
        handle = path.open("wb")
        try:
            # The whole document: the publish reads it as it is stored.
            handle.write(_HEAD)
            lines = manifest_path(path).open("wb")
        except OSError:
            handle.close()
            raise
        self._open = (shard, handle, lines)
        self.shards[shard] = _Spooled(path, 0, 0)
        return handle, lines

    def _close(self) -> None:
        if self._open is not None:
            _, handle, lines = self._open
            self._open = None
            try:
                handle.write(_TAIL)
                handle.close()
            finally:
                lines.close()

    def drop(self) -> None:
        """Forget every spooled shard and delete its file; spooling stops for the load."""
        self._stopped = True
        self._close()
        self.shards = {}
        shutil.rmtree(self.folder, ignore_errors=True)

    def keep(self, states: Mapping[int, ShardState]) -> dict[int, Path]:
        """Close the spool; return the document files of the shards whose URL and byte
        counts are those of `states` (the ledger's shards), deleting the others."""
        try:
            self._close()
        except OSError as exc:
            log.debug("%s: shards rendered from the ledger instead (%s)", self.folder, exc)
            self.drop()
        kept: dict[int, Path] = {}
        for shard, (path, count, size) in self.shards.items():
            state = states.get(shard)
            if state is not None and (state.url_count, state.bytes) == (count, size):
                kept[shard] = path
            else:
                path.unlink(missing_ok=True)
                manifest_path(path).unlink(missing_ok=True)
        return kept
