// End-to-end test of `trinity serve` with the official `openai` npm client. Starts the real
// binary on a model directory (random weights, real Qwen3 tokenizer files) on a free port, runs
// the scenarios below, stops it with SIGINT, and writes OUTDIR/results.json:
// [{name, ok, error?, info?}]. Expected prompts come from an independent oracle
// (@huggingface/jinja + @huggingface/tokenizers on the same template and tokenizer files); sampled
// logprobs are compared with `trinity debug logprobs` (the trainer's forward) within 1e-4.
// Usage: node openai_e2e.mjs TRINITY_BIN MODEL_DIR OUTDIR
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import OpenAI from "openai";
import { startServer, harness, finish } from "./serve_harness.mjs";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";

const [trinity, modelDir, outDir] = process.argv.slice(2);
if (!outDir) throw new Error("usage: node openai_e2e.mjs TRINITY_BIN MODEL_DIR OUTDIR");
fs.mkdirSync(outDir, { recursive: true });

const MODEL = "tiny";
const API_KEY = `sk-test-${Math.random().toString(36).slice(2)}`;
const MAX_LEN = 1024;
const MAX_REQUEST_MB = 1;

// ---- oracle: chat template + tokenizer from the model dir ------------------------------------
const tj = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer.json"), "utf8"));
const tcfg = JSON.parse(fs.readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
const tok = new Tokenizer(tj, tcfg);
const tmpl = new Template(tcfg.chat_template);
function oraclePrompt(messages, { tools = null, enable_thinking } = {}) {
  const ctx = { messages, tools, add_generation_prompt: true, bos_token: null, eos_token: tcfg.eos_token,
                pad_token: tcfg.pad_token, unk_token: null,
                additional_special_tokens: tcfg.additional_special_tokens ?? [] };
  if (enable_thinking !== undefined) ctx.enable_thinking = enable_thinking;
  const rendered = tmpl.render(ctx);
  return { rendered, ids: tok.encode(rendered, { add_special_tokens: false }).ids };
}
const decode = (ids) => tok.decode(ids, { skip_special_tokens: false });

// ---- server lifecycle --------------------------------------------------------------------------
const srv = await startServer(trinity, ["--model", modelDir, "--port", "0", "--api-key", API_KEY,
                               "--served-model-name", MODEL, "--kv-cache-mb", "256", "--max-model-len",
                               String(MAX_LEN), "--max-request-mb", String(MAX_REQUEST_MB)]);
const { port, exited } = srv;
const server = srv.proc;
const base = `http://127.0.0.1:${port}`;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 300000 });
const auth = { Authorization: `Bearer ${API_KEY}`, "Content-Type": "application/json" };
const health = async () => (await fetch(`${base}/health`)).json();

// ---- harness -------------------------------------------------------------------------------------
const { results, assert, eq, check } = harness();
async function expectApiError(promise, status, param, code) {
  try {
    await promise;
  } catch (e) {
    assert(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
    eq(e.status, status, "status");
    if (param !== undefined) eq(e.param ?? null, param, "error.param");
    if (code !== undefined) eq(e.code ?? null, code, "error.code");
    assert(typeof e.error?.message === "string" && e.error.message.length > 0, "error.message");
    return e;
  }
  throw new Error(`expected HTTP ${status}, the request succeeded`);
}
// Runs prompt+generated ids through `trinity debug logprobs` and returns the generated positions.
function recompute(seqs, temperature) {
  const inp = path.join(outDir, `lp_in_${temperature}.jsonl`), out = path.join(outDir, `lp_out_${temperature}.jsonl`);
  fs.writeFileSync(inp, seqs.map(([p, g]) => JSON.stringify({ tokens: [...p, ...g] })).join("\n") + "\n");
  execFileSync(trinity, ["debug", "logprobs", "--model", modelDir, "--input", inp, "--output", out,
                         "--temperature", String(temperature)]);
  const rows = fs.readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l).logprobs);
  return rows.map((lp, i) => lp.slice(lp.length - seqs[i][1].length));
}

