"""The engine: one pass of sources → ledger → publish, shared by `build` and the daemon."""
