"""The I/O layer: objects below one hive root read locally (:mod:`.local`) or through
obstore (:mod:`.remote`), both behind one interface (:class:`.reader.Reader`), and the
facade the package reads with (:class:`.backend.Backend`). Byte ranges
(:mod:`.ranges`), URLs (:mod:`.urls`) and the redaction of credentials (:mod:`.redact`)
each have their own module; this package imports nothing of the rest of the package but
its errors, options checks, buffers, memory maps and request slots.
"""
