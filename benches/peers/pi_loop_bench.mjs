// The standard agent-loop workload (crates/makai-agent/examples/loop_bench) run
// with pi-agent-core, for side-by-side figures in one run (scripts/bench-peers.sh).
//
//   MOCK_URL=http://127.0.0.1:18080/v1 API=openai-completions RUNS=200 CONCURRENCY=1 \
//     node benches/peers/pi_loop_bench.mjs
//
// Needs pi's packages (scripts/setup-pi-client.sh installs them) on NODE_PATH, or
// PI_MODULES pointing at their node_modules folder. Same inputs, same checks and
// the same output line as the makai bench, with peer=pi.
import path from "node:path";
import { pathToFileURL } from "node:url";

// pi's packages are ES modules: import them by file from PI_MODULES when given.
const load = (pkg) => {
  const modules = process.env.PI_MODULES;
  return modules
    ? import(pathToFileURL(path.join(modules, pkg, "dist", "index.js")).href)
    : import(pkg);
};
const { Agent } = await load("@mariozechner/pi-agent-core");
const { Type } = await load("@mariozechner/pi-ai");

const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined) return fallback;
  const n = Number.parseInt(v, 10);
  if (!Number.isFinite(n)) throw new Error(`${name}=${v} is not a whole number`);
  return n;
};
const url = process.env.MOCK_URL;
if (!url) {
  console.error("pi_loop_bench: set MOCK_URL to a server that follows the bench script");
  process.exit(2);
}
const api = process.env.API ?? "openai-completions";
if (api !== "openai-completions" && api !== "anthropic-messages") {
  console.error(`pi_loop_bench: API=${api} is not benchmarked`);
  process.exit(2);
}
const runs = env("RUNS", 200);
const concurrency = Math.max(1, env("CONCURRENCY", 1));
const tokens = env("TOKENS", 200);
const toolRounds = env("TOOL_ROUNDS", 5);

const model = {
  id: "mock-model",
  name: "mock-model",
  api,
  provider: "mock",
  // pi's Anthropic provider appends /v1/messages itself.
  baseUrl: api === "anthropic-messages" ? url.replace(/\/v1\/?$/, "") : url,
  reasoning: false,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128000,
  maxTokens: 4096,
};
const echo = {
  name: "echo",
  label: "echo",
  description: "Returns its text argument.",
  parameters: Type.Object({ text: Type.String({ description: "The text to return." }) }),
  execute: async (_id, params) => ({ content: [{ type: "text", text: params.text }], details: {} }),
};
const expectedText =
  Array.from({ length: tokens - 1 }, (_, i) => `w${i} `).join("") + "[final]";

async function oneRun() {
  const agent = new Agent({
    initialState: { systemPrompt: "", model, thinkingLevel: "off", tools: [echo], messages: [] },
    getApiKey: () => "bench-key",
  });
  let events = 0, textDeltas = 0, toolOk = 0, toolErr = 0;
  agent.subscribe((e) => {
    events++;
    if (e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta") textDeltas++;
    if (e.type === "tool_execution_end") e.isError ? toolErr++ : toolOk++;
  });
  await agent.prompt("Run the benchmark script.");
  const last = agent.state.messages.at(-1);
  const text = (last?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
  let failure = null;
  if (text !== expectedText) failure = `final text mismatch: ...${text.slice(-40)}`;
  else if (toolOk !== toolRounds || toolErr !== 0) failure = `tool executions: ${toolOk} ok, ${toolErr} errors`;
  else if (textDeltas !== tokens * (toolRounds + 1)) failure = `saw ${textDeltas} text deltas`;
  return { events, textDeltas, failure };
}

const started = performance.now();
const results = [];
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(concurrency, runs) }, async () => {
    while (next < runs) {
      next++;
      results.push(await oneRun());
    }
  }),
);
const wall = (performance.now() - started) / 1000;
const events = results.reduce((a, r) => a + r.events, 0);
const deltas = results.reduce((a, r) => a + r.textDeltas, 0);
const failures = results.filter((r) => r.failure);
console.log(
  `peer=pi api=${api} runs=${runs} concurrency=${concurrency} events=${events} text_deltas=${deltas} ` +
    `tool_rounds=${toolRounds} wall_s=${wall.toFixed(3)} verified=${failures.length ? "FAILED" : "ok"}`,
);
if (failures.length) {
  console.error(`pi_loop_bench: ${failures.length} of ${runs} runs failed; first: ${failures[0].failure}`);
  process.exit(1);
}
