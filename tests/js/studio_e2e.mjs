// End-to-end test of `trinity studio` (docs/studio.md) in a real browser (Debian's Chromium through
// playwright-core). Self-contained: makes a tiny model and data set with the binary, trains a 4-step
// GRPO run to completion, starts the studio on it and drives every page.
//
//   node tests/js/studio_e2e.mjs --bin build/release/trinity --work /tmp/studio-e2e [--screenshots DIR]
//
// Prints `ok - <check>` per check; exits 1 on the first failure (with the page's visible errors and the
// tail of the studio's output). Uncaught page errors fail the test too.
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { chromium } from 'playwright-core';

// ------------------------------------------------------------------ arguments
function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--bin' || a === '--work' || a === '--screenshots' || a === '--chromium') out[a.slice(2)] = argv[++i];
    else if (a === '--help' || a === '-h') out.help = true;
    else { console.error(`unknown argument ${a}`); process.exit(2); }
  }
  return out;
}
const args = parseArgs(process.argv.slice(2));
if (args.help || !args.bin || !args.work) {
  console.error('usage: node tests/js/studio_e2e.mjs --bin /path/to/trinity --work DIR [--screenshots DIR]');
  process.exit(2);
}
const BIN = path.resolve(args.bin);
const WORK = path.resolve(args.work);
const SHOTS = args.screenshots ? path.resolve(args.screenshots) : null;
const CHROMIUM = args.chromium || process.env.CHROMIUM || '/usr/bin/chromium';
const TOKEN = 'testtoken123';
const FINISHED = 'checkpoints/studio/finished';
const LIVE = 'checkpoints/studio/live';

