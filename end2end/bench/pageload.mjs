// Browser bench (not a test): the first page load from a cold cache, under two network profiles, as a person on a
// slow line feels it (issue 21, item 2). Prints figures; asserts nothing.
//
//   CHATWIRE_BIN=$CARGO_TARGET_DIR/release/chatwire node end2end/bench/pageload.mjs
//
// Each load is a fresh Chromium profile (no HTTP cache, no service worker) opening `/` of a server that has a few
// sessions, throttled by CDP's network emulation:
//   - "9 Mbit/s": 9 Mbit/s down, 85 ms round trip;
//   - "mobile": Lighthouse's mobile throttling, 1.6 Mbit/s down (1,638.4 kbit/s), 750 kbit/s up, 150 ms round trip.
// Figures, medians of BENCH_LOADS (default 5) per profile, in ms from navigation start:
//   - first contentful paint (`first-contentful-paint`);
//   - hydrated: when `.app` gets `data-hydrated="true"` (the WASM has taken the page over: typing and Send are taken);
//   - bytes: what went over the wire for the load (CDP `encodedDataLength`, headers included), and the part of it
//     that is scripts and WASM;
//   - answered: another first visit of `/` that sends a message with Enter as soon as the page is hydrated, until
//     the first row of the answer is drawn (what a send needs may come in a chunk fetched on first use: this is when
//     Send has done what a person expects);
//   - session: a first visit of a session's own URL (`/s/{id}`, two runs that each ran a bash command and answered
//     in Markdown), until its answers are drawn.
// Each profile is run twice: with brotli, as Chromium asks over HTTPS or from localhost, and with gzip, as it asks
// over plain HTTP from another host.
// BENCH_BLOCK=<regexp> refuses the requests whose path matches it (to see what one request costs the others, e.g.
// `^/api/activity` for the activity feed, which holds one of HTTP/1.1's six connections for as long as the page is
// open). BENCH_PROFILES=mobile (or 9mbit) runs one profile only, BENCH_ENCODINGS=br (or gzip) one encoding; BENCH_VERBOSE=1 lists every response of every load, BENCH_TIMELINE=1 when each was asked for and answered.
import path from 'node:path';
import fs from 'node:fs/promises';
import { chromium } from 'playwright-core';
import { getPage, makeTempDir, removeDir, seedSession, startServer } from '../tests/support.mjs';

const CHROMIUM_PATH = '/usr/bin/chromium';
const LOADS = Number(process.env.BENCH_LOADS ?? 5);
const PROFILES = [
  { key: '9mbit', name: '9 Mbit/s, 85 ms', down: 9_000_000, up: 9_000_000, rtt: 85 },
  { key: 'mobile', name: 'mobile (1.6 Mbit/s, 150 ms)', down: 1_638_400, up: 750_000, rtt: 150 },
].filter((profile) => !process.env.BENCH_PROFILES || process.env.BENCH_PROFILES.split(',').includes(profile.key));

// Chromium asks for brotli only from secure origins, and loopback counts as one: this bench gets the brotli copies
// as a user behind HTTPS does. "gzip" asks as Chromium does over plain HTTP to another host (a self-hoster's LAN
// address), where the server sends the gzip copies.
const ENCODINGS = [
  { key: 'br', name: 'br (https, localhost)', header: null },
  { key: 'gzip', name: 'gzip (http on a LAN)', header: 'gzip, deflate' },
].filter((encoding) => !process.env.BENCH_ENCODINGS || process.env.BENCH_ENCODINGS.split(',').includes(encoding.key));

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** Records, from the page's first script on, when the app is marked hydrated. */
const WATCH_HYDRATION = `
  new MutationObserver((_, observer) => {
    const app = document.querySelector('.app[data-hydrated="true"]');
    if (app && window.__hydratedAt === undefined) { window.__hydratedAt = performance.now(); observer.disconnect(); }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-hydrated'], childList: true });
`;

const ANSWER = '[data-testid="transcript"] .message[data-role="assistant"]';

