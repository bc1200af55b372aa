// Browser bench (not a test): opening a long session and flinging through it (issue 21, item 3). Prints figures;
// asserts nothing.
//
//   BENCH_BINS=/path/to/before/chatwire,/path/to/after/chatwire node end2end/bench/longsession.mjs
//
// Seeds two sessions through the API of the first binary, on one data dir the binaries then take turns serving:
// 100 runs (200 messages) and 1,000 runs (2,000 messages), each run a bash call and a ~2 KB markdown answer with a
// table and a code block. Per round, each binary, each session, in a fresh Chromium profile whose cache already holds
// the app (a first load of `/`):
//   - open: ms from navigation start of `/s/{id}` until the last answer is drawn (its table is in the page), polled
//     once per animation frame;
//   - elements: the page's element count when it is open, and at the top after the fling;
//   - fling: from the end to the top by 1,200 px per animation frame: frames, gaps between frames over 32 ms, the
//     longest gap, and the longest main-thread task in a Chromium trace of it.
// BENCH_REPEAT rounds (default 5), alternating the binaries; the summary gives the medians. BENCH_BINS defaults to
// CHATWIRE_BIN. BENCH_PKG_DIRS (as in stream.mjs: split builds' `pkg` directories, `-` for the binary's own) has each
// binary serve each of those client builds in turn: client changes compare without building the server. A client
// served that way goes through Playwright's request interception, which slows the open; compare pkg dirs with pkg
// dirs, not with `-`. BENCH_TIMELINE=1 prints, for each open, when the main module was instantiated and the page
// hydrated, the page's own navigation timing, and when each of its requests was asked for and answered (ms from
// navigation start), to see what the open waits on.
import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, getPage, makeTempDir, removeDir, seedSession, startServer } from '../tests/support.mjs';
import { servePkg } from './serve-pkg.mjs';
import { pageTasks, readTrace } from './trace.mjs';

const SIZES = [100, 1000];
const ROUNDS = Math.max(1, Number(process.env.BENCH_REPEAT ?? 5));
const BINS = (process.env.BENCH_BINS ?? process.env.CHATWIRE_BIN ?? '').split(',').filter(Boolean);
const FLING_PX = 1200;
const PKG_DIRS = (process.env.BENCH_PKG_DIRS ?? '-').split(',').filter(Boolean);
const TIMELINE = Boolean(process.env.BENCH_TIMELINE);

/** Records, from the page's first script on, when the main module is instantiated and when the app is marked
 * hydrated. */
const WATCH_HYDRATION = `
  const instantiate = WebAssembly.instantiateStreaming;
  WebAssembly.instantiateStreaming = async (...args) => {
    const instance = await instantiate(...args);
    window.__instantiatedAt ??= performance.now();
    return instance;
  };
  new MutationObserver((_, observer) => {
    const app = document.querySelector('.app[data-hydrated="true"]');
    if (app && window.__hydratedAt === undefined) { window.__hydratedAt = performance.now(); observer.disconnect(); }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-hydrated'], childList: true });
`;

