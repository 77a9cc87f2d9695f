"""One POST to a notification endpoint, classified as done, rejected or worth a retry.

The HTTP client (urllib, http.client, ssl) loads with the first request: a build with
nothing to notify starts without it.
"""

from __future__ import annotations

import functools
import re
import time
from datetime import UTC
from typing import IO, TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import urllib.request
    from email.message import Message

from sitemapd import __version__

USER_AGENT = f"sitemapd/{__version__}"
MAX_BODY = 64 * 1024
_DETAIL_CHARS = 300
_DELTA_SECONDS = re.compile(r"[0-9]+")
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")


class Outcome(NamedTuple):
    """What one notification request came to."""

    kind: str  # "done" | "rejected" (do not retry) | "retry"
    status: int | None  # None when no response arrived
    detail: str  # one line for logs
    retry_after: float | None  # seconds, from Retry-After; None when absent or invalid


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    """Return the opener of every request: one that follows no redirect."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """Refuses every redirect: following one could re-POST the body somewhere else."""

        def redirect_request(
            self,
            req: urllib.request.Request,
            fp: object,
            code: int,
            msg: str,
            headers: Message,
            newurl: str,
        ) -> None:
            return None

    return urllib.request.build_opener(NoRedirect())


def classify(status: int) -> str:
    """Return the outcome kind of an HTTP status code."""
    if 200 <= status < 300:
        return "done"
    # 408: the server gave up waiting for our request, which RFC 9110 says may be repeated
    if status in (408, 429) or status >= 500:
        return "retry"
    return "rejected"


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Return the seconds a Retry-After value (delta-seconds or HTTP-date) asks to wait.

    A date in the past gives 0.0; a missing or unreadable value gives None.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # asctime dates and "-0000" carry no zone; HTTP-dates are UTC
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _one_line(text: str) -> str:
    """Return `text` with runs of whitespace collapsed, cut to the detail length."""
    line = " ".join(text.split())
    return line if len(line) <= _DETAIL_CHARS else line[:_DETAIL_CHARS] + "..."


def _check_url(url: str) -> None:
    """Raise ValueError unless `url` is an absolute http(s) URL urllib can send."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if _UNSAFE.search(url):
        raise ValueError(f"URL contains spaces or control characters: {url!r}")
    try:
        _ = parts.port
    except ValueError as error:
        raise ValueError(f"bad port in URL: {url!r}") from error


def _read(stream: IO[bytes]) -> bytes:
    """Return up to MAX_BODY bytes of a response body; b"" when it cannot be read.

    The status line already decided the outcome, so a body cut short only shortens the detail.
    """
    import http.client

    try:
        return stream.read(MAX_BODY)
    except (OSError, http.client.HTTPException):
        return b""


def _answered(status: int, reason: str, headers: Message, payload: bytes) -> Outcome:
    """Return the outcome of a response that arrived."""
    kind = classify(status)
    text = payload.decode("utf-8", errors="replace")
    if 300 <= status < 400:
        location = headers.get("Location")
        text = f"redirect to {location} not followed" if location else "redirect without Location"
    detail = _one_line(f"{status} {reason}: {text}" if text.strip() else f"{status} {reason}")
    return Outcome(kind, status, detail, retry_after(headers.get("Retry-After")))


def post(url: str, body: bytes, content_type: str, timeout: float, user_agent: str) -> Outcome:
    """Return the classified outcome of POSTing `body` to `url`; redirects are not followed.

    Network and HTTP failures become outcomes; raises ValueError for a URL that is not http(s).
    """
    import http.client
    import urllib.error
    import urllib.request

    _check_url(url)
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": content_type, "User-Agent": user_agent},
    )
    try:
        with _opener().open(request, timeout=timeout) as response:
            payload = _read(response)
            return _answered(response.status, response.reason, response.headers, payload)
    except urllib.error.HTTPError as error:
        with error:
            payload = _read(error)
        return _answered(error.code, str(error.reason), error.headers, payload)
    except urllib.error.URLError as error:
        reason = error.reason
        text = f"{type(reason).__name__}: {reason}" if isinstance(reason, Exception) else reason
        return Outcome("retry", None, _one_line(f"no response: {text}"), None)
    except (OSError, http.client.HTTPException) as error:
        # timeouts, resets and malformed responses after the connection was made
        text = f"no response: {type(error).__name__}: {error}"
        return Outcome("retry", None, _one_line(text), None)
