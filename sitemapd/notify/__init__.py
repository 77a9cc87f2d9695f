"""Notification senders: one IndexNow or WebSub request each, its outcome classified."""

from __future__ import annotations

from . import indexnow, websub
from .http import Outcome, post

__all__ = ["Outcome", "indexnow", "post", "websub"]
