// trinity studio: the browser side (docs/studio.md). Plain ES2020, no build step, no external URLs.
// Pages are hash routes (#/runs, #/dashboard?run=ID, ...); every page lives in <section id="page-NAME">.
'use strict';
(function () {

// ---------------------------------------------------------------- utilities
const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
const enc = encodeURIComponent;

// el('div', {class: 'x', onclick: fn, 'data-id': 3}, child, 'text', [more]) -> element
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'selected') e[k] = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    e.append(kid instanceof Node ? kid : String(kid));
  }
  return e;
}
// a table header cell; a leading '#' marks a numeric (right-aligned) column
function th(t) { return t.startsWith('#') ? el('th', { class: 'num', text: t.slice(1) }) : el('th', { text: t }); }
function setText(node, s) { if (node.textContent !== s) node.textContent = s; }

// query string from an object (arrays repeat the key; null / '' are left out)
function qs(obj) {
  const parts = [];
  for (const [k, v] of Object.entries(obj)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (x == null || x === '') continue;
      parts.push(enc(k) + '=' + enc(String(x)));
    }
  }
  return parts.join('&');
}
// '#/page?k=v&k=v' from [[k, v], ...]
function hashFor(page, pairs) {
  const q = (pairs || []).filter(([, v]) => v != null && v !== '').map(([k, v]) => enc(k) + '=' + enc(String(v))).join('&');
  return '#/' + page + (q ? '?' + q : '');
}

function fmtNum(v) {
  if (v == null) return '–';
  if (typeof v !== 'number') return String(v);
  if (!isFinite(v)) return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}
function fmtVal(v) { return v == null ? 'null' : (typeof v === 'number' ? String(Number(v.toPrecision(6))) : String(v)); }
function fmtTime(sec) {
  if (sec == null) return '–';
  const d = new Date(sec * 1000);
  return isNaN(d) ? String(sec) : d.toLocaleString();
}
function debounce(fn, ms) {
  let t = null;
  const f = (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
  f.cancel = () => clearTimeout(t);
  return f;
}
function messageText(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === 'string') ? p.text : JSON.stringify(p)).join('');
  return JSON.stringify(content);
}

// ---------------------------------------------------------------- API
class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}
async function api(path, body) {
  const opts = { credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    opts.method = 'POST';
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, opts);
  } catch (e) {
    throw new ApiError(`${path.split('?')[0]}: network error (${e.message}); is trinity studio still running?`, 0);
  }
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    let msg = (data && data.error && data.error.message) || text.slice(0, 300) || res.statusText;
    if (res.status === 401) msg += ' (open the URL printed by `trinity studio`, it carries ?token=...)';
    throw new ApiError(`${res.status} ${path.split('?')[0]}: ${msg}`, res.status);
  }
  if (data === null) throw new ApiError(`${path.split('?')[0]}: the answer is not JSON`, res.status);
  return data;
}

// Errors and notices of a page: an .errors box at the top of its section; keyed so that a poller
// replaces (or clears) its own message instead of piling them up.
function makeErrors(root) {
  const box = el('div', { class: 'errors', 'aria-live': 'polite' });
  root.prepend(box);
  const map = new Map();
  const drop = (key) => { const n = map.get(key); if (n) { n.remove(); map.delete(key); } };
  return {
    set(key, err) {
      if (!err) { drop(key); return; }
      if (!(err instanceof ApiError)) console.error(err);
      const msg = err instanceof Error ? err.message : String(err);
      let node = map.get(key);
      if (!node) { node = el('div', { class: 'error', role: 'alert' }); map.set(key, node); box.append(node); }
      node.replaceChildren(el('span', { text: msg }),
        el('button', { class: 'close', title: 'dismiss', onclick: () => drop(key) }, '×'));
    },
    notice(msg, ms = 8000) {
      const node = el('div', { class: 'notice' }, msg, el('button', { class: 'close', onclick: () => node.remove() }, '×'));
      box.append(node);
      if (ms) setTimeout(() => node.remove(), ms);
    },
    clear() { for (const k of [...map.keys()]) drop(k); box.replaceChildren(); },
  };
}

// Runs fn now and then every ms after it ends (never two at once); kick() runs it again now.
function poller(fn, ms) {
  let stopped = false, timer = null, running = false, again = false;
  const run = async () => {
    if (stopped) return;
    clearTimeout(timer); timer = null;
    if (running) { again = true; return; }
    running = true;
    try { await fn(); } catch (e) { console.error(e); }
    running = false;
    if (stopped) return;
    if (again) { again = false; timer = setTimeout(run, 0); } else timer = setTimeout(run, ms);
  };
  run();
  return { stop() { stopped = true; clearTimeout(timer); }, kick: run };
}

// ---------------------------------------------------------------- token colours
function lpColor(lp) {
  const c = Math.max(-5, Math.min(0, lp));
  return `hsl(${120 * (c + 5) / 5}, 70%, 80%)`;
}
function advColor(a, maxAbs) {
  const t = maxAbs > 0 ? Math.min(1, Math.abs(a) / maxAbs) : 0;
  return a >= 0 ? `hsl(120, 60%, ${Math.round(96 - 36 * t)}%)` : `hsl(0, 75%, ${Math.round(96 - 30 * t)}%)`;
}
const MASK_ON = '#cfe6ff', MASK_OFF = '#e4e4e4';

function tokenSpan(t) {
  const s = el('span', { class: t.prompt ? 'tok prompt' : 'tok' });
  s.textContent = t.text == null ? '' : String(t.text).replace(/\n/g, '↵\n');   // a visible newline
  s.dataset.id = t.id;
  for (const k of ['logprob', 'advantage', 'mask']) if (t[k] != null) s.dataset[k] = String(t[k]);
  const parts = [`id=${t.id}`, `logprob=${fmtVal(t.logprob)}`];
  if ('advantage' in t) parts.push(`advantage=${fmtVal(t.advantage)}`);
  if ('mask' in t) parts.push(`mask=${fmtVal(t.mask)}`);
  s.title = parts.join(' ');
  return s;
}
function colourTokens(container, mode) {
  const spans = $$('span.tok', container);
  let maxAbs = 0;
  if (mode === 'advantage') {
    for (const s of spans) if (!s.classList.contains('prompt') && s.dataset.advantage != null) maxAbs = Math.max(maxAbs, Math.abs(Number(s.dataset.advantage)));
  }
  for (const s of spans) {
    let bg = '';
    if (!s.classList.contains('prompt')) {
      const v = s.dataset[mode];
      if (v != null && v !== '') {
        const x = Number(v);
        if (mode === 'logprob') bg = lpColor(x);
        else if (mode === 'advantage') bg = advColor(x, maxAbs);
        else if (mode === 'mask') bg = x ? MASK_ON : MASK_OFF;
      }
    }
    s.style.background = bg;
  }
}
function conversation(messages) {
  return el('div', { class: 'conversation' }, messages.map((m) =>
    el('div', { class: 'msg', 'data-role': m.role || '' },
      el('div', { class: 'role', text: m.role || '?' }),
      el('div', { class: 'content', text: messageText(m.content) }))));
}