const hello = [{ role: "user", content: "Hello! What is 2 + 2?" }];
const TOOLS = [{ type: "function", function: { name: "get_weather", description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];

// ---- scenarios ---------------------------------------------------------------------------------
await check("models_and_health", async () => {
  const list = await client.models.list();
  eq(list.data.map((m) => m.id), [MODEL], "model ids");
  const h = await health();
  eq(h.status, "ok", "health");
});

await check("chat_basic_prompt_matches_oracle", async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 8, seed: 1,
                                                   return_token_ids: true });
  eq(r.object, "chat.completion", "object");
  eq(r.model, MODEL, "model");
  eq(r.choices.length, 1, "choices");
  const c = r.choices[0];
  eq(c.message.role, "assistant", "role");
  assert(typeof c.message.content === "string", "content is a string");
  assert(["stop", "length"].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
  eq(r.prompt_token_ids, oraclePrompt(hello).ids, "prompt_token_ids vs the jinja/tokenizers oracle");
  eq(r.usage.prompt_tokens, r.prompt_token_ids.length, "usage.prompt_tokens");
  eq(r.usage.completion_tokens, c.token_ids.length, "usage.completion_tokens");
  eq(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens, "usage.total_tokens");
  assert(c.token_ids.length >= 1 && c.token_ids.length <= 8, "at most max_tokens tokens");
  if (c.finish_reason === "length") eq(c.message.content, decode(c.token_ids), "content = decoded token_ids");
});

await check("chat_seed_reproducible_and_greedy", async () => {
  const req = { model: MODEL, messages: hello, max_tokens: 12, seed: 1234, temperature: 0.9, return_token_ids: true };
  const a = await client.chat.completions.create(req), b = await client.chat.completions.create(req);
  eq(a.choices[0].token_ids, b.choices[0].token_ids, "same seed, same tokens");
  eq(a.choices[0].message.content, b.choices[0].message.content, "same seed, same text");
  const g1 = await client.chat.completions.create({ ...req, seed: undefined, temperature: 0 });
  const g2 = await client.chat.completions.create({ ...req, seed: 99, temperature: 0 });
  eq(g1.choices[0].token_ids, g2.choices[0].token_ids, "temperature 0 is greedy");
});

await check("chat_n_samples", async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 10, n: 4, seed: 7,
                                                   return_token_ids: true });
  eq(r.choices.map((c) => c.index), [0, 1, 2, 3], "choice indexes");
  const distinct = new Set(r.choices.map((c) => JSON.stringify(c.token_ids)));
  assert(distinct.size >= 2, "n samples of a random model differ");
  eq(r.usage.completion_tokens, r.choices.reduce((s, c) => s + c.token_ids.length, 0), "usage sums all choices");
  eq(r.usage.prompt_tokens, r.prompt_token_ids.length, "prompt counted once");
});

await check("chat_logprobs_shape", async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 10, seed: 3,
                                                   logprobs: true, top_logprobs: 3, return_token_ids: true });
  const c = r.choices[0];
  eq(c.logprobs.content.length, c.token_ids.length, "one logprobs entry per token id");
  for (const [i, e] of c.logprobs.content.entries()) {
    assert(e.logprob <= 0, "logprob <= 0");
    eq(e.top_logprobs.length, 3, "top_logprobs count");
    for (let k = 1; k < 3; ++k) assert(e.top_logprobs[k - 1].logprob >= e.top_logprobs[k].logprob, "sorted");
    assert(e.top_logprobs[0].logprob >= e.logprob - 1e-6, "best alternative >= sampled");
    eq(e.token, decode([c.token_ids[i]]), "token text");
    eq(Buffer.from(e.bytes).toString("utf8"), Buffer.from(decode([c.token_ids[i]]), "utf8").toString("utf8"),
       "bytes decode to the token");
  }
  const plain = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 3 });
  eq(plain.choices[0].logprobs, null, "no logprobs unless asked");
  assert(plain.prompt_token_ids === undefined && plain.choices[0].token_ids === undefined, "no ids unless asked");
});

