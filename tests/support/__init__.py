"""What the tests share: the committed fixtures and ways to damage copies of them
(``hives``), loopback S3 and HTTP servers (``servers``, ``serving``), the hostile-hive
generator (``hostile``), reference readers of exports (``refs_read``) and the JavaScript
clients (``jsclients``)."""
