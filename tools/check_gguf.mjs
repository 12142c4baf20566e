// Checks a GGUF file written by `gpt export --format gguf` in llama.cpp itself (through
// node-llama-cpp, which tools/check_gguf.sh installs): for each case (a prompt file and the JSON
// that `gpt sample --temperature 0 --logprobs` wrote for it),
//   1. llama.cpp's tokenization of the prompt equals ours;
//   2. llama.cpp's next-token log-probabilities along our tokens (prompt, then our greedy text)
//      agree with ours within --tolerance (every id whose log-probability in ours is above -15);
//   3. llama.cpp's own greedy continuation equals ours, or parts from it only where our top two
//      log-probabilities are closer than twice the tolerance (each may move by the tolerance, so
//      their order may swap); where it parts is reported either way.
// Usage: node check_gguf.mjs --model M.gguf --tolerance T [--kv f16|f32] CASE.txt:CASE.json ...
// NODE_LLAMA_CPP_DIR: the folder whose node_modules holds node-llama-cpp (check_gguf.sh's cache).
// Prints one JSON line per case; exits 1 when a check fails.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const packageDir = path.join(process.env.NODE_LLAMA_CPP_DIR ?? ".", "node_modules", "node-llama-cpp");
const {getLlama} = await import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const modelPath = option("--model");
const tolerance = Number(option("--tolerance", "1e-4"));
const kvType = option("--kv", "f32").toUpperCase();
const cases = args;

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath});
const context = await model.createContext({
  contextSize: 512, batchSize: 512, sequences: 2, threads: Number(process.env.CHECK_GGUF_THREADS ?? 1), flashAttention: false,
  experimentalKvCacheKeyType: kvType, experimentalKvCacheValueType: kvType,
});
let failed = false;
const fail = (message) => {
  failed = true;
  console.log("FAIL " + message);
};

for (const item of cases) {
  const [promptFile, oursFile] = item.split(":");
  const prompt = fs.readFileSync(promptFile, "utf8");
  const ours = JSON.parse(fs.readFileSync(oursFile, "utf8"));
  const V = ours.vocab_size, n = ours.prompt_tokens;
  const expectedPrompt = ours.tokens.slice(0, n);
  const result = {case: promptFile, prompt_tokens: n};

  // 1. tokenization
  const theirs = Array.from(model.tokenize(prompt, false));
  result.tokenization_equal = JSON.stringify(theirs) === JSON.stringify(expectedPrompt);
  if (!result.tokenization_equal)
    fail(`${promptFile}: llama.cpp tokenizes the prompt as ${JSON.stringify(theirs)}, we as ${JSON.stringify(expectedPrompt)}`);
  if (model.detokenize(expectedPrompt) !== prompt) fail(`${promptFile}: llama.cpp detokenizes our ids to another text`);

  // 2. log-probabilities along our tokens (teacher forcing), every position
  const sequence = context.getSequence();
  const input = ours.tokens.slice(0, ours.tokens.length - 1).map((token) => [token, {
    generateNext: {probabilities: true, options: {temperature: 1, topK: V, topP: 1, minP: 0}},
  }]);
  const outputs = await sequence.controlledEvaluate(input);
  let maxDiff = 0, worst = null;
  outputs.forEach((output, position) => {
    const probabilities = output.next.probabilities;
    ours.logprobs[position].forEach((logprob, id) => {
      if (logprob < -15) return;
      const p = probabilities.get(id) ?? 0;
      const diff = Math.abs(Math.log(p) - logprob);
      if (!(diff <= maxDiff)) {
        maxDiff = diff;
        worst = {position, id};
      }
    });
  });
  result.max_logprob_diff = maxDiff;
  result.worst = worst;
  if (!(maxDiff <= tolerance)) fail(`${promptFile}: log-probabilities differ by ${maxDiff} > ${tolerance} at ${JSON.stringify(worst)}`);
  sequence.dispose();

  // 3. llama.cpp's greedy continuation against ours
  const wanted = ours.tokens.length - n;
  const greedySequence = context.getSequence();
  const generated = [];
  for await (const token of greedySequence.evaluate(theirs, {temperature: 0})) {
    generated.push(token);
    if (generated.length >= wanted) break;
  }
  greedySequence.dispose();
  const ourGreedy = ours.tokens.slice(n);
  let part = generated.findIndex((token, i) => token !== ourGreedy[i]);
  if (part < 0 && generated.length < wanted) part = generated.length;
  result.greedy_tokens = wanted;
  result.greedy_parts_at = part;  // -1: equal throughout
  if (part >= 0) {
    const row = ours.logprobs[n - 1 + part];
    const sorted = [...row].sort((a, b) => b - a);
    result.top_two_margin_there = sorted[0] - sorted[1];
    if (!(result.top_two_margin_there < 2 * tolerance))
      fail(`${promptFile}: greedy text parts at generated token ${part}, where our top two differ by ${result.top_two_margin_there}`);
  }
  console.log(JSON.stringify(result));
}
await context.dispose();
await model.dispose();
process.exit(failed ? 1 : 0);
