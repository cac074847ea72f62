"""Whether a SQLite database file was cut short, read from its 100-byte header.

SQLite reads a page past the end of the file as zeros and reports nothing, so a file that lost
its tail (a full disk, an interrupted copy) reads as a database whose last pages are empty:
keys are missing and a thread's history looks new. SQLite's own `PRAGMA integrity_check` finds
it, but reads every page; the header says it in a few bytes instead. The header (the file
format's "database header") holds the page size at offset 16, the file change counter at 24,
the number of pages at 28 and, at 92, the change counter the page number is valid for: when
the two counters agree, a healthy file holds at least that many pages.

In WAL mode the database file holds the pages of the last checkpoint and its header is that
checkpoint's, so a healthy file is never shorter either — except while a checkpoint is copying
pages (it writes page 1 first) or was interrupted: the pages it has not copied yet are still in
the `-wal` file, and SQLite reads them from there. The check is therefore made only when the
`-wal` file holds no frame (it is absent or only its 32-byte header is there), looked at
before and after the header is read, so a checkpoint of another process cannot fool it.
"""

from __future__ import annotations

import os

__all__ = ["truncation"]

#: The bytes every SQLite 3 database file starts with.
_MAGIC = b"SQLite format 3\x00"
_HEADER_BYTES = 100
#: A `-wal` file this long or shorter holds no frame (the WAL header is 32 bytes).
_WAL_HEADER_BYTES = 32


def truncation(path: str) -> str | None:
    """Why the database file at `path` is shorter than its header says, or None.

    None too when the file cannot be read (it does not exist yet, or SQLite reports why it
    cannot open it), is not a SQLite file (SQLite itself then reports `SQLITE_NOTADB`), its
    header's page count is not maintained, or a `-wal` file holds frames.
    """
    wal = f"{path}-wal"
    if _has_frames(wal):
        return None
    try:
        with open(path, "rb") as file:
            header = file.read(_HEADER_BYTES)
            size = os.fstat(file.fileno()).st_size
    except OSError:  # missing (a new store), a directory, unreadable: SQLite says which
        return None
    if _has_frames(wal):  # a writer started meanwhile: its checkpoint may be copying pages
        return None
    if len(header) < _HEADER_BYTES or not header.startswith(_MAGIC):
        return None
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size  # the format's spelling of 64 KiB
    changes = int.from_bytes(header[24:28], "big")
    pages = int.from_bytes(header[28:32], "big")
    valid_for = int.from_bytes(header[92:96], "big")
    if pages == 0 or valid_for != changes or page_size < 512 or page_size & (page_size - 1):
        return None
    expected = pages * page_size
    if size >= expected:
        return None
    return (
        f"the file is {size} bytes long but its header says it holds {pages} pages of "
        f"{page_size} bytes ({expected} bytes): it was cut short"
    )


def _has_frames(wal: str) -> bool:
    try:
        return os.path.getsize(wal) > _WAL_HEADER_BYTES
    except OSError:
        return False
