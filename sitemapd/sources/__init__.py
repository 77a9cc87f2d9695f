"""Sources observe where content lives and yield items for the ledger; they never write."""

from __future__ import annotations

from ..config import DirectorySource, SourceConfig, UrlListSource
from ..ledger import Ledger
from ..urls import URLPolicy
from . import directory, urllist
from .base import Scan

__all__ = ["Scan", "observe", "scan"]


def scan(source: SourceConfig, policy: URLPolicy, ledger: Ledger, skip: tuple[str, ...]) -> Scan:
    """Return a one-shot scan of `source`; `skip` names folders that are never content."""
    if isinstance(source, DirectorySource):
        return directory.scan(source, policy, ledger, skip)
    if isinstance(source, UrlListSource):
        return urllist.scan(source, policy, ledger)
    raise TypeError(f"unknown source {source!r}")


def observe(
    source: SourceConfig,
    policy: URLPolicy,
    ledger: Ledger,
    skip: tuple[str, ...],
    relpaths: set[str],
) -> Scan:
    """Return a scan of what changed at `relpaths`; a URL list is always read whole."""
    if isinstance(source, DirectorySource):
        return directory.observe(source, policy, ledger, skip, relpaths)
    return scan(source, policy, ledger, skip)
