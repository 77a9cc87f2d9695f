"""`python -m sitemapd` and the `sitemapd` script: the command line."""

import gc


def run() -> None:
    """Run the command line, the garbage collector off while its modules load; a command
    turns it on as it starts (`process.collect_from_here`)."""
    # What the imports make (modules, classes, functions) lives as long as the process:
    # the collector's passes over it while it loads find nothing to free (6 ms a start).
    gc.disable()
    from sitemapd.cli.app import main

    main()


if __name__ == "__main__":
    run()
