// Acceptance 4: every error case, with its status code and OpenAI-shaped error body.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startServer, skipUnless, QWEN, raw, metrics, metric, waitFor } from './helpers.mjs';

function assertError(r, status, { param, message } = {}) {
  assert.equal(r.status, status, r.text);
  assert.ok(r.json?.error, `no error object in ${r.text}`);
  const e = r.json.error;
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.equal(typeof e.type, 'string');
  assert.ok('param' in e);
  assert.equal(e.code, status);
  if (param !== undefined) assert.equal(e.param, param);
  if (message) assert.match(e.message, message);
}

const chat = (extra = {}) => ({ model: 'test-model', messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 2, ...extra });

describe('request errors', { skip: skipUnless(QWEN) }, () => {
  let srv, post;
  before(async () => {
    srv = await startServer(QWEN, ['--max-request-body-bytes', '20000']);
    post = (p, body, h) => raw(srv.baseURL, 'POST', p, body, h);
  });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('400 invalid JSON / not an object', async () => {
    assertError(await post('/v1/chat/completions', '{not json'), 400, { message: /not valid JSON/ });
    assertError(await post('/v1/completions', '[1,2]'), 400, { message: /must be a JSON object/ });
  });
  test('400 missing messages / prompt', async () => {
    assertError(await post('/v1/chat/completions', { model: 'test-model' }), 400, { param: 'messages' });
    assertError(await post('/v1/completions', { model: 'test-model' }), 400, { param: 'prompt' });
    assertError(await post('/v1/chat/completions', chat({ messages: [] })), 400, { param: 'messages' });
  });
  test('400 out-of-range sampling parameters name the param', async () => {
    assertError(await post('/v1/chat/completions', chat({ top_p: 0 })), 400, { param: 'top_p' });
    assertError(await post('/v1/chat/completions', chat({ temperature: -1 })), 400, { param: 'temperature' });
    assertError(await post('/v1/chat/completions', chat({ temperature: 'hot' })), 400, { param: 'temperature' });
    assertError(await post('/v1/chat/completions', chat({ n: 0 })), 400, { param: 'n' });
    assertError(await post('/v1/chat/completions', chat({ max_tokens: 0 })), 400, { param: 'max_tokens' });
    assertError(await post('/v1/chat/completions', chat({ logprobs: true, top_logprobs: 50 })), 400, { param: 'logprobs' });
    assertError(await post('/v1/chat/completions', chat({ top_logprobs: 2 })), 400, { param: 'top_logprobs' });
    assertError(await post('/v1/completions', { prompt: 'a', logprobs: true }), 400, { param: 'logprobs' });
    assertError(await post('/v1/completions', { prompt: 'a', stop: 5 }), 400, { param: 'stop' });
  });
  test('400 prompt + max_tokens over --max-model-len', async () => {
    assertError(await post('/v1/completions', { prompt: 'hello', max_tokens: 600 }), 400,
      { message: /maximum context length is 512/ });
    assertError(await post('/v1/completions', { prompt: Array(600).fill(100), max_tokens: 1 }), 400,
      { message: /maximum context length/ });
  });
  test('400 bad prompt token ids', async () => {
    assertError(await post('/v1/completions', { prompt: [1, 99999999] }), 400, { param: 'prompt' });
  });
  test('400 stream_options without stream', async () => {
    assertError(await post('/v1/chat/completions', chat({ stream_options: { include_usage: true } })),
      400, { param: 'stream_options' });
  });
  test('400 tool_choice auto without --enable-auto-tool-choice, unknown or duplicate functions', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    assertError(await post('/v1/chat/completions', chat({ tools, tool_choice: 'auto' })), 400,
      { message: /enable-auto-tool-choice/ });
    const dup = [...tools, ...tools];
    assertError(await post('/v1/chat/completions', chat({ tools: dup, tool_choice: 'required' })), 400,
      { param: 'tools', message: /given twice/ });
    assertError(await post('/v1/chat/completions', chat({ tools: 'x' })), 400, { param: 'tools' });
    const named = (name) => ({ type: 'function', function: { name } });
    assertError(await post('/v1/chat/completions', chat({ tools, tool_choice: named('nope') })), 400,
      { param: 'tool_choice', message: /'nope', which is not in tools/ });
    assertError(await post('/v1/chat/completions', chat({ tools, tool_choice: { type: 'function' } })),
      400, { param: 'tool_choice' });
    const strict = [{ type: 'function', function: { name: 'g',
      parameters: { type: 'object', properties: { s: { type: 'boolean', pattern: 'x' } } } } }];
    assertError(await post('/v1/chat/completions', chat({ tools: strict, tool_choice: named('g') })),
      400, { param: 'tool_choice', message: /'pattern' is not supported/ });
    for (const guide of [{ response_format: { type: 'json_object' } }, { guided_grammar: 'root ::= "a"' },
      { guided_regex: 'a' }]) {
      assertError(await post('/v1/chat/completions', chat({ tools, tool_choice: named('f'), ...guide })),
        400, { param: 'tool_choice', message: /cannot be combined with another guide/ });
      assertError(await post('/v1/chat/completions', chat({ tools, tool_choice: 'required', ...guide })),
        400, { param: 'tool_choice', message: /cannot be combined with another guide/ });
    }
    const ok = await post('/v1/chat/completions', chat({ tools, tool_choice: named('f'), max_tokens: 3 }));
    assert.equal(ok.status, 200, ok.text);
  });
  test('400 for structured output xinfer cannot guide or a bad regex / choice; text, json_object, json_schema accepted', async () => {
    assertError(await post('/v1/chat/completions', chat({ response_format: { type: 'json_schema' } })),
      400, { param: 'response_format', message: /needs a json_schema object/ });
    const schema = (s) => chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: s } } });
    assertError(await post('/v1/chat/completions', schema({ type: 'number', pattern: 'a+' })), 400,
      { param: 'response_format', message: /'pattern' is not supported/ });
    assertError(await post('/v1/chat/completions', schema({ type: 'thing' })), 400,
      { param: 'response_format', message: /unknown type 'thing'/ });
    assertError(await post('/v1/chat/completions', chat({ guided_json: '{"type": ' })), 400,
      { param: 'guided_json', message: /not valid JSON/ });
    assertError(await post('/v1/chat/completions', chat({ guided_json: { type: 'number', minimum: 1.5 } })),
      400, { param: 'guided_json', message: /'minimum'/ });
    assertError(await post('/v1/chat/completions',
      chat({ guided_json: { type: 'object' }, response_format: { type: 'json_object' } })), 400,
    { param: 'guided_json' });
    assertError(await post('/v1/chat/completions', chat({ response_format: { type: 'xml' } })), 400,
      { param: 'response_format', message: /'text', 'json_object' or 'json_schema'/ });
    assertError(await post('/v1/chat/completions', chat({ response_format: 'json' })), 400,
      { param: 'response_format' });
    assertError(await post('/v1/completions',
      { prompt: 'a', response_format: { type: 'json_object' }, ignore_eos: true }), 400,
    { param: 'ignore_eos' });
    for (const key of ['guided_regex', 'guided_choice', 'guided_grammar', 'structured_outputs']) {
      assertError(await post('/v1/chat/completions', chat({ [key]: { a: 1 } })), 400, { param: key });
    }
    // Regexes, choices and grammars: what is not regular, not supported, too large, malformed or
    // matches nothing; two guides at once; structured_outputs' unsupported kinds and unknown fields.
    for (const [guide, param, message] of [
      [{ guided_regex: '(a' }, 'guided_regex', /missing '\)' at position 2/],
      [{ guided_regex: '(a)\\1' }, 'guided_regex', /backreference .* not supported/],
      [{ guided_regex: '(?=a)b' }, 'guided_regex', /lookahead/],
      [{ guided_regex: '[ab]*a[ab]{16}' }, 'guided_regex', /too large/],
      [{ guided_regex: '[^\\x00-\\U0010FFFF]' }, 'guided_regex', /matches no string/],
      [{ guided_choice: [] }, 'guided_choice', /non-empty list of strings/],
      [{ guided_choice: ['a', 1] }, 'guided_choice', /non-empty list of strings/],
      [{ guided_choice: 'a' }, 'guided_choice', /non-empty list of strings/],
      [{ guided_choice: ['a'], guided_regex: 'a' }, 'guided_choice', /only one kind of guided decoding/],
      [{ guided_choice: ['a'], response_format: { type: 'json_object' } }, 'guided_choice', /only one kind/],
      [{ structured_outputs: { regex: 'a', choice: ['a'] } }, 'structured_outputs', /only one kind/],
      [{ structured_outputs: { structural_tag: '{}' } }, 'structured_outputs', /structural_tag is not supported/],
      [{ guided_grammar: 'root ::= thing' }, 'guided_grammar', /rule 'thing' is used but not defined/],
      [{ guided_grammar: 'root ::= root "a" | "a"' }, 'guided_grammar', /can reach itself without consuming text/],
      [{ guided_grammar: 'start ::= "a"' }, 'guided_grammar', /no 'root' rule/],
      [{ guided_grammar: 'root ::= "a' }, 'guided_grammar', /line 1, column 10: unterminated literal/],
      [{ guided_grammar: 'root ::= <[12]>' }, 'guided_grammar', /token references/],
      [{ guided_grammar: 'root ::= "a"', guided_regex: 'a' }, 'guided_grammar', /only one kind/],
      [{ structured_outputs: { grammar: 'root ::= [a-' } }, 'structured_outputs', /grammar: line 1, column 10: unterminated character class/],
      [{ guided_grammar: 'root ::= "a"', ignore_eos: true }, 'ignore_eos', /guided decoding/],
      // llama.cpp's names for the same guides.
      [{ grammar: 'root ::= x' }, 'grammar', /rule 'x' is used but not defined/],
      [{ grammar: 5 }, 'grammar', /must be a string/],
      [{ json_schema: { type: 'number', minimum: 1.5 } }, 'json_schema', /'minimum'/],
      [{ grammar: 'root ::= "a"', json_schema: { type: 'object' } }, 'json_schema', /only one kind/],
      [{ structured_outputs: { regex: 'a', typo: 1 } }, 'structured_outputs', /unknown field 'typo'/],
      [{ structured_outputs: { json_object: true, disable_any_whitespace: 'yes' } }, 'structured_outputs', /disable_any_whitespace must be a boolean/],
      [{ structured_outputs: { regex: '*' } }, 'structured_outputs', /nothing to repeat/],
      [{ guided_regex: 'a', ignore_eos: true }, 'ignore_eos', /guided decoding/]]) {
      for (const p of ['/v1/chat/completions', '/v1/completions']) {
        const body = p === '/v1/completions' ? { prompt: 'a', max_tokens: 2, ...guide } : chat(guide);
        assertError(await post(p, body), 400, { param, message });
      }
    }
    const ok = await post('/v1/chat/completions',
      chat({ response_format: { type: 'text' }, guided_json: null, max_tokens: 1 }));
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    for (const p of ['/v1/chat/completions', '/v1/completions']) {
      const body = p === '/v1/completions' ? { prompt: 'a', max_tokens: 2 } : chat();
      for (const extra of [{ response_format: { type: 'json_object' } },
        { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } },
        { guided_json: '{"type": "array"}' }]) {
        const r = await post(p, { ...body, ...extra });
        assert.equal(r.status, 200, r.text);
      }
    }
  });
  test('400, not 500, for a null or wrong-typed optional field', async () => {
    assertError(await post('/v1/chat/completions', chat({ logprobs: null, top_logprobs: 2 })), 400,
      { param: 'top_logprobs' });
    // A null stream option means "not given", as elsewhere.
    const streamed = await post('/v1/chat/completions',
      chat({ stream: true, stream_options: { include_usage: null } }));
    assert.equal(streamed.status, 200, streamed.text);
    assert.match(streamed.text, /data: \[DONE\]/);
    assertError(await post('/v1/chat/completions', chat({ tools: [{ type: 5, function: { name: 'f' } }] })),
      400, { param: 'tools' });
    assertError(await post('/v1/chat/completions',
      chat({ messages: [{ role: 'user', content: [{ type: 5, text: 'x' }] }] })), 400, { param: 'messages' });
    const msgs = [{ role: 'user', content: 'x' }];
    assertError(await post('/tokenize', { prompt: 'x', add_special_tokens: 'yes' }), 400,
      { param: 'add_special_tokens' });
    assertError(await post('/tokenize', { messages: msgs, add_generation_prompt: 'yes' }), 400,
      { param: 'add_generation_prompt' });
  });
  test('400 for integers past 32 bits or negative logprobs, not a silently wrapped value', async () => {
    const body = (extra) => `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,${extra}}`;
    // 2^64 - 1 read as int64 is -1 (top_k: "disabled"); 2^32 + 1 read as int32 is token 1.
    assertError(await post('/v1/chat/completions', body('"top_k":18446744073709551615')), 400,
      { param: 'top_k' });
    assertError(await post('/v1/chat/completions', body('"max_tokens":18446744073709551615')), 400,
      { param: 'max_tokens', message: /out of range/ });
    assertError(await post('/v1/chat/completions', body('"stop_token_ids":[4294967297]')), 400,
      { param: 'stop_token_ids' });
    assertError(await post('/v1/chat/completions', body('"priority":99999999999999')), 400,
      { param: 'priority' });
    assertError(await post('/v1/chat/completions', chat({ logprobs: true, top_logprobs: -1 })), 400,
      { param: 'top_logprobs' });
    // Token ids of prompts and of /detokenize: 2^64 - 1 and 2^32 + 1 too.
    for (const id of ['18446744073709551615', '4294967297']) {
      assertError(await post('/v1/completions', `{"prompt":[1,${id}],"max_tokens":1}`), 400,
        { param: 'prompt' });
      assertError(await post('/detokenize', `{"tokens":[${id}]}`), 400, { param: 'tokens' });
    }
    assertError(await post('/v1/completions', { prompt: 'a', max_tokens: 1, logprobs: -1 }), 400,
      { param: 'logprobs' });
  });
  test('404 unknown model', async () => {
    assertError(await post('/v1/chat/completions', chat({ model: 'gpt-4' })), 404,
      { message: /gpt-4/ });
    assertError(await post('/v1/completions', { model: 'gpt-4', prompt: 'x' }), 404);
  });
  test('404 unknown route, 405 wrong method', async () => {
    assertError(await raw(srv.baseURL, 'GET', '/v1/nothing'), 404);
    assertError(await post('/v2/completions', {}), 404);
    assertError(await raw(srv.baseURL, 'GET', '/v1/chat/completions'), 405);
  });
  test('400 for vLLM parameters out of range or not implemented, naming them', async () => {
    const c = (extra) => ({ prompt: 'hi', max_tokens: 2, ...extra });
    assertError(await post('/v1/completions', c({ allowed_token_ids: [1, 99999999] })), 400,
      { param: 'allowed_token_ids', message: /out of range/ });
    assertError(await post('/v1/completions', c({ allowed_token_ids: [] })), 400,
      { param: 'allowed_token_ids' });
    assertError(await post('/v1/completions', c({ skip_special_tokens: 'no' })), 400,
      { param: 'skip_special_tokens' });
    for (const k of [0, -2, 'x', 100000])
      assertError(await post('/v1/completions', c({ truncate_prompt_tokens: k })), 400,
        { param: 'truncate_prompt_tokens' });
    for (const w of ['x', [''], [3]])
      assertError(await post('/v1/completions', c({ bad_words: w })), 400, { param: 'bad_words' });
    for (const k of [-1, 21, 'x'])
      assertError(await post('/v1/completions', c({ prompt_logprobs: k })), 400,
        { param: 'prompt_logprobs' });
    assertError(await post('/v1/chat/completions', chat({ continue_final_message: 'yes' })), 400,
      { param: 'continue_final_message', message: /must be a boolean/ });
    assertError(await post('/v1/chat/completions',
      chat({ continue_final_message: true, add_generation_prompt: true })), 400,
    { param: 'continue_final_message', message: /cannot both be true/ });
    assertError(await post('/v1/chat/completions', { ...chat({ continue_final_message: true }),
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: ' ' }] }), 400,
    { param: 'continue_final_message', message: /needs text to continue/ });
    // Their defaults are accepted.
    for (const extra of [{ bad_words: [] }, { bad_words: ['x'] }, { prompt_logprobs: null },
      { skip_special_tokens: true }])
      assert.equal((await post('/v1/completions', c(extra))).status, 200);
    assert.equal((await post('/v1/chat/completions', chat({ continue_final_message: false }))).status, 200);
  });
  test('400 tokenize/detokenize', async () => {
    assertError(await post('/detokenize', { tokens: [-1] }), 400, { param: 'tokens' });
    assertError(await post('/tokenize', { prompt: 5 }), 400, { param: 'prompt' });
  });
  test('413 request body too large', async () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(50000) });
    assertError(await post('/v1/completions', big), 413);
    // The server goes on serving.
    assert.equal((await post('/v1/completions', { prompt: 'x', max_tokens: 1 })).status, 200);
  });
  test('400 malformed HTTP', async () => {
    const text = await new Promise((resolve, reject) => {
      const s = net.connect(srv.port, '127.0.0.1', () => s.write('GARBAGE / HTTP/9\r\n\r\n'));
      let buf = '';
      s.on('data', (d) => { buf += d; });
      s.on('end', () => resolve(buf));
      s.on('error', reject);
    });
    assert.match(text, /^HTTP\/1\.1 400/);
    assert.match(text, /"error"/);
  });
});

