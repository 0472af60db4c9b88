"""safetensors writing without the safetensors package (Debian's torch lacks it): an 8-byte
little-endian header size, the JSON header (dtype, shape, data_offsets per tensor), the data."""

import json
import os
import struct


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, float32 CPU tensor). Written to a temp name, then renamed."""
    header = {}
    offset = 0
    blobs = []
    for name, t in tensors:
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    raw_header = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw_header += b" " * (-len(raw_header) % 8)  # data starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(raw_header)))
        f.write(raw_header)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
