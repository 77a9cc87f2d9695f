"""The `sitemapd` command line: the command group (app.py) and its commands by kind:
those that write (publishing.py), those that only read (inspecting.py), those that start
a site (starting.py); what a command does beyond parsing lives in a module of its own
(dryrun, correct, importer, explain, verify, init, unchanged) and process set-up in
process.py."""

from sitemapd.cli.app import main

__all__ = ["main"]
