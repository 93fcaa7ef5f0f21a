// End-to-end test of `trinity serve` with agent frameworks, all from npm: the official `openai`
// client's Responses API (responses.create, streaming, responses.stream, responses.parse, tool calls
// and function_call_output turns, item_reference), LangChain (`@langchain/openai` ChatOpenAI
// withStructuredOutput, on chat completions and with useResponsesApi) and the Vercel AI SDK (`ai` +
// `@ai-sdk/openai`: generateObject, generateText with a tool, streamText; its default provider uses
// the Responses API). The model is random, so the checks are on protocol shape and schema validity
// (constrained decoding makes a random model emit valid JSON), and on the Responses pipeline giving
// the same prompt and greedy text as chat completions. Writes OUTDIR/results.json: [{name, ok, error?, info?}].
// Usage: node agents_e2e.mjs TRINITY_BIN MODEL_DIR OUTDIR
import fs from "node:fs";
import path from "node:path";
import OpenAI from "openai";
import { startServer, harness, finish } from "./serve_harness.mjs";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, streamText, tool, stepCountIs } from "ai";

const [trinity, modelDir, outDir] = process.argv.slice(2);
if (!outDir) throw new Error("usage: node agents_e2e.mjs TRINITY_BIN MODEL_DIR OUTDIR");
fs.mkdirSync(outDir, { recursive: true });

const MODEL = "tiny";
const API_KEY = `sk-test-${Math.random().toString(36).slice(2)}`;

// ---- server lifecycle --------------------------------------------------------------------------
const srv = await startServer(trinity, ["--model", modelDir, "--port", "0", "--api-key", API_KEY,
                               "--served-model-name", MODEL, "--kv-cache-mb", "256", "--max-model-len", "2048"]);
const { port, exited } = srv;
const server = srv.proc;
const base = `http://127.0.0.1:${port}`;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 300000 });
const auth = { Authorization: `Bearer ${API_KEY}`, "Content-Type": "application/json" };

// ---- harness -------------------------------------------------------------------------------------
const { results, assert, eq, check } = harness();
async function expectApiError(promise, status, param) {
  try {
    await promise;
  } catch (e) {
    assert(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
    eq(e.status, status, "status");
    if (param !== undefined) eq(e.param ?? null, param, "error.param");
    assert(typeof e.error?.message === "string" && e.error.message.length > 0, "error.message");
    return e;
  }
  throw new Error(`expected HTTP ${status}, the request succeeded`);
}
// The chat-completions prompt length of the same conversation (the reference for usage.input_tokens).
async function chatPromptTokens(messages, extra = {}) {
  const r = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 1, return_token_ids: true, ...extra });
  return r.prompt_token_ids.length;
}
// Enums and booleans keep a random model's constrained output short (a free string may run on for
// hundreds of tokens before a quote is sampled).
const WEATHER_PARAMS = { type: "object", properties: { city: { type: "string", enum: ["Paris", "London"] } },
                         required: ["city"], additionalProperties: false };
const RESP_TOOLS = [{ type: "function", name: "get_weather", description: "Weather for a city", strict: true,
                      parameters: WEATHER_PARAMS }];
// Same key order as the server's conversion of RESP_TOOLS (the template prints the tools with tojson).
const CHAT_TOOLS = [{ type: "function", function: { name: "get_weather", description: "Weather for a city",
                                                     parameters: WEATHER_PARAMS, strict: true } }];
const Answer = z.object({ answer: z.enum(["yes", "no", "maybe"]), confident: z.boolean(), count: z.number().int() });
function checkAnswer(o, what) {
  const p = Answer.safeParse(o);
  assert(p.success, `${what}: not schema-valid: ${JSON.stringify(o)} (${p.error})`);
  eq(Object.keys(o), ["answer", "confident", "count"], `${what}: keys`);
}

