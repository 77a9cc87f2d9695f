"""Site URLs: what may appear in a sitemap, in its one canonical spelling.

A sitemap URL is absolute http(s) on the site's own scheme, host and port, at most
2,048 characters, percent-encoded per RFC 3986 (non-ASCII as UTF-8), with no fragment,
credentials or dot segments. XML escaping happens at render time.
"""

# Annotations evaluated, not text: see core/observation.py.
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import quote, urlsplit

from sitemapd.errors import ConfigError, InvalidURL

MAX_URL_LENGTH = 2048

_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 pchar minus "%" (escapes are matched separately), plus "/" and "?" in queries.
_PATH_SAFE = "!$&'()*+,;=:@/~-._"
_QUERY_SAFE = _PATH_SAFE + "?"
_SEGMENT_SAFE = "!$&'()*+,;=:@~-._"
# A path segment that `quote` leaves as it is: most file names.
_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9!$&'()*+,;=:@~\-._]*")
# Any character a canonical URL cannot hold after its origin.
_NOT_CANONICAL = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
_DOT_SEGMENT = re.compile(r"(?:^|/)(?:\.|%2[eE]){1,2}(?:/|$)")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# What `_NOT_CANONICAL` allows, as bytes, and the line break that separates URLs.
_CANONICAL_BYTES = bytes(
    c for c in range(128) if chr(c) == "\n" or not _NOT_CANONICAL.match(chr(c))
)
# A host once IDNA-encoded: a DNS name (underscores occur in the wild) or an IP address.
_HOST = re.compile(r"[A-Za-z0-9_.-]+|[0-9A-Fa-f:.]+")


class Origin(NamedTuple):
    """The scheme, host and port every URL of the site shares."""

    scheme: str
    netloc: str

    @property
    def root(self) -> str:
        """Return the site root URL, `scheme://netloc/`."""
        return f"{self.scheme}://{self.netloc}/"

    @classmethod
    def from_base_url(cls, base_url: str) -> "Origin":
        """Return the origin of `base_url`; raises ConfigError when it is not http(s) or
        holds a query or fragment, which no sitemap URL could keep."""
        try:
            scheme, netloc = _split_origin(base_url)
        except InvalidURL as exc:
            raise ConfigError(str(exc)) from exc
        if "?" in base_url or "#" in base_url:
            raise ConfigError(f"must not have a query or fragment, got {base_url!r}")
        return cls(scheme, netloc)


def _split_origin(url: str) -> tuple[str, str]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"unparseable URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise InvalidURL(f"scheme {parts.scheme or '(none)'!r} is not http or https")
    if parts.username is not None or parts.password is not None:
        raise InvalidURL("URL carries credentials")
    host = parts.hostname
    if not host:
        raise InvalidURL("URL has no host")
    try:
        host = _ascii_host(host)
    except UnicodeError as exc:
        raise InvalidURL(f"host {host!r} is not a valid domain name") from exc
    if not _HOST.fullmatch(host):
        raise InvalidURL(f"host {host!r} is not a valid host name")
    if ":" in host:
        host = f"[{host}]"
    if port == 0:
        raise InvalidURL("port 0 is not a port")
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    return scheme, host


def _ascii_host(host: str) -> str:
    """Return `host` as the idna codec encodes it; raises UnicodeError."""
    if not host.isascii():
        return host.encode("idna").decode("ascii")
    # What the codec does with an ASCII name, without loading it (with stringprep and
    # unicodedata: 1 ms of every start-up): each label but the last 1-63 characters long,
    # the last (empty after a final dot) shorter than 64.
    *labels, last = host.split(".")
    if any(not 0 < len(label) < 64 for label in labels) or len(last) >= 64:
        raise UnicodeError("label empty or too long")
    return host


