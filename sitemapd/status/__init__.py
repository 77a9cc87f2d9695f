"""What the ledger and the targets say about a site: the `status` report, and the data
and HTML of the status page."""