// ---- scenarios: the openai client's Responses API -------------------------------------------------
await check("responses_text", async () => {
  const r = await client.responses.create({ model: MODEL, instructions: "Be brief.", input: "Hello! What is 2 + 2?",
                                            max_output_tokens: 12, temperature: 0, metadata: { run: "e2e" } });
  eq(r.object, "response", "object");
  assert(r.id.startsWith("resp_"), `id ${r.id}`);
  eq(r.model, MODEL, "model");
  assert(["completed", "incomplete"].includes(r.status), `status ${r.status}`);
  if (r.status === "incomplete") eq(r.incomplete_details, { reason: "max_output_tokens" }, "incomplete_details");
  eq(r.output.length, 1, "one output item");
  const m = r.output[0];
  eq([m.type, m.role], ["message", "assistant"], "message item");
  assert(m.id.startsWith("msg_"), `item id ${m.id}`);
  eq(m.content[0].type, "output_text", "content type");
  eq(r.output_text, m.content[0].text, "client's output_text");
  eq(r.instructions, "Be brief.", "instructions echo");
  eq(r.metadata, { run: "e2e" }, "metadata echo");
  eq(r.max_output_tokens, 12, "max_output_tokens echo");
  // Same pipeline as chat completions: the same prompt, and greedy decoding gives the same text.
  const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello! What is 2 + 2?" }];
  const c = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                   return_token_ids: true });
  eq(r.usage.input_tokens, c.prompt_token_ids.length, "usage.input_tokens = the chat prompt length");
  eq(r.usage.output_tokens, c.usage.completion_tokens, "usage.output_tokens");
  eq(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens, "usage.total_tokens");
  eq(r.output_text, c.choices[0].message.content, "greedy text equals chat completions'");
  // Typed input items with content parts give the same prompt as the plain string.
  const typed = await client.responses.create({ model: MODEL, max_output_tokens: 1, input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "Be brief." }] },
    { role: "user", content: [{ type: "input_text", text: "Hello! What is " }, { type: "input_text", text: "2 + 2?" }] }] });
  eq(typed.usage.input_tokens, r.usage.input_tokens, "typed input items");
  return { text: r.output_text };
});

