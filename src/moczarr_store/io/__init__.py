"""The I/O layer: objects below one hive root read locally (:mod:`.local`) or through
obstore (:mod:`.remote`), both behind one interface (:class:`.reader.Reader`), and the
facade the package reads with (:class:`.backend.Backend`). Byte ranges
(:mod:`.ranges`), URLs (:mod:`.urls`), the redaction of credentials (:mod:`.redact`),
storage options (:mod:`.storage`), the pool of read buffers (:mod:`.buffers`), spans
memory-mapped from the page cache (:mod:`.mapped`), the inotify watches that tell them of
a change (:mod:`.watch`), the cap on requests in flight (:mod:`.slots`) and the exit
handler that lets obstore's threads finish handing answers over (:mod:`.settle`) each have
their own module. It imports nothing that reads hives: only the package's errors and
hints, option checks, settings, process state and logger
(``tests/store/test_imports.py`` checks it).
"""
