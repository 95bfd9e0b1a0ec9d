// Acceptance 2, 3 and 6: clients killed mid-stream, a 1,024-stream load test (bounded, loopback)
// and graceful SIGTERM. XINFER_LOAD_REQUESTS shrinks the load (the ThreadSanitizer run does).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { startServer, skipUnless, QWEN, STORIES, metrics, metric, waitFor } from './helpers.mjs';

const LOAD = Number(process.env.XINFER_LOAD_REQUESTS ?? 1024);

// A child process that opens `n` streaming completions and prints READY once each has received
// a chunk; the test then SIGKILLs it, as a crashed client.
const CLIENT_SCRIPT = `
const [base, n] = [process.argv[1], Number(process.argv[2])];
let ready = 0;
for (let i = 0; i < n; i++) {
  fetch(base + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time ' + i, max_tokens: 450, ignore_eos: true, stream: true }) })
    .then(async (res) => { const r = res.body.getReader(); await r.read();
      if (++ready === n) console.log('READY'); for (;;) { const x = await r.read(); if (x.done) break; } });
}`;

describe('robustness', () => {
  test('50 clients killed mid-stream: all aborted, blocks freed, server keeps serving',
    { skip: skipUnless(QWEN), timeout: 120000 }, async () => {
      const srv = await startServer(QWEN);
      try {
        const child = spawn(process.execPath, ['-e', CLIENT_SCRIPT, srv.baseURL, '50'],
          { stdio: ['ignore', 'pipe', 'inherit'] });
        await new Promise((resolve, reject) => {
          child.stdout.on('data', (d) => { if (String(d).includes('READY')) resolve(); });
          child.on('exit', (c) => reject(new Error(`client exited early (${c})`)));
        });
        const during = await metrics(srv.baseURL);
        assert.equal(metric(during, 'vllm:num_requests_running'), 50);
        assert.ok(metric(during, 'vllm:kv_cache_usage_perc') > 0);
        child.kill('SIGKILL');
        await waitFor(async () => {
          const m = await metrics(srv.baseURL);
          return metric(m, 'vllm:num_requests_running') === 0 &&
            metric(m, 'vllm:num_requests_waiting') === 0;
        }, 10000, 'all requests aborted');
        const m = await metrics(srv.baseURL);
        assert.equal(metric(m, 'vllm:request_success_total', 'finished_reason="abort"'), 50);
        assert.equal(metric(m, 'vllm:kv_cache_usage_perc'), 0);
        assert.equal(metric(m, 'xinfer:num_free_kv_blocks'), metric(m, 'xinfer:num_kv_blocks'));
        const r = await srv.client().completions.create({ model: 'test-model', prompt: 'still there?',
          max_tokens: 3, ignore_eos: true });
        assert.equal(r.usage.completion_tokens, 3);
      } finally {
        assert.equal((await srv.stop()).code, 0);
      }
    });

  test(`${LOAD} concurrent streaming requests complete; heap, descriptors and RSS stay flat`,
    { skip: skipUnless(STORIES), timeout: 300000 }, async () => {
      const srv = await startServer(STORIES, ['--num-gpu-blocks-override', '640'], { name: 'stories' });
      try {
        const client = srv.client({ timeout: 160000 });
        const run = (n) => Promise.all(Array.from({ length: n }, async (_, i) => {
          const stream = await client.completions.create({ model: 'stories',
            prompt: `Once upon a time there was a ${i % 7 === 0 ? 'dog' : 'cat'} number ${i}`,
            max_tokens: 8, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
          let text = '', usage, finish;
          for await (const c of stream) {
            text += c.choices[0]?.text ?? '';
            finish = c.choices[0]?.finish_reason ?? finish;
            usage = c.usage ?? usage;
          }
          assert.equal(finish, 'length');
          assert.equal(usage.completion_tokens, 8);
          return text;
        }));
        const idle = async () => {
          await waitFor(async () => metric(await metrics(srv.baseURL), 'xinfer:num_active_requests') === 0,
            10000, 'idle engine');
          return metrics(srv.baseURL);
        };
        // Warm-up with the same load, three times: KV pages are touched the first time the block
        // pool hands them out, hash tables reach their size, malloc's arenas settle and the ops'
        // scratch reaches the largest step the timing makes (it grows to the largest step seen:
        // once, after two warm-ups, a measured round still found a larger one, +0.9 MB).
        await run(LOAD);
        await run(LOAD);
        await run(LOAD);
        const before = await idle();
        const texts = await run(LOAD);
        assert.equal(texts.length, LOAD);
        const middle = await idle();
        await run(LOAD);
        const after = await idle();
        const growth = (name) => `${name}: ${before[name]} -> ${after[name]}`;
        // The client keeps its sockets alive between rounds; a leaked socket per request would
        // add LOAD descriptors.
        assert.ok(after.process_open_fds <= before.process_open_fds + 64, growth('process_open_fds'));
        // Bytes in live allocations come back to the same figure when the same work is done
        // again (a few KiB of noise seen); 256 bytes left behind per request would fail. Two
        // measured rounds: a leak grows the heap in both, while the scratch that grows to the
        // largest step seen (+0.9 MB when a round's timing makes a step larger than the warm-ups'
        // did; seen more than once) grows it in one at most. RSS keeps
        // the allocator's high-water mark and moves in 2 MiB steps where THP is "always", so it
        // only bounds gross growth (mappings outside malloc). Under the sanitizers there is no
        // glibc heap figure and freed memory stays resident (quarantine); LeakSanitizer checks
        // leaks at exit there instead.
        if (process.env.XINFER_SKIP_MEMORY_CHECK !== '1') {
          const heap = 'xinfer:heap_in_use_bytes';
          assert.ok(after[heap] !== undefined, `${heap} missing from /metrics`);
          const grew = Math.min(middle[heap] - before[heap], after[heap] - middle[heap]);
          assert.ok(grew <= LOAD * 256,
            `${heap}: ${before[heap]} -> ${middle[heap]} -> ${after[heap]}`);
          assert.ok(after.process_resident_memory_bytes <= before.process_resident_memory_bytes * 1.5,
            growth('process_resident_memory_bytes'));
        }
      } finally {
        assert.equal((await srv.stop()).code, 0);
      }
    });

  test('SIGTERM: in-flight streams finish, new connections are refused, exit 0',
    { skip: skipUnless(QWEN), timeout: 120000 }, async () => {
      const srv = await startServer(QWEN, ['--shutdown-timeout', '60']);
      const client = srv.client();
      let started = 0;
      const inflight = Array.from({ length: 3 }, async (_, i) => {
        const stream = await client.completions.create({ model: 'test-model', prompt: `story ${i}`,
          max_tokens: 40, ignore_eos: true, stream: true, stream_options: { include_usage: true } });
        let finish, usage;
        for await (const c of stream) {
          if (c.choices[0]?.text !== undefined && c.choices[0].text.length >= 0) started++;
          finish = c.choices[0]?.finish_reason ?? finish;
          usage = c.usage ?? usage;
        }
        return { finish, usage };
      });
      await waitFor(() => started >= 3, 30000, 'streams started');
      srv.proc.kill('SIGTERM');
      // The listening socket closes at once: a new connection is refused.
      await waitFor(() => new Promise((resolve) => {
        const s = net.connect(srv.port, '127.0.0.1');
        s.on('connect', () => { s.destroy(); resolve(false); });
        s.on('error', (e) => resolve(e.code === 'ECONNREFUSED'));
      }), 5000, 'connection refused');
      const results = await Promise.all(inflight);
      for (const r of results) {
        assert.equal(r.finish, 'length');
        assert.equal(r.usage.completion_tokens, 40);
      }
      const exit = await srv.exited;
      assert.equal(exit.code, 0);
    });

  test('SIGTERM with --shutdown-timeout aborts what is left and still exits 0',
    { skip: skipUnless(QWEN), timeout: 60000 }, async () => {
      // 4,000 tokens take seconds even where the tiny model decodes fastest (its 151,936 x 64
      // F32 lm_head is 39 MB a token), so the request is still running when the 0.5 s are up.
      const srv = await startServer(QWEN, ['--shutdown-timeout', '0.5', '--max-model-len', '4096']);
      const stream = await srv.client().completions.create({ model: 'test-model', prompt: 'long',
        max_tokens: 4000, ignore_eos: true, stream: true });
      let finish;
      let chunks = 0;
      const done = (async () => {
        for await (const c of stream) { chunks++; finish = c.choices[0]?.finish_reason ?? finish; }
      })();
      await waitFor(() => chunks > 0, 30000, 'stream started');
      const t0 = Date.now();
      srv.proc.kill('SIGTERM');
      await done;
      assert.equal(finish, 'abort');
      assert.equal((await srv.exited).code, 0);
      assert.ok(Date.now() - t0 < 10000);
    });
});