await check("sampled_logprobs_equal_trainer_recomputation", async () => {
  let worst = 0, spread = 0, n = 0;
  for (const temperature of [1.0, 0.7]) {
    const seqs = [], got = [];
    for (const [i, top_p] of [1.0, 0.8].entries()) {
      const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 24, n: 2,
        seed: 11 + i, temperature, top_p, top_k: i ? 50 : -1, logprobs: true, return_token_ids: true });
      for (const c of r.choices) {
        eq(c.logprobs.content.length, c.token_ids.length, "aligned");
        seqs.push([r.prompt_token_ids, c.token_ids]);
        got.push(c.logprobs.content.map((e) => e.logprob));
      }
    }
    const want = recompute(seqs, temperature);
    for (let s = 0; s < seqs.length; ++s) {
      eq(want[s].length, got[s].length, "lengths");
      for (let i = 0; i < got[s].length; ++i) {
        worst = Math.max(worst, Math.abs(got[s][i] - want[s][i]));
        ++n;
      }
      spread = Math.max(spread, Math.max(...got[s]) - Math.min(...got[s]));
    }
  }
  assert(worst <= 1e-4, `max |served - recomputed| = ${worst}`);
  assert(spread > 1, `logprobs vary (spread ${spread}), so a misaligned comparison would fail`);
  return { tokens: n, max_abs_diff: worst };
});

await check("stop_token_is_returned_in_token_ids_and_logprobs", async () => {
  const g = await client.completions.create({ model: MODEL, prompt: "The weather today is", max_tokens: 6,
                                             temperature: 0, return_token_ids: true });
  const ids = g.choices[0].token_ids;
  const k = ids.findIndex((t, i) => i >= 1 && !ids.slice(0, i).includes(t));
  assert(k >= 1, "greedy run has a fresh token to stop on");
  const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 1, seed: 1 }); // warm
  void r;
  const s = await client.completions.create({ model: MODEL, prompt: "The weather today is", max_tokens: 6,
    temperature: 0, stop_token_ids: [ids[k]], logprobs: 0, return_token_ids: true });
  const c = s.choices[0];
  eq(c.finish_reason, "stop", "finish_reason");
  eq(c.token_ids, ids.slice(0, k + 1), "token_ids end with the stop token");
  eq(c.logprobs.tokens.length, k + 1, "logprobs include the stop token");
  eq(c.text, decode(ids.slice(0, k)), "text excludes the stop token");
  eq(s.usage.completion_tokens, k + 1, "usage counts the stop token");
});

await check("stop_strings", async () => {
  const g = await client.completions.create({ model: MODEL, prompt: [1, 2, 3], max_tokens: 8, temperature: 0 });
  const text = g.choices[0].text;
  assert(text.length > 4, "greedy text long enough");
  const stop = text.slice(2, 4);
  const s = await client.completions.create({ model: MODEL, prompt: [1, 2, 3], max_tokens: 8, temperature: 0, stop: [stop] });
  eq(s.choices[0].finish_reason, "stop", "finish_reason");
  eq(s.choices[0].text, text.slice(0, text.indexOf(stop)), "text cut before the stop string");
});

