"""Zip members of any compression Python's zipfile reads, plus Zstandard (method 93), which current inspect_ai
writes into its ``.eval`` logs and Python 3.11's zipfile cannot open (issue 22: such uploads were called damaged).
"""
from __future__ import annotations

import io
import struct
import zipfile
from typing import IO

import zstandard

ZstdError = zstandard.ZstdError

ZSTD = 93  # the zip "compression method" number of Zstandard (APPNOTE 4.4.5)
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature ... file name length, extra field length (30 bytes)


def open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """A binary stream of the member's bytes (zipfile's own for its methods; zstandard for method 93)."""
    if info.compress_type != ZSTD:
        return zf.open(info)
    fp = zf.fp
    fp.seek(info.header_offset)
    header = _LOCAL_HEADER.unpack(fp.read(_LOCAL_HEADER.size))
    if header[0] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"{info.filename}: bad local file header")
    fp.seek(header[-2] + header[-1], io.SEEK_CUR)
    packed = fp.read(info.compress_size)
    return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed), read_across_frames=True)


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    with open_member(zf, info) as fh:
        return fh.read()