await check("responses_stream", async () => {
  const req = { model: MODEL, input: "Tell me a story.", max_output_tokens: 16, temperature: 0 };
  const full = await client.responses.create(req);
  const stream = await client.responses.create({ ...req, stream: true });
  const types = [];
  let text = "", seq = -1, completed = null, created = null;
  for await (const e of stream) {
    types.push(e.type);
    eq(e.sequence_number, seq + 1, "sequence_number");
    seq = e.sequence_number;
    if (e.type === "response.created") created = e.response;
    if (e.type === "response.output_text.delta") text += e.delta;
    if (e.type === "response.completed" || e.type === "response.incomplete") completed = e.response;
  }
  eq(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"], "first events");
  eq(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                       full.status === "completed" ? "response.completed" : "response.incomplete"], "last events");
  eq(created.status, "in_progress", "created status");
  eq(completed.id, created.id, "one response id");
  eq(text, full.output_text, "streamed text == non-streaming (greedy)");
  eq(completed.output[0].content[0].text, text, "final snapshot text");
  eq(completed.usage, full.usage, "usage");
  // The client's stream helper accumulates the events into a final response (its finalResponse() has
  // no output_text convenience field unless it parsed a format, as against OpenAI).
  const helper = client.responses.stream(req);
  const fin = await helper.finalResponse();
  eq(fin.output[0].content[0].text, full.output_text, "responses.stream() final text");
  // Raw SSE framing: `event:` + `data:` per event, no [DONE].
  const raw = await (await fetch(`${base}/v1/responses`, { method: "POST", headers: auth,
    body: JSON.stringify({ ...req, max_output_tokens: 3, stream: true }) })).text();
  const events = raw.split("\n\n").filter((e) => e.length);
  assert(events.every((e) => /^event: [a-z_.]+\ndata: \{/.test(e)), `SSE framing: ${events[0]}`);
  assert(!raw.includes("[DONE]"), "no [DONE] in a Responses stream");
  return { events: types.length };
});

await check("responses_tool_call_then_output", async () => {
  const input = [{ role: "user", content: "What is the weather in Paris?" }];
  const r = await client.responses.create({ model: MODEL, input, tools: RESP_TOOLS, tool_choice: "required",
                                            max_output_tokens: 200, temperature: 1 });
  eq(r.status, "completed", "status");
  const calls = r.output.filter((o) => o.type === "function_call");
  eq(calls.length, 1, `one function_call item (output ${JSON.stringify(r.output).slice(0, 300)})`);
  const fc = calls[0];
  eq(fc.name, "get_weather", "name");
  assert(fc.id.startsWith("fc_") && fc.call_id.startsWith("call_"), "ids");
  const args = JSON.parse(fc.arguments);
  eq(Object.keys(args), ["city"], "arguments follow the strict schema");
  assert(["Paris", "London"].includes(args.city), `city ${args.city}`);
  // The prompt with tools equals chat completions' with the same tools.
  eq(r.usage.input_tokens, await chatPromptTokens(input, { tools: CHAT_TOOLS }), "prompt with tools");
  // Turn 2: the call and its output as input items (what agents send back).
  const turn2 = [...input, ...r.output, { type: "function_call_output", call_id: fc.call_id, output: "sunny, 21C" }];
  const r2 = await client.responses.create({ model: MODEL, input: turn2, tools: RESP_TOOLS, max_output_tokens: 4 });
  const chat2 = [...input, { role: "assistant", content: null, tool_calls: [{ id: fc.call_id, type: "function",
                   function: { name: fc.name, arguments: fc.arguments } }] },
                 { role: "tool", tool_call_id: fc.call_id, content: "sunny, 21C" }];
  eq(r2.usage.input_tokens, await chatPromptTokens(chat2, { tools: CHAT_TOOLS }),
     "function_call + function_call_output render as chat tool_calls + tool message");
  // The same turn by item_reference (the AI SDK's default for stored items).
  const ref = [...input, { type: "item_reference", id: fc.id },
               { type: "function_call_output", call_id: fc.call_id, output: "sunny, 21C" }];
  const r3 = await client.responses.create({ model: MODEL, input: ref, tools: RESP_TOOLS, max_output_tokens: 4 });
  eq(r3.usage.input_tokens, r2.usage.input_tokens, "item_reference resolves the stored item");
  // store: false keeps nothing to reference.
  const unstored = await client.responses.create({ model: MODEL, input, tools: RESP_TOOLS, tool_choice: "required",
                                                   max_output_tokens: 200, store: false });
  eq(unstored.store, false, "store echo");
  await expectApiError(client.responses.create({ model: MODEL, input: [...input, { type: "item_reference",
    id: unstored.output[0].id }], max_output_tokens: 2 }), 400, "input[1].id");
  // Streaming a forced call: function_call events, no message text.
  const s = await client.responses.create({ model: MODEL, input, tools: RESP_TOOLS,
    tool_choice: { type: "function", name: "get_weather" }, max_output_tokens: 200, stream: true });
  const types = [];
  let argsDelta = "", done = null;
  for await (const e of s) {
    types.push(e.type);
    if (e.type === "response.function_call_arguments.delta") argsDelta += e.delta;
    if (e.type === "response.completed") done = e.response;
  }
  assert(!types.includes("response.output_text.delta"), "no text deltas for a forced call");
  assert(types.includes("response.function_call_arguments.done"), "arguments.done");
  eq(done.output.map((o) => o.type), ["function_call"], "final output");
  eq(argsDelta, done.output[0].arguments, "streamed arguments");
  assert(typeof JSON.parse(argsDelta).city === "string", "streamed arguments follow the schema");
  return { arguments: fc.arguments };
});

await check("responses_parse_strict_schema", async () => {
  const outs = [];
  for (const seed of [1, 2, 3]) {
    const r = await client.responses.parse({ model: MODEL, input: "Hello! Is 2 + 2 = 4?", temperature: 1, seed,
      max_output_tokens: 200, text: { format: zodTextFormat(Answer, "answer") } });
    eq(r.status, "completed", "status");
    checkAnswer(r.output_parsed, "output_parsed");
    outs.push(r.output_text);
  }
  // json_object: any JSON object.
  const j = await client.responses.create({ model: MODEL, input: "JSON please", max_output_tokens: 200, seed: 4,
                                            text: { format: { type: "json_object" } } });
  // Any object may run past the token limit with a random model: then it is an incomplete prefix.
  if (j.status === "completed") {
    const o = JSON.parse(j.output_text);
    assert(o && typeof o === "object" && !Array.isArray(o), `json_object output ${j.output_text}`);
  } else {
    eq(j.incomplete_details, { reason: "max_output_tokens" }, "incomplete json_object");
    assert(j.output_text.startsWith("{"), `json_object prefix ${j.output_text}`);
  }
  // Chat completions' parse() with the same zod schema.
  const { zodResponseFormat } = await import("openai/helpers/zod");
  const c = await client.chat.completions.parse({ model: MODEL, messages: [{ role: "user", content: "Hi" }],
    max_tokens: 200, seed: 5, response_format: zodResponseFormat(Answer, "answer") });
  checkAnswer(c.choices[0].message.parsed, "chat parse");
  return { outputs: outs };
});

await check("responses_errors_openai_shaped", async () => {
  await expectApiError(client.responses.create({ model: MODEL, input: "x", frobnicate: 1 }), 400, "frobnicate");
  await expectApiError(client.responses.create({ model: MODEL, input: "x", tools: [{ type: "web_search" }] }), 400,
                       "tools[0].type");
  await expectApiError(client.responses.create({ model: MODEL, input: [{ role: "user", content: [
    { type: "input_image", image_url: "https://example.com/a.png" }] }] }), 400, "input[0].content[0].type");
  await expectApiError(client.responses.create({ model: MODEL, input: "x", previous_response_id: "resp_1" }), 400,
                       "previous_response_id");
  await expectApiError(client.responses.create({ model: MODEL, input: "x", max_output_tokens: 100000 }), 400,
                       "max_output_tokens");
  await expectApiError(client.responses.create({ model: MODEL, input: "x", text: { format: { type: "json_schema",
    name: "s", schema: { type: "string", pattern: "a+" } } } }), 400, "text.format.schema");
  await expectApiError(client.responses.create({ model: "gpt-4o", input: "x" }), 404, "model");
});

// ---- LangChain ------------------------------------------------------------------------------------
await check("langchain_with_structured_output", async () => {
  const info = {};
  const msgs = [new SystemMessage("Answer in JSON."), new HumanMessage("Is 2 + 2 = 4?")];
  for (const useResponsesApi of [false, true]) {
    const llm = new ChatOpenAI({ model: MODEL, apiKey: API_KEY, configuration: { baseURL: `${base}/v1` },
                                 maxRetries: 0, maxTokens: 200, temperature: 1, useResponsesApi });
    for (const method of [undefined, "jsonSchema", "functionCalling"]) {
      const what = `${useResponsesApi ? "responses" : "chat"}/${method ?? "default"}`;
      const structured = llm.withStructuredOutput(Answer, method ? { method, strict: method === "functionCalling" ? true : undefined } : undefined);
      const o = await structured.invoke(msgs);
      checkAnswer(o, what);
      info[what] = o;
    }
    const plain = await llm.invoke(msgs);
    assert(typeof plain.content === "string" || Array.isArray(plain.content), "plain invoke");
    const chunks = [];
    for await (const ch of await llm.stream(msgs)) chunks.push(ch);
    assert(chunks.length > 0, "LangChain streaming");
  }
  return info;
});

// ---- Vercel AI SDK -----------------------------------------------------------------------------------
const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: API_KEY });

