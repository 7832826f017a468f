"""Writes and dumps .npy and safetensors files for the attn-ref tests, with
the Python standard library only (the tests must not need numpy).

  npy.py make OUT.npy DTYPE SHAPE VALUES   DTYPE f4|f8|i4|i8|b1, SHAPE 2,3
                                           (empty for a scalar), VALUES 1,2,3
  npy.py dump FILE.npy                     prints descr, shape and values
  npy.py safetensors OUT NAME=SHAPE=VALUES...   F32 tensors
  npy.py dump-safetensors FILE             prints each tensor as dump does
"""

import ast
import json
import struct
import sys

FORMATS = {"f4": "<f", "f8": "<d", "i4": "<i", "i8": "<q", "b1": "<?"}


def parse_list(text, convert):
    return [convert(v) for v in text.split(",") if v != ""]


def make(path, dtype, shape, values):
    shape = parse_list(shape, int)
    convert = float if dtype[0] == "f" else int
    values = parse_list(values, convert)
    descr = ("|" if dtype == "b1" else "<") + dtype
    shape_text = "(" + ", ".join(str(s) for s in shape) + \
        ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, shape_text)
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        for v in values:
            f.write(struct.pack(FORMATS[dtype], v))


def dump(path):
    data = open(path, "rb").read()
    length = struct.unpack("<H", data[8:10])[0]
    header = ast.literal_eval(data[10:10 + length].decode())
    dtype = header["descr"][1:]
    size = struct.calcsize(FORMATS[dtype])
    body = data[10 + length:]
    values = [struct.unpack(FORMATS[dtype], body[i:i + size])[0]
              for i in range(0, len(body), size)]
    print(header["descr"], list(header["shape"]), format_values(values))


def format_values(values):
    return " ".join(("%.10g" % v) if isinstance(v, float) else str(int(v))
                    for v in values)


def dump_safetensors(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    formats = {"F32": "<f", "F64": "<d", "I32": "<i", "I64": "<q"}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        fmt = formats[entry["dtype"]]
        size = struct.calcsize(fmt)
        values = [struct.unpack(fmt, body[i:i + size])[0]
                  for i in range(begin, end, size)]
        print(name, entry["dtype"], entry["shape"], format_values(values))


def safetensors(path, specs):
    header, blobs, offset = {}, [], 0
    for spec in specs:
        name, shape, values = spec.split("=")
        blob = b"".join(struct.pack("<f", v)
                        for v in parse_list(values, float))
        header[name] = {"dtype": "F32", "shape": parse_list(shape, int),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "make":
        make(*args)
    elif command == "dump":
        dump(*args)
    elif command == "dump-safetensors":
        dump_safetensors(*args)
    else:
        safetensors(args[0], args[1:])
