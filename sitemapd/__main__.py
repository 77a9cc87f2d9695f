"""`python -m sitemapd` runs the command line."""

from .cli import main

main()
