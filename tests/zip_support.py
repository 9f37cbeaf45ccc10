"""A zip whose members are Zstandard-compressed (method 93), as current inspect_ai writes ``.eval`` logs; Python
3.11's zipfile cannot write one, so it is built here byte by byte (APPNOTE 4.3: local headers, central directory,
end record)."""
from __future__ import annotations

import struct
import zlib

import zstandard


def zstd_zip(members: dict[str, bytes]) -> bytes:
    out, central = bytearray(), bytearray()
    for name, data in members.items():
        raw = name.encode()
        packed = zstandard.ZstdCompressor(level=3).compress(data)
        crc, offset = zlib.crc32(data), len(out)
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, 93, 0, 0x21, crc, len(packed), len(data), len(raw), 0)
        out += raw + packed
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 63, 63, 0, 93, 0, 0x21, crc, len(packed), len(data),
                               len(raw), 0, 0, 0, 0, 0, offset) + raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)
