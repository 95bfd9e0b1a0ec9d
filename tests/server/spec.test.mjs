// Speculative decoding (--speculative-config, method "ngram") through the official OpenAI
// client: a server with drafts answers exactly what one without them answers (text, logprobs,
// finish reasons, usage; streamed or not; alone or concurrently), and exports vLLM's
// spec_decode counters. (That every token is plain decoding's is engine_spec_test.cc's.)
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skipUnless, STORIES, metrics, metric } from './helpers.mjs';

const SPEC = JSON.stringify({ method: 'ngram', num_speculative_tokens: 4, prompt_lookup_max: 3,
  prompt_lookup_min: 1 });

describe('speculative decoding', { skip: skipUnless(STORIES) }, () => {
  test('answers as plain decoding does and is counted', async () => {
    const plain = await startServer(STORIES);
    const spec = await startServer(STORIES, ['--speculative-config', SPEC]);
    try {
      const requests = [
        { prompt: 'Once upon a time', max_tokens: 64, temperature: 0, logprobs: 2 },
        { prompt: 'Lily and Tom went to the park.', max_tokens: 48, temperature: 0.8, seed: 3, n: 2, logprobs: 0 },
        { prompt: 'Once upon a time', max_tokens: 64, temperature: 0, stop: ['park'] },
        { prompt: 'The little dog', max_tokens: 40, temperature: 0, frequency_penalty: 0.5 },
      ];
      const ask = (srv, body) => srv.client().completions.create({ model: 'test-model', ...body });
      const want = [];
      for (const body of requests) want.push(await ask(plain, body));
      const same = (got, exp, what) => {
        assert.equal(got.choices.length, exp.choices.length, what);
        for (const [i, c] of exp.choices.entries()) {
          assert.equal(got.choices[i].text, c.text, what);
          assert.equal(got.choices[i].finish_reason, c.finish_reason, what);
          assert.deepEqual(got.choices[i].logprobs, c.logprobs, what);
        }
        assert.deepEqual(got.usage, exp.usage, what);
      };
      for (const [i, body] of requests.entries()) same(await ask(spec, body), want[i], `request ${i}`);
      // Concurrently: each answer as alone.
      const together = await Promise.all(requests.map((body) => ask(spec, body)));
      for (const [i, got] of together.entries()) same(got, want[i], `concurrent request ${i}`);
      // Streamed: the same text, however many tokens a chunk carries.
      const stream = await spec.client().completions.create({ model: 'test-model', ...requests[0], stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      assert.equal(text, want[0].choices[0].text);

      const m = await metrics(spec.baseURL);
      const drafts = metric(m, 'vllm:spec_decode_num_drafts_total');
      const draftTokens = metric(m, 'vllm:spec_decode_num_draft_tokens_total');
      const accepted = metric(m, 'vllm:spec_decode_num_accepted_tokens_total');
      assert.ok(drafts > 0 && accepted > 0 && accepted <= draftTokens, JSON.stringify({ drafts, draftTokens, accepted }));
      const perPosition = [0, 1, 2, 3].map((p) => metric(m, 'vllm:spec_decode_num_accepted_tokens_per_pos_total', `position="${p}"`));
      assert.equal(perPosition.reduce((a, b) => a + b, 0), accepted);
      // Fewer steps for the same tokens: generation tokens equal, computed ones not counted twice.
      const pm = await metrics(plain.baseURL);
      assert.equal(metric(m, 'vllm:generation_tokens_total'), metric(pm, 'vllm:generation_tokens_total') * 2 + want[0].usage.completion_tokens);
      assert.equal(metric(pm, 'vllm:spec_decode_num_drafts_total'), undefined);
    } finally {
      await plain.stop();
      await spec.stop();
    }
  });

  test('a configuration it cannot run is refused at startup, by name', async () => {
    for (const [config, message] of [
      ['{"method": "eagle3", "model": "x", "num_speculative_tokens": 2}', /method 'eagle3' is not supported; method "ngram"/],
      ['{"method": "ngram"}', /needs num_speculative_tokens/],
      ['not json', /speculative_config must be a JSON object/]]) {
      await assert.rejects(startServer(STORIES, ['--speculative-config', config]),
        (e) => message.test(e.message), config);
    }
  });
});
