#!/usr/bin/env bash
# Builds the seed corpora for the libFuzzer targets in fuzz/ (nothing large is committed).
#   fuzz/make-corpus.sh OUT_DIR [FIXTURES_DIR]
# Writes OUT_DIR/event_stream/ (byte 0 = mode, see event_stream_fuzzer.cc, then a binlog
# image: every fixture binlog whole in file and stream mode, and each event split out
# behind its file's FORMAT_DESCRIPTION_EVENT and latest TABLE_MAP), OUT_DIR/json_binary/
# (hand-made MySQL binary JSON values of every type), OUT_DIR/rows/ (small row images
# for the tables of rows_fuzzer.cc) and OUT_DIR/decode/ (every fixture, first 32 KiB, behind
# the mode header of decode_target.h, in each output mode). Also copies tests/fuzz-regressions/<target>/* in.
set -euo pipefail
out=${1:?usage: make-corpus.sh OUT_DIR [FIXTURES_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
fixtures=${2:-$root/../shared/fixtures/binlogs}
if [ ! -d "$fixtures" ]; then
  echo "make-corpus: fixture directory $fixtures is missing" >&2
  exit 1
fi
mkdir -p "$out/event_stream" "$out/json_binary" "$out/rows" "$out/decode"
python3 - "$out" "$fixtures" <<'PY'
import hashlib, os, struct, sys

out, fixtures = sys.argv[1], sys.argv[2]

def put(target, data):
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

# --- event_stream: fixture binlogs, whole and per event ---------------------------------
MAGIC = b"\xfebin"
FDE, TABLE_MAP = 15, 19
for fn in sorted(os.listdir(fixtures)):
    data = open(os.path.join(fixtures, fn), "rb").read()
    for mode in (0x00, 0x01, 0x02, 0x04 | 0x10):
        put("event_stream", bytes([mode]) + data[:65536])
    body = data[4:] if data.startswith(MAGIC) else data
    pos, fde, table_map = 0, b"", b""
    while pos + 19 <= len(body):
        size = struct.unpack_from("<I", body, pos + 9)[0]
        if size < 19 or pos + size > len(body):
            break
        ev = body[pos:pos + size]
        kind = ev[4]
        if kind == FDE:
            fde = ev
        elif kind == TABLE_MAP:
            table_map = ev
        if kind != FDE and size <= 16384:
            ctx = fde + (table_map if kind != TABLE_MAP else b"")
            put("event_stream", b"\x00" + MAGIC + ctx + ev)
            put("event_stream", b"\x00" + ev)
        pos += size

# --- decode: byte 0 mode, 2+2 bytes start/stop position, then the file (decode_target.h) --
for fn in sorted(os.listdir(fixtures)):
    data = open(os.path.join(fixtures, fn), "rb").read()[:32768]
    for mode in (0x00, 0x01, 0x02, 0x03, 0x01 | 0x10, 0x02 | 0x20, 0x03 | 0x40):
        put("decode", bytes([mode, 0, 0, 0, 0]) + data)
    if len(data) > 400:
        put("decode", bytes([0x01 | 0x04 | 0x08]) + struct.pack("<HH", 200, min(len(data), 65535) - 100) + data)

# --- json_binary: MySQL binary JSON (sql-common/json_binary.cc) --------------------------
def varlen(n):
    b = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)

def scalar(v):
    """(type, value bytes) for a non-container value."""
    if v is None: return 4, b"\x00"
    if v is True: return 4, b"\x01"
    if v is False: return 4, b"\x02"
    if isinstance(v, int):
        if -2**15 <= v < 2**15: return 5, struct.pack("<h", v)
        if -2**31 <= v < 2**31: return 7, struct.pack("<i", v)
        if v < 2**63 and v >= -2**63: return 9, struct.pack("<q", v)
        return 10, struct.pack("<Q", v)
    if isinstance(v, float): return 11, struct.pack("<d", v)
    if isinstance(v, str):
        b = v.encode()
        return 12, varlen(len(b)) + b
    if isinstance(v, tuple):  # opaque: (field type, bytes)
        return 15, bytes([v[0]]) + varlen(len(v[1])) + v[1]
    raise TypeError(v)

def value(v, large=False):
    if isinstance(v, dict): return (1 if large else 0), container(v, True, large)
    if isinstance(v, list): return (3 if large else 2), container(v, False, large)
    return scalar(v)

def container(v, is_obj, large):
    osz = 4 if large else 2
    items = list(v.items()) if is_obj else [(None, x) for x in v]
    n = len(items)
    header = 2 * osz + (n * (osz + 2) if is_obj else 0) + n * (1 + osz)
    keys = b""
    key_entries = b""
    off = header
    if is_obj:
        for k, _ in items:
            kb = k.encode()
            key_entries += (struct.pack("<I", off) if large else struct.pack("<H", off)) + struct.pack("<H", len(kb))
            keys += kb
            off += len(kb)
    vals = b""
    val_entries = b""
    for _, x in items:
        t, b = value(x, large)
        inline = t == 4 or t in (5, 6) or (large and t in (7, 8))
        if inline:
            val_entries += bytes([t]) + b.ljust(osz, b"\x00")
        else:
            val_entries += bytes([t]) + (struct.pack("<I", off) if large else struct.pack("<H", off))
            vals += b
            off += len(b)
    body = key_entries + val_entries + keys + vals
    total = 2 * osz + len(body)
    return (struct.pack("<II", n, total) if large else struct.pack("<HH", n, total)) + body

def doc(v, large=False):
    t, b = value(v, large)
    return bytes([t]) + b

docs = [None, True, False, 0, -1, 32767, -32768, 65535, 2**31 - 1, -2**31, 2**40, -2**62,
        2**64 - 1, 1.5, -0.0, 1e300, 3.14159, "", "abc", "quote\"back\\slash\n\t\x01", "é€𝄞",
        "x" * 200, [], {}, [1, 2, 3], ["a", None, True, 1.25], {"a": 1, "b": [1, {"c": "d"}]},
        {"k" * 40: "v" * 300, "n": None, "t": True}, [[[[[[1]]]]]],
        (246, b"\x05\x02\x81\x0d\xfb"),            # opaque DECIMAL
        (10, struct.pack("<q", 0x19999d0000000000)),  # opaque DATE
        (12, struct.pack("<q", 0x1999a1a1e0000000)),  # opaque DATETIME
        (11, struct.pack("<q", 0x0000010000000000)),  # opaque TIME
        (252, b"\x00\x01\x02blob")]
for d in docs:
    put("json_binary", doc(d))
    if isinstance(d, (list, dict)):
        put("json_binary", doc(d, large=True))
nested = 1
for _ in range(40):
    nested = [nested]
put("json_binary", doc(nested))
put("json_binary", doc({"a": [nested, {"b": "c" * 70000}]}, large=True)[:20000])
put("json_binary", b"")

# --- rows: small bodies for rows_fuzzer's tables (byte0 table|kind<<3, byte1 schema) ----
for table in range(8):
    for kind in range(3):
        for schema in (0, 1):
            head = bytes([table | kind << 3, schema, 0, 0, 0, 0])
            put("rows", head + b"\x00" * 64)
            put("rows", head + b"\x00\x00\x00" + bytes(range(1, 61)))
            put("rows", head + b"\xff\xff\xff")
PY
for t in event_stream json_binary rows decode; do
  if [ -d "$root/tests/fuzz-regressions/$t" ]; then
    find "$root/tests/fuzz-regressions/$t" -type f -exec cp {} "$out/$t/" \;
  fi
done
for t in event_stream json_binary rows decode; do
  echo "make-corpus: $t: $(find "$out/$t" -type f | wc -l) seeds"
done
