"""An S3-compatible bucket as the place published files go (boto3, the `[s3]` extra).

Every object is one PutObject (never multipart), so its ETag is the MD5 of its bytes:
stable for crawlers' conditional GETs, and what tells a no-change publish that the bytes
are already there. robots.txt is edited with conditional writes, so daemons publishing
the partitions of one site never undo each other's lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sitemapd.config.fleet import S3Target
from sitemapd.core import logs
from sitemapd.errors import PublishError
from sitemapd.publish.manifestfile import Row, decode, manifest_name

log = logs.Logger("sitemapd.s3store")

_DELETE_BATCH = 1000  # DeleteObjects takes at most 1,000 keys
_ROBOTS_TRIES = 10


def client(target: S3Target) -> Any:
    """Return a boto3 S3 client for `target`; credentials come from the standard AWS chain.

    Raises PublishError when boto3 is not installed.
    """
    try:
        import boto3
        from botocore.config import Config as BotoConfig
    except ImportError as exc:
        raise PublishError("publishing to S3 needs boto3: pip install 'sitemapd[s3]'") from exc
    # A request ends within half the lease's TTL, answered or not: the holder's last write
    # lands before anyone may take the lease (see lease.py). No retry inside botocore (its
    # backoff would outlast that): a failed publish is retried whole by the daemon, which
    # checks the lease again first.
    timeout = request_timeout(target.lease_ttl)
    settings = BotoConfig(
        retries={"total_max_attempts": 1, "mode": "standard"},
        connect_timeout=timeout,
        read_timeout=timeout,
    )
    return boto3.client(
        "s3", endpoint_url=target.endpoint_url, region_name=target.region, config=settings
    )


def request_timeout(ttl: float) -> float:
    """Return the connect and read timeout of each store request under a lease of `ttl`
    seconds: a connect and a read fit in half the TTL."""
    return min(5.0, ttl / 4)


def failure(what: str, exc: Exception) -> PublishError:
    """Return the PublishError of a failed S3 request."""
    return PublishError(f"{what}: {exc}")


def status_of(exc: Exception) -> int | None:
    """Return the HTTP status of a botocore ClientError, None for other errors."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None


def stamp(etag: str) -> int:
    """Return the ledger stamp of an object: the first 60 bits of its ETag (an MD5)."""
    digits = etag.strip('"')[:15]
    try:
        return int(digits, 16)
    except ValueError:
        # Not an MD5 (a multipart or SSE-KMS object): a stamp that never matches ours.
        return -1


