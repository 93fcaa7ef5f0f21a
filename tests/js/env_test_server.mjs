// Test environment server for tests/env (env_unit_test): one Node process with an HTTP server and a
// `ws` WebSocket server on 127.0.0.1, printing its port as the first stdout line. Routes:
//   WebSocket /echo /fragment /ping /close /silent /destroy   transport behaviours
//   WebSocket /ws                                             a fake OpenEnv session (reset/step/state/close)
//   upgrade   /reject (HTTP 403), /badaccept (wrong Sec-WebSocket-Accept)
//   HTTP      /schema /health /reset /step /state             OpenEnv HTTP form
//   HTTP      /ag_id/*  /ag_idx/*                             AgentGym with "id" or "env_idx" field names
//   HTTP      /http/*                                         transport cases (chunked, big, hang, status)
// Step actions with a magic message ("error", "badjson", "nodone", "hang", "notobject") produce faulty
// replies. The server exits when stdin closes (its parent test died).
import http from 'node:http';
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const require = createRequire(path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', 'x.js'));
const { WebSocketServer } = require('ws');

const json = (res, status, body) => {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
};

// ---- OpenEnv observation replies (shape of openenv serialize_observation) -------------------------
function openenvReply(msg, state) {
  if (msg === 'error') return { type: 'error', data: { message: 'boom: bad action', code: 'EXECUTION_ERROR' } };
  if (msg === 'nodone') return { type: 'observation', data: { observation: { echoed_message: msg }, reward: 1 } };
  if (msg === 'notobject') return { type: 'observation', data: 42 };
  state.step_count += 1;
  return {
    type: 'observation',
    data: { observation: { echoed_message: msg, message_length: msg.length }, reward: msg.length * 0.1,
            done: msg === 'bye' },
  };
}

// ---- AgentGym fake: two servers with different field names ------------------------------------------
const agEnvs = new Map();
let agNext = 0;
function agentgym(variant, route, body, res) {
  const idField = variant === 'ag_id' ? 'id' : 'env_idx';
  const taskField = variant === 'ag_id' ? 'game' : 'session_id';
  if (route === 'create') {
    const id = agNext++;
    agEnvs.set(id, { task: null, steps: 0, closed: false });
    return json(res, 200, variant === 'ag_id' ? { id } : id);  // alfworld style vs webshop style
  }
  if (route === 'detail') return json(res, 200, { note: 'detail' });
  if (route === 'closed') return json(res, 200, { closed: [...agEnvs].filter(([, e]) => e.closed).map(([k]) => k) });
  const id = body[idField];
  if (typeof id !== 'number') return json(res, 422, { detail: [{ loc: ['body', idField], msg: 'field required' }] });
  const env = agEnvs.get(id);
  if (!env) return json(res, 200, { error: `The id ${id} is not valid.` });
  if (route === 'reset') {
    if (typeof body[taskField] !== 'number')
      return json(res, 422, { detail: [{ loc: ['body', taskField], msg: 'field required' }] });
    env.task = body[taskField];
    env.steps = 0;
    const text = `task ${env.task} for env ${id}`;
    return json(res, 200, variant === 'ag_id' ? { id, observation: text, available_actions: ['go'] } : [text, null]);
  }
  if (route === 'step') {
    env.steps += 1;
    const done = body.action === 'finish';
    if (body.action === 'crash') return json(res, 200, { error: 'env crashed' });
    if (body.action === 'nodone') return json(res, 200, { observation: 'x', reward: 0 });
    const text = `after ${body.action} (step ${env.steps}, task ${env.task})`;
    return json(res, 200, variant === 'ag_id' ? { observation: text, reward: done ? 1 : 0, score: 5, done }
                                              : { state: text, reward: done ? 1 : 0, done, info: null });
  }
  if (route === 'close') {
    env.closed = true;
    return json(res, 200, true);
  }
  return json(res, 404, { detail: 'Not Found' });
}

// ---- HTTP ---------------------------------------------------------------------------------------------
const server = http.createServer((req, res) => {
  let chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url, 'http://x');
    const text = Buffer.concat(chunks).toString();
    let body = {};
    try { body = text ? JSON.parse(text) : {}; } catch { return json(res, 400, { detail: 'bad json' }); }
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] === 'ag_id' || parts[0] === 'ag_idx') return agentgym(parts[0], parts[1], body, res);
    switch (url.pathname) {
      case '/health': return json(res, 200, { status: 'healthy' });
      case '/schema': return json(res, 200, { action: { type: 'object' }, observation: {}, state: {} });
      case '/reset':
        return json(res, 200, { observation: { echoed_message: `reset seed=${body.seed ?? 'none'}` }, reward: null, done: false });
      case '/step': {
        const msg = body.action?.message ?? '';
        if (msg === 'badjson') return json(res, 200, '{"observation": ');
        if (msg === 'error') return json(res, 500, { detail: 'boom in step' });
        if (msg === 'hang') return;  // never answers
        const r = openenvReply(msg, { step_count: 0 });
        return json(res, 200, r.data);
      }
      case '/state': return json(res, 200, { step_count: 0 });
      case '/http/chunked':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('hello ');
        setTimeout(() => { res.write('chunked '); res.end('world'); }, 20);
        return;
      case '/http/big': {
        const n = Number(url.searchParams.get('n') || 1000000);
        return json(res, 200, 'x'.repeat(n));
      }
      case '/http/echo': return json(res, 200, { method: req.method, body: text, auth: req.headers.authorization ?? null });
      case '/http/teapot': return json(res, 418, { detail: 'short and stout' });
      case '/http/hang': return;
      case '/http/cut':
        res.writeHead(200, { 'Content-Length': 100 });
        res.write('only part');
        setTimeout(() => res.socket.destroy(), 20);
        return;
      default: return json(res, 404, { detail: 'Not Found' });
    }
  });
});

