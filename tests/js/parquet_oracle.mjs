// Parquet oracles for tests/buffer/parquet_golden_test.cpp: three independent writers (DuckDB,
// parquet-wasm = Arrow's Rust parquet crate, hyparquet-writer) write OUTDIR/<case>.parquet with every
// encoding / codec / page version each can produce, and each tool reads its file back; the rows it
// reads are written as OUTDIR/<case>.json (a JSON array) in trinity's JSON mapping (docs/buffer.md):
// timestamps "YYYY-MM-DDTHH:MM:SS[.f]"(Z when UTC-adjusted), dates "YYYY-MM-DD", int64 exact,
// binary as UTF-8 text or base64, maps as objects. OUTDIR/manifest.json lists the cases:
// {name, tool, expect_error?}. Usage: node parquet_oracle.mjs OUTDIR
import fs from "node:fs";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import * as arrow from "apache-arrow";
import * as pw from "parquet-wasm";
import { parquetWriteBuffer } from "hyparquet-writer";
import { parquetReadObjects } from "hyparquet";

const outDir = process.argv[2];
if (!outDir) throw new Error("usage: node parquet_oracle.mjs OUTDIR");
fs.mkdirSync(outDir, { recursive: true });
const manifest = [];

// JSON text with BigInt as exact digits and NaN/Infinity as null (trinity's mapping).
function toJson(v) {
  if (v === null || v === undefined) return "null";
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "number") return Number.isFinite(v) ? JSON.stringify(v) : "null";
  if (typeof v === "string" || typeof v === "boolean") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(toJson).join(",") + "]";
  return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + toJson(x)).join(",") + "}";
}

function writeCase(name, tool, rows, extra = {}) {
  fs.writeFileSync(path.join(outDir, name + ".json"), "[" + rows.map(toJson).join(",\n") + "]\n");
  manifest.push({ name, tool, rows: rows.length, ...extra });
}

function binaryText(u8) {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(u8);
  } catch {
    return Buffer.from(u8).toString("base64");
  }
}

function isoMillis(ms, utc) {
  let s = new Date(Number(ms)).toISOString().replace(".000Z", "Z");
  return utc ? s : s.replace("Z", "");
}

