"""The vocabulary every layer shares: site URLs, W3C datetimes, what sources observe,
include/exclude globs, counts in messages, helper processes tied to the daemon, and the
loggers."""
