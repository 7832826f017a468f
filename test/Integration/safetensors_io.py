"""safetensors files for the tests' Python helpers: one reader and one
writer, so that the format's details (an 8-byte header length, a JSON
header padded to 8 bytes, tensors by byte offset) live in one place.

  read(path) -> {name: numpy array}, in the stored type (BF16 as its uint16
      bit patterns), without __metadata__
  read_typed(path) -> {name: (dtype name, numpy array)}
  write(path, {name: (dtype name, shape, bytes)})
  write_f32(path, {name: array}) -> the arrays as F32
"""

import json
import struct

import numpy as np

NUMPY = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2",
         "I64": "<i8", "I32": "<i4"}


def read_typed(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[base + begin:base + end], NUMPY[info["dtype"]])
        tensors[name] = (info["dtype"], array.reshape(info["shape"]))
    return tensors


def read(path):
    return {name: array for name, (_, array) in read_typed(path).items()}


def write(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_f32(path, arrays):
    write(path, {name: ("F32", np.shape(a), np.ascontiguousarray(a, "<f4").tobytes())
                 for name, a in arrays.items()})
