// LoRA adapters (--enable-lora --lora-modules) through the official OpenAI client: listed by
// /v1/models as vLLM lists them, picked by a request's `model`, batched with base-model requests.
// (That an adapter computes the merged model's logits is engine_lora_test.cc's and lora_test.cc's.)
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, skipUnless, QWEN, raw, makeTempDir, metrics, waitFor, sleep } from './helpers.mjs';

// A PEFT adapter for the tiny Qwen3 (hidden 64, 4 query / 2 key-value heads of 32, 2 layers):
// q_proj and v_proj, rank 4, F32; B all zeros when `zero` (an adapter that changes nothing).
function writeAdapter(dir, { seed, zero = false }) {
  fs.mkdirSync(dir, { recursive: true });
  const rank = 4;
  const tensors = [];
  for (let l = 0; l < 2; ++l)
    for (const [proj, out] of [['q_proj', 128], ['v_proj', 64]]) {
      const name = `base_model.model.model.layers.${l}.self_attn.${proj}`;
      tensors.push([`${name}.lora_A.weight`, [rank, 64], false]);
      tensors.push([`${name}.lora_B.weight`, [out, rank], zero]);
    }
  const header = {};
  const parts = [];
  let offset = 0;
  for (const [name, shape, zeros] of tensors) {
    const n = shape[0] * shape[1];
    const data = Buffer.alloc(4 * n);
    if (!zeros) for (let i = 0; i < n; ++i) data.writeFloatLE(0.2 * Math.sin(seed * 31 + i * 1.7 + name.length), 4 * i);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + data.length] };
    offset += data.length;
    parts.push(data);
  }
  let json = JSON.stringify(header);
  while (json.length % 8) json += ' ';
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(path.join(dir, 'adapter_model.safetensors'), Buffer.concat([length, Buffer.from(json), ...parts]));
  fs.writeFileSync(path.join(dir, 'adapter_config.json'), JSON.stringify({
    peft_type: 'LORA', r: rank, lora_alpha: 8, target_modules: ['q_proj', 'v_proj'],
    lora_dropout: 0, bias: 'none', base_model_name_or_path: 'tiny-qwen3' }));
}