// ---------------------------------------------------------------- Runs
const RunsPage = {
  id: 'runs',
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.rows = new Map();
    this.selected = new Set();
    this.logRun = null;
    this.tbody = el('tbody');
    this.count = el('span', { class: 'muted' });
    this.configSel = el('select', { id: 'start-config', 'data-testid': 'start-config' });
    this.setArea = el('textarea', { id: 'start-set', 'data-testid': 'start-set', rows: 4, spellcheck: 'false',
      placeholder: 'overrides, one k=v a line, e.g.\nbuffer.total_steps=30' });
    this.logTitle = el('span', { text: 'no run selected' });
    this.logPre = el('pre', { id: 'run-log', 'data-testid': 'run-log', class: 'log' });
    this.logErr = el('div', { class: 'log-error' });
    r.append(
      el('div', { class: 'toolbar' },
        el('h2', { text: 'Runs' }), this.count,
        el('span', { class: 'spacer' }),
        el('button', { 'data-testid': 'compare-runs', onclick: () => this.compare() }, 'Compare selected')),
      el('table', { id: 'runs-table', class: 'grid' },
        el('thead', {}, el('tr', {}, ['', 'run', 'mode', 'state', '#step (explorer / trainer)', '#last reward', 'started', ''].map(th))),
        this.tbody),
      el('div', { class: 'cols' },
        el('div', { class: 'panel', id: 'start-form' },
          el('h3', { text: 'Start a run' }),
          el('label', {}, 'config ', this.configSel,
            el('button', { class: 'small', title: 'reload the list', onclick: () => this.loadConfigs() }, '↻')),
          el('label', { class: 'block' }, 'overrides (--set)', this.setArea),
          el('button', { class: 'primary', 'data-testid': 'start-run', onclick: () => this.start() }, 'Start run')),
        el('div', { class: 'panel grow', id: 'log-panel' },
          el('h3', {}, 'Log: ', this.logTitle), this.logErr, this.logPre)));
  },
  enter() {
    this.poll = poller(() => this.refresh(), 2000);
    this.loadConfigs();
    if (this.logRun) this.showLog(this.logRun);
  },
  leave() {
    if (this.poll) this.poll.stop();
    if (this.logPoll) this.logPoll.stop();
  },
  async loadConfigs() {
    try {
      const res = await api('/api/configs');
      const cur = this.configSel.value;
      this.configSel.replaceChildren(...res.configs.map((c) => el('option', { value: c, text: c })));
      if (res.configs.includes(cur)) this.configSel.value = cur;
      this.err.set('configs', null);
    } catch (e) { this.err.set('configs', e); }
  },
  async refresh() {
    try {
      const res = await api('/api/runs');
      this.render(res.runs || []);
      this.err.set('runs', null);
    } catch (e) { this.err.set('runs', e); }
  },
  render(runs) {
    const seen = new Set();
    runs.forEach((run, i) => {
      let tr = this.rows.get(run.id);
      if (!tr) { tr = this.makeRow(run); this.rows.set(run.id, tr); }
      this.updateRow(tr, run);
      if (this.tbody.children[i] !== tr) this.tbody.insertBefore(tr, this.tbody.children[i] || null);
      seen.add(run.id);
    });
    for (const [id, tr] of this.rows) if (!seen.has(id)) { tr.remove(); this.rows.delete(id); this.selected.delete(id); }
    const empty = $('tr.empty', this.tbody);
    if (!runs.length && !empty) this.tbody.append(el('tr', { class: 'empty' }, el('td', { colspan: 8, class: 'muted', text: 'No runs under the root yet: start one below.' })));
    if (runs.length && empty) empty.remove();
    setText(this.count, `${runs.length} run${runs.length === 1 ? '' : 's'}`);
  },
  makeRow(run) {
    const id = run.id;
    const box = el('input', { type: 'checkbox', 'data-testid': 'select-run', checked: this.selected.has(id),
      onchange: (e) => { if (e.target.checked) this.selected.add(id); else this.selected.delete(id); } });
    const c = {
      name: el('td', { class: 'id' }),
      mode: el('td', { class: 'mode' }),
      state: el('td', { class: 'state' }),
      step: el('td', { class: 'step num' }),
      reward: el('td', { class: 'reward num' }),
      started: el('td', { class: 'started' }),
      actions: el('td', { class: 'actions' }),
    };
    c.name.append(el('span', { class: 'run-id', text: id }));
    const tr = el('tr', { 'data-run': id }, el('td', { class: 'sel' }, box), c.name, c.mode, c.state, c.step, c.reward, c.started, c.actions);
    tr._c = c;
    tr._state = null;
    return tr;
  },
  updateRow(tr, run) {
    const c = tr._c;
    setText(c.mode, run.mode || '–');
    setText(c.state, run.state || '?');
    c.state.className = 'state state-' + (run.state || 'unknown');
    c.state.title = run.error || '';
    const st = run.step || {};
    setText(c.step, `${st.explorer ?? '–'} / ${st.trainer ?? '–'}`);
    setText(c.reward, fmtNum(run.last_reward));
    c.reward.title = run.last_reward_key || '';
    setText(c.started, fmtTime(run.started_at));
    c.name.title = [run.config && `config: ${run.config}`, run.set && run.set.length && `set: ${run.set.join(' ')}`,
      run.host && `host: ${run.host}`, run.pid && `pid: ${run.pid}`, run.error && `error: ${run.error}`].filter(Boolean).join('\n');
    if (tr._state !== run.state) {
      tr._state = run.state;
      const id = run.id;
      const acts = [];
      if (run.state === 'running') acts.push(el('button', { class: 'small danger', 'data-testid': 'stop-run', onclick: () => this.stopRun(id) }, 'Stop'));
      if (run.state === 'stopped' || run.state === 'failed') acts.push(el('button', { class: 'small', 'data-testid': 'resume-run', onclick: () => this.resume(id) }, 'Resume'));
      acts.push(el('a', { href: hashFor('dashboard', [['run', id]]), 'data-testid': 'open-dashboard' }, 'Dashboard'),
        el('a', { href: hashFor('rollouts', [['run', id]]), 'data-testid': 'open-rollouts' }, 'Rollouts'),
        el('a', { href: '#', 'data-testid': 'show-log', onclick: (e) => { e.preventDefault(); this.showLog(id); } }, 'Log'));
      tr._c.actions.replaceChildren(...acts);
    }
  },
  compare() {
    const ids = [...this.selected];
    if (!ids.length) { this.err.set('compare', 'Select runs with the checkboxes first.'); return; }
    this.err.set('compare', null);
    location.hash = hashFor('dashboard', ids.map((id) => ['run', id]));
  },
  async start() {
    const config = this.configSel.value;
    if (!config) { this.err.set('start', 'Choose a config first.'); return; }
    const set = this.setArea.value.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    const bad = set.find((l) => !l.includes('='));
    if (bad) { this.err.set('start', `not a k=v override: "${bad}"`); return; }
    try {
      const res = await api('/api/runs/start', { config, set });
      this.err.set('start', null);
      this.err.notice(`started pid ${res.pid}: ${(res.runs || []).join(', ')}`);
      if (res.runs && res.runs.length) this.showLog(res.runs[0]);
      this.poll.kick();
    } catch (e) { this.err.set('start', e); }
  },
  async stopRun(id) {
    try {
      const res = await api('/api/runs/stop', { run: id });
      this.err.set('stop', null);
      this.err.notice(`${res.signal || 'signal'} sent to pid ${res.pid} (${id})`);
      this.poll.kick();
    } catch (e) { this.err.set('stop', e); }
  },
  async resume(id) {
    try {
      const res = await api('/api/runs/resume', { run: id });
      this.err.set('stop', null);
      this.err.notice(`resumed ${id}: pid ${res.pid}`);
      this.showLog((res.runs && res.runs[0]) || id);
      this.poll.kick();
    } catch (e) { this.err.set('stop', e); }
  },
  showLog(id) {
    this.logRun = id;
    setText(this.logTitle, id);
    this.logPre.textContent = '';
    this.logErr.replaceChildren();
    if (this.logPoll) this.logPoll.stop();
    this.logPoll = poller(async () => {
      try {
        const res = await api('/api/runs/log?' + qs({ run: id, tail: 200 }));
        const atEnd = this.logPre.scrollTop + this.logPre.clientHeight >= this.logPre.scrollHeight - 4;
        setText(this.logPre, (res.lines || []).join('\n'));
        if (atEnd) this.logPre.scrollTop = this.logPre.scrollHeight;
        this.logErr.replaceChildren();
      } catch (e) {
        this.logErr.replaceChildren(el('div', { class: 'error', text: e.message }));
      }
    }, 2000);
  },
};

