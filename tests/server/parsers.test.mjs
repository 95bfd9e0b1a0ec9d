// Tool calls (--tool-call-parser hermes) and reasoning (--reasoning-parser qwen3 / deepseek_r1) through the
// real HTTP path: the hidden --debug-scripted-output option makes the engine emit chosen text
// (as token ids) for prompts containing a trigger, since a random tiny model never would.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeTempDir, startServer, skipUnless, raw, QWEN, responsesTool } from './helpers.mjs';

const SCRIPTS = [
  { trigger: 'SCRIPT_BOTH', output: '<think>\nI should call two tools.\n</think>\n\nLet me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "CET"}}\n</tool_call>' },
  { trigger: 'SCRIPT_TOOL', output: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' },
  { trigger: 'SCRIPT_THINK', output: '<think>\nLet me think step by step.\n</think>\n\nThe answer is 42.' },
  { trigger: 'SCRIPT_BROKEN', output: '<tool_call>\n{"name": oops}\n</tool_call>' },
];
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } } } } },
  { type: 'function', function: { name: 'get_time', description: 'Time in a zone',
    parameters: { type: 'object', properties: { tz: { type: 'string' } } } } },
];

// A server on tiny-qwen3 whose engine emits the scripts' outputs for their triggers, with `args`;
// stop() ends it and removes the script file.
async function startScripted(scripts, args) {
  const tmp = makeTempDir('xinfer-script-');
  try {
    const file = path.join(tmp.dir, 'script.json');
    writeFileSync(file, JSON.stringify(scripts));
    const srv = await startServer(QWEN, [...args, '--debug-scripted-output', file]);
    return {
      srv,
      async stop() {
        try {
          assert.equal((await srv.stop()).code, 0);
        } finally {
          tmp.remove();
        }
      },
    };
  } catch (e) {
    tmp.remove();
    throw e;
  }
}