describe('LoRA adapters', { skip: skipUnless(QWEN) }, () => {
  test('served by name beside the base model, batched with it', async () => {
    const tmp = makeTempDir('xinfer-lora-');
    const tuned = path.join(tmp.dir, 'tuned'), zero = path.join(tmp.dir, 'zero');
    writeAdapter(tuned, { seed: 1 });
    writeAdapter(zero, { seed: 2, zero: true });
    const srv = await startServer(QWEN, ['--enable-lora', '--max-loras', '2', '--lora-modules',
      `tuned=${tuned}`, JSON.stringify({ name: 'zero', path: zero, base_model_name: 'tiny' })]);
    try {
      const client = srv.client();
      const models = (await client.models.list()).data;
      assert.deepEqual(models.map((m) => m.id), ['test-model', 'tuned', 'zero']);
      assert.equal(models[1].root, tuned);
      assert.equal(models[1].parent, 'test-model');
      assert.equal(models[2].parent, 'tiny');
      assert.equal(models[0].parent, null);

      const complete = (model) => client.completions.create({
        model, prompt: 'The capital of China is', max_tokens: 8, temperature: 0, logprobs: 1 });
      const sequential = {};
      for (const m of ['test-model', 'tuned', 'zero']) sequential[m] = await complete(m);
      assert.equal(sequential.tuned.model, 'tuned');
      // B = 0: exactly the base model; the other adapter changes what comes out.
      assert.equal(sequential.zero.choices[0].text, sequential['test-model'].choices[0].text);
      assert.deepEqual(sequential.zero.choices[0].logprobs.token_logprobs,
        sequential['test-model'].choices[0].logprobs.token_logprobs);
      assert.notDeepEqual(sequential.tuned.choices[0].logprobs.token_logprobs,
        sequential['test-model'].choices[0].logprobs.token_logprobs);
      // Concurrent requests of all three share steps; each gets what it got alone.
      const together = await Promise.all(['test-model', 'tuned', 'zero', 'tuned'].map(complete));
      for (const [i, m] of ['test-model', 'tuned', 'zero', 'tuned'].entries()) {
        assert.equal(together[i].choices[0].text, sequential[m].choices[0].text, m);
        for (const [t, lp] of together[i].choices[0].logprobs.token_logprobs.entries())
          assert.ok(Math.abs(lp - sequential[m].choices[0].logprobs.token_logprobs[t]) < 1e-4, m);
      }
      // Chat, streamed, through the adapter.
      const messages = [{ role: 'user', content: 'Hello' }];
      const chat = await client.chat.completions.create({ model: 'tuned', messages, max_tokens: 6, temperature: 0 });
      const stream = await client.chat.completions.create({ model: 'tuned', messages, max_tokens: 6, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) {
        assert.equal(chunk.model, 'tuned');
        text += chunk.choices[0]?.delta?.content ?? '';
      }
      assert.equal(text, chat.choices[0].message.content);
      // An adapter the server does not have is vLLM's 404.
      await assert.rejects(complete('other'), (e) => e.status === 404 && /`other` does not exist/.test(e.message));
      const tok = await raw(srv.baseURL, 'POST', '/tokenize', { model: 'tuned', prompt: 'Hello' });
      assert.equal(tok.status, 200);
      // vLLM's vllm:lora_requests_info: the adapters in use, running and waiting.
      const idle = 'vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters=""}';
      assert.ok((await metrics(srv.baseURL))[idle] > 1.7e9);
      const long = client.completions.create({ model: 'tuned', prompt: 'Hi', max_tokens: 400,
        temperature: 0, ignore_eos: true });
      const busy = 'vllm:lora_requests_info{max_lora="2",waiting_lora_adapters="",running_lora_adapters="tuned"}';
      await waitFor(async () => (await metrics(srv.baseURL))[busy] !== undefined, 20000, 'tuned running');
      await long;
      await waitFor(async () => (await metrics(srv.baseURL))[idle] !== undefined, 20000, 'idle again');
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }

    // Startup refuses what it cannot serve, naming it.
    fs.writeFileSync(path.join(zero, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 32, lora_alpha: 8 }));
    for (const [args, message] of [
      [['--lora-modules', `zero=${zero}`], /--lora-modules needs --enable-lora/],
      [['--enable-lora', '--lora-modules', `zero=${zero}`], /LoRA adapter 'zero'.*LoRA rank 32 is greater than max_lora_rank 16/],
      [['--enable-lora', '--lora-modules', 'test-model=/x'], /already the served model's name/]]) {
      await assert.rejects(startServer(QWEN, args), (e) => message.test(e.message), String(args));
    }
    tmp.remove();
  });

  test('VLLM_ALLOW_RUNTIME_LORA_UPDATING: /v1/load_lora_adapter and /v1/unload_lora_adapter', async () => {
    const tmp = makeTempDir('xinfer-lora-');
    const tuned = path.join(tmp.dir, 'tuned'), zero = path.join(tmp.dir, 'zero');
    writeAdapter(tuned, { seed: 1 });
    writeAdapter(zero, { seed: 2, zero: true });
    const off = await startServer(QWEN, ['--enable-lora']);
    try {
      const r = await raw(off.baseURL, 'POST', '/v1/load_lora_adapter', { lora_name: 'a', lora_path: tuned });
      assert.equal(r.status, 404);  // as vLLM: no such route unless allowed
    } finally {
      assert.equal((await off.stop()).code, 0);
    }
    const srv = await startServer(QWEN, ['--enable-lora', '--lora-modules', `zero=${zero}`],
      { env: { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' } });
    try {
      const client = srv.client();
      const complete = (model) => client.completions.create({
        model, prompt: 'The capital of China is', max_tokens: 6, temperature: 0, logprobs: 1 });
      await assert.rejects(complete('tuned'), (e) => e.status === 404);
      let r = await raw(srv.baseURL, 'POST', '/v1/load_lora_adapter', { lora_name: 'tuned', lora_path: tuned });
      assert.equal(r.status, 200);
      assert.equal(r.text, "Success: LoRA adapter 'tuned' added successfully.");
      assert.deepEqual((await client.models.list()).data.map((m) => m.id), ['test-model', 'zero', 'tuned']);
      const first = await complete('tuned');
      assert.notDeepEqual(first.choices[0].logprobs.token_logprobs,
        (await complete('test-model')).choices[0].logprobs.token_logprobs);
      for (const [body, status, message] of [
        [{ lora_name: 'tuned', lora_path: tuned }, 400, /has already been loaded/],
        [{ lora_name: 'test-model', lora_path: tuned }, 400, /has already been loaded/],
        [{ lora_name: 'x' }, 400, /Both 'lora_name' and 'lora_path' must be provided/],
        [{ lora_name: 'x', lora_path: path.join(tmp.dir, 'nowhere') }, 404, /does not exist/],
        [{ lora_name: 'x', lora_path: srv.baseURL }, 404, /does not exist/]]) {
        r = await raw(srv.baseURL, 'POST', '/v1/load_lora_adapter', body);
        assert.equal(r.status, status, JSON.stringify(body));
        assert.match(r.json.error.message, message);
      }
      // A failed load leaves the name free.
      r = await raw(srv.baseURL, 'POST', '/v1/load_lora_adapter', { lora_name: 'x', lora_path: zero });
      assert.equal(r.status, 200);
      // Unloading while a request runs with it: the request finishes with the adapter, new ones 404.
      const long = client.completions.create({ model: 'tuned', prompt: 'The capital of China is',
        max_tokens: 200, temperature: 0, ignore_eos: true, logprobs: 1 });
      await sleep(200);
      r = await raw(srv.baseURL, 'POST', '/v1/unload_lora_adapter', { lora_name: 'tuned' });
      assert.equal(r.status, 200);
      assert.equal(r.text, "Success: LoRA adapter 'tuned' removed successfully.");
      const done = await long;
      assert.equal(done.choices[0].logprobs.token_logprobs.length, 200);
      assert.deepEqual(done.choices[0].logprobs.token_logprobs.slice(0, 6), first.choices[0].logprobs.token_logprobs);
      await assert.rejects(complete('tuned'), (e) => e.status === 404);
      r = await raw(srv.baseURL, 'POST', '/v1/unload_lora_adapter', { lora_name: 'tuned' });
      assert.equal(r.status, 404);
      assert.match(r.json.error.message, /The lora adapter 'tuned' cannot be found/);
      r = await raw(srv.baseURL, 'POST', '/v1/unload_lora_adapter', {});
      assert.equal(r.status, 400);
      // The same name loads again (another adapter this time).
      r = await raw(srv.baseURL, 'POST', '/v1/load_lora_adapter', { lora_name: 'tuned', lora_path: zero });
      assert.equal(r.status, 200);
      assert.deepEqual((await complete('tuned')).choices[0].logprobs.token_logprobs,
        (await complete('test-model')).choices[0].logprobs.token_logprobs);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    tmp.remove();
  });
});