/** What a load does once the page is open, and what it measures; each is a first visit of its own. */
const VISITS = {
  /** `/` until hydrated, then until the network is quiet but for the activity feed, which stays open (the sessions
   * list belongs to the load). */
  load: { path: () => '/', after: async (page, quiet) => quiet() },
  /** `/`, sending at hydration: when the first row of the answer is drawn. */
  answer: {
    path: () => '/',
    after: async (page) => {
      const input = page.locator('[data-testid="composer"] textarea');
      await input.fill('Say hello');
      await input.press('Enter');
      return whenDrawn(page, ANSWER);
    },
  },
  /** A session's URL: when its answers are drawn. */
  session: { path: (sessionId) => `/s/${sessionId}`, after: async (page) => whenDrawn(page, ANSWER) },
};

/** Resolves to the page's performance.now() at the first animation frame where `selector` matches. */
async function whenDrawn(page, selector) {
  const handle = await page.waitForFunction(
    (selector) => document.querySelector(selector) !== null && performance.now(),
    selector,
    { polling: 'raf', timeout: 60_000 },
  );
  return handle.jsonValue();
}

/** The load's requests as the page saw them (Resource Timing): when each was asked for and when its last byte came. */
async function timeline(page, visit) {
  const rows = await page.evaluate(() => {
    const [navigation] = performance.getEntriesByType('navigation');
    const entries = [
      { name: location.pathname, start: 0, firstByte: navigation.responseStart, end: navigation.responseEnd },
      ...performance.getEntriesByType('resource').map((entry) => ({
        name: new URL(entry.name).pathname,
        start: entry.startTime,
        firstByte: entry.responseStart,
        end: entry.responseEnd,
      })),
    ];
    const paint = performance.getEntriesByName('first-contentful-paint')[0]?.startTime;
    entries.push({ name: '(first contentful paint)', start: paint, firstByte: paint, end: paint });
    entries.push({ name: '(hydrated)', start: window.__hydratedAt, firstByte: window.__hydratedAt, end: window.__hydratedAt });
    return entries.sort((a, b) => a.start - b.start);
  });
  const ms = (value) => (value ?? NaN).toFixed(0).padStart(6);
  const lines = rows.map((row) => `  ${ms(row.start)} ${ms(row.firstByte)} ${ms(row.end)}  ${row.name}`);
  return [`timeline of a "${visit}" visit (ms: asked, first byte, last byte):`, ...lines].join('\n');
}

async function oneLoad(origin, cookie, profile, encoding, visit, sessionId) {
  const profileDir = await makeTempDir('chatwire-pageload-');
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--no-sandbox'],
    viewport: { width: 1400, height: 900 },
  });
  try {
    // Signed in already, as a returning user is: the printed URL's one-time redirect is not part of the load.
    const [name, value] = cookie.split('=');
    await context.addCookies([{ name, value, url: origin }]);
    const page = context.pages()[0] ?? (await context.newPage());
    await page.addInitScript(WATCH_HYDRATION);
    if (process.env.BENCH_BLOCK) {
      const block = new RegExp(process.env.BENCH_BLOCK);
      await page.route((url) => block.test(url.pathname), (route) => route.abort());
    }
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    if (encoding.header) {
      await cdp.send('Network.setExtraHTTPHeaders', { headers: { 'Accept-Encoding': encoding.header } });
    }
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: profile.rtt,
      downloadThroughput: profile.down / 8,
      uploadThroughput: profile.up / 8,
    });
    const types = new Map();
    let bytes = 0;
    let codeBytes = 0;
    const urls = new Map();
    cdp.on('Network.responseReceived', (event) => {
      types.set(event.requestId, event.type);
      urls.set(event.requestId, event.response.url);
    });
    // In flight, but for the activity feed (`GET /api/activity`), which is open as long as the page is.
    const inFlight = new Set();
    let lastSettled = performance.now();
    cdp.on('Network.requestWillBeSent', (event) => {
      if (!new URL(event.request.url).pathname.startsWith('/api/activity')) inFlight.add(event.requestId);
    });
    const settle = (event) => {
      if (inFlight.delete(event.requestId)) lastSettled = performance.now();
    };
    cdp.on('Network.loadingFailed', settle);
    /** Resolves once nothing but the feed has been in flight for 500 ms, as Playwright's `networkidle` would. */
    const quiet = async () => {
      while (inFlight.size > 0 || performance.now() - lastSettled < 500) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    cdp.on('Network.loadingFinished', (event) => {
      settle(event);
      bytes += event.encodedDataLength;
      if (process.env.BENCH_VERBOSE) {
        console.log(`  ${event.encodedDataLength} B ${types.get(event.requestId)} ${urls.get(event.requestId)}`);
      }
      const type = types.get(event.requestId);
      if (type === 'Script' || type === 'Fetch' || type === 'Other') codeBytes += event.encodedDataLength;
    });
    await page.goto(`${origin}${VISITS[visit].path(sessionId)}`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => window.__hydratedAt !== undefined, null, { timeout: 60_000 });
    const done = await VISITS[visit].after(page, quiet);
    const { fcp, hydrated } = await page.evaluate(() => ({
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
      hydrated: window.__hydratedAt,
    }));
    if (process.env.BENCH_TIMELINE) console.log(await timeline(page, visit));
    return { fcp, hydrated, bytes, codeBytes, done };
  } finally {
    await context.close();
    await removeDir(profileDir);
  }
}

