"""Errors of the symbolizer::

    DebuginfoError (ValueError)     an uploaded or fetched file cannot serve as debug information
     ├── NotElf                     the bytes are not an ELF file
     ├── TruncatedElf               a header, table or note lies past the end of the file
     ├── NoBuildId                  the file has no GNU build-id note
     └── BuildIdMismatch            the file's build ID is not the one it was uploaded or fetched for
    DebuginfodError                 a debuginfod server failed (not "not found": that is cached as absent)

Being ValueErrors, the first four are INVALID_ARGUMENT / HTTP 400 through `flamewatch.rpc.errors`.
"""


class DebuginfoError(ValueError):
    """A file that cannot serve as debug information; the message names the file and the problem."""


class NotElf(DebuginfoError):
    pass


class TruncatedElf(DebuginfoError):
    pass


class NoBuildId(DebuginfoError):
    pass


class BuildIdMismatch(DebuginfoError):
    pass


class DebuginfodError(Exception):
    """A debuginfod server answered with an error other than 404, or could not be reached."""
