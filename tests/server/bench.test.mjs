// Acceptance 5: `xinfer bench serve` against xinfer itself prints the report (and writes JSON).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { makeTempDir, startServer, skipUnless, STORIES, BIN } from './helpers.mjs';

test('xinfer bench serve against xinfer serve', { skip: skipUnless(STORIES), timeout: 120000 }, async () => {
  const srv = await startServer(STORIES, [], { name: 'stories' });
  const tmp = makeTempDir('xinfer-bench-');
  try {
    const out = path.join(tmp.dir, 'report.json');
    const { stdout } = await promisify(execFile)(BIN, ['bench', 'serve', '--base-url', srv.baseURL,
      '--model', 'stories', '--num-prompts', '24', '--concurrency', '6', '--request-rate', '50',
      '--input-len', '24', '--output-len', '12', '--shared-prefix-len', '16', '--json', out]);
    assert.match(stdout, /Serving Benchmark Result/);
    assert.match(stdout, /Successful requests:\s+24/);
    for (const k of ['TTFT', 'TPOT', 'ITL', 'E2EL']) assert.match(stdout, new RegExp(`P99 ${k} \\(ms\\)`));
    const report = JSON.parse(readFileSync(out, 'utf8'));
    assert.equal(report.completed, 24);
    assert.equal(report.failed, 0);
    assert.equal(report.total_output_tokens, 24 * 12);
    assert.equal(report.total_input_tokens, 24 * 24);
    assert.ok(report.mean_ttft_ms > 0 && report.p99_e2el_ms >= report.median_e2el_ms);
    assert.ok(report.output_throughput > 0);

    // With random sampling (Qwen-style parameters): every request served, every token generated.
    const sampled = path.join(tmp.dir, 'sampled.json');
    await promisify(execFile)(BIN, ['bench', 'serve', '--base-url', srv.baseURL,
      '--model', 'stories', '--num-prompts', '12', '--concurrency', '6', '--input-len', '24',
      '--output-len', '12', '--temperature', '0.7', '--top-p', '0.8', '--top-k', '20',
      '--json', sampled]);
    const s = JSON.parse(readFileSync(sampled, 'utf8'));
    assert.equal(s.completed, 12);
    assert.equal(s.failed, 0);
    assert.equal(s.temperature, 0.7);
    assert.equal(s.total_output_tokens, 12 * 12);
    // Out-of-range sampling is refused before any request is sent.
    await assert.rejects(promisify(execFile)(BIN, ['bench', 'serve', '--base-url', srv.baseURL,
      '--model', 'stories', '--top-p', '1.5']), (e) => e.code === 1 && /--top-p/.test(e.stderr));
  } finally {
    tmp.remove();
    assert.equal((await srv.stop()).code, 0);
  }
});