// ---------------------------------------------------------------- DuckDB
const N_DUCK = 5000;
async function duckdbCases() {
  const inst = await DuckDBInstance.create(":memory:");
  const con = await inst.connect();
  const q = async (s) => (await con.runAndReadAll(s)).getRows();
  await q(`CREATE TABLE t AS SELECT
      i::INTEGER AS id,
      (i % 256 - 128)::TINYINT AS i8, ((i * 37) % 65536 - 32768)::SMALLINT AS i16,
      ((i * 2654435761) % 4294967296 - 2147483648)::INTEGER AS i32,
      (i * 1234567890123 - 1000000000000000)::BIGINT AS i64,
      (i % 256)::UTINYINT AS u8, ((i * 7) % 65536)::USMALLINT AS u16, ((i * 2654435761) % 4294967296)::UINTEGER AS u32,
      (i * 3000000000000)::UBIGINT AS u64,
      (i / 7.0 - 100)::FLOAT AS f32, CASE WHEN i % 11 = 0 THEN NULL ELSE i / 3.0 - 500 END::DOUBLE AS f64,
      CASE WHEN i % 13 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
      CASE WHEN i % 5 = 0 THEN NULL WHEN i % 7 = 0 THEN '' ELSE 'row ' || i || ' ü日本😀 "q" \\ ' || chr(10) || chr(9) || chr(1) END AS s,
      'cat' || (i % 4) AS low_card,
      (i * 12.34 - 5000)::DECIMAL(9,2) AS dec9, (i * 123.4567 - 99999)::DECIMAL(18,4) AS dec18,
      (i * 1234567.8912345 - 77)::DECIMAL(38,10) AS dec38,
      DATE '1969-12-25' + i::INTEGER AS dt,
      TIMESTAMP '1999-12-31 23:00:00' + to_microseconds(i * 3600123457) AS ts,
      TIMESTAMPTZ '2020-02-28 12:00:00+00' + to_milliseconds(i * 86400001) AS tstz,
      TIME '00:00:00' + to_microseconds(i * 28800001) AS tm,
      CASE WHEN i % 4 = 0 THEN NULL WHEN i % 4 = 1 THEN [] ELSE ['a' || i, NULL, 'b'] END AS ls,
      [{'role': 'user', 'content': 'question ' || i}, {'role': 'assistant', 'content': CASE WHEN i % 3 = 0 THEN NULL ELSE 'answer ' || i END}] AS messages,
      CASE WHEN i % 6 = 0 THEN NULL ELSE {'x': i, 'y': CASE WHEN i % 2 = 0 THEN NULL ELSE 'y' || i END, 'z': [i, i + 1]} END AS st,
      CASE WHEN i % 5 = 0 THEN NULL ELSE MAP {'k' || i: i, 'z': NULL} END AS mp,
      MAP {i: 'v' || i} AS mp_int,
      CASE WHEN i % 9 = 0 THEN NULL ELSE [[i], [], NULL, [i, NULL]] END AS ll,
      [{'a': [1, 2], 'b': {'c': NULL}}, NULL] AS deep
    FROM range(${N_DUCK}) r(i)`);
  const variants = [
    ["duckdb_uncompressed_v1", "uncompressed", "v1", 1000],
    ["duckdb_snappy_v1", "snappy", "v1", 700],
    ["duckdb_gzip_v1", "gzip", "v1", 3000],
    ["duckdb_zstd_v2", "zstd", "v2", 1000],
    ["duckdb_snappy_v2", "snappy", "v2", 512],
    ["duckdb_lz4_v2", "lz4_raw", "v2", 2048],
  ];
  for (const [name, codec, ver, rg] of variants) {
    const file = path.join(outDir, name + ".parquet");
    await q(`COPY (SELECT * FROM t ORDER BY id) TO '${file}' (FORMAT parquet, COMPRESSION ${codec}, PARQUET_VERSION ${ver}, ROW_GROUP_SIZE ${rg})`);
    const rows = (await q(`SELECT to_json(_r_)::VARCHAR FROM read_parquet('${file}') _r_ ORDER BY id`)).map((r) => JSON.parse(r[0]));
    for (const r of rows) {
      // DuckDB prints timestamps as "YYYY-MM-DD HH:MM:SS[.ffffff][+00]" and trims fractions.
      const us = (s) => s.replace(/\.(\d+)/, (m, f) => "." + f.padEnd(6, "0"));
      r.ts = r.ts === null ? null : us(r.ts.replace(" ", "T"));
      r.tstz = r.tstz === null ? null : us(r.tstz.replace(" ", "T").replace("+00", "Z"));
      r.tm = r.tm === null ? null : us(r.tm);
      r.mp_int = r.mp_int;  // DuckDB already writes map keys as strings
    }
    writeCase(name, "duckdb", rows);
  }
  // A chat dataset (SFT / taskset shape) for the integration test.
  await q(`COPY (SELECT 'q' || i AS question, 'a' || i AS answer, i AS idx,
             [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'what is ' || i || '+1?'},
              {'role': 'assistant', 'content': (i + 1)::VARCHAR}] AS messages
           FROM range(50) r(i) ORDER BY i) TO '${path.join(outDir, "duckdb_chat.parquet")}' (FORMAT parquet, COMPRESSION zstd)`);
  const chat = (await q(`SELECT to_json(_r_)::VARCHAR FROM read_parquet('${path.join(outDir, "duckdb_chat.parquet")}') _r_ ORDER BY idx`)).map((r) => JSON.parse(r[0]));
  writeCase("duckdb_chat", "duckdb", chat);
  // Brotli is not supported by trinity: the reader must say so, naming the codec.
  await q(`COPY (SELECT i FROM range(10) r(i)) TO '${path.join(outDir, "duckdb_brotli.parquet")}' (FORMAT parquet, COMPRESSION brotli)`);
  writeCase("duckdb_brotli", "duckdb", [], { expect_error: "BROTLI" });
}