// ---------------------------------------------------------------- Dashboard
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];
const DEFAULT_PATTERNS = ['reward/mean', 'pg_loss', 'kl', 'entropy', 'grad_norm', 'response_length/mean', 'throughput', 'eval/'];
const MAX_DEFAULTS = 16;
const STEP_INCRS = [];   // x ticks on whole steps: 1, 2, 5, 10, 20, 50, ...
for (let e = 0; e < 12; e++) for (const m of [1, 2, 5]) STEP_INCRS.push(m * Math.pow(10, e));
function isDefaultSeries(name) {
  const m = name.slice(name.indexOf(':') + 1);
  if (/(^|\/)(std|min|max)(@|\/|$)/.test(m) || m.includes('time/') || m.includes('_coef')) return false;
  if (m.startsWith('eval/') || m.includes('/eval/')) return /mean|accuracy/.test(m);
  return DEFAULT_PATTERNS.some((p) => m.includes(p));
}
// y tick labels with as many digits as the tick spacing needs
function tickLabels(u, splits, axisIdx, space, incr) {
  if (!splits || !splits.length) return [];
  const maxAbs = Math.max(...splits.map((v) => Math.abs(v)));
  if (u.scales.y && u.scales.y.distr === 3) {   // log: label the 1, 2, 5 of each decade
    return splits.map((v) => {
      if (!(v > 0)) return '';
      const e = Math.floor(Math.log10(v) + 1e-9), m = v / Math.pow(10, e);
      if (![1, 2, 5].some((x) => Math.abs(m - x) < 1e-6)) return '';
      return (v >= 1e5 || v < 1e-3) ? v.toExponential(0).replace('e+', 'e') : String(Number(v.toPrecision(3)));
    });
  }
  if (maxAbs !== 0 && (maxAbs >= 1e6 || maxAbs < 1e-3)) {
    const d = Math.max(0, Math.min(6, Math.ceil(Math.log10(maxAbs / (incr || maxAbs)))));
    return splits.map((v) => (v === 0 ? '0' : v.toExponential(d)));
  }
  const dec = incr > 0 ? Math.max(0, Math.min(10, -Math.floor(Math.log10(incr) + 1e-9))) : 0;
  return splits.map((v) => v.toFixed(dec));
}
// aligned uPlot data [xs, ys(run1), ys(run2)...] from the raw series of each run, smoothed (EMA)
function alignSeries(runs, raw, alpha, log) {
  const stepSet = new Set();
  for (const r of runs) for (const s of (raw[r] ? raw[r].steps : [])) stepSet.add(s);
  const xs = [...stepSet].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = runs.map((r) => {
    const out = new Array(xs.length).fill(null);
    const d = raw[r];
    if (!d) return out;
    let ema = null;
    for (let i = 0; i < d.steps.length; i++) {
      let v = d.values[i];
      if (v == null || !isFinite(v)) continue;
      if (log && v <= 0) continue;
      if (alpha > 0) { ema = ema == null ? v : alpha * ema + (1 - alpha) * v; v = ema; }
      out[index.get(d.steps[i])] = v;
    }
    return out;
  });
  return [xs, ...ys];
}

