"""Publishing: the only code that writes published files.

The publisher renders what the ledger says changed into shards, the index, the news
sitemap and the feeds, and writes them through a store (a local folder or an S3 bucket),
with the manifest that lets a new machine adopt them, robots.txt, partitions of a large
site and the lease that keeps one writer per target.
"""
