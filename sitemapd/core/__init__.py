"""The vocabulary every layer shares: site URLs, W3C datetimes, what sources observe,
include/exclude globs, counts in messages, and helper processes tied to the daemon."""