describe('deeply nested request bodies', { skip: skipUnless(QWEN) }, () => {
  let srv, post;
  before(async () => {
    srv = await startServer(QWEN);  // the default body limit: 200 KB must get through
    post = (p, body) => raw(srv.baseURL, 'POST', p, body);
  });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('400 for a body nested too deeply, and the server goes on', async () => {
    // 100,000 levels in 200 KB: copying such a json value recursed once per level and overflowed
    // the stack (SIGSEGV, the whole server gone), whatever the field.
    const deep = '['.repeat(100000) + ']'.repeat(100000);
    assertError(await post('/v1/completions', `{"prompt":"hi","max_tokens":1,"x":${deep}}`), 400,
      { message: /nests more than 512 levels/ });
    assertError(await post('/v1/chat/completions',
      `{"messages":[{"role":"user","content":"hi","x":${deep}}],"max_tokens":1}`), 400);
    assertError(await post('/tokenize', `{"prompt":"hi","x":${deep}}`), 400);
    // A tool schema of a real depth still goes through.
    const schema = JSON.parse('{"type":"object","properties":{"a":'.repeat(20) + '{}' + '}}'.repeat(20));
    const ok = await post('/v1/chat/completions', chat({
      tools: [{ type: 'function', function: { name: 'f', parameters: schema } }], tool_choice: 'none' }));
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('authentication', { skip: skipUnless(QWEN) }, () => {
  let srv;
  before(async () => { srv = await startServer(QWEN, ['--api-key', 'sekret']); });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('401 missing or wrong bearer token, 200 with the right one', async () => {
    assertError(await raw(srv.baseURL, 'POST', '/v1/completions', { prompt: 'x' }), 401);
    assertError(await raw(srv.baseURL, 'GET', '/v1/models', undefined,
      { authorization: 'Bearer wrong' }), 401);
    await assert.rejects(srv.client({ apiKey: 'wrong' }).models.list(), (e) => e.status === 401);
    const ok = await srv.client({ apiKey: 'sekret' }).completions.create(
      { model: 'test-model', prompt: 'x', max_tokens: 1 });
    assert.equal(ok.choices.length, 1);
    assert.equal((await raw(srv.baseURL, 'GET', '/health')).status, 200);  // not under /v1
  });
});

describe('waiting queue cap', { skip: skipUnless(QWEN) }, () => {
  let srv;
  before(async () => {
    srv = await startServer(QWEN, ['--max-queue-len', '1', '--max-num-seqs', '1']);
  });
  after(async () => { assert.equal((await srv.stop()).code, 0); });

  test('503 + Retry-After when --max-queue-len requests are waiting', async () => {
    const long = { model: 'test-model', prompt: 'x', max_tokens: 400, ignore_eos: true };
    const running = srv.client().completions.create(long);
    await waitFor(async () => metric(await metrics(srv.baseURL), 'vllm:num_requests_running') === 1,
      10000, 'a running request');
    const waiting = srv.client().completions.create({ ...long, max_tokens: 1 });
    await waitFor(async () => metric(await metrics(srv.baseURL), 'vllm:num_requests_waiting') === 1,
      10000, 'a waiting request');
    const r = await raw(srv.baseURL, 'POST', '/v1/completions', { prompt: 'x', max_tokens: 1 });
    assertError(r, 503, { message: /retry later/ });
    assert.equal(r.headers.get('retry-after'), '1');
    await Promise.all([running, waiting]);
  });
});