// ------------------------------------------------------------------ helpers
const t0 = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function ok(name) { console.log(`ok - ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`); }
function assert(cond, msg) { if (!cond) throw new Error(msg); }
// An error that ends a waitFor at once (other errors thrown by its fn are retried until the timeout).
class Fatal extends Error {}
async function waitFor(what, fn, timeoutMs = 30000, intervalMs = 250) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = v;
    } catch (e) {
      if (e instanceof Fatal) throw new Error(`while waiting for ${what}: ${e.message}`);
      last = e;
    }
    if (Date.now() > end) {
      const detail = last instanceof Error ? `: ${last.message}` : (last !== undefined ? ` (last: ${JSON.stringify(last)?.slice(0, 300)})` : '');
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${detail}`);
    }
    await sleep(intervalMs);
  }
}
function run(cmdArgs, timeoutMs = 120000) {
  const r = spawnSync(BIN, cmdArgs, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) {
    const tail = `${r.stdout || ''}\n${r.stderr || ''}`.split('\n').slice(-30).join('\n');
    throw new Error(`trinity ${cmdArgs.join(' ')} failed (${r.error ? r.error.message : 'exit ' + r.status}):\n${tail}`);
  }
  return r;
}
function relClose(a, b) {
  if (a === null || b === null) return a === b;
  return Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b), 1e-300);
}
const enc = encodeURIComponent;

// ------------------------------------------------------------------ 1-2: model, data, configs, a finished run
function config(name, totalSteps) {
  return `# keep me
project: studio
name: ${name}
checkpoint_root_dir: ${WORK}/checkpoints
continue_from_checkpoint: true

model:
  model_path: ${WORK}/model
  max_prompt_tokens: 32
  max_response_tokens: 8

algorithm:
  algorithm_type: grpo
  repeat_times: 4
  optimizer:
    lr: 3e-4
  kl_loss_fn: none

buffer:
  batch_size: 4
  total_steps: ${totalSteps}
  explorer_input:
    taskset:
      name: arithmetic
      path: ${WORK}/data/train.jsonl
      format: {prompt_key: prompt, response_key: answer}
      rollout_args: {temperature: 1.0}
    eval_tasksets:
      - name: arithmetic_eval
        path: ${WORK}/data/eval.jsonl
        format: {prompt_key: prompt, response_key: answer}
        rollout_args: {temperature: 0.0}
    default_workflow_type: arithmetic_workflow
  trainer_input:
    experience_buffer:
      name: studio_buffer
      storage_type: sql

explorer:
  runner_per_model: 4
  eval_interval: 2
  eval_on_startup: true

synchronizer:
  sync_interval: 1

trainer:
  save_interval: 2
  grad_clip: 1.0

monitor:
  monitor_type: jsonl
`;
}

function prepare() {
  fs.mkdirSync(WORK, { recursive: true });
  for (const d of ['model', 'data', 'configs', 'checkpoints', 'queues']) fs.rmSync(path.join(WORK, d), { recursive: true, force: true });
  run(['init-model', '--arch', 'qwen2', '--hidden', '32', '--layers', '1', '--heads', '2', '--intermediate', '64',
    '--max-pos', '64', '--tokenizer', 'bytes', '--seed', '1', '--out', path.join(WORK, 'model')]);
  run(['make-data', 'arithmetic', '--out', path.join(WORK, 'data'), '--train', '200', '--eval', '16', '--sft', '200',
    '--sft-correct', '0.3', '--seed', '7']);
  fs.mkdirSync(path.join(WORK, 'configs'));
  fs.writeFileSync(path.join(WORK, 'configs/tiny.yaml'), config('finished', 4));
  fs.writeFileSync(path.join(WORK, 'configs/long.yaml'), config('live', 100000));
  run(['run', '--config', path.join(WORK, 'configs/tiny.yaml')], 180000);
  const metrics = path.join(WORK, FINISHED, 'monitor/metrics.jsonl');
  assert(fs.existsSync(metrics), `the finished run wrote no ${metrics}`);
}

// ------------------------------------------------------------------ 3: the studio
let studio = null;
let studioOut = '';
let studioErr = '';
async function startStudio() {
  studioOut = '';  // a restarted studio prints a new URL
  studioErr = '';
  studio = spawn(BIN, ['studio', '--root', WORK, '--port', '0', '--token', TOKEN], { stdio: ['ignore', 'pipe', 'pipe'] });
  studio.stdout.on('data', (d) => { studioOut += d; });
  studio.stderr.on('data', (d) => { studioErr += d; });
  const exited = new Promise((resolve) => studio.on('exit', (code, sig) => resolve(`exited (${code ?? sig})`)));
  const url = await Promise.race([
    waitFor('the studio URL on stdout', () => (studioOut.match(/http:\/\/[^\s]+/) || [])[0], 60000, 50),
    exited.then((how) => { throw new Error(`trinity studio ${how} before printing its URL:\n${studioOut}\n${studioErr}`); }),
  ]);
  return new URL(url).origin;
}
async function stopStudio() {
  if (!studio || studio.exitCode !== null || studio.signalCode !== null) return;
  const exited = new Promise((resolve) => studio.once('exit', resolve));
  studio.kill('SIGINT');
  const t = await Promise.race([exited.then(() => 'exited'), sleep(5000).then(() => 'timeout')]);
  if (t === 'timeout') { studio.kill('SIGKILL'); await Promise.race([exited, sleep(2000)]); }
}

// ------------------------------------------------------------------ the checks
let base = '';
let browser = null;
let page = null;
const pageErrors = [];
const consoleErrors = [];

async function apiGet(p, token = TOKEN) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const r = await fetch(base + p, { headers, redirect: 'manual' });
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, json, text };
}
async function apiPost(p, body) {
  const r = await fetch(base + p, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, json: await r.json().catch(() => null) };
}
function noPageErrors() {
  assert(!pageErrors.length, `uncaught page error(s):\n${pageErrors.join('\n')}`);
}
// no error box shown on a page (an API call the page made failed)
async function noVisibleErrors(pageId) {
  const errs = await page.$$eval(`#page-${pageId} .error`, (els) => els.filter((e) => e.offsetParent !== null).map((e) => e.textContent.replace(/×$/, '').trim()));
  assert(!errs.length, `the ${pageId} page shows error(s):\n${errs.join('\n')}`);
}
async function nav(hash, pageId) {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector(`#page-${pageId}:not([hidden])`, { timeout: 10000 });
}
async function shot(name) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `studio-${name}.png`), fullPage: true });
}
const rowState = (id) => page.evaluate((id) => {
  const td = document.querySelector(`tr[data-run="${CSS.escape(id)}"] td.state`);
  return td ? td.textContent.trim() : null;
}, id);
const chartData = (series) => page.evaluate((s) => {
  const div = document.querySelector(`div.chart[data-series="${CSS.escape(s)}"]`);
  return div && div.__data ? JSON.parse(JSON.stringify(div.__data)) : null;
}, series);

