// Browser bench (not a test): main-thread cost of streaming a 64 KB markdown answer at ~450 frames/s, with an empty
// transcript and with 200 earlier messages. Prints figures; asserts nothing.
//
//   CHATWIRE_BIN=$CARGO_TARGET_DIR/release/chatwire node end2end/bench/stream.mjs
//
// Busy fraction = time in main-thread tasks (Chromium trace `RunTask` on the renderer's main thread) over the wall
// time of the stream, from the first text to the end of the run; longest task likewise. Also printed: the same with
// the tasks' thread CPU time, which stays meaningful on a loaded machine. Tasks that only carry a DevTools message
// (the bench's own evaluations and locator polling, `trace.mjs`'s `pageTasks`) are not the page's and are left out. BENCH_DELAY_MS (default 2) paces frames;
// 1 gives ~350-450 frames/s here. BENCH_TRACE_DIR keeps the traces; BENCH_ONLY_EMPTY skips the 200-message case.
// BENCH_REPEAT=n measures everything n times, round by round, and summarizes with the medians. Each measurement also
// prints its tasks by kind (frames that redraw the transcript, other frames, network, the rest): count × mean = share.
//
// BENCH_PKG_DIRS compares client builds in one run (the machine is noisy; ratios within a run are what count): a
// comma-separated list of directories, each holding a `chatwire.js` and `chatwire_bg.wasm` from wasm-bindgen (and
// wasm-opt), served in place of the binary's own; `-` stands for the binary's own. Only those two files are
// swapped, not a split build's loader and chunks (`cargo leptos --split`), unless the directory is a split build's
// whole `pkg` (e.g. one built with `LEPTOS_WASM_OPT_FEATURES=…,-g` for names in BENCH_PROFILE): then all of it is.
// An entry `dir+file.css` (or `-+file.css`) also adds that stylesheet, to try a styling change without rebuilding.
// BENCH_PROFILE=1 adds V8's sampling profiler to the trace and prints where the main thread's time went (trace events
// by name, and the top functions; WASM functions have names only when the module kept its name section:
// `wasm-opt -g`).
import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { getPage, makeTempDir, removeDir, startServer } from '../tests/support.mjs';
import { servePkg } from './serve-pkg.mjs';
import { isTask, pageTasks, readTrace, within } from './trace.mjs';

const CHROMIUM_PATH = '/usr/bin/chromium';
const ANSWER_BYTES = 64 * 1024;
const EARLIER_RUNS = 100; // a prompt and an answer each: 200 messages

/** A 64 KB answer of the usual mix: headings, paragraphs with inline markup, lists, code, tables. */
function bigAnswer() {
  const sections = [];
  for (let i = 1; sections.join('\n').length < ANSWER_BYTES; i++) {
    sections.push(
      `## Step ${i}: change the **parser**\n\n` +
        `The function \`parse_${i}\` reads the input once and keeps *only* the open tail; see [the notes](https://example.com/${i}).\n` +
        `It returns early when the buffer is empty, which keeps the common case cheap.\n\n` +
        `- read the next chunk\n- split it into lines\n- [x] keep the partial line\n\n` +
        '```rust\n' +
        `fn parse_${i}(input: &str) -> Vec<&str> {\n    input.lines().filter(|l| !l.is_empty()).collect()\n}\n` +
        '```\n\n' +
        `| case | before | after |\n|---|---:|---:|\n| small | ${i} ms | ${i / 2} ms |\n| large | ${i * 10} ms | ${i} ms |\n`,
    );
  }
  return sections.join('\n').slice(0, ANSWER_BYTES);
}

async function writeScript(dir, name, turns) {
  const file = path.join(dir, name);
  await fs.writeFile(file, JSON.stringify({ chunkChars: 10, delayMs: 0, turns }));
  return file;
}