const DashboardPage = {
  id: 'dashboard',
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.runChips = el('span', { id: 'dash-runs', class: 'chips' });
    this.addRun = el('select', { id: 'dash-add-run', 'data-testid': 'add-run', onchange: () => this.onAddRun() });
    this.smooth = el('input', { type: 'range', id: 'smoothing', 'data-testid': 'smoothing', min: 0, max: 0.99, step: 0.01, value: 0 });
    this.smoothOut = el('span', { class: 'num', text: '0' });
    this.logBox = el('input', { type: 'checkbox', id: 'log-scale', 'data-testid': 'log-scale' });
    this.points = el('input', { type: 'number', id: 'points', 'data-testid': 'points', min: 10, step: 100, value: 2000 });
    this.filter = el('input', { type: 'search', id: 'series-filter', 'data-testid': 'series-filter', placeholder: 'filter series…' });
    this.seriesList = el('div', { id: 'series-list' });
    this.seriesCount = el('div', { class: 'muted small-text' });
    this.charts = el('div', { id: 'charts' });
    this.status = el('span', { class: 'muted' });
    r.append(
      el('div', { class: 'toolbar' },
        el('h2', { text: 'Dashboard' }), this.runChips, this.addRun,
        el('span', { class: 'spacer' }),
        el('label', {}, 'smoothing ', this.smooth, this.smoothOut),
        el('label', {}, this.logBox, ' log y'),
        el('label', {}, 'points ', this.points), this.status),
      el('div', { class: 'dash' },
        el('aside', { id: 'series-panel' }, this.filter,
          el('div', { class: 'row' },
            el('button', { class: 'small', onclick: () => this.selectDefaults() }, 'defaults'),
            el('button', { class: 'small', onclick: () => this.selectNone() }, 'none'), this.seriesCount),
          this.seriesList),
        this.charts));
    this.smooth.addEventListener('input', () => { setText(this.smoothOut, String(this.smooth.value)); this.renderCharts(); });
    this.logBox.addEventListener('change', () => this.renderCharts());
    this.points.addEventListener('change', () => { if (this.poll) this.poll.kick(); });
    this.filter.addEventListener('input', () => this.applyFilter());
    window.addEventListener('resize', debounce(() => this.resize(), 150));
  },
  enter(params) {
    this.runs = [...new Set(params.getAll('run'))];
    this.keys = new Map();       // series -> Set(run)
    this.selected = new Set();
    this.touched = new Set();    // series the user (un)checked: never auto-(de)selected again
    this.data = {};              // series -> run -> {steps, values, count, downsampled}
    this.entries = new Map();    // series -> {div, plotDiv, meta, plot, log, sig}
    this.listSig = '';
    this.seriesList.replaceChildren();
    this.charts.replaceChildren();
    this.err.clear();
    this.runChips.replaceChildren(...this.runs.map((id, i) => el('span', { class: 'chip', 'data-run': id },
      el('span', { class: 'swatch', style: `background:${COLORS[i % COLORS.length]}` }), id,
      el('button', { class: 'close', title: 'remove', onclick: () => this.setRuns(this.runs.filter((x) => x !== id)) }, '×'))));
    if (!this.runs.length) this.charts.append(el('p', { class: 'muted', id: 'dash-empty', text: 'Pick a run (the select above, or the Runs page: Dashboard / Compare selected).' }));
    this.loadRunList();
    this.poll = poller(() => this.tick(), 2000);
  },
  leave() {
    if (this.poll) this.poll.stop();
    for (const e of this.entries.values()) if (e.plot) e.plot.destroy();
    this.entries.clear();
  },
  setRuns(ids) { location.hash = hashFor('dashboard', ids.map((id) => ['run', id])); },
  onAddRun() {
    const id = this.addRun.value;
    if (id && !this.runs.includes(id)) this.setRuns([...this.runs, id]);
  },
  async loadRunList() {
    try {
      const res = await api('/api/runs');
      this.addRun.replaceChildren(el('option', { value: '', text: this.runs.length ? '+ add run…' : 'choose a run…' }),
        ...(res.runs || []).filter((x) => !this.runs.includes(x.id)).map((x) => el('option', { value: x.id, text: `${x.id} (${x.state})` })));
    } catch (e) { this.err.set('runlist', e); }
  },
  async tick() {
    if (!this.runs.length) return;
    let keysChanged = false;
    await Promise.all(this.runs.map(async (run) => {
      try {
        const res = await api('/api/metrics/keys?' + qs({ run }));
        for (const s of res.series || []) {
          if (!this.keys.has(s)) { this.keys.set(s, new Set()); keysChanged = true; }
          if (!this.keys.get(s).has(run)) { this.keys.get(s).add(run); keysChanged = true; }
        }
        this.err.set('keys:' + run, null);
      } catch (e) { this.err.set('keys:' + run, e); }
    }));
    if (keysChanged) {
      const all = [...this.keys.keys()].sort();
      let n = [...this.selected].filter((s) => !this.touched.has(s)).length;
      for (const s of all) {
        if (n >= MAX_DEFAULTS) break;
        if (!this.selected.has(s) && !this.touched.has(s) && isDefaultSeries(s)) { this.selected.add(s); n++; }
      }
      this.renderSeriesList();
    }
    await this.fetchData();
    this.renderCharts();
  },
  async fetchData() {
    const sel = [...this.selected];
    if (!sel.length) return;
    const points = Math.max(10, Number(this.points.value) || 2000);
    let total = 0;
    await Promise.all(this.runs.map(async (run) => {
      const series = sel.filter((s) => this.keys.has(s) && this.keys.get(s).has(run));
      if (!series.length) return;
      try {
        const res = await api(`/api/metrics?run=${enc(run)}&series=${series.map(enc).join(',')}&points=${points}`);
        for (const s of res.series || []) {
          (this.data[s.name] = this.data[s.name] || {})[run] = {
            steps: s.steps || [], values: s.values || [], count: s.count, downsampled: !!s.downsampled };
        }
        total += res.lines || 0;
        this.err.set('metrics:' + run, null);
      } catch (e) { this.err.set('metrics:' + run, e); }
    }));
    setText(this.status, `${total} lines · updated ${new Date().toLocaleTimeString()}`);
  },
  renderSeriesList() {
    const all = [...this.keys.keys()].sort();
    this.seriesList.replaceChildren(...all.map((s) => {
      const box = el('input', { type: 'checkbox', 'data-series': s, checked: this.selected.has(s) });
      box.addEventListener('change', () => {
        this.touched.add(s);
        if (box.checked) this.selected.add(s); else this.selected.delete(s);
        this.updateCount();
        this.renderCharts();
        if (box.checked) this.poll.kick();
      });
      return el('label', { class: 'series', 'data-series': s, title: s }, box, ' ', s);
    }));
    if (!all.length) this.seriesList.append(el('p', { class: 'muted', text: 'no metrics yet (monitor/metrics.jsonl is empty or missing)' }));
    this.applyFilter();
    this.updateCount();
  },
  updateCount() { setText(this.seriesCount, `${this.selected.size} / ${this.keys.size}`); },
  applyFilter() {
    const words = this.filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const lab of $$('label.series', this.seriesList)) {
      const s = lab.dataset.series.toLowerCase();
      lab.hidden = !words.every((w) => s.includes(w));
    }
  },
  selectDefaults() {
    this.selected = new Set([...this.keys.keys()].sort().filter(isDefaultSeries).slice(0, MAX_DEFAULTS));
    for (const s of this.keys.keys()) this.touched.add(s);
    this.renderSeriesList(); this.renderCharts(); this.poll.kick();
  },
  selectNone() {
    this.selected.clear();
    for (const s of this.keys.keys()) this.touched.add(s);
    this.renderSeriesList(); this.renderCharts();
  },
  renderCharts() {
    const want = [...this.selected].filter((s) => this.keys.has(s)).sort();
    for (const [s, e] of this.entries) if (!want.includes(s)) { if (e.plot) e.plot.destroy(); e.div.remove(); this.entries.delete(s); }
    const empty = $('#dash-empty', this.charts);
    if (empty && this.runs.length) empty.remove();
    want.forEach((s, i) => {
      let e = this.entries.get(s);
      if (!e) {
        e = { plot: null, log: null, sig: null };
        e.meta = el('span', { class: 'meta muted' });
        e.plotDiv = el('div', { class: 'plot' });
        e.div = el('div', { class: 'chart', 'data-series': s }, el('div', { class: 'chart-title' }, el('b', { text: s }), e.meta), e.plotDiv);
        this.entries.set(s, e);
      }
      if (this.charts.children[i] !== e.div) this.charts.insertBefore(e.div, this.charts.children[i] || null);
      this.updateChart(s, e);
    });
  },
  updateChart(s, e) {
    const rawAll = this.data[s] || {};
    const raw = { series: s, runs: {} };
    for (const r of this.runs) {
      const d = rawAll[r];
      raw.runs[r] = d ? { steps: d.steps.slice(), values: d.values.slice() } : { steps: [], values: [] };
    }
    e.div.__data = raw;
    const alpha = Number(this.smooth.value) || 0;
    const log = this.logBox.checked;
    const sig = JSON.stringify([alpha, log, this.runs.map((r) => { const d = rawAll[r]; return d ? [d.steps.length, d.steps[d.steps.length - 1], d.values[d.values.length - 1], d.count] : 0; })]);
    const counts = this.runs.map((r) => rawAll[r] ? rawAll[r].steps.length : 0);
    const down = this.runs.some((r) => rawAll[r] && rawAll[r].downsampled);
    setText(e.meta, `${counts.reduce((a, b) => a + b, 0)} pts${down ? ' (downsampled)' : ''}`);
    if (e.plot && e.log === log && e.sig === sig) return;
    const data = alignSeries(this.runs, rawAll, alpha, log);
    if (!e.plot || e.log !== log) {
      if (e.plot) e.plot.destroy();
      e.plot = new uPlot(this.chartOpts(log, e.plotDiv), data, e.plotDiv);
      e.log = log;
    } else {
      e.plot.setData(data);
    }
    e.sig = sig;
  },
  chartOpts(log, div) {
    const width = Math.max(280, (div.clientWidth || div.parentNode.clientWidth || 480) - 4);
    return {
      width, height: 220,
      scales: {
        x: { time: false },
        y: log ? { distr: 3, range: (u, min, max) => (min == null || max == null || !(min > 0) || !(max > 0)) ? [1, 10] : uPlot.rangeLog(min, max, 10, true) }
          : { range: (u, min, max) => {
            if (min == null || max == null || !isFinite(min) || !isFinite(max)) return [0, 1];
            if (min === max) { const d = Math.abs(min) * 0.1 || 1; return [min - d, max + d]; }
            return uPlot.rangeNum(min, max, 0.1, true);
          } },
      },
      series: [{ label: 'step' }, ...this.runs.map((r, i) => ({
        label: r, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true, value: (u, v) => fmtNum(v) }))],
      axes: [{ incrs: STEP_INCRS }, { values: tickLabels, size: (u, vals) => vals && vals.length ? Math.max(40, 22 + 7.5 * Math.max(...vals.map((v) => String(v).length))) : 50 }],
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
    };
  },
  resize() {
    if (current !== this) return;
    for (const e of this.entries.values()) if (e.plot) e.plot.setSize({ width: Math.max(280, e.plotDiv.clientWidth - 4), height: 220 });
  },
};