// ---- WebSocket ----------------------------------------------------------------------------------------
const wss = new WebSocketServer({ noServer: true, maxPayload: 256 << 20 });
server.on('upgrade', (req, socket, head) => {
  const p = new URL(req.url, 'http://x').pathname;
  if (p === '/reject') {
    socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\nConnection: close\r\n\r\nforbidden');
    return;
  }
  if (p === '/badaccept') {
    const bad = crypto.createHash('sha1').update('nonsense').digest('base64');
    socket.end(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${bad}\r\n\r\n`);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, p, req));
});

function onConnection(ws, p, req) {
  const state = { step_count: 0, episode_id: null };
  ws.on('message', (data, isBinary) => {
    const text = data.toString();
    switch (p) {
      case '/echo': return ws.send(text);
      case '/fragment': {
        // The reply in three fragments (text, continuation, continuation).
        const a = text.slice(0, 3), b = text.slice(3, 7), c = text.slice(7);
        ws.send(a, { fin: false });
        ws.send(b, { fin: false });
        return ws.send(c, { fin: true });
      }
      case '/ping':
        ws.once('pong', (payload) => ws.send(`pong:${payload.toString()}`));
        return ws.ping(text);
      case '/close': {
        const [, code, ...reason] = text.split(' ');
        return ws.close(Number(code), reason.join(' '));
      }
      case '/silent': return;
      case '/destroy': return ws.terminate();
      case '/ws': {
        let msg;
        try { msg = JSON.parse(text); } catch (e) {
          return ws.send(JSON.stringify({ type: 'error', data: { message: `Invalid JSON: ${e}`, code: 'INVALID_JSON' } }));
        }
        if (msg.type === 'reset') {
          state.step_count = 0;
          state.episode_id = msg.data?.episode_id ?? 'ep-1';
          return ws.send(JSON.stringify({ type: 'observation',
            data: { observation: { echoed_message: `reset seed=${msg.data?.seed ?? 'none'}`, auth: req.headers.authorization ?? null },
                    reward: null, done: false } }));
        }
        if (msg.type === 'step') {
          const m = msg.data?.message ?? '';
          if (m === 'hang') return;
          if (m === 'badjson') return ws.send('{"type": "observation", "data": {');
          return ws.send(JSON.stringify(openenvReply(m, state)));
        }
        if (msg.type === 'state') return ws.send(JSON.stringify({ type: 'state', data: state }));
        if (msg.type === 'close') return ws.close(1000);
        return ws.send(JSON.stringify({ type: 'error', data: { message: `Unknown message type: ${msg.type}`, code: 'UNKNOWN_TYPE' } }));
      }
      default: return ws.close(1011, 'no such route');
    }
  });
}

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
