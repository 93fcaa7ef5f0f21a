// Data for tests/compat/test_compat.cpp in the formats upstream Trinity-RFT's examples read, with
// parquet written by DuckDB (an independent implementation) where the upstream data is parquet:
//   gsm8k/main/{train,test}-00000-of-00001.parquet   {question, answer "...#### N"} (Hub layout)
//   dapo/all/train.jsonl                              {prompt, solution}
//   countdown.jsonl                                   {question, answer: JSON {target, numbers}}
//   frozen_lake/{train,test}.parquet                  {seed, size, p, index} (get_frozen_lake_data.py)
//   mot/math/train-00000-of-00001.parquet             {messages: list<struct<role, content>>}
//   sft/train.jsonl                                   {messages}
//   dpo.jsonl                                         {prompt, chosen, rejected}
//   openr1.jsonl                                      {problem, answer}
// Usage: node compat_data.mjs OUTDIR
import fs from "node:fs";
import path from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

const out = process.argv[2];
if (!out) throw new Error("usage: node compat_data.mjs OUTDIR");

function write(rel, text) {
  const p = path.join(out, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, text);
  return p;
}
const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";

// Small arithmetic word problems: short prompts keep the byte-tokenizer model's sequences small.
function gsm8k(n, seed) {
  const rows = [];
  for (let i = 0; i < n; i++) {
    const a = (seed * 7 + i * 3) % 20, b = (seed * 5 + i * 11) % 20;
    rows.push({ question: `Tom has ${a} apples and gets ${b}. How many?`, answer: `${a} + ${b} = ${a + b}\n#### ${a + b}` });
  }
  return rows;
}

const db = await (await DuckDBInstance.create(":memory:")).connect();
async function parquet(rel, rows, codec) {
  const tmp = write(rel + ".json", JSON.stringify(rows));
  const p = path.join(out, rel);
  await db.run(`COPY (SELECT * FROM read_json('${tmp}', format = 'array')) TO '${p}' (FORMAT parquet, COMPRESSION ${codec})`);
  fs.unlinkSync(tmp);
}

await parquet("gsm8k/main/train-00000-of-00001.parquet", gsm8k(16, 1), "snappy");
await parquet("gsm8k/main/test-00000-of-00001.parquet", gsm8k(4, 2), "zstd");

write("dapo/all/train.jsonl", jsonl(gsm8k(8, 3).map((r) => ({ prompt: r.question, solution: r.answer.split("#### ")[1] }))));

const cd = [];
for (let i = 0; i < 8; i++) {
  const nums = [i + 1, i + 2, i + 3];
  cd.push({ question: `Use ${nums.join(", ")} to make ${nums[0] + nums[1] + nums[2]}.`,
            answer: JSON.stringify({ target: nums[0] + nums[1] + nums[2], numbers: nums }) });
}
write("countdown.jsonl", jsonl(cd));

const lake = (n, base) => Array.from({ length: n }, (_, i) => ({ seed: base + i, size: 3, p: 0.8, index: i }));
await parquet("frozen_lake/train.parquet", lake(8, 100), "gzip");
await parquet("frozen_lake/test.parquet", lake(2, 900), "snappy");

const chat = gsm8k(16, 4).map((r) => ({
  messages: [
    { role: "user", content: r.question },
    { role: "assistant", content: r.answer },
  ],
}));
await parquet("mot/math/train-00000-of-00001.parquet", chat, "zstd");
write("sft/train.jsonl", jsonl(chat));

write("dpo.jsonl", jsonl(gsm8k(8, 5).map((r) => ({ prompt: r.question, chosen: r.answer, rejected: "I don't know." }))));
write("openr1.jsonl", jsonl(gsm8k(8, 6).map((r) => ({ problem: r.question, answer: r.answer.split("#### ")[1] }))));
console.log(`compat_data: wrote ${out}`);
