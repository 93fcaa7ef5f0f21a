// JS side of bench/parquet: writes OUTDIR/taskset.parquet (about MBYTES MB, snappy, row groups of
// 122880 rows) with DuckDB: question / answer strings of varied length, an int64 id, an int32
// difficulty and a double score, deterministic. Then times the baseline, DuckDB reading the file into
// JSON object rows (to_json per row, materialised in JS), best of 2. Prints one JSON line:
// {bytes, rows, seconds}. Usage: node bench_parquet.mjs OUTDIR [MBYTES]
import fs from "node:fs";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

const outDir = process.argv[2];
const mbytes = Number(process.argv[3] ?? 64);
if (!outDir) throw new Error("usage: node bench_parquet.mjs OUTDIR [MBYTES]");
fs.mkdirSync(outDir, { recursive: true });
const file = path.join(outDir, "taskset.parquet");
const inst = await DuckDBInstance.create(":memory:");
const con = await inst.connect();
const q = async (s) => (await con.runAndReadAll(s)).getRows();
// Strings carry md5 hex digests of the row index, so snappy compresses them little (~1.4x).
const rows = Math.max(1000, Math.round((mbytes * 1e6) / 300));
await q(`COPY (SELECT i AS id,
    'Question ' || i || ': what is ' || array_to_string(list_transform(range(1 + i % 9), k -> md5((i * 16 + k)::VARCHAR)), ' + ') || '?' AS question,
    'The answer is ' || (i * 7 % 1000) || ' because ' || array_to_string(list_transform(range(1 + i % 5), k -> md5((i * 16 + k + 9)::VARCHAR)), ' and ') AS answer,
    (i % 10)::INTEGER AS difficulty, (i % 1000) / 1000.0 AS score
  FROM range(${rows}) r(i) ORDER BY i) TO '${file}' (FORMAT parquet, COMPRESSION snappy)`);
const bytes = fs.statSync(file).size;
let best = Infinity, n = 0;
for (let rep = 0; rep < 2; ++rep) {
  const t0 = process.hrtime.bigint();
  const r = await q(`SELECT to_json(_r_)::VARCHAR FROM read_parquet('${file}') _r_`);
  n = r.length;
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
}
console.log(JSON.stringify({ bytes, rows: n, seconds: best }));