// ---------------------------------------------------------------- Rollouts
const RolloutsPage = {
  id: 'rollouts',
  limit: 20,
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.runSel = el('select', { id: 'rollout-run', 'data-testid': 'rollout-run', onchange: () => {
      location.hash = hashFor('rollouts', [['run', this.runSel.value]]);
    } });
    this.sourceSel = el('select', { id: 'rollout-source', 'data-testid': 'rollout-source', onchange: () => this.onSource() });
    const f = (name, ph, type = 'text') => el('input', { name, id: 'filter-' + name, 'data-filter': name, placeholder: ph, type, step: type === 'number' ? 'any' : null });
    this.filters = [f('min_reward', 'min reward', 'number'), f('max_reward', 'max reward', 'number'), f('task', 'task'),
      f('model_version', 'model version', 'number'), f('step', 'step', 'number')];
    this.order = el('select', { id: 'rollout-order', 'data-testid': 'rollout-order' },
      el('option', { value: 'id', text: 'order: id' }), el('option', { value: 'reward_desc', text: 'reward ↓' }), el('option', { value: 'reward_asc', text: 'reward ↑' }));
    this.order.addEventListener('change', () => this.apply());
    for (const i of this.filters) i.addEventListener('keydown', (e) => { if (e.key === 'Enter') this.apply(); });
    this.range = el('span', { id: 'rollout-range', class: 'muted' });
    this.prev = el('button', { class: 'small', 'data-testid': 'rollouts-prev', onclick: () => this.page(-1) }, '‹ Prev');
    this.next = el('button', { class: 'small', 'data-testid': 'rollouts-next', onclick: () => this.page(1) }, 'Next ›');
    this.tbody = el('tbody');
    this.steps = el('div', { id: 'rollout-steps' });
    this.detail = el('div', { id: 'rollout-detail', class: 'panel' }, el('p', { class: 'muted', text: 'Click a row to see its conversation and tokens.' }));
    this.colorMode = el('select', { id: 'color-mode', 'data-testid': 'color-mode' },
      ['logprob', 'advantage', 'mask'].map((m) => el('option', { value: m, text: 'colour: ' + m })));
    this.colorMode.addEventListener('change', () => { const t = $('#tokens', this.detail); if (t) colourTokens(t, this.colorMode.value); });
    r.append(
      el('div', { class: 'toolbar' }, el('h2', { text: 'Rollouts' }), this.runSel, this.sourceSel),
      el('div', { class: 'toolbar', id: 'rollout-filters' }, this.filters, this.order,
        el('button', { class: 'small primary', 'data-testid': 'rollouts-apply', onclick: () => this.apply() }, 'Apply'),
        el('button', { class: 'small', onclick: () => { for (const i of this.filters) i.value = ''; this.order.value = 'id'; this.apply(); } }, 'Reset'),
        el('span', { class: 'spacer' }), this.prev, this.range, this.next),
      el('div', { class: 'cols' },
        el('div', { class: 'grow' },
          el('table', { id: 'rollout-table', class: 'grid clickable' },
            el('thead', {}, el('tr', {}, ['#id', '#step', 'task', '#version', '#reward', '#resp len', 'response'].map(th))),
            this.tbody),
          el('h3', { text: 'Best / worst per step' }), this.steps),
        el('div', { class: 'grow' }, this.detail)));
  },
  async enter(params) {
    this.run = params.get('run') || '';
    this.source = params.get('source') || '';
    this.offset = 0;
    this.tbody.replaceChildren();
    this.steps.replaceChildren();
    this.sourceSel.replaceChildren();
    this.err.clear();
    this.loadRuns();
    if (!this.run) { this.range.textContent = ''; return; }
    try {
      const res = await api('/api/rollouts/sources?' + qs({ run: this.run }));
      const srcs = res.sources || [];
      this.sourceSel.replaceChildren(...srcs.map((s) => el('option', { value: s.source, text: `${s.source} (${s.kind}, ${s.count})` })));
      if (!srcs.length) { this.err.set('sources', `No experience buffer found for ${this.run}.`); return; }
      if (this.source && !srcs.some((s) => s.source === this.source)) this.sourceSel.prepend(el('option', { value: this.source, text: this.source }));
      this.sourceSel.value = this.source || srcs[0].source;
      this.source = this.sourceSel.value;
    } catch (e) { this.err.set('sources', e); return; }
    this.loadRows();
    this.loadSteps();
    if (params.get('id')) this.openRow(Number(params.get('id')));
  },
  leave() {},
  async loadRuns() {
    try {
      const res = await api('/api/runs');
      const ids = (res.runs || []).map((x) => x.id);
      if (this.run && !ids.includes(this.run)) ids.unshift(this.run);
      this.runSel.replaceChildren(el('option', { value: '', text: 'choose a run…' }), ...ids.map((id) => el('option', { value: id, text: id })));
      this.runSel.value = this.run;
    } catch (e) { this.err.set('runs', e); }
  },
  onSource() {
    this.source = this.sourceSel.value;
    history.replaceState(null, '', hashFor('rollouts', [['run', this.run], ['source', this.source]]));
    this.offset = 0;
    this.detail.replaceChildren();
    this.loadRows();
    this.loadSteps();
  },
  apply() { this.offset = 0; this.loadRows(); },
  page(d) {
    const off = this.offset + d * this.limit;
    if (off < 0 || (this.total != null && off >= this.total)) return;
    this.offset = off;
    this.loadRows();
  },
  async loadRows() {
    if (!this.source) return;
    const q = { source: this.source, offset: this.offset, limit: this.limit, order: this.order.value };
    for (const i of this.filters) if (i.value.trim() !== '') q[i.name] = i.value.trim();
    try {
      const res = await api('/api/rollouts?' + qs(q));
      this.total = res.total;
      const rows = res.rows || [];
      this.tbody.replaceChildren(...rows.map((row) => {
        const resp = String(row.response_text ?? '');
        const tr = el('tr', { 'data-id': row.id, onclick: () => this.openRow(row.id) },
          el('td', { class: 'num', text: row.id }), el('td', { class: 'num', text: row.step ?? '–' }),
          el('td', { text: row.task ?? '' }), el('td', { class: 'num', text: row.model_version ?? '–' }),
          el('td', { class: 'num', text: fmtNum(row.reward) }), el('td', { class: 'num', text: row.response_length ?? '–' }),
          el('td', { class: 'text', title: resp, text: (resp.length > 80 ? resp.slice(0, 80) + '…' : resp).replace(/\n/g, '⏎') }));
        if (row.id === this.openId) tr.classList.add('selected');
        return tr;
      }));
      if (!rows.length) this.tbody.append(el('tr', {}, el('td', { colspan: 7, class: 'muted', text: 'no rows match' })));
      const a = rows.length ? this.offset + 1 : 0;
      setText(this.range, `${a}–${this.offset + rows.length} of ${res.total}`);
      this.prev.disabled = this.offset <= 0;
      this.next.disabled = this.offset + rows.length >= res.total;
      this.err.set('rows', null);
    } catch (e) { this.err.set('rows', e); }
  },
  async loadSteps() {
    if (!this.source) return;
    try {
      const res = await api('/api/rollouts/steps?' + qs({ source: this.source }));
      const steps = res.steps || [];
      const shown = steps.slice(-500).reverse();   // newest first
      const link = (x) => x ? el('a', { href: '#', class: 'open-row', 'data-open-id': x.id,
        onclick: (ev) => { ev.preventDefault(); this.openRow(x.id); } }, `#${x.id} (${fmtNum(x.reward)})`) : '–';
      this.steps.replaceChildren(
        el('p', { class: 'muted small-text', text: `${steps.length} steps, newest first${steps.length > shown.length ? ` (the last ${shown.length})` : ''}` }),
        el('table', { class: 'grid', id: 'steps-table' },
          el('thead', {}, el('tr', {}, ['#step', '#count', '#mean', 'best', 'worst'].map(th))),
          el('tbody', {}, shown.map((s) => el('tr', { 'data-step': s.step },
            el('td', { class: 'num', text: s.step }), el('td', { class: 'num', text: s.count }), el('td', { class: 'num', text: fmtNum(s.mean) }),
            el('td', {}, link(s.best)), el('td', {}, link(s.worst)))))));
      this.err.set('steps', null);
    } catch (e) { this.err.set('steps', e); }
  },
  async openRow(id) {
    this.openId = id;
    for (const tr of $$('tr[data-id]', this.tbody)) tr.classList.toggle('selected', Number(tr.dataset.id) === id);
    try {
      const row = await api('/api/rollouts/one?' + qs({ source: this.source, id }));
      this.renderDetail(row);
      this.err.set('one', null);
    } catch (e) { this.err.set('one', e); }
  },
  renderDetail(row) {
    const kv = (k, v) => [el('dt', { text: k }), el('dd', { text: v == null ? '–' : (typeof v === 'number' ? fmtNum(v) : String(v)) })];
    const metrics = row.metrics && typeof row.metrics === 'object' ? Object.entries(row.metrics) : [];
    const tokens = el('div', { id: 'tokens', class: 'tokens' }, (row.tokens || []).map(tokenSpan));
    this.detail.replaceChildren(...[
      el('h3', { text: `Experience #${row.id}` }),
      el('dl', { class: 'kv', 'data-id': row.id }, kv('reward', row.reward), kv('step', row.step), kv('task', row.task),
        kv('model version', row.model_version), kv('eid', row.eid), kv('run', row.run),
        kv('prompt / response tokens', `${row.prompt_length ?? '–'} / ${row.response_length ?? '–'}`)),
      metrics.length ? el('details', { open: true }, el('summary', { text: 'metrics' }),
        el('dl', { class: 'kv' }, metrics.map(([k, v]) => kv(k, v)))) : '',
      row.info && Object.keys(row.info).length ? el('details', {}, el('summary', { text: 'info' }), el('pre', { text: JSON.stringify(row.info, null, 2) })) : '',
      Array.isArray(row.messages) && row.messages.length ? [el('h4', { text: 'Conversation' }), conversation(row.messages)] : '',
      el('div', { class: 'row' }, el('h4', { text: 'Tokens' }), el('span', { class: 'spacer' }), this.colorMode),
      el('div', { class: 'legend muted' }, 'prompt tokens are grey; hover a token for its id and values'),
      tokens].flat().filter(Boolean));
    colourTokens(tokens, this.colorMode.value);
  },
};