// ---------------------------------------------------------------- parquet-wasm (Arrow Rust)
const N_PW = 2500;
function pwTable() {
  const rnd = (i) => ((i * 2654435761) >>> 0) / 4294967296;
  const col = (f) => Array.from({ length: N_PW }, (_, i) => f(i));
  const A = arrow;
  const v = (data, type) => A.vectorFromArray(data, type);
  const utf8 = new A.Utf8();
  const listStr = new A.List(new A.Field("item", utf8, true));
  const msgType = new A.Struct([new A.Field("role", utf8, false), new A.Field("content", utf8, true)]);
  const listMsg = new A.List(new A.Field("item", msgType, true));
  const st = new A.Struct([new A.Field("n", new A.Int64(), true), new A.Field("tag", utf8, true)]);
  return new A.Table({
    i8: v(col((i) => (i % 256) - 128), new A.Int8()),
    i16: v(col((i) => (i % 7 === 0 ? null : ((i * 31) % 65536) - 32768)), new A.Int16()),
    i32: v(col((i) => ((i * 2654435761) | 0)), new A.Int32()),
    i64: v(col((i) => BigInt(i) * 3037000493n - 4611686018427387904n), new A.Int64()),
    u8: v(col((i) => i % 256), new A.Uint8()),
    u16: v(col((i) => (i * 13) % 65536), new A.Uint16()),
    u32: v(col((i) => (i * 2654435761) >>> 0), new A.Uint32()),
    u64: v(col((i) => BigInt(i) * 7378697629483820646n % 18446744073709551615n), new A.Uint64()),
    f32: v(col((i) => (i % 17 === 0 ? null : Math.fround(rnd(i) * 1000 - 500))), new A.Float32()),
    f64: v(col((i) => (i % 97 === 1 ? NaN : i % 97 === 2 ? Infinity : rnd(i + 7) * 1e6 - 3e5)), new A.Float64()),
    b: v(col((i) => (i % 10 === 0 ? null : rnd(i) > 0.5)), new A.Bool()),
    s: v(col((i) => (i % 9 === 0 ? null : i % 9 === 1 ? "" : `text ${i} ${"ab".repeat(i % 13)} ünï ${i % 3 === 0 ? "😀" : ""}`)), utf8),
    sorted: v(col((i) => `prefix/common/${String(i).padStart(6, "0")}`), utf8),
    bin: v(col((i) => (i % 8 === 0 ? null : i % 2 ? new Uint8Array([0xff, i & 255, 0, 1]) : new TextEncoder().encode("ok" + i))), new A.Binary()),
    dt: v(col((i) => (i % 15 === 0 ? null : new Date(Date.UTC(1960, 0, 1) + i * 86400000 * 11))), new A.DateDay()),
    ts: v(col((i) => (i % 6 === 0 ? null : Date.UTC(2001, 2, 3) + i * 3600001)), new A.TimestampMillisecond()),
    tags: v(col((i) => (i % 5 === 0 ? null : i % 5 === 1 ? [] : [`t${i}`, null, `u${i % 3}`])), listStr),
    messages: v(col((i) => [{ role: "user", content: `q${i}` }, { role: "assistant", content: i % 4 === 0 ? null : `a${i}` }]), listMsg),
    st: v(col((i) => (i % 7 === 0 ? null : { n: i % 3 === 0 ? null : BigInt(i), tag: `g${i % 5}` })), st),
  });
}

function arrowToJson(value, type) {
  if (value === null || value === undefined) return null;
  const A = arrow;
  if (A.DataType.isList(type)) return [...value].map((x) => arrowToJson(x, type.children[0].type));
  if (A.DataType.isStruct(type)) {
    const o = {};
    for (const f of type.children) o[f.name] = arrowToJson(value[f.name], f.type);
    return o;
  }
  if (A.DataType.isBinary(type)) return binaryText(value);
  if (A.DataType.isDate(type)) return new Date(Number(value)).toISOString().slice(0, 10);
  if (A.DataType.isTimestamp(type)) return isoMillis(value, !!type.timezone);
  return value;  // numbers, bigints, strings, booleans
}

async function parquetWasmCases() {
  const table = pwTable();
  const wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(table, "stream"));
  const E = pw.Encoding;
  const ints = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"];
  const variants = [
    { name: "pw_plain_v1_uncompressed", codec: pw.Compression.UNCOMPRESSED, ver: pw.WriterVersion.V1, dict: false },
    { name: "pw_dict_v1_snappy", codec: pw.Compression.SNAPPY, ver: pw.WriterVersion.V1, dict: true },
    { name: "pw_dict_v2_zstd", codec: pw.Compression.ZSTD, ver: pw.WriterVersion.V2, dict: true },
    {
      name: "pw_delta_v2_gzip", codec: pw.Compression.GZIP, ver: pw.WriterVersion.V2, dict: false,
      enc: { ...Object.fromEntries(ints.map((c) => [c, E.DELTA_BINARY_PACKED])), s: E.DELTA_LENGTH_BYTE_ARRAY,
             sorted: E.DELTA_BYTE_ARRAY, bin: E.DELTA_BYTE_ARRAY, dt: E.DELTA_BINARY_PACKED, ts: E.DELTA_BINARY_PACKED,
             "tags.list.item": E.DELTA_LENGTH_BYTE_ARRAY, b: E.RLE },
    },
    {
      name: "pw_delta_v1_lz4raw", codec: pw.Compression.LZ4_RAW, ver: pw.WriterVersion.V1, dict: false,
      enc: { i32: E.DELTA_BINARY_PACKED, i64: E.DELTA_BINARY_PACKED, s: E.DELTA_BYTE_ARRAY, sorted: E.DELTA_LENGTH_BYTE_ARRAY },
    },
    {
      name: "pw_bss_v2_snappy", codec: pw.Compression.SNAPPY, ver: pw.WriterVersion.V2, dict: false,
      enc: { f32: E.BYTE_STREAM_SPLIT, f64: E.BYTE_STREAM_SPLIT, i32: E.BYTE_STREAM_SPLIT, i64: E.BYTE_STREAM_SPLIT },
    },
    { name: "pw_small_pages_lz4", codec: pw.Compression.LZ4, ver: pw.WriterVersion.V1, dict: true, page: 256, rg: 700 },
    { name: "pw_small_pages_v2_uncompressed", codec: pw.Compression.UNCOMPRESSED, ver: pw.WriterVersion.V2, dict: false, page: 300, rg: 999 },
  ];
  for (const vr of variants) {
    let b = new pw.WriterPropertiesBuilder().setCompression(vr.codec).setWriterVersion(vr.ver).setDictionaryEnabled(vr.dict);
    if (vr.page) b = b.setDataPageSizeLimit(vr.page).setWriteBatchSize(64).setDictionaryPageSizeLimit(vr.page * 4);
    if (vr.rg) b = b.setMaxRowGroupSize(vr.rg);
    for (const [c, e] of Object.entries(vr.enc ?? {})) b = b.setColumnEncoding(c, e).setColumnDictionaryEnabled(c, false);
    const bytes = pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, "stream")), b.build());
    fs.writeFileSync(path.join(outDir, vr.name + ".parquet"), bytes);
    const back = arrow.tableFromIPC(pw.readParquet(bytes).intoIPCStream());
    const rows = [];
    for (let i = 0; i < back.numRows; ++i) {
      const o = {};
      for (const f of back.schema.fields) o[f.name] = arrowToJson(back.getChild(f.name).get(i), f.type);
      rows.push(o);
    }
    writeCase(vr.name, "parquet-wasm", rows);
  }
  void wasmTable;
}

