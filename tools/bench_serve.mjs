// Load client for `gpt serve` (tools/bench_serve.sh starts the server and runs this): for each
// concurrency C, C clients each loop streaming completions for D seconds (requests in flight at the
// deadline finish and count), and it measures what they saw and the server's memory. Node's stdlib only.
// Usage: node bench_serve.mjs --url http://127.0.0.1:PORT --pid SERVER_PID [--concurrency 1,8,32]
//          [--seconds 60] [--max_tokens 200] [--max_requests 20000] [--mode exact] [--json]
// Per pass: characters/s over all streams (every character received / the pass's wall time);
// characters/s per stream (median over requests of characters / (last chunk - first chunk));
// time to first character p50/p99 (request sent -> first event with text); errors (a status other
// than 200, a broken or short stream, a socket error); VmRSS of the server sampled every second
// (first, max, last). A table on stdout, or JSON lines with --json (the table then on stderr).
import fs from "node:fs";
import http from "node:http";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  if (i + 1 >= args.length) throw new Error(`${name} needs a value`);
  return args[i + 1];
};
const url = new URL(option("--url"));
const pid = option("--pid");
const concurrencies = option("--concurrency", "1,8,32").split(/[ ,]+/).filter(Boolean).map(Number);
const seconds = Number(option("--seconds", "60"));
const maxTokens = Number(option("--max_tokens", "200"));
const maxRequests = Number(option("--max_requests", "20000"));  // per pass, across all its clients
const mode = option("--mode", "exact");
const json = args.includes("--json");
if (url.hostname !== "127.0.0.1" && url.hostname !== "localhost") throw new Error("only a server on this machine");
if (!concurrencies.every((c) => Number.isInteger(c) && c > 0) || !(seconds > 0) || !(maxTokens > 0))
  throw new Error("bad --concurrency, --seconds or --max_tokens");

const prompts = ["ROMEO:", "JULIET:\n", "First Citizen:\nWe are accounted poor citizens", "KING RICHARD III:\n",
  "\n", "To be, or not to be", "MENENIUS:\nWhat work's, my countrymen, in hand? where go you\nWith bats and clubs?"];

function rssKiB() {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

// One streaming request; resolves with what it saw (never rejects).
function streamOnce(agent, body) {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const result = {ok: false, chars: 0, sent: performance.now(), first: null, last: null, error: null};
    let settled = false;
    const finish = (error) => {
      if (settled) return;
      settled = true;
      result.error = error;
      result.ok = !error;
      resolve(result);
    };
    const req = http.request({host: url.hostname, port: url.port, path: "/v1/completions", method: "POST", agent,
      headers: {"Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload)}}, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        res.on("end", () => finish(`HTTP ${res.statusCode}`));
        return;
      }
      res.setEncoding("utf8");
      let buffer = "", done = false, reason = null;
      res.on("data", (data) => {
        buffer += data;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!event.startsWith("data: ")) continue;
          const text = event.slice(6);
          if (text === "[DONE]") {
            done = true;
            continue;
          }
          let chunk;
          try {
            chunk = JSON.parse(text);
          } catch {
            finish("bad JSON in the stream");
            req.destroy();
            return;
          }
          for (const c of chunk.choices ?? []) {
            if (c.text) {
              const now = performance.now();
              result.first ??= now;
              result.last = now;
              for (const _ of c.text) result.chars++;
            }
            if (c.finish_reason) reason = c.finish_reason;
          }
        }
      });
      res.on("end", () => {
        if (!done) finish("stream ended without [DONE]");
        else if (reason !== "length" || result.chars !== body.max_tokens)
          finish(`stream gave ${result.chars} characters, finish_reason ${reason}`);
        else finish(null);
      });
      res.on("error", (e) => finish(`response: ${e.message}`));
    });
    req.on("error", (e) => finish(`request: ${e.message}`));
    req.setTimeout(300_000, () => req.destroy(new Error("no data for 300 s")));
    req.end(payload);
  });
}

const quantile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : NaN);
const median = (values) => quantile([...values].sort((a, b) => a - b), 0.5);

async function pass(concurrency) {
  const agent = new http.Agent({keepAlive: true, maxSockets: concurrency});
  const results = [], rss = [];
  const sample = () => {
    const v = rssKiB();
    if (v !== null) rss.push(v);
  };
  sample();
  const timer = setInterval(sample, 1000);
  const start = performance.now(), deadline = start + seconds * 1000;
  let started = 0;
  const client = async (k) => {
    for (let i = 0; performance.now() < deadline && started < maxRequests; i++) {
      started++;
      results.push(await streamOnce(agent, {prompt: prompts[(k + i) % prompts.length], max_tokens: maxTokens,
        stream: true, seed: 1000 * k + i + 1}));
    }
  };
  await Promise.all(Array.from({length: concurrency}, (_, k) => client(k)));
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(timer);
  sample();
  agent.destroy();
  const good = results.filter((r) => r.ok);
  const ttfc = results.filter((r) => r.first !== null).map((r) => r.first - r.sent).sort((a, b) => a - b);
  const perStream = good.filter((r) => r.last > r.first).map((r) => (r.chars - 1) / ((r.last - r.first) / 1000));
  const errors = results.filter((r) => !r.ok);
  return {
    mode, concurrency, seconds: Number(elapsed.toFixed(2)), max_tokens: maxTokens, requests: results.length,
    completed: good.length, errors: errors.length, error_examples: [...new Set(errors.map((r) => r.error))].slice(0, 3),
    chars: results.reduce((s, r) => s + r.chars, 0),
    chars_per_s: Number((results.reduce((s, r) => s + r.chars, 0) / elapsed).toFixed(1)),
    chars_per_s_per_stream_median: Number(median(perStream).toFixed(1)),
    ttfc_ms_p50: Number(quantile(ttfc, 0.5).toFixed(1)), ttfc_ms_p99: Number(quantile(ttfc, 0.99).toFixed(1)),
    rss_mib_first: Number((rss[0] / 1024).toFixed(1)), rss_mib_max: Number((Math.max(...rss) / 1024).toFixed(1)),
    rss_mib_last: Number((rss[rss.length - 1] / 1024).toFixed(1)), rss_samples: rss.length,
  };
}

const table = json ? process.stderr : process.stdout;
table.write(`gpt serve (${mode}) at ${url.origin}, pid ${pid}: ${seconds} s per concurrency, max_tokens ${maxTokens}\n`);
table.write("| C | mode | s | requests | errors | chars/s | chars/s per stream (median) | TTFC p50 ms | TTFC p99 ms | RSS MiB first / max / last |\n");
table.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
let errors = 0;
for (const c of concurrencies) {
  const r = await pass(c);
  errors += r.errors;
  if (json) process.stdout.write(JSON.stringify(r) + "\n");
  table.write(`| ${c} | ${mode} | ${r.seconds} | ${r.requests} | ${r.errors} | ${r.chars_per_s} | ${r.chars_per_s_per_stream_median} | ` +
    `${r.ttfc_ms_p50} | ${r.ttfc_ms_p99} | ${r.rss_mib_first} / ${r.rss_mib_max} / ${r.rss_mib_last} |\n`);
  if (r.errors) table.write(`  errors: ${r.error_examples.join("; ")}\n`);
}
process.exit(errors ? 1 : 0);