await check("streaming_equals_non_streaming", async () => {
  const req = { model: MODEL, messages: hello, max_tokens: 12, n: 2, seed: 5, logprobs: true, top_logprobs: 3,
    return_token_ids: true };
  const full = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  const text = ["", ""], ids = [[], []], lps = [[], []], tops = [[], []], finish = [null, null], roles = [null, null];
  let usage = null, promptIds = null;
  for await (const chunk of stream) {
    eq(chunk.object, "chat.completion.chunk", "chunk object");
    if (chunk.prompt_token_ids) promptIds = chunk.prompt_token_ids;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) roles[c.index] = c.delta.role;
      assert(finish[c.index] === null, "nothing after finish_reason");
      text[c.index] += c.delta.content ?? "";
      ids[c.index].push(...(c.token_ids ?? []));
      lps[c.index].push(...(c.logprobs?.content ?? []).map((e) => e.logprob));
      tops[c.index].push(...(c.logprobs?.content ?? []).map((e) => e.top_logprobs));
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  }
  eq(roles, ["assistant", "assistant"], "role chunks");
  eq(promptIds, full.prompt_token_ids, "prompt_token_ids");
  for (let i = 0; i < 2; ++i) {
    eq(text[i], full.choices[i].message.content, `text of choice ${i}`);
    eq(ids[i], full.choices[i].token_ids, `token_ids of choice ${i}`);
    eq(lps[i], full.choices[i].logprobs.content.map((e) => e.logprob), `logprobs of choice ${i}`);
    eq(tops[i], full.choices[i].logprobs.content.map((e) => e.top_logprobs), `top_logprobs of choice ${i}`);
    assert(tops[i].every((t) => t.length === 3), "3 alternatives per streamed token");
    eq(finish[i], full.choices[i].finish_reason, `finish_reason of choice ${i}`);
  }
  eq(usage, full.usage, "usage chunk");
  // Raw SSE framing: every event is `data: ...` and the last one is [DONE].
  const raw = await (await fetch(`${base}/v1/completions`, { method: "POST", headers: auth,
    body: JSON.stringify({ model: MODEL, prompt: "Hi", max_tokens: 4, stream: true }) })).text();
  const events = raw.split("\n\n").filter((e) => e.length);
  assert(events.every((e) => e.startsWith("data: ")), "SSE data frames");
  eq(events[events.length - 1], "data: [DONE]", "stream ends with [DONE]");
});

await check("tools_reach_the_template_and_response_shape", async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: TOOLS, max_tokens: 8, seed: 2, return_token_ids: true });
  eq(r.prompt_token_ids, oraclePrompt([{ role: "user", content: "Weather in Paris?" }], { tools: TOOLS }).ids,
     "prompt with tools vs oracle");
  assert(decode(r.prompt_token_ids).includes("<tools>") && decode(r.prompt_token_ids).includes("get_weather"),
         "tool schema in the prompt");
  const c = r.choices[0];
  assert(c.message.content === null || typeof c.message.content === "string", "content");
  if (c.message.tool_calls) for (const t of c.message.tool_calls) eq(t.type, "function", "tool call type");
  const none = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: TOOLS, tool_choice: "none", max_tokens: 2, return_token_ids: true });
  assert(!decode(none.prompt_token_ids).includes("<tools>"), "tool_choice none leaves tools out");
  // A multi-turn tool conversation (assistant tool_calls with JSON-string arguments, tool result).
  const convo = [{ role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function",
      function: { name: "get_weather", arguments: "{\"city\": \"Paris\"}" } }] },
    { role: "tool", tool_call_id: "call_1", content: "sunny, 21C" }];
  const t = await client.chat.completions.create({ model: MODEL, messages: convo, tools: TOOLS, max_tokens: 4,
                                                   return_token_ids: true });
  const oracleConvo = JSON.parse(JSON.stringify(convo));
  oracleConvo[1].tool_calls[0].function.arguments = { city: "Paris" };  // templates get a mapping (as vLLM does)
  oracleConvo[1].content = "";  // and an absent / null assistant content as ""
  eq(t.prompt_token_ids, oraclePrompt(oracleConvo, { tools: TOOLS }).ids, "tool conversation prompt vs oracle");
  assert(decode(t.prompt_token_ids).includes("<tool_response>\nsunny, 21C"), "tool result rendered");
});

await check("enable_thinking_passthrough", async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 2,
    chat_template_kwargs: { enable_thinking: false }, return_token_ids: true });
  eq(r.prompt_token_ids, oraclePrompt(hello, { enable_thinking: false }).ids, "prompt vs oracle");
  assert(decode(r.prompt_token_ids).endsWith("<think>\n\n</think>\n\n"), "empty think block");
});

