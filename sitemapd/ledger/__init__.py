"""The ledger: the only code that writes the SQLite state database.

It remembers every URL with its content hash and lastmod, decides what an observation
changed, assigns shards, journals changes and records what was published. One writer
connection, WAL mode; every `apply()` is one transaction with the source cursors.

Its parts: `ledger` (the `Ledger` itself), `schema` (tables and migrations), `urlrow` (a
`urls` row and the values it binds), `apply` (deciding what observations change), `lists`
(URL lists read by content-defined chunks), `rendering`, `journal` and `crawls` (the
queries of the renderers, feeds and access logs).
The package itself imports none of them: a command that reads one part (`status` the
history, `explain` a page's) does not load the writer's.
"""
