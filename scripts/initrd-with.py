#!/usr/bin/env python3
"""Writes OUT: the guest image's INITRD with one more file, /rec (executable, from SCRIPT),
appended as a second cpio archive (the kernel unpacks both). Used by the record-meter scripts.
Usage: scripts/initrd-with.py INITRD SCRIPT OUT"""
import sys


def entry(name, mode, data):
    n = name.encode() + b"\0"
    h = "070701" + "".join("%08X" % v for v in [1, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(n), 0])
    b = h.encode() + n
    b += b"\0" * (-len(b) % 4) + data
    return b + b"\0" * (-len(b) % 4)


if len(sys.argv) != 4:
    sys.exit(__doc__.strip().splitlines()[-1])
initrd, script, out = sys.argv[1:]
extra = entry("rec", 0o100755, open(script, "rb").read()) + entry("TRAILER!!!", 0, b"")
with open(out, "wb") as f:
    f.write(open(initrd, "rb").read() + extra)