// ---------------------------------------------------------------- hyparquet-writer
const N_HY = 1800;
async function hyparquetCases() {
  const col = (f) => Array.from({ length: N_HY }, (_, i) => f(i));
  const base = () => [
    { name: "s", data: col((i) => (i % 6 === 0 ? null : `hy ${i} ${"é".repeat(i % 5)}`)), type: "STRING" },
    { name: "i32", data: col((i) => (i % 5 === 0 ? null : ((i * 40503) % 100000) - 50000)), type: "INT32" },
    { name: "i64", data: col((i) => BigInt(i) * 1000000007n - 900000000000n), type: "INT64" },
    { name: "f64", data: col((i) => (i % 7 === 0 ? null : i / 7)), type: "DOUBLE" },
    { name: "f32", data: col((i) => Math.fround(i / 3)), type: "FLOAT" },
    { name: "b", data: col((i) => (i % 4 === 0 ? null : i % 3 === 0)), type: "BOOLEAN" },
    { name: "ts", data: col((i) => new Date(Date.UTC(2010, 5, 1) + i * 1000003)), type: "TIMESTAMP" },
    { name: "js", data: col((i) => ({ k: i, arr: [1, "x"] })), type: "JSON" },
  ];
  const variants = [
    { name: "hy_default_snappy", codec: "SNAPPY" },
    { name: "hy_uncompressed_small", codec: "UNCOMPRESSED", pageSize: 200, rowGroupSize: 500 },
    { name: "hy_delta_bss", codec: "SNAPPY", enc: { i32: "DELTA_BINARY_PACKED", i64: "DELTA_BINARY_PACKED", f64: "BYTE_STREAM_SPLIT", f32: "BYTE_STREAM_SPLIT", s: "DELTA_LENGTH_BYTE_ARRAY", b: "RLE" } },
    { name: "hy_plain", codec: "UNCOMPRESSED", enc: { s: "PLAIN", i32: "PLAIN", i64: "PLAIN", f64: "PLAIN", f32: "PLAIN", b: "PLAIN", js: "PLAIN" } },
  ];
  for (const vr of variants) {
    const columnData = base().map((c) => (vr.enc?.[c.name] ? { ...c, encoding: vr.enc[c.name] } : c));
    const buf = parquetWriteBuffer({ columnData, codec: vr.codec, pageSize: vr.pageSize, rowGroupSize: vr.rowGroupSize ?? 1000 });
    fs.writeFileSync(path.join(outDir, vr.name + ".parquet"), Buffer.from(buf));
    const objs = await parquetReadObjects({ file: buf, utf8: true });
    const rows = objs.map((o) => ({
      ...o,
      ts: o.ts === null ? null : isoMillis(o.ts.getTime(), true),  // TIMESTAMP_MILLIS is UTC-adjusted
      js: o.js === null ? null : typeof o.js === "string" ? o.js : JSON.stringify(o.js),
    }));
    writeCase(vr.name, "hyparquet", rows);
  }
}

await duckdbCases();
await parquetWasmCases();
await hyparquetCases();
fs.writeFileSync(path.join(outDir, "manifest.json"), JSON.stringify(manifest, null, 1) + "\n");
console.log(`parquet_oracle: ${manifest.length} cases in ${outDir}`);
