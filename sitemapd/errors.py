"""The one exception hierarchy every sitemapd error belongs to."""


class SitemapdError(Exception):
    """Base class: anything sitemapd raises on purpose."""


class ConfigError(SitemapdError):
    """The configuration file is missing, malformed or names an impossible value."""


class SourceError(SitemapdError):
    """A content source could not be read as a whole (one bad item is logged, not raised)."""

    def reason(self, source: str) -> str:
        """Return the message without the name of `source` it starts with, for a report
        that names each source itself ("root ... is missing")."""
        return str(self).removeprefix(f"{source}: ")


class LedgerError(SitemapdError):
    """The ledger database cannot be opened, migrated or written."""


class PublishError(SitemapdError):
    """An output file could not be written."""


class LockError(SitemapdError):
    """Another sitemapd process holds the state directory."""


class StateError(SitemapdError):
    """The state directory cannot be written, or was deleted under a running daemon."""


class Interrupted(SitemapdError):
    """A long scan was stopped (SIGTERM); its transaction was rolled back."""


class InvalidURL(SitemapdError):
    """A URL that may not appear in a sitemap; the message is the reason."""