await check("completions_endpoint", async () => {
  const a = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 5, seed: 4,
                                             logprobs: 2, return_token_ids: true });
  eq(a.object, "text_completion", "object");
  eq(a.prompt_token_ids, tok.encode("Once upon a time", { add_special_tokens: false }).ids, "text prompt ids");
  const lp = a.choices[0].logprobs;
  eq(lp.tokens.length, a.choices[0].token_ids.length, "legacy logprobs per token");
  eq(lp.token_logprobs.length, lp.tokens.length, "token_logprobs");
  eq(Object.keys(lp.top_logprobs[0]).length <= 2, true, "top_logprobs size");
  const b = await client.completions.create({ model: MODEL, prompt: [[10, 20, 30], [40, 50]], n: 2, max_tokens: 3,
                                             seed: 4, return_token_ids: true });
  eq(b.choices.length, 4, "2 prompts x n=2");
  eq(b.choices.map((c) => c.prompt_token_ids), [[10, 20, 30], [10, 20, 30], [40, 50], [40, 50]], "prompt per choice");
  eq(b.usage.prompt_tokens, 5, "usage.prompt_tokens over prompts");
  const s = await client.completions.create({ model: MODEL, prompt: [10, 20, 30], max_tokens: 3, seed: 4, stream: true });
  let text = "", fin = null;
  for await (const ch of s) { text += ch.choices[0]?.text ?? ""; fin = ch.choices[0]?.finish_reason ?? fin; }
  const ns = await client.completions.create({ model: MODEL, prompt: [10, 20, 30], max_tokens: 3, seed: 4 });
  eq(text, ns.choices[0].text, "streamed completion text");
  eq(fin, ns.choices[0].finish_reason, "streamed finish_reason");
});

await check("errors_openai_shaped", async () => {
  const bad = new OpenAI({ baseURL: `${base}/v1`, apiKey: "wrong", maxRetries: 0 });
  await expectApiError(bad.chat.completions.create({ model: MODEL, messages: hello }), 401, null, "invalid_api_key");
  const noKey = await fetch(`${base}/v1/models`);
  eq(noKey.status, 401, "no Authorization header");
  eq(Object.keys((await noKey.json()).error).sort(), ["code", "message", "param", "type"], "error keys");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, temperature: -1 }), 400, "temperature");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: -5 }), 400, "max_tokens");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, n: "two" }), 400, "n");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: "hello" }), 400, "messages");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: 3 }] }), 400,
                       "messages[0].content");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, top_p: 2 }), 400, "top_p");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, presence_penalty: 1 }), 400,
                       "presence_penalty");
  await expectApiError(client.completions.create({ model: MODEL, prompt: [1, 999999999] }), 400, "prompt");
  const long = [{ role: "user", content: "word ".repeat(3 * MAX_LEN) }];
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: long }), 400, "messages",
                       "context_length_exceeded");
  await expectApiError(client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: MAX_LEN }), 400,
                       "max_tokens", "context_length_exceeded");
  await expectApiError(client.chat.completions.create({ model: "gpt-4", messages: hello }), 404, "model", "model_not_found");
  const malformed = await fetch(`${base}/v1/chat/completions`, { method: "POST", headers: auth, body: "{\"messages\": [" });
  eq(malformed.status, 400, "malformed JSON status");
  const mj = await malformed.json();
  assert(mj.error.message.includes("not valid JSON") && mj.error.param === null, "malformed JSON error");
  const big = "x".repeat(MAX_REQUEST_MB * 1024 * 1024 + 10);
  let bigStatus;
  try {
    const res = await fetch(`${base}/v1/completions`, { method: "POST", headers: auth,
      body: JSON.stringify({ model: MODEL, prompt: big, max_tokens: 1 }) });
    bigStatus = res.status;
    if (res.status === 413) eq(Object.keys((await res.json()).error).sort(), ["code", "message", "param", "type"], "413 body");
  } catch (e) {
    bigStatus = `connection error: ${e.cause?.code ?? e}`;
  }
  eq(bigStatus, 413, "oversized body refused");
  const notFound = await fetch(`${base}/v1/nothing`, { headers: auth });
  eq(notFound.status, 404, "unknown route");
  const h = await health();
  eq(h.status, "ok", "server alive after bad requests");
});