class S3Store:
    """Published files as objects under `target.prefix`, listed once per publish."""

    def __init__(self, target: S3Target, s3: Any | None = None) -> None:
        self.target = target
        self.s3 = s3 if s3 is not None else client(target)
        self.bucket = target.bucket
        self.prefix = target.prefix
        # name -> (size, stamp) of the objects under the prefix, as of prepare(), and
        # their ETags: each write is conditional on the object being as listed.
        self._listing: dict[str, tuple[int, int]] = {}
        self._etags: dict[str, str] = {}

    @property
    def where(self) -> str:
        return self.target.url

    def key(self, name: str) -> str:
        """Return the object key of file `name`."""
        return self.prefix + name

    def prepare(self, write: bool) -> None:
        listing: dict[str, tuple[int, int]] = {}
        etags: dict[str, str] = {}
        try:
            pages = self.s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix, Delimiter="/"
            )
            for page in pages:
                for item in page.get("Contents", ()):
                    name = item["Key"][len(self.prefix) :]
                    listing[name] = (item["Size"], stamp(item["ETag"]))
                    etags[name] = item["ETag"]
        except Exception as exc:
            raise failure(f"cannot list {self.where}", exc) from exc
        self._listing, self._etags = listing, etags

    def intact(self, name: str, record: tuple[str, int, int | None]) -> bool:
        return self._listing.get(name) == (record[1], record[2])

    def put(self, name: str, data: bytes, content_type: str) -> tuple[int, bool]:
        ours = stamp(hashlib.md5(data, usedforsecurity=False).hexdigest())
        if self._listing.get(name) == (len(data), ours):
            return ours, False
        # The fence of a write: it lands only on the object as this publisher listed it.
        # A holder paused past its lease (SIGSTOP, a VM frozen) whose successor has
        # written the object since gets a 412 and writes nothing.
        etag = self._etags.get(name)
        condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
        try:
            answer = self.s3.put_object(
                Bucket=self.bucket,
                Key=self.key(name),
                Body=data,
                **self._headers(content_type),
                **condition,
            )
        except Exception as exc:
            if status_of(exc) in (409, 412):
                raise PublishError(
                    f"{self.where}{name} changed since it was listed: another publisher?"
                ) from exc
            raise failure(f"cannot upload {self.where}{name}", exc) from exc
        stored = stamp(answer["ETag"])
        self._listing[name] = (len(data), stored)
        self._etags[name] = answer["ETag"]
        return stored, True

    def names(self) -> list[str]:
        return sorted(self._listing)

    def remove(self, names: Iterable[str]) -> None:
        keys = []
        for name in names:
            keys += [self.key(name), self.key(manifest_name(name))]
            self._listing.pop(name, None)
            self._etags.pop(name, None)
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = [{"Key": key} for key in keys[start : start + _DELETE_BATCH]]
            try:
                answer = self.s3.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )
            except Exception as exc:
                raise failure(f"cannot delete from {self.where}", exc) from exc
            if answer.get("Errors"):
                raise PublishError(f"cannot delete from {self.where}: {answer['Errors'][0]}")

    def edit_robots(
        self, edit: Callable[[bytes], bytes], dry_run: bool
    ) -> tuple[str, bytes | None] | None:
        key = self.target.robots_key
        if key is None:
            return None
        where = f"s3://{self.bucket}/{key}"
        for _ in range(_ROBOTS_TRIES):
            current, etag = self._get(key)
            updated = edit(current)
            if updated == current or dry_run:
                return where, None if updated == current else updated
            # Taken only if nobody wrote it since we read it: a lost race reads again.
            condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
            try:
                self.s3.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=updated,
                    **self._headers("text/plain; charset=utf-8"),
                    **condition,
                )
            except Exception as exc:
                if status_of(exc) in (409, 412):
                    continue
                raise failure(f"cannot write {where}", exc) from exc
            return where, updated
        raise PublishError(f"{where}: kept changing under us; try again")

    def _headers(self, content_type: str) -> dict[str, str]:
        """Return the headers of a public object: its type and the CDN's cache time."""
        cache = self.target.cache_control
        return {"ContentType": content_type, **({"CacheControl": cache} if cache else {})}

    def read(self, key: str) -> bytes:
        """Return the bytes of object `key` (empty when there is none); raises PublishError."""
        return self._get(key)[0]

    def _get(self, key: str) -> tuple[bytes, str | None]:
        """Return the bytes and ETag of object `key`, or (b"", None) when there is none."""
        try:
            answer = self.s3.get_object(Bucket=self.bucket, Key=key)
            return answer["Body"].read(), answer["ETag"]
        except Exception as exc:
            if status_of(exc) == 404:
                return b"", None
            raise failure(f"cannot read s3://{self.bucket}/{key}", exc) from exc

    # Manifests: what a publisher that takes over needs to keep every published lastmod.

    def put_manifest(self, shard: str, data: bytes) -> None:
        try:
            self.s3.put_object(Bucket=self.bucket, Key=self.key(manifest_name(shard)), Body=data)
        except Exception as exc:
            raise failure(f"cannot upload the manifest of {shard}", exc) from exc

    def manifest_rows(self, shards: Iterable[str]) -> Iterator[Row]:
        """Yield the manifest rows of `shards` (missing ones: none)."""
        for shard in shards:
            key = self.key(manifest_name(shard))
            data, _ = self._get(key)
            yield from decode(data, f"s3://{self.bucket}/{key}")
