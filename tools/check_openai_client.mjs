// Checks a running `gpt serve` with OpenAI's official Node client (tools/check_openai_client.sh
// installs it and starts the server): every answer through the client must be what `gpt sample`
// prints for the same model, prompt, seed and sampling flags.
// Usage: node check_openai_client.mjs --gpt PATH/TO/gpt --out_dir DIR --base_url http://127.0.0.1:PORT/v1
// OPENAI_CLIENT_DIR: the folder whose node_modules holds openai (check_openai_client.sh's cache);
// OPENAI_API_KEY: the server's --api_key (a client with another key must be refused).
// Prints one PASS/FAIL line per check; exits 1 when one fails.
import {execFileSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {createRequire} from "node:module";

const clientDir = path.resolve(process.env.OPENAI_CLIENT_DIR ?? ".");
const OpenAI = createRequire(path.join(clientDir, "package.json"))("openai");
const clientVersion = JSON.parse(fs.readFileSync(path.join(clientDir, "node_modules", "openai", "package.json"), "utf8")).version;

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i < 0 || i + 1 >= args.length) throw new Error(`missing ${name}`);
  return args[i + 1];
};
const gpt = option("--gpt"), outDir = option("--out_dir"), baseURL = option("--base_url");
const modelId = path.basename(path.resolve(outDir));
const apiKey = process.env.OPENAI_API_KEY ?? "unused";
const client = new OpenAI({baseURL, apiKey, maxRetries: 0, timeout: 60_000});

let failures = 0;
const check = (name, ok, detail) => {
  if (!ok) failures++;
  console.log(`${ok ? "PASS" : "FAIL"} ${name}: ${detail}`);
};
const show = (text) => JSON.stringify(text);
const chars = (text) => Array.from(text);

// gpt sample's text after the prompt: each sample is prompt + max_new_tokens characters + a line of dashes.
const separator = "\n---------------\n";
function sample(prompt, maxNew, seed, numSamples = 1) {
  const out = execFileSync(gpt, ["sample", "--out_dir", outDir, "--prompt", prompt, "--max_new_tokens", String(maxNew),
    "--seed", String(seed), "--num_samples", String(numSamples), "--temperature", "0.8", "--quiet"], {encoding: "utf8"});
  const all = chars(out), size = chars(prompt).length + maxNew + separator.length, texts = [];
  if (all.length !== size * numSamples) throw new Error(`gpt sample printed ${all.length} characters, expected ${size * numSamples}`);
  for (let k = 0; k < numSamples; k++) {
    const piece = all.slice(k * size, (k + 1) * size).join("");
    if (!piece.startsWith(prompt) || !piece.endsWith(separator)) throw new Error(`unexpected gpt sample output ${show(piece)}`);
    texts.push(piece.slice(prompt.length, piece.length - separator.length));
  }
  return texts;
}

const base = {model: modelId, prompt: "ROMEO:", max_tokens: 40, seed: 7, temperature: 0.8};
const [reference] = sample("ROMEO:", 40, 7);
const pair = sample("ROMEO:", 40, 7, 2);

async function attempt(name, body) {
  try {
    await body();
  } catch (e) {
    check(name, false, `threw ${e?.constructor?.name}: ${e?.message}`);
  }
}

console.log(`openai ${clientVersion} against ${baseURL}, model ${modelId}`);

await attempt("completion", async () => {
  const r = await client.completions.create(base);
  const c = r.choices[0];
  check("completion", r.object === "text_completion" && r.model === modelId && r.choices.length === 1 && c.index === 0 &&
    c.text === reference && c.finish_reason === "length" && r.usage?.completion_tokens === 40 && r.usage?.prompt_tokens === 6,
    `${show(c.text)} ${c.text === reference ? "==" : "!="} gpt sample's ${show(reference)}, finish_reason ${c.finish_reason}, ` +
    `usage ${JSON.stringify(r.usage)}, model ${r.model}`);
});

