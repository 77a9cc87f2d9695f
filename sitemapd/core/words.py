"""Counts in messages people read: "1 URL", "2 URLs"."""

from __future__ import annotations


def count(n: int, noun: str, plural: str = "") -> str:
    """Return `n` and `noun`, in its plural (`noun` + "s" unless given) unless `n` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
