"""`python -m sitemapd` runs the command line."""

from sitemapd.cli.app import main

main()
