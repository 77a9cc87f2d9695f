"""One publisher per target: a lease object in the bucket, taken and renewed with S3
conditional writes.

Rules (docs/fleet.md, "One writer per target", gives the argument):
- Renewing: `If-Match` on the holder's own ETag, with a body that changes every time
  (a renewal counter and time), so the ETag moves on every renewal; a 412 means someone
  took the lease. Renewals start every `ttl / 6`.
- Writing: the holder writes only while less than `ttl / 2` has passed since the start
  of its last successful renewal, and every store request ends (answered or abandoned)
  within `ttl / 2` (see `s3store.client`).
- Taking: `If-None-Match: *` when there is no lease, `If-Match: <etag>` on a lease whose
  ETag has not moved for a full `ttl` of the taker's own clock, counted from the end of
  the read that first showed it (so clocks need not agree), or that its holder released.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from typing import Any

from sitemapd.core import logs, w3c
from sitemapd.errors import PublishError
from sitemapd.publish.manifestfile import PRIVATE
from sitemapd.publish.s3store import failure, status_of

log = logs.Logger("sitemapd.lease")


class Lease:
    """This daemon's claim to publish to one target (one index of it)."""

    def __init__(self, s3: Any, bucket: str, key: str, ttl: float) -> None:
        self.s3 = s3
        self.bucket = bucket
        self.key = key
        self.ttl = ttl
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        # One lease request at a time (each has a deadline); never taken by `held`, so
        # that health answers while a request waits on a slow store.
        self._turn = threading.Lock()
        # Guards the fields below, never across a request.
        self._state = threading.Lock()
        # Our lease's ETag while we hold it, and when its last renewal started.
        self._etag: str | None = None
        self._renewed_at = 0.0
        self._renewals = 0
        # The other holder's ETag we watch, and since when (monotonic) it is unchanged.
        self._seen: tuple[str, float] | None = None

    @property
    def held(self) -> bool:
        """True while this daemon may write to the target (no request: answers at once)."""
        with self._state:
            return self._etag is not None and time.monotonic() - self._renewed_at < self.ttl / 2

    def tick(self) -> bool:
        """Renew the lease if held, else take it if free or lapsed; return True when held.

        Raises PublishError when the store cannot be reached (the lease is then lost once
        half its time has passed: `held` turns False on its own).
        """
        with self._turn:
            if self._etag is not None:
                return self._renew()
            return self._take()

    def keep(self) -> bool:
        """Renew the lease if this daemon holds it (a long scan may outlast half its TTL);
        return True when held. Raises PublishError when the store cannot be reached."""
        with self._turn:
            return self._etag is not None and self._renew()

    def fence(self) -> None:
        """Renew the lease before a write that publishes (the index); raises PublishError
        when it is no longer ours."""
        with self._turn:
            if self._etag is None or not self._renew():
                raise PublishError(f"lost the publisher lease s3://{self.bucket}/{self.key}")

    def release(self) -> None:
        """Give the lease up at once (a clean stop), so that a standby takes over now."""
        with self._turn:
            etag = self._etag
            if etag is None:
                return
            with self._state:
                self._etag = None  # no write from here on
            try:
                self._put({"holder": self.holder, "released": True}, IfMatch=etag)
            except PublishError as exc:
                log.warning("cannot release the publisher lease: %s", exc)

    def _renew(self) -> bool:
        started = time.monotonic()
        assert self._etag is not None
        body = {"holder": self.holder, "renewal": self._renewals + 1, "renewed": w3c.now()}
        try:
            etag = self._put(body, IfMatch=self._etag)
        except _Conflict:
            log.warning("another sitemapd took the publisher lease: standing by")
            with self._state:
                self._etag = None
            return False
        if etag is None:
            return False
        with self._state:
            self._etag, self._renewed_at = etag, started
            self._renewals += 1
        return True

    def _take(self) -> bool:
        started = time.monotonic()
        current = self._read()
        read_at = time.monotonic()
        body = {"holder": self.holder, "renewal": 0, "renewed": w3c.now()}
        try:
            if current is None:
                etag = self._put(body, IfNoneMatch="*")
            else:
                etag_now, released = current
                if self._seen is None or self._seen[0] != etag_now:
                    # Counted from after the read: the renewal that made this ETag
                    # started before the read ended, never after.
                    self._seen = (etag_now, read_at)
                if not released and time.monotonic() - self._seen[1] < self.ttl:
                    return False
                etag = self._put(body, IfMatch=etag_now)
        except _Conflict:
            return False  # another standby was quicker
        if etag is None:
            return False
        with self._state:
            self._etag, self._renewed_at, self._renewals = etag, started, 0
            self._seen = None
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
