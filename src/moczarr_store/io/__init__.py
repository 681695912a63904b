"""The I/O layer: objects below one hive root read locally (:mod:`.local`) or through
obstore (:mod:`.remote`), both behind one interface (:class:`.reader.Reader`), and the
facade the package reads with (:class:`.backend.Backend`). Byte ranges
(:mod:`.ranges`), URLs (:mod:`.urls`), the redaction of credentials (:mod:`.redact`),
the inotify watches that tell kept memory maps of a change (:mod:`.watch`) and the exit
handler that lets obstore's threads finish handing answers over (:mod:`.settle`) each have
their own module. It imports nothing that reads hives: only the package's
errors and hints, option checks, storage options, buffers, memory maps, request slots
and logger (``tests/store/test_imports.py`` checks it).
"""