// ---------------------------------------------------------------- Config
const ALGORITHMS = ['ppo', 'grpo', 'dpo', 'sft', 'chord', 'gspo', 'opmd', 'reinforce_plus_plus', 'rloo', 'remax', 'sapo', 'topr', 'cispo', 'asymre', 'gpg', 'mix'];
const CONFIG_FIELDS = [
  ['General', [['mode', 'select', ['both', 'train', 'explore', 'bench']], ['project'], ['name'], ['checkpoint_root_dir']]],
  ['Model', [['model.model_path'], ['model.max_prompt_tokens', 'number'], ['model.max_response_tokens', 'number']]],
  ['Algorithm', [['algorithm.algorithm_type', 'select', ALGORITHMS], ['algorithm.repeat_times', 'number'], ['algorithm.optimizer.lr', 'number']]],
  ['Buffer', [['buffer.batch_size', 'number'], ['buffer.total_epochs', 'number'], ['buffer.total_steps', 'number'], ['buffer.explorer_input.taskset.path']]],
  ['Explorer', [['explorer.runner_per_model', 'number'], ['explorer.eval_interval', 'number']]],
  ['Synchronizer', [['synchronizer.sync_interval', 'number'], ['synchronizer.sync_method', 'select', ['memory', 'checkpoint', 'nccl']]]],
  ['Trainer', [['trainer.save_interval', 'number'], ['trainer.grad_clip', 'number']]],
  ['Monitor', [['monitor.monitor_type', 'select', ['tensorboard', 'jsonl', 'none', 'wandb', 'mlflow', 'swanlab']]]],
];
const NEW_CONFIG = `# a new trinity config: edit the form or this text
project: my_project
name: my_run
checkpoint_root_dir: checkpoints

model:
  model_path: model
  max_prompt_tokens: 256
  max_response_tokens: 256

algorithm:
  algorithm_type: grpo
  repeat_times: 8

buffer:
  batch_size: 16
  total_epochs: 1
  explorer_input:
    taskset:
      path: data/train.jsonl

monitor:
  monitor_type: jsonl
`;

const ConfigPage = {
  id: 'config',
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.fields = new Map();   // key -> {input, errBox, type}
    this.fileSel = el('select', { id: 'config-file', 'data-testid': 'config-file', onchange: () => this.onFile() });
    this.pathInput = el('input', { id: 'config-path', 'data-testid': 'config-path', placeholder: 'configs/new.yaml', size: 36 });
    this.yaml = el('textarea', { id: 'yaml', 'data-testid': 'yaml', spellcheck: 'false', wrap: 'off' });
    this.yamlErrors = el('div', { id: 'yaml-errors' });
    this.status = el('span', { id: 'config-status', class: 'muted' });
    const form = el('form', { id: 'config-form', onsubmit: (e) => e.preventDefault() });
    for (const [title, fields] of CONFIG_FIELDS) {
      const fs = el('fieldset', {}, el('legend', { text: title }));
      for (const [key, type = 'text', options] of fields) {
        let input;
        if (type === 'select') input = el('select', { 'data-key': key, name: key }, el('option', { value: '', text: '—' }), options.map((o) => el('option', { value: o, text: o })));
        else input = el('input', { 'data-key': key, name: key, type, step: type === 'number' ? 'any' : null, autocomplete: 'off' });
        const errBox = el('div', { class: 'field-errors' });
        const short = key.includes('.') ? key.slice(key.lastIndexOf('.') + 1) : key;
        fs.append(el('div', { class: 'field' }, el('label', { title: key, text: short }), input, errBox));
        this.fields.set(key, { input, errBox, type });
        input.addEventListener('change', () => this.onField(key));
        if (type !== 'select') input.addEventListener('input', debounce(() => this.onField(key), 800));
      }
      form.append(fs);
    }
    this.yaml.addEventListener('input', debounce(() => this.check(), 400));
    this.yaml.addEventListener('keydown', (e) => {
      if (e.key === 'Tab') {   // a tab key inserts two spaces in the editor
        e.preventDefault();
        const { selectionStart: a, selectionEnd: b } = this.yaml;
        this.yaml.setRangeText('  ', a, b, 'end');
        this.yaml.dispatchEvent(new Event('input'));
      }
    });
    r.append(
      el('div', { class: 'toolbar' }, el('h2', { text: 'Config' }), this.fileSel,
        el('label', {}, 'path ', this.pathInput),
        el('span', { class: 'spacer' }),
        el('button', { 'data-testid': 'validate', onclick: () => this.check(true) }, 'Validate'),
        el('button', { 'data-testid': 'save', onclick: () => this.save() }, 'Save'),
        el('button', { class: 'primary', 'data-testid': 'launch', onclick: () => this.launch() }, 'Launch')),
      el('div', { class: 'config-cols' },
        el('div', { class: 'config-form' }, form),
        el('div', { class: 'config-editor' }, el('div', { class: 'row' }, this.status), this.yamlErrors, this.yaml)));
    this.sent = new Map();     // key -> last value sent, to skip duplicate change/input events
    this.chain = Promise.resolve();
    this.seq = 0;
  },
  async enter(params) {
    const path = params.get('path');
    await this.loadList(path);
    if (path) { if (path !== this.path) await this.load(path); }
    else if (this.path == null) this.newConfig();
  },
  leave() {},
  async loadList(select) {
    try {
      const res = await api('/api/configs');
      const list = res.configs || [];
      if (select && !list.includes(select)) list.push(select);
      this.fileSel.replaceChildren(el('option', { value: '', text: 'New…' }), ...list.map((c) => el('option', { value: c, text: c })));
      this.fileSel.value = select != null ? select : (this.path || '');
      this.err.set('configs', null);
    } catch (e) { this.err.set('configs', e); }
  },
  onFile() {
    const p = this.fileSel.value;
    history.replaceState(null, '', hashFor('config', [['path', p]]));
    if (p) this.load(p); else this.newConfig();
  },
  newConfig() {
    this.path = '';
    this.fileSel.value = '';
    this.pathInput.value = '';
    this.yaml.value = NEW_CONFIG;
    this.sent.clear();
    this.check();
  },
  async load(path) {
    try {
      const res = await api('/api/config?' + qs({ path }));
      this.path = res.path || path;
      this.pathInput.value = this.path;
      this.fileSel.value = this.path;
      this.yaml.value = res.text;
      this.sent.clear();
      this.err.set('load', null);
      await this.check();
    } catch (e) { this.err.set('load', e); }
  },
  fieldValue(key) {
    const f = this.fields.get(key);
    const raw = f.input.value.trim();
    if (f.type === 'number') {
      if (raw === '') return undefined;
      const n = Number(raw);
      return isFinite(n) ? n : raw;
    }
    return f.type === 'select' && f.input.value === '' ? undefined : f.input.value;
  },
  onField(key) {
    const value = this.fieldValue(key);
    if (value === undefined) return;
    if (this.sent.has(key) && this.sent.get(key) === value) return;
    this.sent.set(key, value);
    this.chain = this.chain.then(async () => {
      try {
        const res = await api('/api/config/set', { text: this.yaml.value, key, value });
        this.yaml.value = res.text;
        this.err.set('set', null);
      } catch (e) { this.err.set('set', e); }
      await this.check();
    });
  },
  async check(explicit) {
    const seq = ++this.seq;
    const body = { text: this.yaml.value };
    const p = this.pathInput.value.trim();
    if (p) body.path = p;
    if (explicit) setText(this.status, 'checking…');
    let res;
    try {
      res = await api('/api/config/check', body);
      this.err.set('check', null);
    } catch (e) {
      if (seq === this.seq) { this.err.set('check', e); setText(this.status, 'check failed'); }
      return;
    }
    if (seq !== this.seq) return;   // a newer check is on its way
    this.fill(res.fields || {});
    this.showErrors(res.errors || [], res.warnings || []);
    const n = (res.errors || []).length;
    this.status.className = res.ok ? 'ok' : 'bad';
    setText(this.status, res.ok ? `✓ valid${res.job_dir ? ' · job dir ' + res.job_dir : ''}` : `✗ ${n} error${n === 1 ? '' : 's'}`);
  },
  fill(fields) {
    for (const [key, f] of this.fields) {
      if (!(key in fields)) continue;
      if (document.activeElement === f.input) continue;   // the user is typing there
      const v = fields[key];
      const s = v == null ? '' : (typeof v === 'object' ? JSON.stringify(v) : String(v));
      if (f.type === 'select' && s !== '' && ![...f.input.options].some((o) => o.value === s)) f.input.append(el('option', { value: s, text: s }));
      if (f.input.value !== s) f.input.value = s;
      this.sent.set(key, this.fieldValue(key));
    }
  },
  showErrors(errors, warnings) {
    for (const f of this.fields.values()) { f.errBox.replaceChildren(); f.input.classList.remove('invalid'); }
    const top = [];
    const line = (x) => (x.line != null && x.line !== '' ? `line ${x.line}: ` : '');
    for (const e of errors) {
      const x = Object.assign({}, typeof e === 'string' ? { message: e } : e);
      x.message = String(x.message ?? '');
      if (x.line != null) x.message = x.message.replace(/^\[[a-z]+\] .*?:\d+: /, '');   // the line is shown anyway
      if (!x.key) {   // no key from the server: a form key the message names
        const named = [...this.fields.keys()].filter((k) => k.includes('.') && new RegExp(`(^|[^\\w.])${k.replace(/\./g, '\\.')}([^\\w.]|$)`).test(x.message));
        if (named.length) x.key = named.sort((a, b) => b.length - a.length)[0];
      }
      const f = x.key && this.fields.get(x.key);
      const text = `${line(x)}${x.message}`;
      if (f) {
        f.errBox.append(el('div', { class: 'error', 'data-key': x.key, text }));
        f.input.classList.add('invalid');
      } else {
        top.push(el('div', { class: 'error', 'data-key': x.key || '', 'data-line': x.line ?? '',
          onclick: () => this.gotoLine(x.line), text: `${text}${x.key && !x.message.includes(x.key) ? ` (${x.key})` : ''}` }));
      }
    }
    for (const w of warnings) {
      const x = typeof w === 'string' ? { message: w } : w;
      top.push(el('div', { class: 'warning', text: `${line(x)}${x.message}${x.key && !String(x.message).includes(x.key) ? ` (${x.key})` : ''}` }));
    }
    this.yamlErrors.replaceChildren(...top);
  },
  gotoLine(n) {
    n = Number(n);
    if (!n) return;
    const lines = this.yaml.value.split('\n');
    let off = 0;
    for (let i = 0; i < n - 1 && i < lines.length; i++) off += lines[i].length + 1;
    this.yaml.focus();
    this.yaml.setSelectionRange(off, off + (lines[n - 1] || '').length);
  },
  async save() {
    let path = this.pathInput.value.trim();
    if (!path) {
      path = (window.prompt('Save as (a .yaml path under the studio root):', 'configs/new.yaml') || '').trim();
      if (!path) return null;
      this.pathInput.value = path;
    }
    try {
      const res = await api('/api/config/save', { path, text: this.yaml.value });
      this.path = res.path || path;
      this.pathInput.value = this.path;
      await this.loadList(this.path);
      history.replaceState(null, '', hashFor('config', [['path', this.path]]));
      this.err.set('save', null);
      this.err.notice(`saved ${this.path}`);
      return this.path;
    } catch (e) { this.err.set('save', e); return null; }
  },
  async launch() {
    const path = await this.save();
    if (!path) return;
    try {
      const res = await api('/api/runs/start', { config: path });
      this.err.set('launch', null);
      this.err.notice(el('span', {}, `started pid ${res.pid}: `,
        (res.runs || []).map((id) => el('a', { href: hashFor('dashboard', [['run', id]]) }, id, ' ')),
        el('a', { href: '#/runs' }, '(runs)')), 20000);
    } catch (e) { this.err.set('launch', e); }
  },
};

