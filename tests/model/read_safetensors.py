#!/usr/bin/python3
"""Independent safetensors reader/writer (stdlib json + struct + numpy) used as an oracle for
trinity's C++ safetensors IO (tests/model/test_interop.cpp). Validates the layout strictly, as the
reference Rust implementation does: u64 LE header length, JSON header padded with spaces to a
multiple of 8, data_offsets contiguous from 0 to the end of the file, sizes = numel * dtype size.

  read_safetensors.py dump FILE             -> JSON {name: {dtype, shape, bits}, "__metadata__": {...}}
  read_safetensors.py check-bf16 F32 BF16   -> exit 1 unless BF16 == round-to-nearest-even(F32)
  read_safetensors.py write OUT             -> a foreign-layout file with values f(i) (see below)
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": (np.uint32, 4), "BF16": (np.uint16, 2), "F16": (np.uint16, 2)}


def fail(msg):
    print("read_safetensors.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        fail(f"{path}: too short")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        fail(f"{path}: header length {n} beyond file size {len(buf)}")
    raw = buf[8 : 8 + n]
    header = json.loads(raw.decode("utf-8"))
    data = buf[8 + n :]
    meta = header.pop("__metadata__", {})
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    pos = 0
    out = {}
    for name, e in entries:
        b, end = e["data_offsets"]
        if b != pos:
            fail(f"{path}: tensor {name} starts at {b}, expected {pos} (gap or overlap)")
        np_dtype, size = DTYPES[e["dtype"]]
        numel = int(np.prod(e["shape"], dtype=np.int64)) if e["shape"] else 1
        if end - b != numel * size:
            fail(f"{path}: tensor {name} spans {end - b} bytes, needs {numel * size}")
        bits = np.frombuffer(data[b:end], dtype=np.dtype(np_dtype).newbyteorder("<"))
        out[name] = {"dtype": e["dtype"], "shape": e["shape"], "bits": bits}
        pos = end
    if pos != len(data):
        fail(f"{path}: tensors cover {pos} bytes, data block is {len(data)}")
    return out, meta, raw


def cmd_dump(path):
    tensors, meta, raw = read(path)
    if len(raw) % 8 != 0 or (8 + len(raw)) % 8 != 0:
        fail(f"{path}: header length {len(raw)} is not padded to a multiple of 8")
    stripped = raw.rstrip(b" ")
    if not stripped.endswith(b"}") or b"\n" in raw:
        fail(f"{path}: header padding must be spaces after compact JSON")
    res = {name: {"dtype": t["dtype"], "shape": t["shape"], "bits": [int(x) for x in t["bits"]]}
           for name, t in tensors.items()}
    res["__metadata__"] = meta
    print(json.dumps(res))


def bf16_rne(u32):
    """Round-to-nearest-even f32 -> bf16 bits, NaN left to the caller."""
    u = u32.astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def cmd_check_bf16(f32_path, bf16_path):
    f32, _, _ = read(f32_path)
    b16, _, _ = read(bf16_path)
    if sorted(f32) != sorted(b16):
        fail("tensor names differ")
    try:
        import torch  # optional second oracle (Debian python3-torch)
    except ImportError:
        torch = None
    checked = 0
    for name in f32:
        u = f32[name]["bits"]
        got = b16[name]["bits"]
        if b16[name]["dtype"] != "BF16" or b16[name]["shape"] != f32[name]["shape"]:
            fail(f"{name}: dtype/shape mismatch")
        vals = u.view(np.float32)
        nan = np.isnan(vals)
        got_nan = np.isnan((got.astype(np.uint32) << 16).view(np.float32))
        if not np.array_equal(nan, got_nan):
            fail(f"{name}: NaN positions differ")
        want = bf16_rne(u)
        bad = np.nonzero((want != got) & ~nan)[0]
        if bad.size:
            i = int(bad[0])
            fail(f"{name}[{i}]: f32 {int(u[i]):#010x} -> bf16 {int(got[i]):#06x}, expected {int(want[i]):#06x}")
        if torch is not None and vals.size:
            t = torch.from_numpy(vals.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
            bad = np.nonzero((t != got) & ~nan)[0]
            if bad.size:
                i = int(bad[0])
                fail(f"{name}[{i}]: torch gives {int(t[i]):#06x}, file has {int(got[i]):#06x}")
        checked += vals.size
    print(json.dumps({"checked": checked, "torch": torch is not None}))


def value(i):
    """The value of element i in every tensor `write` produces (exact in f16 and bf16)."""
    return (i % 37 - 18) * 0.25


def cmd_write(out):
    # Unsorted header keys, __metadata__ last, F32 placed after an odd-sized BF16 tensor so its
    # data is not 4-byte aligned, no padding bytes in the header: a layout trinity never writes.
    specs = [("b.bf16", "BF16", [3]), ("a.f32", "F32", [2, 3]), ("c.f16", "F16", [4, 1]), ("e.empty", "F32", [0, 5])]
    header, blobs, pos = {}, [], 0
    for name, dt, shape in specs:
        n = int(np.prod(shape)) if shape else 1
        v = np.array([value(i) for i in range(n)], dtype=np.float32)
        if dt == "F32":
            blob = v.astype("<f4").tobytes()
        elif dt == "F16":
            blob = v.astype("<f2").tobytes()
        else:
            blob = (v.view(np.uint32) >> 16).astype("<u2").tobytes()
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    header["__metadata__"] = {"format": "pt", "writer": "numpy"}
    raw = json.dumps(header).encode()
    raw += b" " * ((4 - len(raw) % 4) % 4)  # data block 4-aligned, so a.f32 (at +6) is misaligned
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(blobs))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        cmd_dump(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check-bf16":
        cmd_check_bf16(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "write":
        cmd_write(sys.argv[2])
    else:
        fail("usage: dump FILE | check-bf16 F32 BF16 | write OUT")


if __name__ == "__main__":
    main()