function expectedSeries(runId, role, metric) {
  const text = fs.readFileSync(path.join(WORK, runId, 'monitor/metrics.jsonl'), 'utf8');
  const steps = [], values = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const o = JSON.parse(line);
    if (o.role !== role || !(metric in o)) continue;
    steps.push(o.step);
    values.push(typeof o[metric] === 'number' && isFinite(o[metric]) ? o[metric] : null);
  }
  return { steps, values };
}

async function checkAuth() {
  let r = await apiGet('/api/runs', null);
  assert(r.status === 401, `/api/runs without a token: ${r.status}, want 401`);
  assert(r.json && r.json.error && r.json.error.message, `/api/runs without a token: not a JSON error: ${r.text.slice(0, 200)}`);
  r = await apiGet('/api/runs');
  assert(r.status === 200 && Array.isArray(r.json?.runs), `/api/runs with the bearer token: ${r.status} ${r.text.slice(0, 200)}`);
  r = await apiGet('/api/runs', 'wrongtoken');
  assert(r.status === 401, `/api/runs with a wrong token: ${r.status}, want 401`);
  r = await apiGet('/', null);
  assert(r.status === 401, `GET / without a token: ${r.status}, want 401`);
  ok('token enforced on the API and the page');

  await page.goto(`${base}/?token=${TOKEN}`);
  await page.waitForSelector('#nav', { timeout: 15000 });
  assert(!page.url().includes('token='), `the token stays in the URL after the redirect: ${page.url()}`);
  const cookies = await page.context().cookies(base);
  const c = cookies.find((x) => x.name === 'trinity_studio_token');
  assert(c, `no trinity_studio_token cookie after ?token= (cookies: ${cookies.map((x) => x.name).join(', ')})`);
  assert(c.httpOnly, 'the token cookie is not HttpOnly');
  await page.goto('about:blank');
  await page.goto(`${base}/#/runs`);   // a fresh load with the cookie only
  await page.waitForSelector('#page-runs:not([hidden]) #runs-table', { timeout: 15000 });
  await waitFor('the runs table to fill', async () => (await page.$$('tr[data-run]')).length > 0, 15000);
  noPageErrors();
  ok('?token= sets the cookie and later navigation works');
}

async function checkTraversal() {
  for (const p of ['../../etc/passwd', '/etc/passwd']) {
    const r = await apiGet(`/api/config?path=${enc(p)}`);
    assert(r.status === 403, `/api/config?path=${p}: ${r.status}, want 403 (${r.text.slice(0, 200)})`);
  }
  ok('paths outside the root are refused with 403');
}

async function checkRuns() {
  await nav('#/runs', 'runs');
  const st = await waitFor(`run ${FINISHED} in the runs table`, () => rowState(FINISHED), 15000);
  assert(st === 'finished', `run ${FINISHED} has state "${st}", want "finished"`);
  noPageErrors();
  await noVisibleErrors('runs');
  ok('runs page lists the finished run');
}

