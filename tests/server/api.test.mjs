// Acceptance 1: the official openai client against `xinfer serve` on tiny-qwen3 and TinyStories.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, skipUnless, QWEN, STORIES, raw, metrics, metric, sleep, waitFor,
  responsesTool } from './helpers.mjs';

async function collect(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

describe('tiny-qwen3', { skip: skipUnless(QWEN) }, () => {
  let srv, client;
  before(async () => { srv = await startServer(QWEN); client = srv.client(); });
  after(async () => { const r = await srv.stop(); assert.equal(r.code, 0); });

  // Each choice's text of a chat completion (req.n choices, streamed or not); every choice must
  // end by itself (finish_reason "stop").
  async function stoppedChatTexts(req) {
    const texts = Array(req.n).fill('');
    if (req.stream) {
      for await (const chunk of await client.chat.completions.create(req))
        for (const c of chunk.choices) {
          texts[c.index] += c.delta.content ?? '';
          if (c.finish_reason) assert.equal(c.finish_reason, 'stop', texts[c.index]);
        }
    } else {
      const r = await client.chat.completions.create(req);
      for (const c of r.choices) {
        assert.equal(c.finish_reason, 'stop', c.message.content);
        texts[c.index] = c.message.content;
      }
    }
    return texts;
  }

  test('models, health, version', async () => {
    const models = await client.models.list();
    assert.equal(models.data[0].id, 'test-model');
    assert.equal((await raw(srv.baseURL, 'GET', '/health')).status, 200);
    assert.match((await raw(srv.baseURL, 'GET', '/version')).json.version, /^\d+\.\d+/);
  });

  test('chat completion (non-streaming) with usage', async () => {
    const r = await client.chat.completions.create({
      model: 'test-model', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 8,
      temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 0);
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  test('chat streaming equals non-streaming (greedy), usage in the stream', async () => {
    const req = { model: 'test-model', messages: [{ role: 'user', content: 'Tell me a story' }],
      max_tokens: 12, temperature: 0, ignore_eos: true };
    const full = await client.chat.completions.create(req);
    const chunks = await collect(await client.chat.completions.create(
      { ...req, stream: true, stream_options: { include_usage: true } }));
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).join('');
    assert.equal(text, full.choices[0].message.content);
    const fin = chunks.filter((c) => c.choices[0]?.finish_reason);
    assert.equal(fin.length, 1);
    assert.equal(fin[0].choices[0].finish_reason, 'length');
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.completion_tokens, 12);
    assert.equal(last.usage.prompt_tokens, full.usage.prompt_tokens);
  });

  test('n=2 returns two choices (streaming too)', async () => {
    const r = await client.chat.completions.create({
      model: 'test-model', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, n: 2,
      ignore_eos: true, seed: 7,
    });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
    assert.equal(r.usage.completion_tokens, 10);
    const chunks = await collect(await client.completions.create({
      model: 'test-model', prompt: 'Once upon', max_tokens: 4, n: 2, stream: true, ignore_eos: true,
    }));
    const seen = new Set(chunks.flatMap((c) => c.choices.map((ch) => ch.index)));
    assert.deepEqual([...seen].sort(), [0, 1]);
  });

  test('chat logprobs and top_logprobs', async () => {
    const r = await client.chat.completions.create({
      model: 'test-model', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4,
      logprobs: true, top_logprobs: 3, ignore_eos: true,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, 4);
    for (const t of content) {
      assert.equal(typeof t.token, 'string');
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(Array.isArray(t.bytes));
    }
    const chunks = await collect(await client.chat.completions.create({
      model: 'test-model', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3,
      logprobs: true, top_logprobs: 2, stream: true, ignore_eos: true,
    }));
    const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
    assert.equal(streamed.length, 3);
  });

  test('completion logprobs (integer)', async () => {
    const r = await client.completions.create({
      model: 'test-model', prompt: 'The cat', max_tokens: 3, logprobs: 2, ignore_eos: true,
    });
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, 3);
    assert.equal(lp.token_logprobs.length, 3);
    assert.equal(lp.top_logprobs.length, 3);
    assert.equal(lp.text_offset.length, 3);
    assert.equal(lp.tokens.join(''), r.choices[0].text);
  });

  test('seed makes sampling reproducible', async () => {
    const req = { model: 'test-model', prompt: 'Once upon a time', max_tokens: 10,
      temperature: 1.0, seed: 1234, ignore_eos: true };
    const a = await client.completions.create(req);
    const b = await client.completions.create(req);
    const c = await client.completions.create({ ...req, seed: 99 });
    assert.equal(a.choices[0].text, b.choices[0].text);
    assert.notEqual(a.choices[0].text, c.choices[0].text);
  });

  test('stop strings end the completion with stop_reason', async () => {
    const base = { model: 'test-model', prompt: 'Once upon a time', max_tokens: 10,
      temperature: 0, ignore_eos: true };
    const full = (await client.completions.create(base)).choices[0].text;
    const stop = full.slice(3, 6);
    assert.ok(stop.length > 0);
    const r = await client.completions.create({ ...base, stop: [stop] });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].stop_reason, stop);
    assert.equal(r.choices[0].text, full.slice(0, full.indexOf(stop)));
  });

  test('vLLM extras: top_k, min_p, repetition_penalty, max_completion_tokens', async () => {
    const r = await client.chat.completions.create({
      model: 'test-model', messages: [{ role: 'user', content: 'Hi' }],
      max_completion_tokens: 3, top_k: 5, min_p: 0.05, repetition_penalty: 1.2, ignore_eos: true,
    });
    assert.equal(r.usage.completion_tokens, 3);
  });

  test('vLLM extras: allowed_token_ids, skip_special_tokens, truncate_prompt_tokens', async () => {
    const ids = async (prompt) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { prompt, add_special_tokens: false })).json.tokens;
    const [hello] = await ids('Hello');
    const [world] = await ids(' world');
    const [imStart] = await ids('<|im_start|>');
    const base = { model: 'test-model', prompt: 'Once upon a time', max_tokens: 8,
      temperature: 1.0, ignore_eos: true };
    // Only the listed tokens come out (n = 4 choices, 8 draws each).
    const allowed = await client.completions.create({ ...base, n: 4, allowed_token_ids: [hello, world] });
    for (const c of allowed.choices) assert.match(c.text, /^(Hello| world){8}$/, c.text);
    // A special token is in the text only with skip_special_tokens false.
    const special = { ...base, max_tokens: 3, allowed_token_ids: [imStart] };
    assert.equal((await client.completions.create(special)).choices[0].text, '');
    assert.equal((await client.completions.create({ ...special, skip_special_tokens: false }))
      .choices[0].text, '<|im_start|>'.repeat(3));
    // truncate_prompt_tokens keeps the prompt's last k tokens.
    const prompt = Array.from({ length: 40 }, (_, i) => 100 + i);
    const cut = await client.completions.create({ ...base, prompt, max_tokens: 1, truncate_prompt_tokens: 10 });
    assert.equal(cut.usage.prompt_tokens, 10);
    const tail = await client.completions.create({ ...base, prompt: prompt.slice(30), max_tokens: 4, temperature: 0 });
    const cutGreedy = await client.completions.create({ ...base, prompt, max_tokens: 4, temperature: 0,
      truncate_prompt_tokens: 10 });
    assert.equal(cutGreedy.choices[0].text, tail.choices[0].text);
    assert.equal((await client.completions.create({ ...base, prompt, max_tokens: 1,
      truncate_prompt_tokens: -1 })).usage.prompt_tokens, 40);
  });

  test('response_format json_object: the output is a JSON object (guided decoding)', async () => {
    const ids = async (prompt) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { prompt, add_special_tokens: false })).json.tokens;
    const [open] = await ids('{');
    const [close] = await ids('}');
    const [imEnd] = await ids('<|im_end|>');
    const messages = [{ role: 'user', content: 'Reply in JSON.' }];
    // With only '{', '}' and the end token to choose from, the grammar leaves one answer: '{}'.
    for (const stream of [false, true]) {
      const req = { model: 'test-model', messages, temperature: 0, max_tokens: 8,
        allowed_token_ids: [close, imEnd, open], response_format: { type: 'json_object' } };
      let content, finish;
      if (stream) {
        const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
        content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
        finish = chunks.at(-1).choices[0].finish_reason;
      } else {
        const r = await client.chat.completions.create(req);
        content = r.choices[0].message.content;
        finish = r.choices[0].finish_reason;
      }
      assert.equal(content, '{}');
      assert.equal(finish, 'stop');
    }
    // Free sampling from the whole vocabulary: every choice opens an object, and every choice that
    // ends by itself is one.
    const r = await client.chat.completions.create({ model: 'test-model', messages, n: 4,
      temperature: 1.0, seed: 5, max_tokens: 40, response_format: { type: 'json_object' } });
    for (const c of r.choices) {
      assert.match(c.message.content, /^\s*\{/, c.message.content);
      if (c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content), 'object');
    }
  });

  test('response_format json_schema and guided_json: the output follows the schema', async () => {
    const ids = async (prompt) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { prompt, add_special_tokens: false })).json.tokens;
    const allowed = [];
    for (const piece of ['{', '}', '"', 'ok', ':', 'true', 'false', 'n', ',', ' ', '<|im_end|>'])
      allowed.push(...await ids(piece));
    const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'],
      additionalProperties: false };
    const messages = [{ role: 'user', content: 'Is it?' }];
    // From a few tokens the schema leaves one shape: {"ok":true} or {"ok":false}, as it is
    // spaced; it ends there.
    for (const guide of [{ response_format: { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } } },
      { guided_json: schema }, { guided_json: JSON.stringify(schema) }]) {
      const r = await client.chat.completions.create({ model: 'test-model', messages, n: 3,
        temperature: 1.0, seed: 9, max_tokens: 40, allowed_token_ids: allowed, ...guide });
      for (const c of r.choices) {
        assert.equal(c.finish_reason, 'stop', c.message.content);
        const doc = JSON.parse(c.message.content);
        assert.deepEqual(Object.keys(doc), ['ok']);
        assert.equal(typeof doc.ok, 'boolean');
      }
    }
    // The whole vocabulary: every choice that ends by itself follows the schema.
    const free = await client.chat.completions.create({ model: 'test-model', messages, n: 4,
      temperature: 1.0, seed: 2, max_tokens: 40,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } } });
    for (const c of free.choices) {
      assert.match(c.message.content, /^\s*\{/, c.message.content);
      if (c.finish_reason === 'stop') assert.equal(typeof JSON.parse(c.message.content).ok, 'boolean');
    }
  });

  test('json_schema strings with pattern, minLength, maxLength; numbers with minimum, maximum', async () => {
    const schema = { type: 'object', properties: {
      code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2}$' },
      note: { type: 'string', minLength: 1, maxLength: 6 },
      level: { type: 'integer', minimum: -20, exclusiveMaximum: 100 },
      p: { type: 'number', minimum: 0, maximum: 1 } },
    required: ['code', 'note', 'level', 'p'] };
    const r = await client.chat.completions.create({ model: 'test-model', n: 3, temperature: 1.0,
      seed: 8, max_tokens: 120, messages: [{ role: 'user', content: 'Code?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'c', schema } } });
    for (const c of r.choices) {
      assert.equal(c.finish_reason, 'stop', c.message.content);
      const doc = JSON.parse(c.message.content);
      assert.match(doc.code, /^[A-Z]{3}-[0-9]{2}$/);
      const chars = [...doc.note].length;
      assert.ok(chars >= 1 && chars <= 6, doc.note);
      assert.ok(Number.isInteger(doc.level) && doc.level >= -20 && doc.level < 100, c.message.content);
      assert.ok(typeof doc.p === 'number' && doc.p >= 0 && doc.p <= 1, c.message.content);
    }
  });

  test('guided_choice, guided_regex, guided_grammar and structured_outputs: the output is one whole match', async () => {
    const messages = [{ role: 'user', content: 'Pick one.' }];
    const choices = ['Positive', 'Negative', 'Neutral ✓'];
    for (const guide of [{ guided_choice: choices }, { structured_outputs: { choice: choices } }]) {
      for (const stream of [false, true]) {
        const texts = await stoppedChatTexts({ model: 'test-model', messages, n: 3,
          temperature: 1.0, seed: 5, max_tokens: 30, stream, ...guide });
        for (const t of texts) assert.ok(choices.includes(t), `${JSON.stringify(guide)}: ${t}`);
      }
    }
    // A regex, on /v1/completions too; every choice ends by itself within the token budget.
    const pattern = '(yes|no), [0-9]{2,3}(\\.[0-9])?';
    for (const guide of [{ guided_regex: pattern }, { structured_outputs: { regex: pattern } }]) {
      const r = await client.completions.create({ model: 'test-model', prompt: 'Answer:', n: 4,
        temperature: 1.0, seed: 3, max_tokens: 40, ...guide });
      for (const c of r.choices) {
        assert.equal(c.finish_reason, 'stop', c.text);
        assert.match(c.text, new RegExp(`^${pattern}$`));
      }
    }
    // A GBNF grammar (guided_grammar, structured_outputs.grammar), streamed and not.
    const grammar = `root ::= "SELECT " cols " FROM " table ";"
      cols ::= "*" | col (", " col)*
      col ::= "id" | "name" | "age"
      table ::= [a-z]{1,8}`;
    const sql = /^SELECT (\*|(id|name|age)(, (id|name|age))*) FROM [a-z]{1,8};$/;
    for (const guide of [{ guided_grammar: grammar }, { structured_outputs: { grammar } }]) {
      for (const stream of [false, true]) {
        const texts = await stoppedChatTexts({ model: 'test-model', messages, n: 2,
          temperature: 1.0, seed: 9, max_tokens: 60, stream, ...guide });
        for (const t of texts) assert.match(t, sql, `${JSON.stringify(guide)} stream=${stream}`);
      }
    }
    // On /v1/completions, and under llama.cpp's name (`grammar`).
    for (const guide of [{ guided_grammar: grammar }, { grammar }]) {
      const g = await client.completions.create({ model: 'test-model', prompt: 'Query:', n: 2,
        temperature: 1.0, seed: 2, max_tokens: 60, ...guide });
      for (const c of g.choices) {
        assert.equal(c.finish_reason, 'stop', c.text);
        assert.match(c.text, sql);
      }
    }
    // llama.cpp's json_schema field is guided_json.
    const js = await client.chat.completions.create({ model: 'test-model', messages,
      temperature: 1.0, seed: 1, max_tokens: 60, json_schema: { enum: ['up', 'down'] } });
    assert.ok(['"up"', '"down"'].includes(js.choices[0].message.content.trim()), js.choices[0].message.content);
    // structured_outputs.json is guided_json under its new name; disable_any_whitespace leaves no
    // whitespace outside strings.
    const r = await client.chat.completions.create({ model: 'test-model', messages,
      temperature: 1.0, seed: 1, max_tokens: 60,
      structured_outputs: { json: { enum: ['a', 'b'] }, disable_any_whitespace: true } });
    assert.ok(['"a"', '"b"'].includes(r.choices[0].message.content), r.choices[0].message.content);
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 12 },
      tags: { type: 'array', items: { type: 'integer' }, maxItems: 3 } }, required: ['name', 'tags'] };
    for (const so of [{ json: schema }, { json_object: true }]) {
      const c = await client.chat.completions.create({ model: 'test-model', messages, n: 3,
        temperature: 1.0, seed: 8, max_tokens: 120,
        structured_outputs: { ...so, disable_any_whitespace: true } });
      for (const choice of c.choices) {
        const text = choice.message.content;
        if (choice.finish_reason === 'stop') JSON.parse(text);
        // Strings (the last one perhaps cut by max_tokens) may hold whitespace; nothing else may.
        assert.doesNotMatch(text.replace(/"(\\.|[^"\\])*("|\\?$)/g, '""'), /\s/, text);
      }
    }
  });

  test('tool_choice naming a function: its arguments, guided by its schema, as one call', async () => {
    const tools = [
      { type: 'function', function: { name: 'other', parameters: { type: 'object' } } },
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
        properties: { city: { enum: ['Paris', 'Rome'] }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'] } } }];
    const req = { model: 'test-model', messages: [{ role: 'user', content: 'Weather?' }], tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      temperature: 1.0, seed: 4, max_tokens: 300 };
    const r = await client.chat.completions.create(req);
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'stop', JSON.stringify(m));
    assert.equal(m.content, '');
    assert.equal(m.tool_calls.length, 1);
    assert.equal(m.tool_calls[0].type, 'function');
    assert.equal(m.tool_calls[0].function.name, 'get_weather');
    const args = JSON.parse(m.tool_calls[0].function.arguments);
    assert.deepEqual(Object.keys(args), ['city', 'unit']);
    assert.ok(['Paris', 'Rome'].includes(args.city) && ['c', 'f'].includes(args.unit), args);
    // Streamed: a header delta (id, name) then the arguments, the same text as above.
    const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.equal(deltas[0].function.name, 'get_weather');
    assert.match(deltas[0].id, /^chatcmpl-tool-/);
    assert.equal(deltas.map((d) => d.function.arguments).join(''), m.tool_calls[0].function.arguments);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), '');
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
    // /v1/responses, the same request in its form (flat tools, tool_choice {type, name}): the
    // same call as one function_call item, streamed the same.
    const rreq = { model: 'test-model', input: 'Weather?', tools: tools.map(responsesTool),
      tool_choice: { type: 'function', name: 'get_weather' }, temperature: 1.0, seed: 4,
      max_output_tokens: 300 };
    const rr = await client.responses.create(rreq);
    assert.equal(rr.status, 'completed');
    assert.deepEqual(rr.output.map((o) => [o.type, o.name, o.arguments, o.status]),
      [['function_call', 'get_weather', m.tool_calls[0].function.arguments, 'completed']]);
    assert.deepEqual(rr.tool_choice, rreq.tool_choice);
    const assembled = await client.responses.stream(rreq).finalResponse();
    assert.deepEqual(assembled.output.map((o) => [o.type, o.name, o.arguments]),
      [['function_call', 'get_weather', m.tool_calls[0].function.arguments]]);
  });

  test('tool_choice "required": one or more calls of the tools, each following its schema', async () => {
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
        properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'] } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object',
        properties: { tz: { enum: ['UTC', 'CET'] } }, required: ['tz'] } } }];
    const schemas = { get_weather: ['city', ['Paris', 'Rome']], get_time: ['tz', ['UTC', 'CET']] };
    // Closing brackets and the end favoured wherever the guide allows them: the list ends within
    // a few dozen tokens whatever the random model's logits.
    const ids = async (prompt) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { prompt, add_special_tokens: false })).json.tokens;
    const logit_bias = {};
    for (const piece of ['}', ']', '}]', '<|im_end|>'])
      for (const id of await ids(piece)) logit_bias[id] = 30;
    const req = { model: 'test-model', messages: [{ role: 'user', content: 'Help' }], tools,
      tool_choice: 'required', temperature: 1.0, seed: 3, max_tokens: 300, logit_bias };
    const r = await client.chat.completions.create(req);
    const m = r.choices[0].message;
    assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(m));
    assert.equal(m.content, '');
    assert.ok(m.tool_calls.length >= 1);
    for (const call of m.tool_calls) {
      const [key, values] = schemas[call.function.name];
      const args = JSON.parse(call.function.arguments);
      assert.deepEqual(Object.keys(args), [key]);
      assert.ok(values.includes(args[key]), call.function.arguments);
    }
    // Streamed: the same calls, as tool_calls deltas while the list is written (a header once its
    // name is complete, the arguments piece by piece), not all at the end.
    const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
    assert.ok(deltas.length > 2 * m.tool_calls.length, JSON.stringify(deltas));
    const firstCall = chunks.findIndex((c) => c.choices[0]?.delta?.tool_calls);
    assert.ok(firstCall < chunks.length - 3, `first tool_calls delta in chunk ${firstCall} of ${chunks.length}`);
    assert.deepEqual(deltas.filter((d) => d.function.name).map((d) => d.function.name),
      m.tool_calls.map((c) => c.function.name));
    assert.equal(deltas.filter((d) => !d.function.name).map((d) => d.function.arguments).join(''),
      m.tool_calls.map((c) => c.function.arguments).join(''));
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'tool_calls');
    // /v1/responses: the same calls as function_call items, whole and through the stream helper.
    const rreq = { model: 'test-model', input: 'Help', tools: tools.map(responsesTool),
      tool_choice: 'required', temperature: 1.0, seed: 3, max_output_tokens: 300, logit_bias };
    const calls = m.tool_calls.map((c) => ['function_call', c.function.name, c.function.arguments]);
    const rr = await client.responses.create(rreq);
    assert.equal(rr.status, 'completed');
    assert.deepEqual(rr.output.map((o) => [o.type, o.name, o.arguments]), calls);
    const events = [];
    const stream = client.responses.stream(rreq);
    stream.on('event', (e) => events.push(e.type));
    const assembled = await stream.finalResponse();
    assert.deepEqual(assembled.output.map((o) => [o.type, o.name, o.arguments]), calls);
    assert.ok(events.filter((t) => t === 'response.function_call_arguments.delta').length > calls.length,
      events.join(' '));
  });

  test('parallel_tool_calls false: tool_choice "required" guides a list of one call', async () => {
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
        properties: { city: { enum: ['Paris', 'Rome'] } }, required: ['city'], additionalProperties: false } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object',
        properties: { tz: { enum: ['UTC', 'CET'] } }, required: ['tz'], additionalProperties: false } } }];
    // Only the tokens of compact lists (the random model's whitespace would fill max_tokens), and
    // "}, {" favoured: where the guide allows another call, one usually follows.
    const ids = async (prompt) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { prompt, add_special_tokens: false })).json.tokens;
    const pieces = ['[{"name": "get_weather", "parameters": {"city": "Paris"}}, {"name": "get_time", ' +
      '"parameters": {"tz": "UTC"}}, {"name": "get_time", "parameters": {"tz": "CET"}}, ' +
      '{"name": "get_weather", "parameters": {"city": "Rome"}}]<|im_end|>', '}', ']', '}]', '}}]'];
    const allowed_token_ids = [...new Set((await Promise.all(pieces.map(ids))).flat())];
    const logit_bias = Object.fromEntries((await ids('}, {')).map((id) => [id, 10]));
    const counts = async (parallel_tool_calls) => {
      const n = [];
      for (const seed of [1, 2, 3, 4, 5]) {
        const r = await client.chat.completions.create({ model: 'test-model', tools,
          messages: [{ role: 'user', content: 'Help' }], tool_choice: 'required', temperature: 1.0,
          seed, max_tokens: 200, allowed_token_ids, logit_bias, parallel_tool_calls });
        assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r.choices[0]));
        n.push(r.choices[0].message.tool_calls.length);
      }
      return n;
    };
    assert.ok((await counts(true)).some((n) => n > 1));
    assert.deepEqual(await counts(false), [1, 1, 1, 1, 1]);
    const bad = await raw(srv.baseURL, 'POST', '/v1/chat/completions', { model: 'test-model',
      messages: [{ role: 'user', content: 'Help' }], tools, parallel_tool_calls: 'no' });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.message, /parallel_tool_calls must be a boolean/);
  });

  test('continue_final_message: the assistant message rendered open and continued', async () => {
    // vLLM / transformers: rendered without the generation prompt, cut after the final message's
    // text (Qwen3's template would close it with <|im_end|>).
    const messages = [{ role: 'user', content: 'Tell a story' },
      { role: 'assistant', content: 'Once upon a' }];
    const extra = { continue_final_message: true, add_generation_prompt: false };
    const t = await raw(srv.baseURL, 'POST', '/tokenize', { messages, ...extra });
    assert.equal(t.status, 200, JSON.stringify(t.json));
    const text = (await raw(srv.baseURL, 'POST', '/detokenize', { tokens: t.json.tokens })).json.prompt;
    assert.ok(text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\nOnce upon a'), text);
    // The chat answer is the continuation of exactly that prompt (greedy, as a completion).
    const r = await client.chat.completions.create({ model: 'test-model', messages, ...extra,
      max_tokens: 8, temperature: 0 });
    assert.equal(r.usage.prompt_tokens, t.json.count);
    const c = await client.completions.create({ model: 'test-model', prompt: t.json.tokens,
      max_tokens: 8, temperature: 0 });
    assert.equal(r.choices[0].message.content, c.choices[0].text);
    // Without it the message is closed and a new one opened.
    const closed = await raw(srv.baseURL, 'POST', '/tokenize', { messages });
    assert.ok(closed.json.count > t.json.count);
  });

  test('prompt_logprobs and echo with logprobs: each prompt token scored as if generated', async () => {
    // lm-evaluation-harness scores a continuation with echo + logprobs (vLLM computes them as
    // prompt_logprobs). A prompt of ~300 tokens spans three steps of prompt-logits rows.
    const ids = (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: 'The quick brown fox jumps over the lazy dog. '.repeat(30) })).json.tokens;
    assert.ok(ids.length > 260, `${ids.length}`);
    const req = { model: 'test-model', prompt: ids, max_tokens: 1, temperature: 0, logprobs: 3, echo: true };
    const r = await client.completions.create(req);
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, ids.length + 1);
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    assert.equal(lp.text_offset[0], 0);
    assert.equal(lp.tokens.join(''), r.choices[0].text);
    const pl = r.choices[0].prompt_logprobs;
    assert.equal(pl.length, ids.length);
    assert.equal(pl[0], null);
    // Position i's logprob is the one a request ending at i - 1 gets for token ids[i], forced by
    // allowed_token_ids (raw logprobs are taken before it), alternatives included.
    for (const i of [1, 2, 127, 128, 129, 200, ids.length - 1]) {
      const forced = await client.completions.create({ model: 'test-model', prompt: ids.slice(0, i),
        max_tokens: 1, temperature: 0, logprobs: 3, allowed_token_ids: [ids[i]] });
      const f = forced.choices[0].logprobs;
      assert.ok(Math.abs(f.token_logprobs[0] - lp.token_logprobs[i]) < 1e-3, `${i}: ${f.token_logprobs[0]} vs ${lp.token_logprobs[i]}`);
      assert.deepEqual(Object.keys(f.top_logprobs[0]).sort(), Object.keys(lp.top_logprobs[i]).sort(), `${i}`);
      const entry = pl[i][String(ids[i])];
      assert.ok(Math.abs(entry.logprob - lp.token_logprobs[i]) < 1e-6);
      assert.ok(entry.rank >= 1);
      const top = Object.values(pl[i]).filter((e) => e.rank <= 3);
      for (const e of top) assert.ok(e.logprob >= entry.logprob || e === entry);
    }
    // The same again (the prefix cache is not read for them), and streamed: the first chunk
    // echoes the prompt with its tokens' logprobs.
    const again = await client.completions.create(req);
    assert.deepEqual(again.choices[0].logprobs.token_logprobs, lp.token_logprobs);
    const chunks = await collect(await client.completions.create({ ...req, stream: true }));
    assert.deepEqual(chunks.flatMap((c) => c.choices[0]?.logprobs?.token_logprobs ?? []), lp.token_logprobs);
    assert.equal(chunks.map((c) => c.choices[0]?.text ?? '').join(''), r.choices[0].text);
    // Chat: beside the choices, one per prompt token.
    const chat = await client.chat.completions.create({ model: 'test-model', max_tokens: 2,
      messages: [{ role: 'user', content: 'Hi there' }], prompt_logprobs: 2 });
    assert.equal(chat.prompt_logprobs.length, chat.usage.prompt_tokens);
    assert.equal(chat.prompt_logprobs[0], null);
    assert.ok(Object.keys(chat.prompt_logprobs[1]).length >= 2);
    // As vLLM: not with stream.
    const streamed = await raw(srv.baseURL, 'POST', '/v1/completions',
      { model: 'test-model', prompt: 'Hi', prompt_logprobs: 1, stream: true });
    assert.equal(streamed.status, 400);
    assert.match(streamed.json.error.message, /prompt_logprobs are not available when stream is true/);
  });

  test('bad_words: a word the greedy answer writes is written nowhere once banned', async () => {
    const req = { model: 'test-model', prompt: 'Hello there', max_tokens: 24, temperature: 0, logprobs: 0 };
    const greedy = await client.completions.create(req);
    const tokens = greedy.choices[0].logprobs.tokens;
    // The first whole-word token after a space (byte-level BPE: " word" is one token, and so is
    // "word" at the start of a text: vLLM bans both).
    const at = tokens.findIndex((t) => /^ [A-Za-z]{3,}$/.test(t));
    assert.ok(at >= 0, JSON.stringify(tokens));
    const word = tokens[at].trim();
    const banned = await client.completions.create({ ...req, bad_words: [word] });
    const out = banned.choices[0].logprobs.tokens;
    assert.ok(!out.includes(tokens[at]) && !out.includes(word), `${word}: ${JSON.stringify(out)}`);
    assert.deepEqual(out.slice(0, at), tokens.slice(0, at));
    // Blank words are a bad request.
    const blank = await raw(srv.baseURL, 'POST', '/v1/completions', { ...req, bad_words: [' '] });
    assert.equal(blank.status, 400);
    assert.match(blank.json.error.message, /bad_words entries must not be empty or blank/);
  });

  test('enable_thinking changes the prompt (chat_template_kwargs)', async () => {
    const messages = [{ role: 'user', content: 'Think about it' }];
    const on = await raw(srv.baseURL, 'POST', '/tokenize', { messages });
    const off = await raw(srv.baseURL, 'POST', '/tokenize',
      { messages, chat_template_kwargs: { enable_thinking: false } });
    assert.equal(on.status, 200);
    assert.ok(off.json.count > on.json.count, 'enable_thinking=false adds an empty <think> block');
    const a = await client.chat.completions.create({
      model: 'test-model', messages, max_tokens: 2, ignore_eos: true,
      chat_template_kwargs: { enable_thinking: false } });
    assert.equal(a.usage.prompt_tokens, off.json.count);
    const b = await client.chat.completions.create({
      model: 'test-model', messages, max_tokens: 2, ignore_eos: true });
    assert.equal(b.usage.prompt_tokens, on.json.count);
  });

  test('tokenize / detokenize round trip', async () => {
    const t = await raw(srv.baseURL, 'POST', '/tokenize', { prompt: 'Hello world' });
    assert.equal(t.status, 200);
    assert.equal(t.json.count, t.json.tokens.length);
    const d = await raw(srv.baseURL, 'POST', '/detokenize', { tokens: t.json.tokens });
    assert.equal(d.json.prompt, 'Hello world');
  });

  test('/v1/responses: the chat answer as a response object, streamed as its events', async () => {
    const chat = await client.chat.completions.create({ model: 'test-model', messages: [
      { role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
    max_tokens: 6, temperature: 0 });
    const req = { model: 'test-model', instructions: 'Be brief.', input: 'Hi', max_output_tokens: 6,
      temperature: 0 };
    const r = await client.responses.create(req);
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.status, chat.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');
    if (r.status === 'incomplete') assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(r.usage.total_tokens, chat.usage.total_tokens);
    assert.equal(r.instructions, 'Be brief.');
    assert.equal(r.max_output_tokens, 6);
    assert.equal(r.temperature, 0);
    assert.equal(r.top_p, 1);
    assert.equal(r.output.length, 1);
    assert.equal(r.output[0].type, 'message');
    assert.equal(r.output[0].role, 'assistant');
    // The same conversation as message items (developer read as system).
    const items = await client.responses.create({ ...req, instructions: undefined, input: [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }] });
    assert.equal(items.output_text, r.output_text);
    // Streamed: numbered events in order, deltas adding up to the text, then the whole response.
    const events = [];
    for await (const e of await client.responses.create({ ...req, stream: true })) events.push(e);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    assert.deepEqual(events.slice(0, 4).map((e) => e.type), ['response.created',
      'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    assert.equal(events.filter((e) => e.type === 'response.output_text.delta')
      .map((e) => e.delta).join(''), r.output_text);
    const last = events.at(-1);
    assert.equal(last.type, `response.${r.status}`);
    assert.equal(last.response.output[0].content[0].text, r.output_text);
    assert.equal(last.response.usage.output_tokens, r.usage.output_tokens);
    // The client's stream helper assembles the same output from the events.
    const assembled = await client.responses.stream(req).finalResponse();
    assert.equal(assembled.output[0].content[0].text, r.output_text);
  });

  test('/v1/responses: text.format json_schema guides the output; what it cannot do is a 400',
    async () => {
      const r = await client.responses.create({ model: 'test-model', input: 'A color?',
        max_output_tokens: 200, text: { format: { type: 'json_schema', name: 'color', strict: true,
          schema: { type: 'object', properties: { color: { enum: ['red', 'blue'] } },
            required: ['color'], additionalProperties: false } } } });
      assert.equal(r.status, 'completed');
      assert.ok(['red', 'blue'].includes(JSON.parse(r.output_text).color));
      for (const [extra, message] of [
        [{ previous_response_id: 'resp_1' }, /previous_response_id is not supported/],
        [{ tools: [{ type: 'web_search_preview' }] }, /tools of type 'web_search_preview' are not supported/],
        [{ tools: [{ type: 'function', parameters: {} }] }, /a function tool needs a string 'name'/],
        [{ tools: [{ type: 'function', name: 'f' }] }, /tool_choice "auto" requires --enable-auto-tool-choice/],
        [{ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'function', name: 'g' } },
          /tool_choice names the function 'g', which is not in tools/],
        [{ tools: [{ type: 'function', name: 'f' }], tool_choice: { type: 'allowed_tools' } }, /^tool_choice must be/],
        [{ input: [{ type: 'function_call_output', output: 'x' }] }, /function_call_output item needs a string 'call_id'/],
        [{ input: [{ type: 'function_call', call_id: 'c', name: 'f' }] }, /function_call item needs a string 'arguments'/],
        [{ input: [{ type: 'item_reference', id: 'x' }] }, /input items of type 'item_reference' are not supported/],
        [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, /content parts of type 'input_image'/],
        [{ input: undefined }, /input is required/],
        [{ max_output_tokens: 0 }, /^max_output_tokens must be >= 1/],
        [{ text: { format: { type: 'xml' } } }, /text.format.type must be text, json_object or json_schema/]]) {
        const res = await raw(srv.baseURL, 'POST', '/v1/responses',
          { model: 'test-model', input: 'Hi', ...extra });
        assert.equal(res.status, 400, JSON.stringify(extra));
        assert.match(res.json.error.message, message);
      }
    });

  test('a generative model has no /v1/embeddings', async () => {
    const r = await raw(srv.baseURL, 'POST', '/v1/embeddings', { model: 'test-model', input: 'Hi' });
    assert.equal(r.status, 400);
    assert.match(r.json.error.message, /does not support the Embeddings API/);
  });

  test('SageMaker\'s /ping and /invocations, as vLLM serves them', async () => {
    for (const method of ['GET', 'POST']) assert.equal((await raw(srv.baseURL, method, '/ping')).status, 200);
    const chat = { model: 'test-model', messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 5, temperature: 0 };
    const viaChat = await client.chat.completions.create(chat);
    const inv = await raw(srv.baseURL, 'POST', '/invocations', chat);
    assert.equal(inv.status, 200);
    assert.equal(inv.json.object, 'chat.completion');
    assert.equal(inv.json.choices[0].message.content, viaChat.choices[0].message.content);
    const prompt = { model: 'test-model', prompt: 'Hello', max_tokens: 5, temperature: 0 };
    const viaCompletions = await client.completions.create(prompt);
    const invText = await raw(srv.baseURL, 'POST', '/invocations', prompt);
    assert.equal(invText.json.object, 'text_completion');
    assert.equal(invText.json.choices[0].text, viaCompletions.choices[0].text);
    const neither = await raw(srv.baseURL, 'POST', '/invocations', { model: 'test-model' });
    assert.equal(neither.status, 400);
    assert.match(neither.json.error.message, /\/invocations takes a chat request/);
    assert.equal((await raw(srv.baseURL, 'GET', '/invocations')).status, 405);
  });

  test('metrics use vLLM names', async () => {
    const m = await metrics(srv.baseURL);
    for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc', 'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total',
      'vllm:num_preemptions_total', 'vllm:prompt_tokens_total', 'vllm:generation_tokens_total',
      'vllm:time_to_first_token_seconds_count', 'vllm:inter_token_latency_seconds_count',
      'vllm:e2e_request_latency_seconds_count', 'vllm:request_queue_time_seconds_count']) {
      assert.notEqual(metric(m, name, 'model_name="test-model"'), undefined, name);
    }
    assert.ok(metric(m, 'vllm:request_success_total', 'finished_reason="length"') > 0);
    assert.ok(metric(m, 'vllm:generation_tokens_total') > 0);
  });
});