// Structured output through the official client's parse(): a strict JSON schema; the random tiny
// model must still produce schema-valid JSON (constrained decoding), which parse() turns into
// message.parsed.
await check("structured_output_parse", async () => {
  const schema = {
    type: "object", additionalProperties: false, required: ["answer", "confident", "count"],
    properties: { answer: { enum: ["yes", "no", "maybe"] }, confident: { type: "boolean" },
                  count: { type: "integer" } },
  };
  const outs = [];
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.parse({
      model: MODEL, messages: hello, temperature: 1, seed, max_tokens: 200,
      response_format: { type: "json_schema", json_schema: { name: "answer", strict: true, schema } },
    });
    const m = r.choices[0].message;
    eq(r.choices[0].finish_reason, "stop", "finish_reason");
    assert(m.parsed && typeof m.parsed === "object", `parsed: ${m.content}`);
    eq(Object.keys(m.parsed), ["answer", "confident", "count"], "keys");
    assert(["yes", "no", "maybe"].includes(m.parsed.answer), `answer ${m.content}`);
    assert(typeof m.parsed.confident === "boolean" && Number.isInteger(m.parsed.count), `types ${m.content}`);
    outs.push(m.content);
  }
  await expectApiError(client.chat.completions.create({
    model: MODEL, messages: hello,
    response_format: { type: "json_schema", json_schema: { name: "x", strict: true,
                                                           schema: { type: "string", pattern: "a+" } } },
  }), 400, "response_format.json_schema.schema");
  return { outputs: outs };
});

await check("concurrent_clients_are_batched", async () => {
  const before = await health();
  const N = 32, T = 16;
  const rs = await Promise.all(Array.from({ length: N }, (_, i) => client.chat.completions.create({
    model: MODEL, messages: [{ role: "user", content: `Client ${i} says hi` }], max_tokens: T, seed: i,
    ignore_eos: true, return_token_ids: true })));
  for (const r of rs) eq(r.choices[0].token_ids.length, T, "every client got its tokens");
  const after = await health();
  const steps = after.steps - before.steps, toks = after.generated_tokens - before.generated_tokens;
  eq(toks, N * T, "generated tokens");
  assert(steps < toks / 2, `batched: ${steps} engine steps for ${toks} tokens`);
  // Concurrency does not change results: client 3 alone gets the same tokens.
  const alone = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Client 3 says hi" }],
    max_tokens: T, seed: 3, ignore_eos: true, return_token_ids: true });
  eq(alone.choices[0].token_ids, rs[3].choices[0].token_ids, "same tokens alone and batched");
  return { steps, tokens: toks };
});

await check("client_disconnect_cancels_its_request", async () => {
  const before = await health();
  const controller = new AbortController();
  const stream = await client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 900, ignore_eos: true,
    stream: true }, { signal: controller.signal });
  let chunks = 0;
  try {
    for await (const _ of stream) { if (++chunks === 4) controller.abort(); }
  } catch (e) {
    assert(e.name === "AbortError" || e instanceof OpenAI.APIUserAbortError || String(e).includes("abort"), `abort: ${e}`);
  }
  let h;
  for (let i = 0; i < 100; ++i) {
    h = await health();
    if (h.finished > before.finished) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  eq(h.finished, before.finished + 1, "the engine finished (cancelled) the request after the disconnect");
  for (let i = 0; i < 50 && h.inflight_requests !== 0; ++i) {
    await new Promise((r) => setTimeout(r, 100));
    h = await health();
  }
  eq(h.inflight_requests, 0, "no request left in flight");
  const gen = h.generated_tokens - before.generated_tokens;
  assert(gen < 900, `the cancelled request stopped early (${gen} tokens)`);
  assert(h.streams_cancelled > before.streams_cancelled, "server counted the cancelled stream");
  return { generated_before_cancel: gen };
});

await check("sigint_shuts_down_cleanly", async () => {
  // A request in flight when the signal arrives ends; the process exits 0.
  const pending = client.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 900, ignore_eos: true })
    .then(() => "done", (e) => `error ${e.status ?? e}`);
  await new Promise((r) => setTimeout(r, 300));
  server.kill("SIGINT");
  const timeout = new Promise((r) => setTimeout(() => r({ code: "timeout" }), 20000));
  const { code } = await Promise.race([exited, timeout]);
  eq(code, 0, `exit code (output:\n${srv.out().slice(-2000)})`);
  assert(srv.out().includes("trinity serve: stopped"), "clean stop message");
  await pending;
});

await finish(srv, outDir, results);
