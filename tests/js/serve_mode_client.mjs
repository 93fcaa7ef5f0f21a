// Serve-mode client for tests/launcher/test_serve_mode.cpp: the official `openai` client talks to a
// `mode: serve` endpoint like a production agent would (a two-turn conversation and a single call),
// then rewards the answers through POST /feedback (delayed rewards, Trinity-RFT's proxy API).
// Usage: node serve_mode_client.mjs BASE_URL API_KEY   (BASE_URL without /v1)
// Prints one JSON line: {"ids": [...], "feedback": [...]}.
import OpenAI from "openai";

const [base, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });

const messages = [{ role: "user", content: "hi" }];
const a = await client.chat.completions.create({ model: "my-production-model", messages, max_tokens: 4 });
messages.push(a.choices[0].message);
messages.push({ role: "user", content: "and?" });
const b = await client.chat.completions.create({ model: "my-production-model", messages, max_tokens: 4 });
const c = await client.chat.completions.create({
  model: "my-production-model", messages: [{ role: "user", content: "yo" }], max_tokens: 4, stream: true,
});
let cid = null;
for await (const chunk of c) cid = chunk.id;

async function post(path, body) {
  const r = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}
const feedback = [
  await post("/feedback", { reward: 1.0, msg_ids: [a.id, b.id], task_id: "greet", run_id: 0 }),
  await post("/feedback", { reward: 0.0, msg_ids: [cid], task_id: "greet", run_id: 1 }),
];
console.log(JSON.stringify({ ids: [a.id, b.id, cid], feedback }));