describe('tinystories (no chat template)', { skip: skipUnless(STORIES) }, () => {
  let srv, client;
  before(async () => { srv = await startServer(STORIES, [], { name: 'stories' }); client = srv.client(); });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('completions, streaming and not, agree under greedy decoding', async () => {
    const req = { model: 'stories', prompt: 'Once upon a time', max_tokens: 16, temperature: 0 };
    const full = await client.completions.create(req);
    assert.equal(full.object, 'text_completion');
    assert.ok(full.choices[0].text.length > 0);
    const chunks = await collect(await client.completions.create(
      { ...req, stream: true, stream_options: { include_usage: true } }));
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.text)).join('');
    assert.equal(text, full.choices[0].text);
    assert.equal(chunks.at(-1).usage.completion_tokens, full.usage.completion_tokens);
  });

  test('batched prompts and token-id prompts', async () => {
    const r = await client.completions.create({
      model: 'stories', prompt: ['Once upon a time', 'The dog'], max_tokens: 4, n: 2, ignore_eos: true });
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
    const ids = await client.completions.create({ model: 'stories', prompt: [1, 400, 500], max_tokens: 3 });
    assert.ok(ids.usage.prompt_tokens === 3);
  });

  test('chat is a 400 without a chat template', async () => {
    await assert.rejects(client.chat.completions.create({
      model: 'stories', messages: [{ role: 'user', content: 'hi' }] }), (e) => e.status === 400);
  });
});