await attempt("stream", async () => {
  const stream = await client.completions.create({...base, stream: true});
  let text = "", chunks = 0, finish = null, ids = new Set();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    for (const c of chunk.choices) {
      if (c.index !== 0) throw new Error(`choice index ${c.index}`);
      text += c.text;
      if (c.text) chunks++;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check("stream", text === reference && finish === "length" && ids.size === 1,
    `${chunks} chunks with text, concatenated ${text === reference ? "==" : "!="} the completion's, finish_reason ${finish}, ${ids.size} id(s)`);
});

await attempt("logprobs", async () => {
  const r = await client.completions.create({...base, logprobs: 3});
  const c = r.choices[0], lp = c.logprobs;
  const finite = (v) => Number.isFinite(v) && v <= 0;
  const ok = lp && lp.token_logprobs?.length === 40 && lp.tokens?.length === 40 && lp.tokens.join("") === c.text &&
    lp.top_logprobs?.length === 40 && lp.top_logprobs.every((t) => Object.keys(t).length === 3 && Object.values(t).every(finite)) &&
    lp.token_logprobs.every(finite) && lp.text_offset?.length === 40 && c.text === reference;
  check("logprobs", Boolean(ok), `${lp?.token_logprobs?.length} token_logprobs, top_logprobs with ` +
    `${lp?.top_logprobs?.[0] && Object.keys(lp.top_logprobs[0]).length} entries, text ${c.text === reference ? "==" : "!="} gpt sample's, ` +
    `first ${show(lp?.tokens?.[0])} ${lp?.token_logprobs?.[0]?.toFixed(4)}, text_offset starts ${lp?.text_offset?.[0]}`);
});

await attempt("n", async () => {
  const r = await client.completions.create({...base, n: 2});
  const texts = r.choices.map((c) => c.text), indexes = r.choices.map((c) => c.index);
  check("n", r.choices.length === 2 && indexes.join() === "0,1" && texts[0] === pair[0] && texts[1] === pair[1],
    `${r.choices.length} choices (index ${indexes}), ${texts.map((t, i) => (t === pair[i] ? "==" : "!=")).join(" and ")} ` +
    `gpt sample --num_samples 2's; choice 1 ${show(texts[1])}`);
});

await attempt("stop", async () => {
  const r = await client.completions.create({...base, stop: ["\n"]});
  const c = r.choices[0], at = reference.indexOf("\n");
  const expected = at < 0 ? reference : reference.slice(0, at), reason = at < 0 ? "length" : "stop";
  check("stop", c.text === expected && c.finish_reason === reason,
    `${show(c.text)}, finish_reason ${c.finish_reason} (expected ${show(expected)}, ${reason})`);
});

await attempt("stop (streamed)", async () => {
  // Two characters from the middle of the reference: the server has to hold back a possible start.
  const stop = reference.slice(20, 22), expected = reference.slice(0, reference.indexOf(stop));
  const stream = await client.completions.create({...base, stream: true, stop: [stop, "zzzz"]});
  let text = "", finish = null;
  for await (const chunk of stream) for (const c of chunk.choices) {
    text += c.text;
    if (c.finish_reason) finish = c.finish_reason;
  }
  check("stop (streamed)", text === expected && finish === "stop",
    `stop ${show(stop)}: ${show(text)}, finish_reason ${finish} (expected ${show(expected)})`);
});

await attempt("batched", async () => {
  // The same text while another request is generating (shares the server's steps); then close that
  // stream early and see its slot freed.
  const controller = new AbortController();
  const other = await client.completions.create({model: modelId, prompt: "JULIET:", max_tokens: 2000, seed: 99, stream: true},
    {signal: controller.signal});
  const iterator = other[Symbol.asyncIterator]();
  await iterator.next();
  const r = await client.completions.create(base);
  const text = r.choices[0].text;
  controller.abort();
  await iterator.next().catch(() => {});
  const health = async () => (await (await fetch(baseURL.replace(/\/v1$/, "/health"))).json());
  let h = await health();
  for (let i = 0; i < 50 && h.slots_busy !== 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    h = await health();
  }
  check("batched", text === reference && h.slots_busy === 0,
    `alongside a 2000-character stream: ${text === reference ? "==" : "!="} gpt sample's; after closing that stream ` +
    `slots_busy ${h.slots_busy} of ${h.slots}`);
});

await attempt("models", async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m);
  const m = models.find((x) => x.id === modelId);
  check("models", models.length === 1 && m?.object === "model" && typeof m?.created === "number" && m?.owned_by === "gpt",
    `models.list(): ${models.map((x) => x.id).join(", ")} (object ${m?.object}, owned_by ${m?.owned_by}, ` +
    `block_size ${m?.meta?.block_size}, vocab_size ${m?.meta?.vocab_size})`);
});

await attempt("error", async () => {
  try {
    await client.completions.create({...base, temperature: -1});
    check("error", false, "temperature -1 was accepted");
  } catch (e) {
    check("error", e instanceof OpenAI.APIError && e.status === 400 && /temperature/.test(e.message) &&
      e.param === "temperature" && e.type === "invalid_request_error",
      `temperature -1: ${e.constructor.name} (APIError: ${e instanceof OpenAI.APIError}), status ${e.status}, ` +
      `param ${e.param}, type ${e.type}, message ${show(e.message)}`);
  }
});

await attempt("api key", async () => {
  const stranger = new OpenAI({baseURL, apiKey: `${apiKey}-wrong`, maxRetries: 0, timeout: 60_000});
  try {
    await stranger.completions.create(base);
    check("api key", false, "a wrong key was accepted");
  } catch (e) {
    check("api key", e instanceof OpenAI.AuthenticationError && e.status === 401,
      `a wrong key: ${e.constructor.name}, status ${e.status}, message ${show(e.message)}`);
  }
});

process.exit(failures ? 1 : 0);