// ---------------------------------------------------------------- Chat
const ChatPage = {
  id: 'chat',
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.messages = [];   // {role, content, tokens?, meta?}
    this.loaded = null;
    this.modelSel = el('select', { id: 'chat-model', 'data-testid': 'chat-model' });
    this.maxTokens = el('input', { type: 'number', id: 'max-tokens', 'data-testid': 'max-tokens', min: 1, value: 64 });
    this.temperature = el('input', { type: 'number', id: 'temperature', 'data-testid': 'temperature', min: 0, step: 0.1, value: 0.7 });
    this.conv = el('div', { id: 'conversation', class: 'conversation' });
    this.input = el('textarea', { id: 'chat-input', 'data-testid': 'chat-input', rows: 3, placeholder: 'message (Enter sends, Shift+Enter: new line)' });
    this.sendBtn = el('button', { class: 'primary', 'data-testid': 'send', onclick: () => this.send() }, 'Send');
    this.status = el('span', { id: 'chat-status', class: 'muted' });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.send(); }
    });
    r.append(
      el('div', { class: 'toolbar' }, el('h2', { text: 'Chat' }), this.modelSel,
        el('button', { class: 'small', title: 'reload the list', onclick: () => this.loadModels() }, '↻'),
        el('label', {}, 'max tokens ', this.maxTokens), el('label', {}, 'temperature ', this.temperature),
        el('span', { class: 'spacer' }),
        el('button', { 'data-testid': 'chat-clear', onclick: () => { this.messages = []; this.render(); } }, 'Clear')),
      this.conv,
      el('div', { class: 'chat-input' }, this.input, el('div', { class: 'col' }, this.sendBtn, this.status)));
  },
  enter() { this.loadModels(); },
  leave() {},
  async loadModels() {
    try {
      const res = await api('/api/chat/models');
      const cur = this.modelSel.value;
      this.loaded = res.loaded || null;
      this.modelSel.replaceChildren(...(res.models || []).map((m) => el('option', { value: m.path,
        text: `${m.path}${m.path === res.loaded ? ' (loaded)' : ''}` })));
      if (!(res.models || []).length) this.modelSel.append(el('option', { value: '', text: 'no checkpoints under the root' }));
      if (cur && (res.models || []).some((m) => m.path === cur)) this.modelSel.value = cur;
      else if (res.loaded) this.modelSel.value = res.loaded;
      this.err.set('models', null);
    } catch (e) { this.err.set('models', e); }
  },
  render() {
    this.conv.replaceChildren(...this.messages.map((m) => {
      const body = m.tokens && m.tokens.length
        ? el('div', { class: 'content tokens' }, m.tokens.map((t) => {
          const s = tokenSpan({ id: t.id, text: t.text, logprob: t.logprob });
          if (t.logprob != null) s.style.background = lpColor(t.logprob);
          return s;
        }))
        : el('div', { class: 'content', text: messageText(m.content) });
      return el('div', { class: 'msg', 'data-role': m.role }, el('div', { class: 'role', text: m.role }), body,
        m.meta ? el('div', { class: 'meta muted', text: m.meta }) : '');
    }));
    this.conv.scrollTop = this.conv.scrollHeight;
  },
  async send() {
    const text = this.input.value.trim();
    const model = this.modelSel.value;
    if (!text || this.busy) return;
    if (!model) { this.err.set('send', 'Choose a model first.'); return; }
    this.busy = true;
    this.sendBtn.disabled = true;
    this.messages.push({ role: 'user', content: text });
    this.input.value = '';
    this.render();
    this.status.className = 'loading';
    setText(this.status, model === this.loaded ? 'generating…' : 'loading model…');
    const body = { model, messages: this.messages.map((m) => ({ role: m.role, content: m.content })),
      max_tokens: Math.max(1, Math.round(Number(this.maxTokens.value)) || 64), temperature: Number(this.temperature.value) };
    if (!isFinite(body.temperature)) body.temperature = 0.7;
    try {
      const res = await api('/api/chat', body);
      this.loaded = res.model || model;
      const meta = `${(res.tokens || []).length} tokens · ${res.finish_reason || ''}` +
        (res.load_seconds ? ` · loaded in ${Number(res.load_seconds).toFixed(1)} s` : '');
      this.messages.push({ role: 'assistant', content: res.text || '', tokens: res.tokens || [], meta });
      this.err.set('send', null);
      this.status.className = 'muted';
      setText(this.status, '');
    } catch (e) {
      this.messages.pop();
      this.input.value = text;
      this.err.set('send', e);
      this.status.className = 'muted';
      setText(this.status, '');
    }
    this.busy = false;
    this.sendBtn.disabled = false;
    this.render();
  },
};

