"""`python -m sitemapd` runs the command line."""

from sitemapd.cli import main

main()
