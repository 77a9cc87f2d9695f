"""The `sitemapd` command line: one module per command beside the parser in `main`."""

from sitemapd.cli.app import main

__all__ = ["main"]