async function checkDashboard() {
  await nav(`#/dashboard?run=${enc(FINISHED)}`, 'dashboard');
  await waitFor('the series list', async () => (await page.$$('#series-list input[data-series]')).length > 0, 15000);
  for (const series of ['trainer:actor/pg_loss', 'trainer:actor/entropy']) {
    const sel = `div.chart[data-series="${series}"]`;
    if (!(await page.$(sel))) {
      const box = page.locator(`#series-list input[data-series="${series}"]`);
      assert(await box.count(), `series ${series} is not in the series list`);
      await box.check();
    }
    const [role, metric] = [series.slice(0, series.indexOf(':')), series.slice(series.indexOf(':') + 1)];
    const want = expectedSeries(FINISHED, role, metric);
    assert(want.steps.length > 0, `metrics.jsonl has no ${series}`);
    const got = await waitFor(`chart ${series} to have data`, async () => {
      const d = await chartData(series);
      return d && d.runs && d.runs[FINISHED] && d.runs[FINISHED].steps.length >= want.steps.length ? d : null;
    }, 15000);
    assert(got.series === series, `__data.series is ${got.series}, want ${series}`);
    const g = got.runs[FINISHED];
    assert(JSON.stringify(g.steps) === JSON.stringify(want.steps), `${series} steps: ${JSON.stringify(g.steps)}, want ${JSON.stringify(want.steps)}`);
    assert(g.values.length === want.values.length && g.values.every((v, i) => relClose(v, want.values[i])),
      `${series} values: ${JSON.stringify(g.values)}, want ${JSON.stringify(want.values)}`);
    assert(await page.$(`${sel} canvas`), `chart ${series} has no canvas`);
  }
  noPageErrors();
  await noVisibleErrors('dashboard');
  ok('dashboard charts hold the values of metrics.jsonl');
  await shot('dashboard');
}

async function checkRollouts() {
  const src = await apiGet(`/api/rollouts/sources?run=${enc(FINISHED)}`);
  assert(src.status === 200, `/api/rollouts/sources: ${src.status} ${src.text.slice(0, 200)}`);
  const sqlite = (src.json.sources || []).find((s) => s.kind === 'sqlite');
  assert(sqlite, `no sqlite source for ${FINISHED}: ${src.text.slice(0, 300)}`);
  await nav(`#/rollouts?run=${enc(FINISHED)}`, 'rollouts');
  await waitFor('the source select', async () => (await page.$$('#rollout-source option')).length > 0, 15000);
  await page.selectOption('#rollout-source', sqlite.source);
  const first = page.locator('#rollout-table tbody tr[data-id]').first();
  await first.waitFor({ timeout: 15000 });
  const id = Number(await first.getAttribute('data-id'));
  await first.click();
  await page.waitForSelector('#tokens span.tok', { timeout: 15000 });
  const one = await apiGet(`/api/rollouts/one?source=${enc(sqlite.source)}&id=${id}`);
  assert(one.status === 200 && Array.isArray(one.json?.tokens), `/api/rollouts/one: ${one.status} ${one.text.slice(0, 200)}`);
  const tokens = one.json.tokens;
  const spans = await page.$$eval('#tokens span.tok', (els) => els.map((e) => ({
    id: e.dataset.id, logprob: e.dataset.logprob ?? null, prompt: e.classList.contains('prompt') })));
  assert(spans.length === tokens.length, `${spans.length} token spans, want ${tokens.length}`);
  let withLp = 0;
  tokens.forEach((t, i) => {
    const s = spans[i];
    assert(String(t.id) === s.id, `token ${i}: data-id ${s.id}, want ${t.id}`);
    if (t.logprob == null) assert(s.logprob === null, `token ${i}: data-logprob ${s.logprob}, want none`);
    else { withLp++; assert(Number(s.logprob) === t.logprob, `token ${i}: data-logprob ${s.logprob}, want ${t.logprob}`); }
    assert(s.prompt === !!t.prompt, `token ${i}: prompt class ${s.prompt}, want ${!!t.prompt}`);
  });
  assert(withLp > 0, 'no response token carries a logprob');
  const colours = await page.evaluate(() => {
    const expected = (lp) => {
      const c = Math.max(-5, Math.min(0, lp));
      const probe = document.createElement('span');
      probe.style.background = `hsl(${120 * (c + 5) / 5}, 70%, 80%)`;
      document.body.append(probe);
      const v = getComputedStyle(probe).backgroundColor;
      probe.remove();
      return v;
    };
    const resp = document.querySelector('#tokens span.tok:not(.prompt)[data-logprob]');
    const prompt = document.querySelector('#tokens span.tok.prompt');
    return {
      lp: Number(resp.dataset.logprob), got: getComputedStyle(resp).backgroundColor, want: expected(Number(resp.dataset.logprob)),
      title: resp.title, prompt: prompt ? getComputedStyle(prompt).backgroundColor : null,
    };
  });
  assert(colours.got === colours.want, `response token (logprob ${colours.lp}) background ${colours.got}, want ${colours.want}`);
  assert(/id=\d+ logprob=/.test(colours.title), `token title "${colours.title}" does not show id and logprob`);
  if (colours.prompt !== null) assert(colours.prompt === 'rgba(0, 0, 0, 0)', `a prompt token has a background (${colours.prompt})`);
  noPageErrors();
  await noVisibleErrors('rollouts');
  ok('rollouts: token spans carry the logprobs of /api/rollouts/one, coloured by the formula');
  await shot('rollouts');
}

