"""`sitemapd run`: the daemon that follows every change to the sources until told to stop.

`Daemon` (daemon.py) composes its parts around the state they share (state.py): the
batch loop (loop.py, the one writer), its role in a fleet (fleet.py, the lease), its
watchers (watching.py over watch.py) and its health (health.py). Beside them run the
sidecar HTTP endpoint (sidecar.py, statuspage.py), metrics (metrics.py; prometheus.py with
the endpoint only) and systemd notification.
"""
