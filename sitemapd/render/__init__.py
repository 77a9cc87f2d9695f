"""Renderers: pure functions from ledger rows to the bytes of output files."""