async function checkConfig() {
  await nav(`#/config?path=${enc('configs/tiny.yaml')}`, 'config');
  const field = (key) => page.locator(`#page-config [data-key="${key}"]`).first();
  const yaml = page.locator('#yaml');
  await waitFor('configs/tiny.yaml in the editor and the form', async () =>
    (await yaml.inputValue()).includes('# keep me') && (await field('algorithm.repeat_times').inputValue()) === '4', 15000);

  await field('algorithm.repeat_times').fill('6');
  await field('algorithm.repeat_times').press('Tab');
  await waitFor('repeat_times: 6 in the YAML text', async () => /repeat_times:\s*6\b/.test(await yaml.inputValue()), 10000);
  assert((await yaml.inputValue()).includes('# keep me'), 'the comment line "# keep me" is gone after a form edit');
  ok('config: a form edit changes the YAML in place, comments kept');

  let text = await yaml.inputValue();
  assert(/batch_size:\s*4\b/.test(text), 'no batch_size: 4 in the YAML text');
  text = text.replace(/batch_size:\s*4\b/, 'batch_size: 7');
  await yaml.fill(text);
  await waitFor('the form field buffer.batch_size to show 7', async () => (await field('buffer.batch_size').inputValue()) === '7', 10000);
  ok('config: a YAML edit fills the form');

  text = text.replace(/\n([ \t]*)repeat_times:[^\n]*/, (m, ind) => `${m}\n${ind}repeat_timez: 3`);
  assert(text.includes('repeat_timez: 3'), 'could not add the bad key');
  await yaml.fill(text);
  await page.locator('#page-config .error', { hasText: 'repeat_timez' }).first().waitFor({ state: 'visible', timeout: 10000 });
  noPageErrors();
  ok('config: an unknown key is shown as an error');
  await shot('config');
}