// Every run of the bench's server: a little Markdown, a bash command, an answer.
const SCRIPT = {
  chunkChars: 40,
  delayMs: 2,
  turns: [
    { text: 'Looking at **the tree** first.', toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] },
    { text: 'It holds `src/` and a README.' },
  ],
};

const server = await startServer({ args: ['--approve', 'never'], script: SCRIPT });
try {
  const { cookie } = await getPage(server.url);
  if (!cookie) throw new Error('the server set no session cookie');
  // A returning user's `/`: a few sessions in the list.
  for (const title of ['Fix the build', 'Explain the parser', 'Add a README section']) {
    const response = await fetch(`${server.origin}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, origin: server.origin },
      body: JSON.stringify({ title }),
    });
    if (!response.ok) throw new Error(`creating a session: ${response.status} ${await response.text()}`);
  }
  const sessionId = await seedSession(server, 'Two runs', ['What is in this folder?', 'And once more?']);
  const binary = process.env.CHATWIRE_BIN;
  const size = binary ? (await fs.stat(binary)).size : 0;
  console.log(`page load of ${server.origin}/ (${path.basename(binary ?? 'chatwire')}, ${(size / 2 ** 20).toFixed(1)} MiB), cold cache, medians of ${LOADS}`);
  console.log(
    '| profile | encoding | first paint ms | hydrated ms | bytes KiB | of which code KiB | answered ms | session drawn ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const profile of PROFILES) {
    for (const encoding of ENCODINGS) {
      const loads = [];
      const answers = [];
      const sessions = [];
      for (let i = 0; i < LOADS; i++) {
        loads.push(await oneLoad(server.origin, cookie, profile, encoding, 'load'));
        answers.push((await oneLoad(server.origin, cookie, profile, encoding, 'answer')).done);
        sessions.push((await oneLoad(server.origin, cookie, profile, encoding, 'session', sessionId)).done);
      }
      const pick = (key) => median(loads.map((load) => load[key]));
      console.log(
        `| ${profile.name} | ${encoding.name} | ${pick('fcp').toFixed(0)} | ${pick('hydrated').toFixed(0)} | ` +
          `${(pick('bytes') / 1024).toFixed(1)} | ${(pick('codeBytes') / 1024).toFixed(1)} | ` +
          `${median(answers).toFixed(0)} | ${median(sessions).toFixed(0)} |`,
      );
      console.error(`  each: ${loads.map((load) => `${load.fcp.toFixed(0)}/${load.hydrated.toFixed(0)}`).join(' ')} (paint/hydrated)`);
    }
  }
} finally {
  await server.stop();
}
