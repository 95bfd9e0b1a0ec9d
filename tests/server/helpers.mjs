// Shared helpers of the server tests: start `xinfer serve` on a free loopback port, stop it,
// read /metrics. XINFER_BIN is the binary; XINFER_SHARED_DIR holds models/ (tests skip without).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';

export const BIN = process.env.XINFER_BIN ?? path.resolve('../../build/bin/xinfer');
export const SHARED = process.env.XINFER_SHARED_DIR ?? path.resolve('../../../shared');
export const QWEN = path.join(SHARED, 'models/tiny-qwen3');
export const STORIES = path.join(SHARED, 'models/tinystories-656k');

// Reason to skip, or false: node:test's `skip` option takes either.
export function skipUnless(...models) {
  if (!existsSync(BIN)) return `xinfer binary not found at ${BIN} (set XINFER_BIN)`;
  for (const m of models) if (!existsSync(m)) return `${m} is absent (../shared not available)`;
  return false;
}

// Starts a server; resolves once it listens. Small engine settings keep the tests fast on 2 cores.
export async function startServer(model, args = [], { name = 'test-model', env = {} } = {}) {
  // A short context by default (less KV cache to allocate); a test may pass its own.
  const context = args.includes('--max-model-len') ? [] : ['--max-model-len', '512'];
  const threads = args.includes('--threads') ? [] : ['--threads', process.env.XINFER_TEST_THREADS ?? '1'];
  const argv = ['serve', model, '--port', '0', '--served-model-name', name, ...context,
    ...threads, ...args];
  const proc = spawn(BIN, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; if (stderr.length > 1 << 20) stderr = stderr.slice(-65536); });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${stderr}`)), 60000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on port (\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${stderr}`)); });
  });
  const baseURL = `http://127.0.0.1:${port}`;
  return {
    proc, port, baseURL, name, exited,
    stderr: () => stderr,
    client: (opts = {}) => new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000, ...opts }),
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

// A fresh directory under the OS temp dir ($TMPDIR), and remove() to delete it with its contents
// (safe to call twice). Call remove() in an after hook or a finally block: run-tests.sh fails a
// test file that leaves anything behind in its private TMPDIR.
export function makeTempDir(prefix) {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// Prometheus text → { 'name{labels}': value }.
export async function metrics(baseURL) {
  const text = await (await fetch(`${baseURL}/metrics`)).text();
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out[line.slice(0, i)] = Number(line.slice(i + 1));
  }
  return out;
}

export function metric(m, name, extra = '') {
  for (const [k, v] of Object.entries(m)) if (k.startsWith(name + '{') && k.includes(extra)) return v;
  return undefined;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits until pred() is true (polling), or fails after `ms`.
export async function waitFor(pred, ms = 10000, what = 'condition') {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// A raw HTTP request (status, headers, body text), for what the OpenAI client hides.
export async function raw(baseURL, method, urlPath, body, headers = {}) {
  const res = await fetch(baseURL + urlPath, {
    method, headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

// A chat tool ({type: 'function', function: {...}}) in the Responses API's flat form.
export const responsesTool = (tool) => ({ type: 'function', ...tool.function });