async function checkStartStop() {
  await nav('#/runs', 'runs');
  await waitFor('configs/long.yaml in the start form', async () => (await page.$$('#start-config option[value="configs/long.yaml"]')).length > 0, 15000);
  await page.selectOption('#start-config', 'configs/long.yaml');
  await page.click('[data-testid="start-run"]');
  const st = await waitFor(`run ${LIVE} to be running`, async () => {
    const s = await rowState(LIVE);
    if (s === 'failed' || s === 'finished') throw new Fatal(`run ${LIVE} is ${s}`);
    return s === 'running' ? s : null;
  }, 60000, 500);
  assert(st === 'running', `run ${LIVE} is ${st}`);
  ok('start: the run started from the form is running');

  await nav(`#/dashboard?run=${enc(LIVE)}`, 'dashboard');
  // no downsampling here: a fast run passes 2000 points in a minute and its count would stop growing
  await page.fill('#points', '1000000');
  await page.press('#points', 'Tab');
  const count = (series) => page.evaluate(([s, id]) => {
    const div = document.querySelector(`div.chart[data-series="${CSS.escape(s)}"]`);
    const r = div && div.__data && div.__data.runs[id];
    return r ? r.steps.length : 0;
  }, [series, LIVE]);
  // the first chart that has points (trainer or explorer metric)
  const series = await waitFor('a chart of the live run with points', async () => {
    const all = await page.$$eval('div.chart[data-series]', (els) => els.map((e) => e.dataset.series));
    const pick = ['trainer:actor/pg_loss', 'explorer:rollout/reward/mean', ...all].filter((s) => all.includes(s) && /^(trainer|explorer):/.test(s));
    for (const s of pick) if (await count(s) > 0) return s;
    return null;
  }, 60000, 500);
  await page.evaluate((s) => {
    window.__noReload = true;
    const c = document.querySelector(`div.chart[data-series="${CSS.escape(s)}"] canvas`);
    if (c) c.__marked = true;
  }, series);
  const n0 = await count(series);
  await sleep(10000);
  const n1 = await waitFor(`chart ${series} to gain points (had ${n0})`, async () => { const n = await count(series); return n > n0 ? n : null; }, 15000, 500);
  const same = await page.evaluate((s) => ({
    noReload: window.__noReload === true,
    canvas: !!document.querySelector(`div.chart[data-series="${CSS.escape(s)}"] canvas`)?.__marked,
  }), series);
  assert(same.noReload, 'the page was reloaded');
  assert(same.canvas, `chart ${series} was re-created instead of updated with setData`);
  noPageErrors();
  ok(`live dashboard: ${series} grew from ${n0} to ${n1} points without a reload`);

  await nav('#/runs', 'runs');
  await page.locator(`tr[data-run="${LIVE}"] [data-testid="stop-run"]`).click({ timeout: 10000 });
  await waitFor(`run ${LIVE} to be stopped`, async () => (await rowState(LIVE)) === 'stopped', 60000, 500);
  noPageErrors();
  ok('stop: the run is stopped');
  await shot('runs');
}

async function checkChat() {
  await nav('#/chat', 'chat');
  await waitFor('a model in the chat select', async () => (await page.$$('#chat-model option[value]:not([value=""])')).length > 0, 15000);
  const values = await page.$$eval('#chat-model option', (os) => os.map((o) => o.value).filter(Boolean));
  const model = values.find((v) => v.includes(`${FINISHED}/global_step_4`)) || values.find((v) => v.includes(FINISHED)) || values[0];
  await page.selectOption('#chat-model', model);
  const spanSel = '#conversation .msg[data-role="assistant"] span.tok[data-logprob]';
  for (let attempt = 0; ; attempt++) {
    const before = await page.$$eval('#conversation .msg[data-role="assistant"]', (els) => els.length);
    await page.fill('#chat-input', '1+1=');
    await page.click('[data-testid="send"]');
    await waitFor('the assistant reply', async () => {
      const errs = await page.$$eval('#page-chat .errors .error', (els) => els.map((e) => e.textContent.replace(/×$/, '')));
      if (errs.length) throw new Fatal(`chat error: ${errs.join('; ')}`);
      return (await page.$$eval('#conversation .msg[data-role="assistant"]', (els) => els.length)) > before;
    }, 120000, 500);
    if ((await page.$$(spanSel)).length > 0) break;
    assert(attempt < 2, 'three replies without a token span carrying data-logprob');
  }
  noPageErrors();
  await noVisibleErrors('chat');
  ok('chat: a reply with token logprobs');
  await shot('chat');
}

async function checkLabel() {
  await nav('#/label', 'label');
  await page.locator('#label-empty').waitFor({ state: 'visible', timeout: 10000 });
  const text = await page.locator('#label-empty').textContent();
  assert(text.includes('trinity data annotate'), `#label-empty says "${text}"`);
  noPageErrors();
  await noVisibleErrors('label');
  ok('label: no queue -> #label-empty');
  await shot('label');
}

