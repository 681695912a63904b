"""What the tests share: the committed fixtures and ways to damage copies of them
(``hives``), loopback S3 and HTTP servers (``servers``, ``serving``), the hostile-hive
generator (``hostile``), reference readers of exports (``refs_read``), the JavaScript
clients (``jsclients``), servers in subprocesses (``processes``, which the benchmarks use
too), dask workers' request counts (``workers``), the chunk path's frames (``frames``) and
the live-write run (``live_write``)."""
