// Prompt tokens per second: plain prefill (max_tokens 1) vs echo + logprobs (every prompt
// position scored) on a generate server, and /v1/embeddings on an embed server.
// Usage: node bench/prompt_throughput.mjs BASE_URL prefill|score|embed [ROUNDS]
// (docs/performance.md, session 37). Prompts are random ids, new each run, so a server's prefix
// cache never serves them.
const [base, mode, rounds = 3] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 3)];
const post = async (p, b) => {
  const r = await fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });
  const j = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(j));
  return j;
};
let seed = Date.now() % 2147483648;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed; };
const prompt = (n) => Array.from({ length: n }, () => 1000 + (rand() % 100000));
const N = 16, LEN = 512, CONC = 4;
const results = [];
for (let round = 0; round < rounds; ++round) {
  const prompts = Array.from({ length: N }, () => prompt(LEN));
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const p = prompts[next++];
      if (!['prefill', 'score', 'embed'].includes(mode)) throw new Error(`unknown mode ${mode}`);
      if (mode === 'embed') await post('/v1/embeddings', { input: [p], encoding_format: 'base64' });
      else if (mode === 'score') await post('/v1/completions', { prompt: p, max_tokens: 1, echo: true, logprobs: 1, temperature: 0 });
      else await post('/v1/completions', { prompt: p, max_tokens: 1, temperature: 0 });
    }
  };
  await Promise.all(Array.from({ length: CONC }, worker));
  results.push(N * LEN / ((performance.now() - t0) / 1000));
}
results.sort((a, b) => a - b);
console.log(mode, 'prompt tok/s per round', results.map((x) => x.toFixed(1)).join(' '), 'median', results[Math.floor(results.length / 2)].toFixed(1));