describe('tool-call and reasoning parsers (scripted model)', { skip: skipUnless(QWEN) }, () => {
  let scripted, srv, client;
  before(async () => {
    scripted = await startScripted(SCRIPTS, ['--reasoning-parser', 'qwen3',
      '--enable-auto-tool-choice', '--tool-call-parser', 'hermes']);
    srv = scripted.srv;
    client = srv.client();
  });
  after(async () => { await scripted?.stop(); });
  const ask = (content, extra = {}) => ({ model: 'test-model', tools: TOOLS,
    messages: [{ role: 'user', content }], max_tokens: 200, ...extra });

  test('non-streaming tool call', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_TOOL weather in Paris?'));
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.content, null);
    assert.equal(c.message.tool_calls.length, 1);
    const call = c.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.match(call.id, /^chatcmpl-tool-/);
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  });

  test('streamed tool-call deltas accumulate to the same calls', async () => {
    const stream = await client.chat.completions.create(ask('SCRIPT_BOTH go', { stream: true }));
    const calls = [];
    let content = '', reasoning = '', finish;
    for await (const chunk of stream) {
      const ch = chunk.choices[0];
      if (!ch) continue;
      content += ch.delta.content ?? '';
      reasoning += ch.delta.reasoning_content ?? '';
      for (const tc of ch.delta.tool_calls ?? []) {
        calls[tc.index] ??= { id: '', name: '', arguments: '' };
        if (tc.id) calls[tc.index].id = tc.id;
        if (tc.function?.name) calls[tc.index].name += tc.function.name;
        calls[tc.index].arguments += tc.function?.arguments ?? '';
      }
      finish = ch.finish_reason ?? finish;
    }
    assert.equal(finish, 'tool_calls');
    assert.equal(reasoning, '\nI should call two tools.\n');
    assert.equal(content.trim(), 'Let me check.');
    assert.equal(calls.length, 2);
    assert.equal(calls[0].name, 'get_weather');
    assert.deepEqual(JSON.parse(calls[0].arguments), { city: 'Oslo', unit: 'celsius' });
    assert.equal(calls[1].name, 'get_time');
    assert.deepEqual(JSON.parse(calls[1].arguments), { tz: 'CET' });
    assert.notEqual(calls[0].id, calls[1].id);
  });

  test('the client stream helper parses tool calls', async () => {
    const runner = client.chat.completions.stream(ask('SCRIPT_TOOL weather?'));
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  });

  test('reasoning_content, non-streaming and streaming', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_THINK what is 6*7?'));
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, '\nLet me think step by step.\n');
    assert.equal(m.content, '\n\nThe answer is 42.');
    assert.equal(r.choices[0].finish_reason, 'stop');
    let reasoning = '', content = '';
    for await (const chunk of await client.chat.completions.create(ask('SCRIPT_THINK 6*7?', { stream: true }))) {
      reasoning += chunk.choices[0]?.delta.reasoning_content ?? '';
      content += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(reasoning, m.reasoning_content);
    assert.equal(content, m.content);
  });

  test('/v1/responses: a reasoning item before the message, streamed the same', async () => {
    const req = { model: 'test-model', input: 'SCRIPT_THINK what is 6*7?', max_output_tokens: 200 };
    const r = await client.responses.create(req);
    assert.equal(r.status, 'completed');
    assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message']);
    assert.equal(r.output[0].content[0].text, '\nLet me think step by step.\n');
    assert.equal(r.output_text, '\n\nThe answer is 42.');
    // The client's stream helper builds the same items from the events.
    const assembled = await client.responses.stream(req).finalResponse();
    assert.equal(assembled.status, 'completed');
    assert.deepEqual(assembled.output.map((o) => o.type), ['reasoning', 'message']);
    assert.equal(assembled.output[0].content[0].text, r.output[0].content[0].text);
    assert.equal(assembled.output[1].content[0].text, r.output_text);
  });

  test('/v1/responses: function tools give function_call items, streamed the same', async () => {
    const tools = TOOLS.map(responsesTool);
    const req = { model: 'test-model', input: 'SCRIPT_BOTH go', tools, max_output_tokens: 200 };
    const r = await client.responses.create(req);
    assert.equal(r.status, 'completed');
    assert.deepEqual(r.tools, tools);
    const summary = (output) => output.map((o) => o.type === 'function_call'
      ? [o.type, o.name, JSON.parse(o.arguments), o.status] : [o.type, o.content[0].text]);
    const expected = [['reasoning', '\nI should call two tools.\n'], ['message', '\n\nLet me check.\n'],
      ['function_call', 'get_weather', { city: 'Oslo', unit: 'celsius' }, 'completed'],
      ['function_call', 'get_time', { tz: 'CET' }, 'completed']];
    assert.deepEqual(summary(r.output), expected);
    assert.match(r.output[2].id, /^fc_/);
    assert.notEqual(r.output[2].call_id, r.output[3].call_id);
    // The client's stream helper assembles the same items, the arguments from their deltas.
    const stream = client.responses.stream(req);
    const argDeltas = [];
    stream.on('response.function_call_arguments.delta', (e) => argDeltas.push(e.delta));
    const assembled = await stream.finalResponse();
    assert.deepEqual(summary(assembled.output), expected);
    assert.equal(argDeltas.join(''), r.output[2].arguments + r.output[3].arguments);
    // A call alone: no message item.
    const only = await client.responses.create({ ...req, input: 'SCRIPT_TOOL weather?' });
    assert.deepEqual(summary(only.output),
      [['function_call', 'get_weather', { city: 'Paris' }, 'completed']]);
  });

  test('/v1/responses: the output passed back with the results renders as the chat round trip', async () => {
    // The agent loop over the Responses API (stateless): the client sends the earlier output
    // items back, with a function_call_output per call. The prompt must be the one the chat
    // round trip renders: the calls as one assistant turn after its text, the reasoning inside
    // that turn (Qwen3's template shows it after the last user message), the results as tool
    // messages.
    const tools = TOOLS.map(responsesTool);
    const first = await client.responses.create({ model: 'test-model', input: 'SCRIPT_BOTH go',
      tools, max_output_tokens: 200 });
    const [reasoning, message, weather, time] = first.output;
    const results = [[weather, '{"temp": 12}'], [time, '13:00']];
    const followUp = await client.responses.create({ model: 'test-model', tools,
      max_output_tokens: 2, input: [{ role: 'user', content: 'SCRIPT_BOTH go' }, ...first.output,
        ...results.map(([call, output]) => ({ type: 'function_call_output', call_id: call.call_id, output }))] });
    const chatMessages = (withReasoning) => [
      { role: 'user', content: 'SCRIPT_BOTH go' },
      { role: 'assistant', content: message.content[0].text,
        ...(withReasoning ? { reasoning_content: reasoning.content[0].text } : {}),
        tool_calls: [weather, time].map((c) => ({ id: c.call_id, type: 'function',
          function: { name: c.name, arguments: c.arguments } })) },
      ...results.map(([call, content]) => ({ role: 'tool', tool_call_id: call.call_id, content }))];
    const count = async (messages) => (await raw(srv.baseURL, 'POST', '/tokenize',
      { model: 'test-model', tools: TOOLS, messages })).json.count;
    assert.equal(followUp.usage.input_tokens, await count(chatMessages(true)));
    assert.notEqual(await count(chatMessages(true)), await count(chatMessages(false)));
  });

  test('parallel_tool_calls false: the first call only, whole, streamed and on /v1/responses', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_BOTH go', { parallel_tool_calls: false }));
    assert.deepEqual(r.choices[0].message.tool_calls.map((c) => c.function.name), ['get_weather']);
    const names = [];
    const stream = await client.chat.completions.create(
      ask('SCRIPT_BOTH go', { parallel_tool_calls: false, stream: true }));
    for await (const chunk of stream)
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) if (tc.function?.name) names.push(tc.function.name);
    assert.deepEqual(names, ['get_weather']);
    const rr = await client.responses.create({ model: 'test-model', input: 'SCRIPT_BOTH go',
      tools: TOOLS.map(responsesTool), parallel_tool_calls: false, max_output_tokens: 200 });
    assert.deepEqual(rr.output.filter((o) => o.type === 'function_call').map((o) => o.name), ['get_weather']);
    assert.equal(rr.parallel_tool_calls, false);
  });

  test('tool_choice none leaves the text alone', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_TOOL', { tool_choice: 'none' }));
    assert.match(r.choices[0].message.content, /<tool_call>/);
    assert.deepEqual(r.choices[0].message.tool_calls ?? [], []);
  });

  test('a tool call sent back as history (content null) renders like content ""', async () => {
    // The OpenAI round trip: the assistant's tool-call message as the client got it (content
    // null), then the tool's result. Qwen3's template tests `'</think>' in message.content`:
    // null must reach it as "" (as vLLM passes it), or the follow-up request fails.
    const first = await client.chat.completions.create(ask('SCRIPT_TOOL weather in Paris?'));
    const call = first.choices[0].message;
    assert.equal(call.content, null);
    const history = (assistant) => [
      { role: 'user', content: 'SCRIPT_TOOL weather in Paris?' },
      assistant,
      { role: 'tool', tool_call_id: call.tool_calls[0].id, content: '{"temp": 12}' },
    ];
    const r = await client.chat.completions.create({ model: 'test-model', tools: TOOLS,
      messages: history(call), max_tokens: 3, ignore_eos: true });
    assert.equal(r.choices[0].finish_reason, 'length');
    // /tokenize renders the same prompt: null, an absent content and "" alike, with the call.
    const { content, ...noContent } = call;
    const counts = [];
    for (const assistant of [call, noContent, { ...call, content: '' }]) {
      const t = await raw(srv.baseURL, 'POST', '/tokenize',
        { model: 'test-model', tools: TOOLS, messages: history(assistant) });
      assert.equal(t.status, 200, JSON.stringify(t.json));
      counts.push(t.json.count);
    }
    assert.deepEqual(counts, [r.usage.prompt_tokens, r.usage.prompt_tokens, r.usage.prompt_tokens]);
    const text = await raw(srv.baseURL, 'POST', '/detokenize',
      { model: 'test-model', tokens: (await raw(srv.baseURL, 'POST', '/tokenize',
        { model: 'test-model', tools: TOOLS, messages: history(call) })).json.tokens });
    assert.match(text.json.prompt, /"name": "get_weather"/);
    assert.match(text.json.prompt, /\{"temp": 12\}/);
  });

  test('/tokenize joins content parts as a chat request does', async () => {
    const parts = [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }];
    const joined = [{ role: 'user', content: 'a\nb' }];
    const a = await raw(srv.baseURL, 'POST', '/tokenize', { messages: parts });
    const b = await raw(srv.baseURL, 'POST', '/tokenize', { messages: joined });
    assert.equal(a.status, 200, JSON.stringify(a.json));
    assert.deepEqual(a.json.tokens, b.json.tokens);
  });

  // Tools reach the template with their keys in the order the client sent them, as vLLM renders
  // them (transformers' tojson does not sort keys): not alphabetically.
  test('tool schemas keep their key order in the prompt', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object',
      properties: { zeta: { type: 'string' }, alpha: { type: 'integer' } } } } }];
    const t = await raw(srv.baseURL, 'POST', '/tokenize',
      { messages: [{ role: 'user', content: 'hi' }], tools });
    assert.equal(t.status, 200, t.text);
    const d = await raw(srv.baseURL, 'POST', '/detokenize', { tokens: t.json.tokens });
    assert.ok(d.json.prompt.includes('{"type": "function", "function": {"name": "f", "parameters": '
      + '{"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}'),
    d.json.prompt);
  });

  test('a malformed tool call stays content', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_BROKEN'));
    assert.match(r.choices[0].message.content, /oops/);
    assert.equal(r.choices[0].finish_reason, 'stop');
  });
});