async function api(server, cookie, method, route, body) {
  const response = await fetch(new URL(route, server.origin), {
    method,
    headers: { cookie, 'content-type': 'application/json' },
    body: body && JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route} → ${response.status}: ${await response.text()}`);
  return response;
}

/** Runs `runs` short prompts through the API in a new session; returns its id. */
async function sessionWithHistory(server, cookie, runs) {
  const created = await (await api(server, cookie, 'POST', '/api/sessions', {})).json();
  const sessionId = created.session.sessionId;
  for (let i = 0; i < runs; i++) {
    const response = await api(server, cookie, 'POST', '/api/chat', { sessionId, message: `Earlier question ${i}` });
    await response.text();
  }
  return sessionId;
}

/**
 * The main thread's tasks in the window by kind, from the trace events nested in each: a frame that redraws the
 * transcript (it parses HTML and paints), any other animation frame (the ones between two redraws: a `scroll` event,
 * an animation frame callback), the network's (the response body's data arriving), and the rest. Printed as count ×
 * mean = share of the wall time, to see which kind a change moved.
 */
function taskKinds(onMain, windowStart, windowEnd) {
  const tasks = [];
  for (const e of onMain.filter(within(windowStart, windowEnd))) {
    const task = tasks.at(-1);
    if (task && e.ts < task.ts + task.dur) task.names.add(e.name);
    else if (isTask(e)) tasks.push({ ts: e.ts, dur: e.dur, names: new Set() });
  }
  const kindOf = ({ names }) => {
    if (names.has('ParseHTML') && names.has('Paint')) return 'redraw frames';
    if (names.has('Paint') || names.has('FireAnimationFrame') || names.has('EventDispatch')) return 'other frames';
    if (names.has('SimpleWatcher::OnHandleReady')) return 'network';
    return 'other tasks';
  };
  const kinds = new Map(['redraw frames', 'other frames', 'network', 'other tasks'].map((kind) => [kind, { count: 0, us: 0 }]));
  for (const task of tasks) {
    const kind = kinds.get(kindOf(task));
    kind.count += 1;
    kind.us += task.dur;
  }
  const wallUs = windowEnd - windowStart;
  return [...kinds]
    .map(([kind, { count, us }]) => `${kind} ${count} × ${(us / Math.max(count, 1) / 1000).toFixed(2)} ms = ${((100 * us) / wallUs).toFixed(1)} %`)
    .join(', ');
}

/** Self time per trace event name, and per sampled JS/WASM function, on the renderer's main thread. */
function profileSummary(events, onMain, windowStart, windowEnd) {
  // Self time: an event's duration minus that of the events nested directly inside it (same thread, sorted by start).
  const byName = new Map();
  const stack = [];
  const inWindow = onMain.filter(within(windowStart, windowEnd));
  for (const e of inWindow) {
    while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= e.ts) stack.pop();
    if (stack.length) stack.at(-1).self -= e.dur;
    const entry = { ts: e.ts, dur: e.dur, self: e.dur, name: e.name };
    stack.push(entry);
    e.entry = entry;
  }
  for (const e of inWindow) byName.set(e.name, (byName.get(e.name) ?? 0) + e.entry.self);
  const events_ = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 20).map(([n, us]) => `${(us / 1000).toFixed(0)} ms ${n}`);

  // Sampling profile: nodes and samples arrive in `ProfileChunk` events.
  const nodes = new Map();
  const samples = [];
  for (const e of events) {
    if (e.name !== 'ProfileChunk') continue;
    const data = e.args?.data?.cpuProfile ?? {};
    for (const node of data.nodes ?? []) nodes.set(`${e.id}:${node.id}`, node);
    const deltas = e.args?.data?.timeDeltas ?? [];
    (data.samples ?? []).forEach((id, i) => samples.push({ key: `${e.id}:${id}`, delta: deltas[i] ?? 0 }));
  }
  const selfByFunction = new Map();
  for (const { key, delta } of samples) {
    const frame = nodes.get(key)?.callFrame;
    const name = frame ? `${frame.functionName || '(anonymous)'} ${frame.url ? frame.url.split('/').pop() : ''}` : '?';
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + delta);
  }
  const functions = [...selfByFunction]
    .filter(([name]) => !name.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 40)
    .map(([n, us]) => `${(us / 1000).toFixed(0)} ms ${n.slice(0, 160)}`);
  return { events: events_, functions };
}

async function measure(label, { server, cookie, sessionId, prompt, pkgDir, cssFile }) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
  });
  try {
    // BENCH_CSS: extra CSS to try a styling change without rebuilding (CSP bypassed for that only).
    const extraCss = cssFile ? await fs.readFile(cssFile, 'utf8') : process.env.BENCH_CSS;
    // serviceWorkers: the worker would fetch the WASM itself, out of `page.route`'s reach.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      bypassCSP: Boolean(extraCss),
      serviceWorkers: 'block',
    });
    await context.addCookies([{ name: cookie.split('=')[0], value: cookie.split('=').slice(1).join('='), url: server.origin }]);
    const page = await context.newPage();
    if (pkgDir) await servePkg(page, pkgDir);
    await page.goto(new URL(sessionId ? `/s/${sessionId}` : '/', server.origin).href, { waitUntil: 'load' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached', timeout: 30_000 });
    if (extraCss) await page.addStyleTag({ content: extraCss });
    // The last of the earlier answers: the messages before it are not all built (components/transcript.rs).
    if (sessionId) {
      const lastEarlier = page.locator('.message').filter({ hasText: `Short answer number ${EARLIER_RUNS - 1},` });
      await lastEarlier.waitFor({ state: 'attached', timeout: 30_000 });
    }
    // Messages in the session before the answer, built into the page or not.
    const messagesBefore = sessionId ? 2 * EARLIER_RUNS : 0;
    await page.waitForTimeout(500);

    const categories = ['devtools.timeline', 'toplevel'];
    if (process.env.BENCH_PROFILE) categories.push('disabled-by-default-v8.cpu_profiler');
    await browser.startTracing(page, { categories });
    const streamEnded = page.waitForEvent('requestfinished', {
      predicate: (req) => req.method() === 'POST' && new URL(req.url()).pathname === '/api/chat',
      timeout: 120_000,
    });
    const input = page.locator('[data-testid="composer"] textarea');
    await input.fill(prompt);
    // Marks in the page's own clock and in the trace: the stream starts with the first text, ends with the request.
    await page.evaluate(() => performance.mark('bench-send'));
    await input.press('Enter');
    await page.locator('.message[data-role="assistant"] .markdown').last().waitFor({ timeout: 30_000 });
    const firstText = await page.evaluate(() => performance.now());
    await streamEnded;
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 30_000 });
    const lastFrame = await page.evaluate(() => performance.now());
    const trace = await browser.stopTracing();
    if (process.env.BENCH_TRACE_DIR) await fs.writeFile(path.join(process.env.BENCH_TRACE_DIR, `${label.replace(/[^\w.-]+/g, "_")}.json`), trace);

    const { events, onMain } = readTrace(trace);
    // Not the bench's own evaluations: waiting for the Send button polls the page's accessibility tree (120-180 ms).
    const tasks = pageTasks(onMain);
    // Trace timestamps are µs on the trace clock; the busy window is the last `wallMs` of tasks up to the end.
    const wallMs = lastFrame - firstText;
    const end = Math.max(...tasks.map((t) => t.ts + t.dur));
    const windowed = tasks.filter((t) => t.ts >= end - wallMs * 1000);
    const busyMs = windowed.reduce((sum, t) => sum + t.dur, 0) / 1000;
    // Thread CPU time of the same tasks: unlike wall time, it does not count time the renderer waited for a core.
    const cpuMs = windowed.reduce((sum, t) => sum + (t.tdur ?? t.dur), 0) / 1000;
    const longestMs = windowed.reduce((max, t) => Math.max(max, t.dur), 0) / 1000;
    // The longest task by its thread CPU time: on a loaded machine a task's wall time includes waiting for a core.
    const longestCpuMs = windowed.reduce((max, t) => Math.max(max, t.tdur ?? t.dur), 0) / 1000;
    const text = await page.locator('.message[data-role="assistant"]').last().textContent();
    const result = {
      label,
      messagesBefore,
      answerChars: text.length,
      seconds: +(wallMs / 1000).toFixed(2),
      framesPerSecond: Math.round(ANSWER_BYTES / 10 / (wallMs / 1000)),
      busyPercent: +((100 * busyMs) / wallMs).toFixed(1),
      cpuBusyPercent: +((100 * cpuMs) / wallMs).toFixed(1),
      longestTaskMs: +longestMs.toFixed(1),
      longestTaskCpuMs: +longestCpuMs.toFixed(1),
      tasksOver50ms: windowed.filter((t) => t.dur > 50_000).length,
    };
    console.log(JSON.stringify(result));
    console.log(`  tasks: ${taskKinds(onMain, end - wallMs * 1000, end)}`);
    if (process.env.BENCH_PROFILE) {
      const { events: byEvent, functions } = profileSummary(events, onMain, end - wallMs * 1000, end);
      console.log(`  main thread by trace event (self):\n    ${byEvent.join('\n    ')}`);
      console.log(`  sampled functions (self):\n    ${functions.join('\n    ')}`);
    }
    return result;
  } finally {
    await browser.close();
  }
}

async function main() {
  const dir = await makeTempDir('chatwire-bench-');
  const answer = bigAnswer();
  // The scripted provider plays turn k on a conversation's k-th model call (wrapping): the long answer comes last.
  const delayed = { text: answer, delayMs: Number(process.env.BENCH_DELAY_MS ?? 2), chunkChars: 10 };
  const shortTurns = Array.from({ length: EARLIER_RUNS }, (_, i) => ({ text: `Short answer number ${i}, with *markdown*.` }));
  const emptyScript = await writeScript(dir, 'empty.json', [delayed]);
  const historyScript = await writeScript(dir, 'history.json', [...shortTurns, delayed]);
  const variants = (process.env.BENCH_PKG_DIRS ?? '-').split(',');
  const cases = [
    ['empty transcript', emptyScript, 0],
    ...(process.env.BENCH_ONLY_EMPTY ? [] : [['200 earlier messages', historyScript, EARLIER_RUNS]]),
  ];
  // BENCH_REPEAT rounds, each measuring every case and build in turn, so a burst of load elsewhere on the machine
  // lands on one round of each rather than on every run of one; the summary takes the median of the rounds.
  const rounds = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1));
  const results = new Map(variants.map((variant) => [variant, cases.map(() => [])]));
  const servers = [];
  try {
    for (const [, script] of cases) servers.push(await startServer({ args: ['--script', script] }));
    for (let round = 0; round < rounds; round++) {
      for (const [index, [label, , runs]] of cases.entries()) {
        const server = servers[index];
        // Client builds take turns on the same server, in one session per build, so their figures compare.
        for (const variant of variants) {
          const [dir, css] = variant.split('+');
          const pkgDir = dir === '-' ? undefined : path.resolve(dir);
          const cssFile = css && path.resolve(css);
          const { cookie } = await getPage(server.url);
          const sessionId = runs ? await sessionWithHistory(server, cookie, runs) : undefined;
          const name = `${variant === '-' ? label : `${label} [${variant}]`}${rounds > 1 ? ` (round ${round + 1})` : ''}`;
          const prompt = 'Write the long answer';
          results.get(variant)[index].push(await measure(name, { server, cookie, sessionId, prompt, pkgDir, cssFile }));
        }
      }
    }
  } finally {
    for (const server of servers) await server.stop();
  }
  await removeDir(dir);
  const median = (runs, key) => {
    const sorted = runs.map((run) => run[key]).sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : +((sorted[middle - 1] + sorted[middle]) / 2).toFixed(1);
  };
  for (const [variant, perCase] of results) {
    const [empty, history = empty] = perCase.map((runs) =>
      Object.fromEntries(
        ['busyPercent', 'cpuBusyPercent', 'longestTaskMs', 'longestTaskCpuMs', 'framesPerSecond'].map((key) => [
          key,
          median(runs, key),
        ]),
      ),
    );
    console.log(
      `${variant === '-' ? '' : `${variant}: `}${rounds > 1 ? `median of ${rounds} rounds: ` : ''}` +
        `${empty.framesPerSecond} / ${history.framesPerSecond} frames/s; ` +
        `busy (wall): ${empty.busyPercent} % empty, ` +
        `${history.busyPercent} % with 200 messages (ratio ${(history.busyPercent / empty.busyPercent).toFixed(2)}); ` +
        `busy (CPU): ${empty.cpuBusyPercent} % / ${history.cpuBusyPercent} % ` +
        `(ratio ${(history.cpuBusyPercent / empty.cpuBusyPercent).toFixed(2)}); ` +
        `longest task ${empty.longestTaskMs} / ${history.longestTaskMs} ms ` +
        `(CPU ${empty.longestTaskCpuMs} / ${history.longestTaskCpuMs} ms)`,
    );
  }
}

await main();
