"""Framing of the trainer protocol (docs/torch-trainer.md#protocol).

One message = u32 little-endian header length, the header as UTF-8 JSON, then the raw bytes of
each buffer the header's "buffers" lists (byte lengths), in order. JSON carries the small control
part; per-token arrays (int32 tokens, float32 log-probs, values, gradients) and weights travel
as raw little-endian bytes, so neither side needs a serialization library. The same framing runs
over the child's stdin / stdout, over a TCP connection (--listen), and from rank 0 to the other
ranks (ranks.py broadcasts a request's frame as bytes).
"""

import io
import json
import struct


class WireClosed(Exception):
    """The other side closed the stream: a clean shutdown, not an error."""


def _read_exact(stream, n):
    """n bytes as a bytearray, read in place: a buffer of weights (2.4 GB for a 0.6B policy) is
    held once, not as its chunks and then their join (net.py wraps it as a tensor without a copy)."""
    out = bytearray(n)
    view = memoryview(out)
    got = 0
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            raise WireClosed()
        got += k
    return out


def read_message(stream):
    """Returns (header dict, list of bytes buffers)."""
    (size,) = struct.unpack("<I", _read_exact(stream, 4))
    header = json.loads(_read_exact(stream, size).decode("utf-8"))
    buffers = [_read_exact(stream, int(n)) for n in header.get("buffers", [])]
    return header, buffers


def write_message(stream, header, buffers=()):
    buffers = [bytes(b) if not isinstance(b, (bytes, bytearray)) else b for b in buffers]
    header = dict(header)
    header["buffers"] = [len(b) for b in buffers]
    raw = json.dumps(header).encode("utf-8")
    stream.write(struct.pack("<I", len(raw)))
    stream.write(raw)
    for b in buffers:
        stream.write(b)
    stream.flush()


def pack_message(header, buffers=()):
    """One frame as bytes (what write_message would write)."""
    out = io.BytesIO()
    write_message(out, header, buffers)
    return out.getvalue()


def unpack_message(raw):
    return read_message(io.BytesIO(raw))
