"""One publisher per target: a lease object in the bucket, taken and renewed with S3
conditional writes.

Taking: `If-None-Match: *` when there is no lease, `If-Match: <etag>` on a lease whose
ETag nobody renewed for `ttl` seconds of the taker's own clock (so clocks need not
agree), or that its holder released. Renewing: `If-Match` on the holder's own ETag; a
412 means someone took it. The holder writes only within `ttl / 2` of the start of its
last successful renewal, and renews before every index write (the fence): a taker
waits a full `ttl` after it first saw that ETag, so the old holder has stopped writing
before the new one starts.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from typing import Any

from .errors import PublishError
from .s3store import PRIVATE, failure, status_of

log = logging.getLogger(__name__)


class Lease:
    """This daemon's claim to publish to one target (one index of it)."""

    def __init__(self, s3: Any, bucket: str, key: str, ttl: float) -> None:
        self.s3 = s3
        self.bucket = bucket
        self.key = key
        self.ttl = ttl
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._lock = threading.Lock()
        # Our lease's ETag while we hold it, and when its last renewal started.
        self._etag: str | None = None
        self._renewed_at = 0.0
        # The other holder's ETag we watch, and since when (monotonic) it is unchanged.
        self._seen: tuple[str, float] | None = None

    @property
    def held(self) -> bool:
        """True while this daemon may write to the target."""
        with self._lock:
            return self._etag is not None and time.monotonic() - self._renewed_at < self.ttl / 2

    def tick(self) -> bool:
        """Renew the lease if held, else take it if free or lapsed; return True when held.

        Raises PublishError when the store cannot be reached (the lease is then lost once
        half its time has passed: `held` turns False on its own).
        """
        with self._lock:
            if self._etag is not None:
                return self._renew()
            return self._take()

    def keep(self) -> bool:
        """Renew the lease if this daemon holds it (a long scan may outlast half its TTL);
        return True when held. Raises PublishError when the store cannot be reached."""
        with self._lock:
            return self._etag is not None and self._renew()

    def fence(self) -> None:
        """Renew the lease before a write that publishes (the index); raises PublishError
        when it is no longer ours."""
        with self._lock:
            if self._etag is None or not self._renew():
                raise PublishError(f"lost the publisher lease s3://{self.bucket}/{self.key}")

    def release(self) -> None:
        """Give the lease up at once (a clean stop), so that a standby takes over now."""
        with self._lock:
            if self._etag is None:
                return
            try:
                self._put({"holder": self.holder, "released": True}, IfMatch=self._etag)
            except PublishError as exc:
                log.warning("cannot release the publisher lease: %s", exc)
            self._etag = None

    def _renew(self) -> bool:
        started = time.monotonic()
        assert self._etag is not None
        try:
            etag = self._put({"holder": self.holder}, IfMatch=self._etag)
        except _Conflict:
            log.warning("another sitemapd took the publisher lease: standing by")
            self._etag = None
            return False
        if etag is None:
            return False
        self._etag, self._renewed_at = etag, started
        return True

    def _take(self) -> bool:
        started = time.monotonic()
        current = self._read()
        try:
            if current is None:
                etag = self._put({"holder": self.holder}, IfNoneMatch="*")
            else:
                etag_now, released = current
                if self._seen is None or self._seen[0] != etag_now:
                    self._seen = (etag_now, started)
                if not released and started - self._seen[1] < self.ttl:
                    return False
                etag = self._put({"holder": self.holder}, IfMatch=etag_now)
        except _Conflict:
            return False  # another standby was quicker
        if etag is None:
            return False
        self._etag, self._renewed_at, self._seen = etag, started, None
        log.info("took the publisher lease s3://%s/%s as %s", self.bucket, self.key, self.holder)
        return True

    def _read(self) -> tuple[str, bool] | None:
        """Return the lease's (ETag, released), or None when there is no lease."""
        try:
            answer = self.s3.get_object(Bucket=self.bucket, Key=self.key)
            body = json.loads(answer["Body"].read() or b"{}")
        except ValueError:
            body = {}
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise failure("cannot read the publisher lease", exc) from exc
        return answer["ETag"], bool(body.get("released"))

    def _put(self, body: dict[str, Any], **condition: str) -> str | None:
        """Write the lease under `condition`; return its new ETag. Raises _Conflict on a
        lost race, PublishError when the store fails."""
        try:
            answer = self.s3.put_object(
                Bucket=self.bucket,
                Key=self.key,
                Body=json.dumps({**body, "ttl": self.ttl}).encode(),
                ContentType="application/json",
                **condition,
            )
        except Exception as exc:
            if status_of(exc) in (404, 409, 412):
                raise _Conflict from exc
            raise failure("cannot write the publisher lease", exc) from exc
        etag = answer.get("ETag")
        return etag if isinstance(etag, str) else None


class _Conflict(PublishError):
    """A conditional write lost: someone else wrote the lease first."""


def lease_key(prefix: str, index: str) -> str:
    """Return the key of the lease of the index `index` published under `prefix`."""
    return f"{prefix}{PRIVATE}lease-{index}.json"