// A queue made by `trinity data annotate` under the root: the studio (restarted) finds it, and the page
// labels, undoes and labels again with the keyboard, as the queue's stats show.
async function checkLabelQueue() {
  const queue = path.join(WORK, 'queues/prefs.db');
  fs.rmSync(path.dirname(queue), { recursive: true, force: true });
  fs.mkdirSync(path.dirname(queue), { recursive: true });
  const ann = spawn(BIN, ['data', 'annotate', '--model', path.join(WORK, 'model'), '--data', path.join(WORK, 'data/eval.jsonl'),
    '--queue', queue, '--limit', '3', '--max-tokens', '6', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let annOut = '';
  ann.stdout.on('data', (d) => { annOut += d; });
  ann.stderr.on('data', (d) => { annOut += d; });
  const annExit = new Promise((resolve) => ann.on('exit', resolve));
  await waitFor('trinity data annotate to generate and listen', () => /listening on/.test(annOut) || ann.exitCode !== null, 120000, 100);
  ann.kill('SIGINT');
  await annExit;
  assert(/3 pairs generated/.test(annOut), `trinity data annotate did not generate 3 pairs:\n${annOut}`);
  await stopStudio();
  base = await startStudio();
  const info = await apiGet('/api/info');
  assert(info.json && info.json.queue === 'queues/prefs.db', `the studio did not find the queue: ${info.text}`);
  const stats = async () => (await apiGet('/api/annotate/stats')).json.states;
  await page.goto(base + '/#/label');
  await page.locator('#label-pair').waitFor({ state: 'visible', timeout: 15000 });
  const a = await page.locator('[data-testid=response-a]').textContent();
  const b = await page.locator('[data-testid=response-b]').textContent();
  assert(a.trim() !== b.trim(), 'responses A and B are the same');
  await page.locator('body').click({ position: { x: 5, y: 300 } });
  await page.keyboard.press('a');
  await waitFor('a label from the a key', async () => (await stats()).labelled === 1, 10000);
  await page.keyboard.press('u');
  await waitFor('the undo from the u key', async () => (await stats()).labelled === 0, 10000);
  await page.keyboard.press('b');
  await waitFor('a label from the b key', async () => (await stats()).labelled === 1, 10000);
  await page.keyboard.press('s');
  await waitFor('a skip from the s key', async () => (await stats()).skipped >= 1, 10000);
  noPageErrors();
  await noVisibleErrors('label');
  ok('label: a queue under the root is labelled from the keyboard (a, u, b, s)');
}

async function report() {
  if (page) {
    try {
      const errs = await page.$$eval('.error', (els) => els.filter((e) => e.offsetParent !== null).map((e) => e.textContent.replace(/×$/, '').trim()));
      if (errs.length) console.error(`visible errors on the page (${page.url()}):\n  ${errs.join('\n  ')}`);
      else console.error(`no visible error on the page (${page.url()})`);
    } catch (e) { console.error(`(could not read the page: ${e.message})`); }
  }
  if (pageErrors.length) console.error(`page errors:\n  ${pageErrors.join('\n  ')}`);
  if (consoleErrors.length) console.error(`console errors:\n  ${consoleErrors.slice(-20).join('\n  ')}`);
  const tail = (s) => s.split('\n').slice(-40).join('\n');
  console.error(`--- studio stdout (tail) ---\n${tail(studioOut)}\n--- studio stderr (tail) ---\n${tail(studioErr)}`);
}

async function main() {
  prepare();
  ok('tiny model, data, configs and a finished 4-step run');
  base = await startStudio();
  ok(`studio started at ${base}`);
  browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });

  await checkAuth();
  await checkTraversal();
  await checkRuns();
  await checkDashboard();
  await checkRollouts();
  await checkConfig();
  await checkStartStop();
  await checkChat();
  await checkLabel();
  await checkLabelQueue();
  const unexpected = consoleErrors.filter((m) => !/Failed to load resource/.test(m));
  assert(!unexpected.length, `console errors:\n${unexpected.join('\n')}`);
  noPageErrors();
  ok(`all checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

let code = 0;
try {
  await main();
} catch (e) {
  code = 1;
  console.log(`not ok - ${e.message}`);
  await report();
} finally {
  // a live run left running by a failed check: stop it through the studio
  if (studio && base) {
    const r = await apiPost('/api/runs/stop', { run: LIVE }).catch(() => null);
    if (r && r.status === 200) await sleep(3000);
  }
  if (browser) await browser.close().catch(() => {});
  await stopStudio();
}
process.exit(code);
