"""Notification senders: one IndexNow or WebSub request each, its outcome classified."""

from __future__ import annotations

from sitemapd.notify import indexnow, websub
from sitemapd.notify.http import Outcome, post

__all__ = ["Outcome", "indexnow", "post", "websub"]