await check("ai_sdk_generate_object", async () => {
  const info = {};
  for (const [what, model] of [["responses", openai(MODEL)], ["chat", openai.chat(MODEL)]]) {
    const { object, finishReason, usage } = await generateObject({ model, schema: Answer, maxRetries: 0,
      prompt: "Is 2 + 2 = 4?", maxOutputTokens: 200, temperature: 1 });
    checkAnswer(object, `generateObject (${what})`);
    eq(finishReason, "stop", `${what} finishReason`);
    assert(usage.inputTokens > 0 && usage.outputTokens > 0, `${what} usage ${JSON.stringify(usage)}`);
    info[what] = object;
  }
  return info;
});

await check("ai_sdk_generate_text_with_tool", async () => {
  const seen = [];
  const getWeather = tool({ description: "Weather for a city", inputSchema: z.object({ city: z.enum(["Paris", "London"]) }),
                            execute: async ({ city }) => { seen.push(city); return `sunny in ${city}`; } });
  const r = await generateText({ model: openai(MODEL), tools: { get_weather: getWeather }, toolChoice: "required",
    prompt: "What is the weather in Paris?", maxOutputTokens: 200, stopWhen: stepCountIs(2), maxRetries: 0 });
  eq(r.steps.length, 2, "two steps (call, then a turn with the tool result)");
  const call = r.steps[0].toolCalls[0];
  eq(call.toolName, "get_weather", "tool name");
  assert(typeof call.input.city === "string", `input ${JSON.stringify(call.input)}`);
  eq(seen.length >= 1, true, "execute ran");
  eq(r.steps[0].toolResults[0].output, `sunny in ${seen[0]}`, "tool result");
  eq(r.steps[0].finishReason, "tool-calls", "finishReason");
  // Free text with tools offered (auto), streamed: the text equals the non-streamed greedy one.
  const req = { model: openai(MODEL), prompt: "Say hi.", maxOutputTokens: 12, temperature: 0, maxRetries: 0 };
  const g = await generateText(req);
  const s = streamText(req);
  let text = "";
  for await (const d of s.textStream) text += d;
  eq(text, g.text, "streamText == generateText (greedy)");
  return { city: call.input.city };
});

// ---- observability ---------------------------------------------------------------------------------
await check("metrics_engine_queue_time", async () => {
  const txt = await (await fetch(`${base}/metrics`)).text();
  assert(txt.includes("# TYPE trinity_engine_queue_seconds histogram"), "histogram type line");
  const count = Number(txt.match(/^trinity_engine_queue_seconds_count (\d+)$/m)?.[1]);
  const inf = Number(txt.match(/^trinity_engine_queue_seconds_bucket\{le="\+Inf"\} (\d+)$/m)?.[1]);
  assert(count >= 20, `queue count ${count} counts the requests made so far`);
  eq(inf, count, "+Inf bucket == count");
  const buckets = [...txt.matchAll(/^trinity_engine_queue_seconds_bucket\{le="([^"]+)"\} (\d+)$/gm)].map((m) => Number(m[2]));
  assert(buckets.every((v, i) => i === 0 || v >= buckets[i - 1]), "cumulative buckets");
  assert(txt.match(/^trinity_http_requests_total\{route="\/v1\/responses",method="POST",status="200"\} \d+$/m),
         "responses route counted");
  return { count };
});

await finish(srv, outDir, results);
