// Shared by the `trinity serve` e2e scripts (openai_e2e.mjs, agents_e2e.mjs): start the real binary
// and wait for its "listening on" line (the port it chose), a scenario harness (check / assert / eq),
// and the end of a script (stop the server, write OUTDIR/results.json and server.log, exit 1 when a
// scenario failed).
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";

// Starts `trinity serve ARGS` (ARGS should include --port 0). Returns {proc, exited, port, base, out()}.
export async function startServer(trinity, args) {
  let out = "";
  const proc = spawn(trinity, ["serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  proc.stdout.on("data", (d) => { out += d; });
  proc.stderr.on("data", (d) => { out += d; });
  const exited = new Promise((resolve) => proc.on("exit", (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 120 s:\n${out}`)), 120000);
    const poll = setInterval(() => {
      const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearInterval(poll); clearTimeout(timer); resolve(Number(m[1])); }
    }, 50);
    exited.then(({ code }) => { clearInterval(poll); clearTimeout(timer); reject(new Error(`server exited (${code}):\n${out}`)); });
  });
  return { proc, exited, port, base: `http://127.0.0.1:${port}`, out: () => out };
}

// Scenarios: check(name, fn) runs one and records {name, ok, ms, info | error}.
export function harness() {
  const results = [];
  const assert = (cond, msg) => { if (!cond) throw new Error(msg); };
  const eq = (a, b, msg) => {
    const ja = JSON.stringify(a), jb = JSON.stringify(b);
    if (ja !== jb) throw new Error(`${msg}: got ${ja?.slice(0, 600)}, want ${jb?.slice(0, 600)}`);
  };
  const check = async (name, fn) => {
    const t0 = Date.now();
    try {
      const info = await fn();
      results.push({ name, ok: true, ms: Date.now() - t0, info: info ?? null });
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      results.push({ name, ok: false, ms: Date.now() - t0, error: String(e?.stack ?? e) });
      console.log(`FAIL ${name}: ${e?.stack ?? e}`);
    }
  };
  return { results, assert, eq, check };
}

// Stops the server (SIGINT, then SIGKILL after 20 s), writes the results and exits.
export async function finish(srv, outDir, results) {
  if (srv.proc.exitCode === null && srv.proc.signalCode === null) {
    srv.proc.kill("SIGINT");
    await Promise.race([srv.exited, new Promise((r) => setTimeout(r, 20000))]);
  }
  if (srv.proc.exitCode === null && srv.proc.signalCode === null) srv.proc.kill("SIGKILL");
  fs.writeFileSync(path.join(outDir, "results.json"), JSON.stringify(results, null, 1));
  fs.writeFileSync(path.join(outDir, "server.log"), srv.out());
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${results.length - failed}/${results.length} scenarios passed`);
  process.exit(failed ? 1 : 0);
}