// A vLLM command line runs unchanged: its parallelism / device / no-op flags are taken, and
// --seed seeds the requests that give none, so a restarted server samples the same tokens.
describe('vLLM flags', { skip: skipUnless(STORIES) }, () => {
  const vllmArgs = ['-tp', '1', '--pipeline-parallel-size', '1', '--device', 'cpu',
    '--trust-remote-code', '--enforce-eager', '--disable-log-requests', '--disable-log-stats'];
  async function sampleAfterStart(seed) {
    const srv = await startServer(STORIES, [...vllmArgs, '--seed', String(seed)], { name: 'stories' });
    try {
      const r = await srv.client().completions.create({
        model: 'stories', prompt: 'Once upon a time', max_tokens: 24, temperature: 1.5,
        ignore_eos: true, n: 2 });
      return r.choices.map((c) => c.text);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  }

  // Greedy texts of three concurrent completions and a streamed one, and the server's metrics
  // after them.
  async function greedyTexts(args) {
    const srv = await startServer(STORIES, args, { name: 'stories' });
    try {
      const client = srv.client();
      const req = { model: 'stories', max_tokens: 24, temperature: 0, ignore_eos: true };
      const prompts = ['Once upon a time', 'The dog', 'Lily and Ben went to the park'];
      const full = await Promise.all(
        prompts.map((prompt) => client.completions.create({ ...req, prompt })));
      const chunks = await collect(
        await client.completions.create({ ...req, prompt: prompts[0], stream: true }));
      const texts = [...full.map((r) => r.choices[0].text),
        chunks.flatMap((c) => c.choices.map((ch) => ch.text)).join('')];
      return { texts, metrics: await metrics(srv.baseURL), stderr: srv.stderr() };
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  }

  test('--tensor-parallel-size 2: the greedy texts of one rank, concurrent and streamed', async () => {
    const split = (await greedyTexts(['--tensor-parallel-size', '2', '--threads', '2'])).texts;
    assert.equal(split[3], split[0]);
    assert.deepEqual(split, (await greedyTexts(['--threads', '2'])).texts);
  });

  test('--data-parallel-size 2: the greedy texts of one engine; metrics add the replicas up',
    async () => {
      const one = await greedyTexts(['--threads', '2', '--num-gpu-blocks-override', '64']);
      const two = await greedyTexts(['-dp', '2', '--threads', '2', '--num-gpu-blocks-override',
        '64', '--cpu-threads-bind', 'nobind']);
      assert.deepEqual(two.texts, one.texts);
      // Replicas without a NUMA node each share one memory bus: the log says what that costs.
      assert.match(two.stderr, /the 2 data-parallel replicas do not each have a NUMA node/);
      assert.doesNotMatch(one.stderr, /data-parallel replicas/);
      assert.equal(two.texts[3], two.texts[0]);
      // Each replica has its own cache of 64 blocks; the counters are the sums of both.
      assert.equal(metric(one.metrics, 'xinfer:num_kv_blocks'), 64);
      assert.equal(metric(two.metrics, 'xinfer:num_kv_blocks'), 128);
      assert.ok(metric(two.metrics, 'vllm:cache_config_info', 'num_gpu_blocks="64"') === 1);
      for (const m of [one.metrics, two.metrics]) {
        assert.equal(metric(m, 'vllm:generation_tokens_total'), 4 * 24);
        assert.equal(metric(m, 'vllm:request_success_total', 'finished_reason="length"'), 4);
        assert.equal(metric(m, 'vllm:num_requests_running'), 0);
      }
      assert.equal(metric(two.metrics, 'vllm:prompt_tokens_total'),
        metric(one.metrics, 'vllm:prompt_tokens_total'));
    });

  test('vLLM\'s stats line every VLLM_LOG_STATS_INTERVAL and --enable-log-requests lines; '
    + '--disable-log-stats silences the first', async () => {
    const env = { VLLM_LOG_STATS_INTERVAL: '0.2', XINFER_LOG_LEVEL: 'info' };
    const req = { model: 'stories', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 };
    const logged = await startServer(STORIES, ['--enable-log-requests', '--max-log-len', '3'],
      { name: 'stories', env });
    try {
      await logged.client().completions.create(req);
      await waitFor(() => /Engine 000: Avg prompt throughput: [\d.]+ tokens\/s, Avg generation throughput: [\d.]+ tokens\/s, Running: \d+ reqs, Waiting: \d+ reqs, KV cache usage: [\d.]+%, Prefix cache hit rate: [\d.]+%/
        .test(logged.stderr()), 10000, 'the stats line');
      assert.match(logged.stderr(),
        /Received request cmpl-\w+: prompt: "[^"]{0,3}", params: n=1 temperature=0 .*max_tokens=8 .*prompt_token_ids: \[[\d, ]+\] \(of \d+\)/);
    } finally {
      assert.equal((await logged.stop()).code, 0);
    }
    // (With vLLM's flags for what this server does not have, accepted.)
    const quiet = await startServer(STORIES, ['--disable-log-stats', '--disable-log-requests',
      '--uvicorn-log-level', 'warning', '--disable-uvicorn-access-log', '--disable-fastapi-docs',
      '--enable-prompt-tokens-details'], { name: 'stories', env });
    try {
      await quiet.client().completions.create(req);
      await sleep(600);
      assert.doesNotMatch(quiet.stderr(), /Engine 000:|Received request/);
    } finally {
      assert.equal((await quiet.stop()).code, 0);
    }
    await assert.rejects(startServer(STORIES, [], { env: { VLLM_LOG_STATS_INTERVAL: 'soon' } }),
      /VLLM_LOG_STATS_INTERVAL must be seconds in \(0, 86400\], got 'soon'/);
  });

  test('--response-role, --return-tokens-as-token-ids and --enable-force-include-usage as vLLM; '
    + 'TLS and Python plugins refused by name', { skip: skipUnless(QWEN) }, async () => {
    const srv = await startServer(QWEN, ['--response-role', 'bot', '--return-tokens-as-token-ids',
      '--enable-force-include-usage', '--disable-frontend-multiprocessing', '--root-path', '/api',
      '--async-scheduling', '-O3', '--enable-sleep-mode', '--limit-mm-per-prompt', '{"image": 0}',
      '--long-prefill-token-threshold', '512', '--revision', 'main',
      '--structured-outputs-config', '{"backend": "xgrammar"}', '--enable-expert-parallel']);
    try {
      const client = srv.client();
      const messages = [{ role: 'user', content: 'Hello' }];
      const chat = await client.chat.completions.create({ model: 'test-model', messages,
        max_tokens: 3, temperature: 0, logprobs: true, top_logprobs: 2 });
      assert.equal(chat.choices[0].message.role, 'bot');
      for (const lp of chat.choices[0].logprobs.content) {
        assert.match(lp.token, /^token_id:\d+$/);
        assert.deepEqual(lp.bytes, [...Buffer.from(lp.token)]);
        for (const t of lp.top_logprobs) assert.match(t.token, /^token_id:\d+$/);
      }
      // Without the generation prompt the answer continues the final message, in its role.
      const cont = await client.chat.completions.create({ model: 'test-model', max_tokens: 2,
        messages: [...messages, { role: 'assistant', content: 'Hi' }], add_generation_prompt: false,
        continue_final_message: true, temperature: 0 });
      assert.equal(cont.choices[0].message.role, 'assistant');
      // Streamed: the role delta, and a usage chunk the request did not ask for.
      const chunks = [];
      for await (const c of await client.chat.completions.create({ model: 'test-model', messages,
        max_tokens: 3, temperature: 0, stream: true })) chunks.push(c);
      assert.equal(chunks[0].choices[0].delta.role, 'bot');
      assert.equal(chunks.at(-1).usage.completion_tokens, 3);
      const completion = await client.completions.create({ model: 'test-model', prompt: 'Hello',
        max_tokens: 3, temperature: 0, logprobs: 1 });
      const tokens = completion.choices[0].logprobs.tokens;
      assert.ok(tokens.every((t) => /^token_id:\d+$/.test(t)), JSON.stringify(tokens));
      assert.deepEqual(completion.choices[0].logprobs.text_offset,
        tokens.map((_, i) => tokens.slice(0, i).join('').length));
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    for (const [args, message] of [
      [['--ssl-keyfile', 'key.pem'], /--ssl-keyfile is not available: the server speaks plain HTTP/],
      [['--ssl-certfile', 'cert.pem'], /--ssl-certfile is not available/],
      [['--middleware', 'my.Mw'], /--middleware is not available: they load Python code/],
      [['--logits-processors', 'my.Proc'], /--logits-processors is not available/],
      [['--kv-transfer-config', '{}'], /--kv-transfer-config is not available/],
      [['--response-role', ''], /--response-role is empty/]]) {
      await assert.rejects(startServer(QWEN, args), (e) => message.test(e.message), String(args));
    }
  });

  test('--max-logprobs raises the logprobs a request may ask for', async () => {
    const srv = await startServer(STORIES, ['--max-logprobs', '30'], { name: 'stories' });
    try {
      const req = { model: 'stories', prompt: 'The dog', max_tokens: 2, temperature: 0 };
      const r = await srv.client().completions.create({ ...req, logprobs: 25 });
      assert.equal(Object.keys(r.choices[0].logprobs.top_logprobs[0]).length, 25);
      const over = await raw(srv.baseURL, 'POST', '/v1/completions', { ...req, logprobs: 31 });
      assert.equal(over.status, 400);
      assert.match(over.json.error.message, /logprobs must be in \[0, 30\].*--max-logprobs/);
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
  });

  test('--override-generation-config sets the sampling defaults of requests', async () => {
    const srv = await startServer(STORIES,
      ['--override-generation-config', '{"temperature": 0, "top_k": 5}'], { name: 'stories' });
    try {
      const client = srv.client();
      const req = { model: 'stories', prompt: 'Lily and Ben', max_tokens: 24, ignore_eos: true };
      const greedy = await client.completions.create({ ...req, temperature: 0 });
      for (let i = 0; i < 2; ++i) {
        const r = await client.completions.create(req);  // no temperature: the default, 0
        assert.equal(r.choices[0].text, greedy.choices[0].text);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    await assert.rejects(startServer(STORIES, ['--override-generation-config', '{"top_p": "x"}']),
      /override_generation_config: top_p must be a number/);
  });

  test('CORS as vLLM answers browsers: any origin by default, preflights before the API key',
    async () => {
      const origin = 'http://ui.example';
      const srv = await startServer(STORIES, ['--api-key', 'k'], { name: 'stories' });
      try {
        const pre = await fetch(`${srv.baseURL}/v1/chat/completions`, {
          method: 'OPTIONS',
          headers: { Origin: origin, 'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'authorization, content-type' },
        });
        assert.equal(pre.status, 200);
        assert.equal(pre.headers.get('access-control-allow-origin'), '*');
        assert.equal(pre.headers.get('access-control-allow-headers'), 'authorization, content-type');
        assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
        // /invocations is behind the key too.
        assert.equal((await raw(srv.baseURL, 'POST', '/invocations', { prompt: 'x' })).status, 401);
        // Errors are readable by the page too.
        const unauthorized = await fetch(`${srv.baseURL}/v1/models`, { headers: { Origin: origin } });
        assert.equal(unauthorized.status, 401);
        assert.equal(unauthorized.headers.get('access-control-allow-origin'), '*');
        // A streamed answer carries it from its first bytes.
        const streamed = await fetch(`${srv.baseURL}/v1/completions`, {
          method: 'POST',
          headers: { Origin: origin, Authorization: 'Bearer k', 'Content-Type': 'application/json' },
          body: JSON.stringify({ model: 'stories', prompt: 'The', max_tokens: 4, stream: true }),
        });
        assert.equal(streamed.status, 200);
        assert.equal(streamed.headers.get('access-control-allow-origin'), '*');
        assert.match(await streamed.text(), /data: \[DONE\]/);
        // The official client, as a page would use it, unaffected.
        const r = await srv.client({ apiKey: 'k', defaultHeaders: { Origin: origin } })
          .completions.create({ model: 'stories', prompt: 'The', max_tokens: 2 }).withResponse();
        assert.equal(r.response.headers.get('access-control-allow-origin'), '*');
      } finally {
        assert.equal((await srv.stop()).code, 0);
      }
      const listed = await startServer(STORIES,
        ['--allowed-origins', '["http://a.example"]', '--allowed-methods', '["GET", "POST"]'],
        { name: 'stories' });
      try {
        const a = await fetch(`${listed.baseURL}/v1/models`, { headers: { Origin: 'http://a.example' } });
        assert.equal(a.headers.get('access-control-allow-origin'), 'http://a.example');
        assert.equal(a.headers.get('vary'), 'Origin');
        const other = await fetch(`${listed.baseURL}/v1/models`, { headers: { Origin: origin } });
        assert.equal(other.status, 200);  // the browser, not the server, withholds the answer
        assert.equal(other.headers.get('access-control-allow-origin'), null);
        const denied = await fetch(`${listed.baseURL}/v1/models`, {
          method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'DELETE' },
        });
        assert.equal(denied.status, 400);
        assert.equal(await denied.text(), 'Disallowed CORS origin, method');
      } finally {
        assert.equal((await listed.stop()).code, 0);
      }
      await assert.rejects(startServer(STORIES, ['--allowed-origins', '*']),
        /--allowed-origins must be a JSON list of strings/);
    });

  test('--served-model-name with several names: a request may use any, /v1/models lists each',
    async () => {
      // (startServer passes --served-model-name stories first; CLI11 appends the second.)
      const srv = await startServer(STORIES, ['--served-model-name', 'stories-alias'],
        { name: 'stories' });
      try {
        const client = srv.client();
        assert.deepEqual((await client.models.list()).data.map((m) => m.id),
          ['stories', 'stories-alias']);
        const r = await client.completions.create({ model: 'stories-alias', prompt: 'The',
          max_tokens: 2 });
        assert.equal(r.model, 'stories-alias');
        assert.equal((await client.completions.create({ model: 'stories', prompt: 'The',
          max_tokens: 2 })).model, 'stories');
        const other = await raw(srv.baseURL, 'POST', '/v1/completions',
          { model: 'nope', prompt: 'The' });
        assert.equal(other.status, 404);
        // Metrics are labelled with the first name.
        assert.equal(metric(await metrics(srv.baseURL), 'vllm:request_success_total',
          'model_name="stories",finished_reason="length"'), 2);
      } finally {
        assert.equal((await srv.stop()).code, 0);
      }
    });

  test('--seed: the same unseeded samples after a restart, other samples with another seed',
    async () => {
      const first = await sampleAfterStart(7);
      assert.deepEqual(await sampleAfterStart(7), first);
      assert.notDeepEqual(await sampleAfterStart(8), first);
      assert.notEqual(first[0], first[1]);  // the choices of one request differ
    });
});

describe('--task embed (pooling model)', { skip: skipUnless(QWEN) }, () => {
  test('/v1/embeddings through the official client: base64 and float agree, ids as text', async () => {
    // vLLM's newer spelling of --task embed; the tiny model declared matryoshka-trained.
    const srv = await startServer(QWEN, ['--runner', 'pooling', '--hf-overrides',
      '{"matryoshka_dimensions": [16, 32]}']);
    try {
      const client = srv.client();
      // The client asks for base64 by default and decodes it.
      const r = await client.embeddings.create({ model: 'test-model', input: ['Hello world', '你好'] });
      assert.equal(r.object, 'list');
      assert.deepEqual(r.data.map((d) => d.index), [0, 1]);
      for (const d of r.data) {
        assert.equal(d.embedding.length, 64);  // the hidden size
        assert.ok(Math.abs(Math.hypot(...d.embedding) - 1) < 1e-5);
      }
      assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
      const floats = await client.embeddings.create({ model: 'test-model', input: 'Hello world',
        encoding_format: 'float' });
      assert.deepEqual(floats.data[0].embedding, r.data[0].embedding);
      const ids = (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: 'Hello world' })).json.tokens;
      const byIds = await client.embeddings.create({ model: 'test-model', input: [ids],
        encoding_format: 'float' });
      assert.deepEqual(byIds.data[0].embedding, r.data[0].embedding);
      assert.equal(floats.usage.prompt_tokens, ids.length);
      assert.equal(floats.usage.total_tokens, ids.length);
      // truncate_prompt_tokens keeps each input's first tokens (vLLM truncates a pooling model's
      // inputs on the right; completions keep the last ones).
      const cutIds = (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: 'Hello world, 你好' }))
        .json.tokens;
      assert.ok(cutIds.length > 2);
      const truncated = await client.embeddings.create({ model: 'test-model', input: 'Hello world, 你好',
        encoding_format: 'float', truncate_prompt_tokens: 2 });
      const head2 = await client.embeddings.create({ model: 'test-model', input: [cutIds.slice(0, 2)],
        encoding_format: 'float' });
      assert.deepEqual(truncated.data[0].embedding, head2.data[0].embedding);
      assert.equal(truncated.usage.prompt_tokens, 2);
      // dimensions: the first ones, normalized again.
      const cut = await client.embeddings.create({ model: 'test-model', input: 'Hello world',
        encoding_format: 'float', dimensions: 32 });
      const head = floats.data[0].embedding.slice(0, 32);
      const n = Math.hypot(...head);
      assert.equal(cut.data[0].embedding.length, 32);
      cut.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - head[i] / n) < 1e-6));
      // One kind of model per server; bad inputs are 400s naming what is wrong.
      const chat = await raw(srv.baseURL, 'POST', '/v1/chat/completions',
        { model: 'test-model', messages: [{ role: 'user', content: 'Hi' }] });
      assert.equal(chat.status, 400);
      assert.match(chat.json.error.message, /serves embeddings/);
      for (const [body, message] of [
        [{}, /input is required/],
        [{ input: 5 }, /input must be a string/],
        [{ input: [[]] }, /input must not be empty/],
        [{ input: [[-1]] }, /input token ids must be integers/],
        [{ input: 'x', encoding_format: 'int8' }, /encoding_format must be 'float' or 'base64'/],
        [{ input: 'x', dimensions: 20 }, /dimensions 20 is not one of the model's matryoshka_dimensions 16, 32/],
        [{ input: 'x', dimensions: 0 }, /dimensions must be an integer in \[1, 64\]/],
        [{ input: 'x', truncate_prompt_tokens: 0 }, /truncate_prompt_tokens must be an integer >= 1, or -1/],
        [{ input: 'x', model: 'other' }, /does not exist/]]) {
        const res = await raw(srv.baseURL, 'POST', '/v1/embeddings', { model: 'test-model', ...body });
        assert.ok(res.status === 400 || res.status === 404, JSON.stringify(body));
        assert.match(res.json.error.message, message);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    // A model not declared matryoshka-trained keeps its whole embedding.
    const plain = await startServer(QWEN, ['--task', 'embed']);
    try {
      const res = await raw(plain.baseURL, 'POST', '/v1/embeddings',
        { model: 'test-model', input: 'x', dimensions: 32 });
      assert.equal(res.status, 400);
      assert.match(res.json.error.message, /does not support matryoshka representation/);
    } finally {
      assert.equal((await plain.stop()).code, 0);
    }
  });
});

// A reranker kept as a causal LM, as vLLM serves the original Qwen3-Reranker: /score and the
// Jina / Cohere style /rerank, each pair's score the model's "yes" share of ("no", "yes").
describe('reranker (score / rerank)', { skip: skipUnless(QWEN) }, () => {
  const reranker = JSON.stringify({ architectures: ['Qwen3ForSequenceClassification'],
    classifier_from_token: ['no', 'yes'], is_original_qwen3_reranker: true });
  test('/score and /rerank through the official client agree; other APIs are refused', async () => {
    const srv = await startServer(QWEN, ['--hf-overrides', reranker]);
    try {
      const client = srv.client();
      const query = 'What is the capital of China?';
      const docs = ['The capital of China is Beijing.', 'Gravity pulls things down.', '北京', 'x'];
      const score = await client.post('/score', { body: { model: 'test-model', text_1: query,
        text_2: docs } });
      assert.equal(score.object, 'list');
      assert.match(score.id, /^score-/);
      assert.deepEqual(score.data.map((d) => [d.index, d.object]), docs.map((_, i) => [i, 'score']));
      const scores = score.data.map((d) => d.score);
      for (const s of scores) assert.ok(s > 0 && s < 1, String(s));
      assert.equal(new Set(scores).size, docs.length);
      // N:N pairs and one pair at a time: the same scores; usage counts each pair's tokens.
      const paired = await client.post('/score', { body: { text_1: docs.map(() => query),
        text_2: docs } });
      assert.deepEqual(paired.data.map((d) => d.score), scores);
      const one = await client.post('/score', { body: { text_1: [query], text_2: docs[2] } });
      assert.deepEqual(one.data.map((d) => d.score), [scores[2]]);
      const tokens = async (text) =>
        (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: text })).json.tokens.length;
      assert.equal(one.usage.prompt_tokens, await tokens(query) + await tokens(docs[2]));
      // /rerank: the documents by score, highest first, top_n of them.
      const rerank = await client.post('/rerank', { body: { model: 'test-model', query,
        documents: docs, top_n: 3 } });
      assert.match(rerank.id, /^rerank-/);
      const order = docs.map((_, i) => i).sort((a, b) => scores[b] - scores[a]).slice(0, 3);
      assert.deepEqual(rerank.results.map((r) => r.index), order);
      assert.deepEqual(rerank.results.map((r) => r.relevance_score), order.map((i) => scores[i]));
      assert.deepEqual(rerank.results.map((r) => r.document.text), order.map((i) => docs[i]));
      assert.equal(rerank.usage.total_tokens, score.usage.total_tokens);
      for (const path of ['/rerank', '/v2/rerank']) {
        const all = await raw(srv.baseURL, 'POST', path, { query, documents: docs });
        assert.equal(all.status, 200, path);
        assert.equal(all.json.results.length, docs.length);
      }
      const invoked = await raw(srv.baseURL, 'POST', '/invocations', { text_1: query, text_2: docs });
      assert.deepEqual(invoked.json.data.map((d) => d.score), scores);
      // truncate_prompt_tokens cuts each pair longest-first, each text keeping its beginning: both
      // texts here are longer than half of 8 tokens, so each keeps its first 4 — the score of the
      // pair of those 4-token prefixes.
      const ids = async (text) => (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: text })).json.tokens;
      const text = async (tokens) =>
        (await raw(srv.baseURL, 'POST', '/detokenize', { tokens })).json.prompt;
      const [q, d] = [await ids(query), await ids(docs[0])];
      assert.ok(q.length > 4 && d.length > 4);
      const cut = await client.post('/score', { body: { text_1: query, text_2: docs[0],
        truncate_prompt_tokens: 8 } });
      assert.equal(cut.usage.prompt_tokens, 8);
      const prefixes = await client.post('/score', { body: { text_1: await text(q.slice(0, 4)),
        text_2: await text(d.slice(0, 4)) } });
      assert.equal(prefixes.usage.prompt_tokens, 8);
      assert.equal(cut.data[0].score, prefixes.data[0].score);
      assert.notEqual(cut.data[0].score, scores[0]);
      const whole = await client.post('/rerank', { body: { query, documents: docs,
        truncate_prompt_tokens: -1 } });
      assert.equal(whole.usage.total_tokens, score.usage.total_tokens);
      // One kind of model per server; bad inputs are 400s naming what is wrong.
      for (const [path, body, message] of [
        ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }] }, /serves scores/],
        ['/v1/embeddings', { input: 'x' }, /does not support the Embeddings API/],
        ['/score', { text_1: query }, /text_2 is required/],
        ['/score', { text_1: 5, text_2: 'x' }, /text_1 must be a string or a list/],
        ['/score', { text_1: ['a', 'b'], text_2: ['a', 'b', 'c'] }, /must pair 1:1, 1:N or N:N/],
        ['/score', { text_1: 'a', text_2: [] }, /text_2 must be a string or a list of 1 to/],
        ['/rerank', { documents: ['a'] }, /query must be a string/],
        ['/rerank', { query: 'q', documents: ['a'], top_n: -1 }, /top_n must be a non-negative/],
        ['/rerank', { query: 'q', documents: ['a'], truncate_prompt_tokens: 0 },
          /truncate_prompt_tokens must be an integer >= 1, or -1/],
        ['/score', { text_1: 'q', text_2: 'a', truncate_prompt_tokens: 1 << 30 },
          /truncate_prompt_tokens 1073741824 is larger than max_model_len/],
        ['/rerank', { query: 'q', documents: ['a'], model: 'other' }, /does not exist/],
        ['/classify', { input: 'x' }, /needs a classification head \(score.weight\)/]]) {
        const res = await raw(srv.baseURL, 'POST', path, body);
        assert.ok(res.status === 400 || res.status === 404, `${path} ${JSON.stringify(body)}`);
        assert.match(res.json.error.message, message);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    const generative = await startServer(QWEN, []);
    try {
      for (const path of ['/score', '/v1/rerank']) {
        const res = await raw(generative.baseURL, 'POST', path, { text_1: 'a', text_2: 'b' });
        assert.equal(res.status, 400);
        assert.match(res.json.error.message, /does not support the Score API/);
      }
      const classify = await raw(generative.baseURL, 'POST', '/classify', { input: 'a' });
      assert.equal(classify.status, 400);
      assert.match(classify.json.error.message, /does not support the Classification API/);
    } finally {
      assert.equal((await generative.stop()).code, 0);
    }
  });

  // The tiny Qwen3 as transformers saves a Qwen3ForSequenceClassification: its weights (an index
  // naming its file) plus score.weight [labels, 64] (F32, its own shard) and config.json's id2label.
  function writeSeqCls(labels, seed) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xinfer-seqcls-'));
    for (const f of ['tokenizer.json', 'tokenizer_config.json', 'model.safetensors'])
      fs.symlinkSync(path.join(QWEN, f), path.join(dir, f));
    const config = JSON.parse(fs.readFileSync(path.join(QWEN, 'config.json'), 'utf8'));
    config.architectures = ['Qwen3ForSequenceClassification'];
    config.id2label = Object.fromEntries(labels.map((l, i) => [String(i), l]));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
    const data = Buffer.alloc(labels.length * 64 * 4);
    for (let i = 0; i < labels.length * 64; ++i) data.writeFloatLE(Math.sin(seed + 7 * i), 4 * i);
    let header = JSON.stringify({ 'score.weight': { dtype: 'F32', shape: [labels.length, 64],
      data_offsets: [0, data.length] } });
    while (header.length % 8) header += ' ';
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(header.length));
    fs.writeFileSync(path.join(dir, 'score.safetensors'),
      Buffer.concat([length, Buffer.from(header), data]));
    const weights = fs.readFileSync(path.join(QWEN, 'model.safetensors'));
    const n = Number(weights.readBigUInt64LE(0));
    const names = Object.keys(JSON.parse(weights.subarray(8, 8 + n).toString()))
      .filter((k) => k !== '__metadata__');
    const weightMap = Object.fromEntries(names.map((k) => [k, 'model.safetensors']));
    weightMap['score.weight'] = 'score.safetensors';
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: weightMap }));
    return dir;
  }

  test('a classifier with its own head: /classify, and /score with one label', async () => {
    const three = writeSeqCls(['negative', 'neutral', 'positive'], 1);
    const one = writeSeqCls(['LABEL_0'], 2);
    const srv = await startServer(three, []);
    try {
      const client = srv.client();
      const texts = ['Hello world', 'The capital of China is Beijing.'];
      const res = await client.post('/classify', { body: { model: 'test-model', input: texts } });
      assert.equal(res.object, 'list');
      assert.match(res.id, /^classify-/);
      assert.equal(res.data.length, 2);
      for (const [i, d] of res.data.entries()) {
        assert.equal(d.index, i);
        assert.equal(d.num_classes, 3);
        assert.ok(Math.abs(d.probs.reduce((a, b) => a + b, 0) - 1) < 1e-5);
        assert.equal(d.label, ['negative', 'neutral', 'positive'][d.probs.indexOf(Math.max(...d.probs))]);
      }
      assert.notDeepEqual(res.data[0].probs, res.data[1].probs);
      const ids = (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: texts[1] })).json.tokens;
      const byIds = await raw(srv.baseURL, 'POST', '/v1/classify', { input: [ids] });
      assert.deepEqual(byIds.json.data[0].probs, res.data[1].probs);
      assert.equal(res.usage.prompt_tokens,
        ids.length + (await raw(srv.baseURL, 'POST', '/tokenize', { prompt: texts[0] })).json.tokens.length);
      const invoked = await raw(srv.baseURL, 'POST', '/invocations', { input: texts });
      assert.deepEqual(invoked.json.data.map((d) => d.probs), res.data.map((d) => d.probs));
      for (const [p, body, message] of [
        ['/score', { text_1: 'a', text_2: 'b' }, /classifies into 3 labels; the Score and Rerank APIs need a one-label/],
        ['/classify', {}, /input is required/],
        ['/v1/embeddings', { input: 'a' }, /does not support the Embeddings API/],
        ['/v1/completions', { prompt: 'a' }, /serves scores/]]) {
        const r = await raw(srv.baseURL, 'POST', p, body);
        assert.equal(r.status, 400, p);
        assert.match(r.json.error.message, message);
      }
    } finally {
      assert.equal((await srv.stop()).code, 0);
    }
    const scorer = await startServer(one, []);
    try {
      const client = scorer.client();
      // One label: the score is its sigmoid, /classify's one probability of the pair's tokens.
      const score = await client.post('/score', { body: { text_1: 'query', text_2: ['doc a', 'doc b'] } });
      const tok = async (t) => (await raw(scorer.baseURL, 'POST', '/tokenize', { prompt: t })).json.tokens;
      const pair = [...await tok('query'), ...await tok('doc b')];
      const classified = await raw(scorer.baseURL, 'POST', '/classify', { input: [pair] });
      assert.equal(classified.json.data[0].num_classes, 1);
      assert.equal(score.data[1].score, classified.json.data[0].probs[0]);
      assert.notEqual(score.data[0].score, score.data[1].score);
      const rerank = await client.post('/rerank', { body: { query: 'query', documents: ['doc a', 'doc b'] } });
      assert.deepEqual(rerank.results.map((r) => r.relevance_score).sort(),
        score.data.map((d) => d.score).sort());
    } finally {
      assert.equal((await scorer.stop()).code, 0);
      fs.rmSync(three, { recursive: true });
      fs.rmSync(one, { recursive: true });
    }
  });
});