class URLPolicy:
    """Normalises candidate URLs for one site, rejecting what a sitemap may not hold."""

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self._root = origin.root
        self._path_start = len(origin.root) - 1

    def normalise(self, url: str) -> str:
        """Return the canonical spelling of `url`; raises InvalidURL with the reason."""
        # Already-canonical URLs (the vast majority) skip urllib entirely.
        if (
            url.startswith(self._root)
            and not _NOT_CANONICAL.search(url, self._path_start)
            and ("%" not in url or not _BAD_ESCAPE.search(url))
        ):
            path = url[self._path_start :].partition("?")[0]
            if ("/." not in path and "%2" not in path) or not _DOT_SEGMENT.search(path):
                return _checked_length(url)
        return self._normalise_slow(url.strip())

    def site_url(self, target: str) -> str:
        """Return the canonical URL of `target`, a URL or a path on the site (`/a.html`);
        raises InvalidURL."""
        if target.startswith("/") and not target.startswith("//"):
            target = self._root + target[1:]
        return self.normalise(target)

    def canonical(self, urls: Sequence[str]) -> bool:
        """True when `normalise` would return every URL of `urls` as it is: the common
        case, checked for all of them at once. False when any needs a closer look."""
        text = "\n".join(urls)
        return not (
            not urls
            or not text.isascii()
            # A line break inside a URL would make the counts below wrong; it is never
            # canonical anyway.
            or text.count("\n") != len(urls) - 1
            or ("\n" + text).count("\n" + self._root) != len(urls)
            or text.encode().translate(None, _CANONICAL_BYTES)
            or ("%" in text and _BAD_ESCAPE.search(text))
            # normalise() looks closer at these too; here any of them anywhere will do.
            or "/." in text
            or "%2" in text
            or max(map(len, urls)) > MAX_URL_LENGTH
        )

    def _normalise_slow(self, url: str) -> str:
        if not url:
            raise InvalidURL("empty URL")
        if any(ord(c) < 0x21 and c != " " for c in url):
            raise InvalidURL("URL contains control characters")
        scheme, netloc = _split_origin(url)
        if (scheme, netloc) != (self.origin.scheme, self.origin.netloc):
            raise InvalidURL(
                f"URL is not on {self.origin.root} (found {scheme}://{netloc}/)",
            )
        parts = urlsplit(url)
        if parts.fragment or url.endswith("#"):
            raise InvalidURL("URL has a fragment")
        path = _encode(parts.path or "/", _PATH_SAFE)
        if _DOT_SEGMENT.search(path):
            raise InvalidURL("URL path has a '.' or '..' segment")
        query = "?" + _encode(parts.query, _QUERY_SAFE) if parts.query else ""
        return _checked_length(f"{scheme}://{netloc}{path}{query}")

    def for_file(
        self, prefix: str, relpath: str, strip_html: bool, index_names: tuple[str, ...]
    ) -> str:
        """Return the URL of a file at `relpath` (a `/`-separated path) under `prefix`."""
        folder, slash, leaf = relpath.rpartition("/")
        if leaf in index_names:
            leaf = ""
        elif strip_html and leaf.endswith((".html", ".htm")):
            leaf = leaf.rsplit(".", 1)[0]
        path = (_folder_path(folder) + slash if slash else "") + _segment(leaf)
        return self.normalise(self.origin.root.rstrip("/") + prefix + path)


@lru_cache(maxsize=1024)
def _folder_path(folder: str) -> str:
    # The files of a scan come folder by folder: each folder's path is encoded once.
    return "/".join(map(_segment, folder.split("/")))


def _segment(name: str) -> str:
    """Return path segment `name` percent-encoded."""
    return name if _PLAIN_SEGMENT.fullmatch(name) else quote(os.fsencode(name), safe=_SEGMENT_SAFE)


def _encode(component: str, safe: str) -> str:
    """Percent-encode `component`, keeping valid escapes and escaping a stray `%`."""
    component = _BAD_ESCAPE.sub("%25", component)
    return quote(component, safe=safe + "%")


def _checked_length(url: str) -> str:
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"URL is {len(url)} characters long (limit {MAX_URL_LENGTH})")
    return url


def comparable(url: str) -> str:
    """Return `url` with its escapes as RFC 3986 (6.2.2) compares them: in upper case,
    and an unreserved character's (a letter, a digit, `-`, `.`, `_`, `~`) as the character:
    `/%d8%b3/` (as WordPress writes a slug) and `/%7Eann` are `/%D8%B3/` and `/~ann`."""
    return _ESCAPE.sub(_compared_escape, url) if "%" in url else url


def _compared_escape(match: re.Match[str]) -> str:
    byte = int(match.group()[1:], 16)
    return chr(byte) if byte in _UNRESERVED else match.group().upper()


def xml_escape(url: str) -> str:
    """Return `url` escaped for XML text; canonical URLs can only hold `&` and `'`."""
    return url.replace("&", "&amp;").replace("'", "&apos;")


def xml_unescape(text: str) -> str:
    """Return the URL `xml_escape` turned into `text`."""
    return text.replace("&apos;", "'").replace("&amp;", "&")