/** The open's timeline: hydration, then each request by when it was asked for. */
async function printTimeline(page, openMs) {
  const { hydratedAt, instantiatedAt, navigation, requests } = await page.evaluate(() => ({
    hydratedAt: window.__hydratedAt,
    instantiatedAt: window.__instantiatedAt,
    navigation: performance.getEntriesByType('navigation')[0].toJSON(),
    requests: performance.getEntriesByType('resource').map((entry) => ({
      name: new URL(entry.name).pathname.replace(/^\/pkg\//, ''),
      start: entry.startTime,
      end: entry.responseEnd,
    })),
  }));
  console.log(`  instantiated ${Math.round(instantiatedAt)} ms, hydrated ${Math.round(hydratedAt)} ms, drawn ${openMs} ms; ${requests.length} requests:`);
  const steps = ['requestStart', 'responseStart', 'responseEnd', 'domInteractive', 'domContentLoadedEventEnd'];
  console.log(`    page: ${steps.map((step) => `${step} ${Math.round(navigation[step])}`).join(', ')}`);
  for (const request of requests.sort((a, b) => a.start - b.start)) {
    console.log(`    ${Math.round(request.start)}–${Math.round(request.end)} ms ${request.name}`);
  }
}

const ANSWER = [
  'Here is what the change does, step by step.',
  ...Array.from(
    { length: 4 },
    (_, i) =>
      `### Step ${i + 1}: the **parser**\n\nThe function \`parse_${i}\` reads the input once and keeps *only* the open tail; ` +
      `see [the notes](https://example.com/${i}). It returns early when the buffer is empty.\n\n` +
      `- read the next chunk\n- split it into lines\n\n` +
      '```rust\n' +
      `fn parse_${i}(input: &str) -> Vec<&str> {\n    input.lines().filter(|l| !l.is_empty()).collect()\n}\n` +
      '```\n',
  ),
  `| case | before | after |\n|---|---:|---:|\n| small | 4 ms | 2 ms |\n| large | 40 ms | 4 ms |\n`,
].join('\n\n');

const SCRIPT = {
  delayMs: 0,
  chunkChars: 1000,
  turns: [{ toolCalls: [{ name: 'bash', arguments: { command: 'echo measured' } }] }, { text: ANSWER }],
};

function seed(server, runs) {
  return seedSession(server, `${2 * runs} messages`, Array.from({ length: runs }, (_, i) => `Question number ${i}`));
}

async function measure(server, sessionId, pkgDir) {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    const { cookie } = await getPage(server.url);
    const [name, ...value] = cookie.split('=');
    await context.addCookies([{ name, value: value.join('='), url: server.origin }]);
    const page = await context.newPage();
    if (TIMELINE) await page.addInitScript(WATCH_HYDRATION);
    if (pkgDir !== '-') await servePkg(page, path.resolve(pkgDir));
    await page.goto(server.origin, { waitUntil: 'load' });
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached', timeout: 30_000 });

    await page.goto(new URL(`/s/${sessionId}`, server.origin).href, { waitUntil: 'commit' });
    const openMs = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const drawn = () => {
            const answers = document.querySelectorAll('.message[data-role="assistant"]');
            if (answers.length && answers[answers.length - 1].querySelector('.markdown table')) resolve(performance.now());
            else requestAnimationFrame(drawn);
          };
          drawn();
        }),
    );
    await page.waitForTimeout(500);
    if (TIMELINE) await printTimeline(page, Math.round(openMs));
    const elementsOpen = await page.evaluate(() => document.getElementsByTagName('*').length);

    await browser.startTracing(page, { categories: ['devtools.timeline', 'toplevel'] });
    const fling = await page.evaluate(
      (step) =>
        new Promise((resolve) => {
          const scroller = document.querySelector('[data-testid="transcript"]');
          const stamps = [];
          const frame = (now) => {
            stamps.push(now);
            if (scroller.scrollTop <= 0) {
              const gaps = stamps.slice(1).map((t, i) => t - stamps[i]);
              resolve({ frames: gaps.length, over32: gaps.filter((g) => g > 32).length, longestGap: Math.max(0, ...gaps) });
              return;
            }
            scroller.scrollBy(0, -step);
            requestAnimationFrame(frame);
          };
          requestAnimationFrame(frame);
        }),
      FLING_PX,
    );
    await page.waitForTimeout(300);
    const trace = await browser.stopTracing();
    const { onMain } = readTrace(trace);
    const longestTask = pageTasks(onMain).reduce((max, task) => Math.max(max, task.dur), 0) / 1000;
    const elementsTop = await page.evaluate(() => document.getElementsByTagName('*').length);
    return { openMs: Math.round(openMs), elementsOpen, elementsTop, ...fling, longestGap: Math.round(fling.longestGap), longestTask: Math.round(longestTask) };
  } finally {
    await browser.close();
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function main() {
  if (!BINS.length) throw new Error('set BENCH_BINS (or CHATWIRE_BIN) to the binaries to compare');
  const dataDir = await makeTempDir('chatwire-longsession-');
  const scriptDir = await makeTempDir('chatwire-longsession-script-');
  const script = path.join(scriptDir, 'script.json');
  await fs.writeFile(script, JSON.stringify(SCRIPT));
  const serve = async (bin) => {
    process.env.CHATWIRE_BIN = bin;
    return startServer({ dataDir, args: ['--script', script, '--approve', 'never'] });
  };
  try {
    const seeding = await serve(BINS[0]);
    const started = Date.now();
    const sessions = [];
    for (const runs of SIZES) sessions.push(await seed(seeding, runs));
    await seeding.stop();
    console.log(`seeded ${SIZES.map((runs) => 2 * runs).join(' and ')} messages in ${Math.round((Date.now() - started) / 1000)} s`);
    const variant = (bin, pkgDir) => (pkgDir === '-' ? bin : `${bin} [${pkgDir}]`);
    const results = new Map(BINS.flatMap((bin) => PKG_DIRS.map((pkgDir) => [variant(bin, pkgDir), SIZES.map(() => [])])));
    for (let round = 0; round < ROUNDS; round++) {
      for (const bin of BINS) {
        const server = await serve(bin);
        try {
          for (const pkgDir of PKG_DIRS) {
            for (const [index, sessionId] of sessions.entries()) {
              const result = await measure(server, sessionId, pkgDir);
              results.get(variant(bin, pkgDir))[index].push(result);
              console.log(JSON.stringify({ round: round + 1, variant: variant(bin, pkgDir), messages: 2 * SIZES[index], ...result }));
            }
          }
        } finally {
          await server.stop();
        }
      }
    }
    for (const [bin, perSize] of results) {
      for (const [index, runs] of perSize.entries()) {
        const keys = ['openMs', 'elementsOpen', 'elementsTop', 'frames', 'over32', 'longestGap', 'longestTask'];
        const medians = Object.fromEntries(keys.map((key) => [key, median(runs.map((run) => run[key]))]));
        console.log(
          `${bin}: ${2 * SIZES[index]} messages, median of ${ROUNDS}: open ${medians.openMs} ms; elements ` +
            `${medians.elementsOpen} open, ${medians.elementsTop} at the top; fling ${medians.frames} frames, ` +
            `${medians.over32} over 32 ms, longest ${medians.longestGap} ms; longest task ${medians.longestTask} ms`,
        );
      }
    }
  } finally {
    await removeDir(dataDir);
    await removeDir(scriptDir);
  }
}

await main();
