"""The `sitemapd` command line: its commands and their arguments (app.py, declared with
arguments.py) and the commands by kind: those that write (publishing.py), those that
only read (inspecting.py), those that start a site (starting.py); what a command does
beyond parsing lives in a module of its own (dryrun, correct, importer, explain, verify,
init, unchanged), a long scan's bar in progressbar.py and process set-up in process.py."""

from sitemapd.cli.app import main

__all__ = ["main"]