// ---------------------------------------------------------------- Label
const LabelPage = {
  id: 'label',
  init() {
    const r = this.root;
    this.err = makeErrors(r);
    this.undoStack = [];
    this.annotator = el('input', { id: 'annotator', 'data-testid': 'annotator', size: 14,
      value: localStorage.getItem('studio.annotator') || 'studio' });
    this.annotator.addEventListener('change', () => {
      localStorage.setItem('studio.annotator', this.annotator.value.trim() || 'studio');
      this.next();
    });
    this.stats = el('div', { id: 'label-stats', class: 'muted' });
    this.empty = el('div', { id: 'label-empty', class: 'panel', hidden: true },
      'No preference queue: run `trinity data annotate --queue Q.db ...` and start the studio with --queue Q.db');
    this.done = el('div', { id: 'label-done', class: 'panel', hidden: true, text: 'queue done' });
    this.prompt = el('div', { id: 'label-prompt' });
    this.a = el('pre', { class: 'response', 'data-testid': 'response-a' });
    this.b = el('pre', { class: 'response', 'data-testid': 'response-b' });
    const btn = (testid, text, fn) => el('button', { 'data-testid': testid, onclick: fn }, text);
    this.pairView = el('div', { id: 'label-pair', hidden: true },
      el('h3', { text: 'Prompt' }), this.prompt,
      el('div', { class: 'pair' },
        el('div', { id: 'label-resp-a', class: 'panel' }, el('h3', { text: 'A' }), this.a),
        el('div', { id: 'label-resp-b', class: 'panel' }, el('h3', { text: 'B' }), this.b)),
      el('div', { class: 'toolbar label-buttons' },
        btn('label-a', 'A better (a)', () => this.label('a')),
        btn('label-b', 'B better (b)', () => this.label('b')),
        btn('label-tie', 'Tie (t)', () => this.label('tie')),
        btn('label-both-bad', 'Both bad (x)', () => this.label('both_bad')),
        btn('label-skip', 'Skip (s)', () => this.skip()),
        btn('label-undo', 'Undo last (u)', () => this.undo())));
    this.ui = el('div', { id: 'label-ui', hidden: true },
      el('div', { class: 'toolbar' }, el('label', {}, 'annotator ', this.annotator), el('span', { class: 'spacer' }), this.stats),
      this.done, this.pairView);
    r.append(el('div', { class: 'toolbar' }, el('h2', { text: 'Label' }), el('span', { id: 'label-queue', class: 'muted' })), this.empty, this.ui);
    document.addEventListener('keydown', (e) => this.onKey(e));
  },
  async enter() {
    try {
      const info = await api('/api/info');
      this.err.set('info', null);
      if (!info.queue) { this.empty.hidden = false; this.ui.hidden = true; return; }
      this.empty.hidden = true;
      this.ui.hidden = false;
      setText($('#label-queue', this.root), `queue: ${info.queue}`);
      await this.next();
    } catch (e) { this.err.set('info', e); }
  },
  leave() {},
  name() { return this.annotator.value.trim() || 'studio'; },
  async next() {
    try {
      const res = await api('/api/annotate/next?' + qs({ annotator: this.name() }));
      this.err.set('next', null);
      if (res.done || res.id == null) {
        this.pair = null;
        this.pairView.hidden = true;
        this.done.hidden = false;
        setText(this.done, res.remaining ? `queue done for now (${res.remaining} pairs leased to others)` : 'queue done');
      } else {
        this.pair = res;
        this.done.hidden = true;
        this.pairView.hidden = false;
        this.prompt.replaceChildren(conversation(Array.isArray(res.prompt) ? res.prompt : [{ role: 'user', content: res.prompt }]));
        this.a.textContent = messageText(res.a);
        this.b.textContent = messageText(res.b);
        this.pairView.dataset.id = res.id;
      }
    } catch (e) { this.err.set('next', e); }
    this.loadStats();
  },
  async loadStats() {
    try {
      const s = await api('/api/annotate/stats');
      const st = s.states || {};
      const mine = (s.annotators || {})[this.name()];
      setText(this.stats, `pending ${st.pending ?? 0} · leased ${st.leased ?? 0} · labelled ${st.labelled ?? 0} · skipped ${st.skipped ?? 0} · total ${s.total ?? 0}` +
        (mine ? ` · you: a ${mine.a ?? 0}, b ${mine.b ?? 0}, tie ${mine.tie ?? 0}, both bad ${mine.both_bad ?? 0}` : ''));
      this.err.set('stats', null);
    } catch (e) { this.err.set('stats', e); }
  },
  // Actions run one after another in the order they were asked for (a quick "a" then "u" labels, then
  // undoes), never two at once and never dropped.
  act(fn) {
    this.chain = (this.chain || Promise.resolve()).then(fn).catch((e) => this.err.set('act', e));
    return this.chain;
  },
  label(choice) {
    return this.act(async () => {
      if (!this.pair) return;
      try {
        await api('/api/annotate/label', { id: this.pair.id, lease: this.pair.lease, choice, annotator: this.name() });
        this.undoStack.push(this.pair.id);
        this.err.set('act', null);
      } catch (e) { this.err.set('act', e); }
      await this.next();
    });
  },
  skip() {
    return this.act(async () => {
      if (!this.pair) return;
      try {
        await api('/api/annotate/skip', { id: this.pair.id, lease: this.pair.lease });
        this.err.set('act', null);
      } catch (e) { this.err.set('act', e); }
      await this.next();
    });
  },
  undo() {
    return this.act(async () => {
      const id = this.undoStack.pop();
      if (id == null) { this.err.set('act', 'Nothing to undo.'); return; }
      try {
        await api('/api/annotate/undo', { id, annotator: this.name() });
        this.err.set('act', null);
        this.err.notice(`label of pair ${id} undone: it is back in the queue`);
      } catch (e) { this.err.set('act', e); }
      await this.next();
    });
  },
  onKey(e) {
    if (current !== this || this.ui.hidden || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
    const k = e.key.toLowerCase();
    const acts = { a: () => this.label('a'), b: () => this.label('b'), t: () => this.label('tie'), x: () => this.label('both_bad'), s: () => this.skip(), u: () => this.undo() };
    if (acts[k]) { e.preventDefault(); acts[k](); }
  },
};

// ---------------------------------------------------------------- router
const PAGES = { runs: RunsPage, dashboard: DashboardPage, rollouts: RolloutsPage, config: ConfigPage, chat: ChatPage, label: LabelPage };
let current = null;

function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const q = h.indexOf('?');
  return { name: (q < 0 ? h : h.slice(0, q)) || 'runs', params: new URLSearchParams(q < 0 ? '' : h.slice(q + 1)) };
}
function route() {
  const { name, params } = parseHash();
  const page = PAGES[name];
  if (!page) { location.replace('#/runs'); return; }
  if (current) { try { current.leave(); } catch (e) { console.error(e); } current.root.hidden = true; }
  for (const a of $$('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  page.root = page.root || $('#page-' + page.id);
  page.root.hidden = false;
  if (!page.inited) { page.init(); page.inited = true; }
  current = page;
  document.title = `${name} · trinity studio`;
  Promise.resolve(page.enter(params)).catch((e) => page.err.set('enter', e));
}

async function loadInfo() {
  try {
    const info = await api('/api/info');
    setText($('#server-info'), `${info.version || ''} · ${info.root || ''}`);
  } catch (e) {
    const box = $('#server-info');
    box.replaceChildren(el('span', { class: 'error', text: e.message }));
  }
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', () => {
  if (!location.hash || location.hash === '#' || location.hash === '#/') history.replaceState(null, '', '#/runs');
  route();
  loadInfo();
});
// for tests and the console
window.studio = { api, lpColor, advColor, alignSeries, pages: PAGES };
})();