// --reasoning-parser deepseek_r1 (QwQ, DeepSeek-R1-Distill-Qwen): their chat templates open
// "<think>" in the prompt, so the output starts inside the reasoning.
describe('deepseek_r1 reasoning parser (scripted model)', { skip: skipUnless(QWEN) }, () => {
  let scripted, client;
  before(async () => {
    // (--enable-reasoning: older vLLM command lines pass it with the parser.)
    scripted = await startScripted([
      { trigger: 'SCRIPT_R1_CUT', output: 'Still thinking about the' },
      { trigger: 'SCRIPT_R1', output: 'Six times seven.\n</think>\n\nThe answer is 42.' },
    ], ['--reasoning-parser', 'deepseek_r1', '--enable-reasoning']);
    client = scripted.srv.client();
  });
  after(async () => { await scripted?.stop(); });
  const ask = (content, extra = {}) => ({ model: 'test-model',
    messages: [{ role: 'user', content }], max_tokens: 100, ...extra });

  test('reasoning until </think>, streamed the same', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_R1 what is 6*7?'));
    const m = r.choices[0].message;
    assert.equal(m.reasoning_content, 'Six times seven.\n');
    assert.equal(m.content, '\n\nThe answer is 42.');
    let reasoning = '', content = '';
    for await (const chunk of await client.chat.completions.create(ask('SCRIPT_R1 6*7?', { stream: true }))) {
      reasoning += chunk.choices[0]?.delta.reasoning_content ?? '';
      content += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(reasoning, m.reasoning_content);
    assert.equal(content, m.content);
  });

  test('an output that never closes its thinking is all reasoning', async () => {
    const r = await client.chat.completions.create(ask('SCRIPT_R1_CUT think'));
    assert.equal(r.choices[0].message.reasoning_content, 'Still thinking about the');
    assert.equal(r.choices[0].message.content, null);
  });

  test('other parsers are refused at startup', async () => {
    await assert.rejects(startServer(QWEN, ['--reasoning-parser', 'granite']),
      /--reasoning-parser: qwen3 or deepseek_r1, got 'granite'/);
  });
});
