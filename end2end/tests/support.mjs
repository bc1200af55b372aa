// Shared helpers for the end-to-end tests: the server binary in isolation, Chromium with a throwaway profile,
// a watcher for what goes wrong in the browser, raw HTTP, HTML link parsing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ARTIFACTS_DIR = fileURLToPath(new URL('../artifacts/', import.meta.url));
export const CHROMIUM_PATH = '/usr/bin/chromium';
export const HYDRATION_TIMEOUT_MS = 30_000;
// Quiet, offline-friendly Chromium: no background traffic that could show up as a failed request.
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const STARTUP_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
// Enough to show why a server failed, without letting a chatty one eat memory.
const MAX_CAPTURED_OUTPUT = 256 * 1024;

export function makeTempDir(prefix) {
  return fs.mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function removeDir(dir) {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
}

async function requireServerBinary() {
  const bin = process.env.CHATWIRE_BIN;
  if (!bin) {
    throw new Error(
      'CHATWIRE_BIN is not set: point it at the release server binary (absolute path), ' +
        'e.g. CHATWIRE_BIN="$PWD/target/release/chatwire" node --test end2end/tests/',
    );
  }
  const resolved = path.resolve(bin);
  try {
    await fs.access(resolved, fsConstants.X_OK);
  } catch (err) {
    throw new Error(`CHATWIRE_BIN=${bin} is missing or not executable (${err.code ?? err.message})`);
  }
  return resolved;
}

// Anything the build or a developer shell exports as LEPTOS_*/CHATWIRE_* could point the
// binary at on-disk assets or config; dropping them proves it needs nothing but itself.
function isolatedEnv() {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('LEPTOS_') || key.startsWith('CHATWIRE_')) continue;
    env[key] = value;
  }
  env.RUST_LOG = 'info';
  return env;
}

function capped(text) {
  return text.length > MAX_CAPTURED_OUTPUT ? text.slice(-MAX_CAPTURED_OUTPUT) : text;
}


/**
 * Starts a server (`startServer(options)`) before the calling suite's tests and stops it after them; the returned
 * object's `server` is that server once the tests run.
 */
export function serverForSuite(options) {
  const suite = { server: undefined };
  before(async () => {
    suite.server = await startServer(options);
  }, { timeout: 90_000 });
  after(async () => {
    await suite.server?.stop();
  }, { timeout: 30_000 });
  return suite;
}
/**
 * Copies the server binary alone into an empty dir and runs it from there with a fresh data dir,
 * so any reliance on files beside it or in the cwd shows up as a failure.
 * `args` are extra `serve` flags (e.g. `['--approve', 'never']`); `script`, when given, is a `scripted` provider
 * script (an object) the server plays, written beside the binary and removed with it. `addr` is the address to
 * listen on (default: a free loopback port); `dataDir`, when given, is used instead of a fresh one and kept at
 * `stop()`, so a second server can start where the first stopped.
 * Resolves to { url, origin, output(), stop(), dataDir } once the server has printed its URL.
 */
export async function startServer({ args = [], script, addr = '127.0.0.1:0', dataDir: givenDataDir } = {}) {
  const source = await requireServerBinary();
  const binDir = await makeTempDir('chatwire-bin-');
  const dataDir = givenDataDir ?? (await makeTempDir('chatwire-data-'));
  const binary = path.join(binDir, path.basename(source));
  await fs.copyFile(source, binary);
  await fs.chmod(binary, 0o755);
  if (script !== undefined) {
    const file = path.join(binDir, 'script.json');
    await fs.writeFile(file, JSON.stringify(script));
    args = ['--script', file, ...args];
  }

  const child = spawn(binary, ['serve', '--addr', addr, '--data-dir', dataDir, ...args], {
    cwd: binDir,
    env: isolatedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  const output = () => `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`;

  let hasExited = false;
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      hasExited = true;
      resolve({ code, signal });
    });
    // A binary that cannot be executed at all never emits 'exit'.
    child.once('error', (error) => {
      if (child.pid === undefined) {
        hasExited = true;
        resolve({ error });
      }
    });
  });
  // If the test process dies without running `after`, do not leave a server behind.
  const killOnExit = () => {
    if (!hasExited) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  async function stop() {
    if (!hasExited) {
      child.kill('SIGTERM');
      const sigkill = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(sigkill);
    }
    process.removeListener('exit', killOnExit);
    await removeDir(binDir);
    if (givenDataDir === undefined) await removeDir(dataDir);
  }

  try {
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`server printed no http:// URL within ${STARTUP_TIMEOUT_MS / 1000} s\n${output()}`));
      }, STARTUP_TIMEOUT_MS);
      exited.then(({ code, signal, error }) => {
        clearTimeout(timer);
        const why = error ? `could not be started: ${error.message}` : `exited (code ${code}, signal ${signal})`;
        reject(new Error(`server ${binary} ${why} before printing its URL\n${output()}`));
      });
      let found = false;
      child.stdout.on('data', (chunk) => {
        stdout = capped(stdout + chunk);
        if (found) return;
        // Only complete lines count, so a URL split across two chunks is not taken half-read.
        const complete = stdout.slice(0, stdout.lastIndexOf('\n') + 1);
        const match = complete.match(/http:\/\/\S+/);
        if (match) {
          found = true;
          clearTimeout(timer);
          resolve(match[0]);
        }
      });
      child.stderr.on('data', (chunk) => {
        stderr = capped(stderr + chunk);
      });
    });
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`server printed an unparsable URL ${JSON.stringify(url)}\n${output()}`);
    }
    return { url, origin: parsed.origin, output, stop, dataDir };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * GET with node:http so Content-Encoding and the raw (still compressed) body are seen as sent.
 * Resolves to { status, headers, body: Buffer }; header names are lower-case.
 */
export function httpGet(url, headers = {}) {
  return new Promise((resolve, reject) => {
    // agent: false keeps no idle keep-alive socket around to hold the test process open.
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(15_000, () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

/**
 * GET a page the way a browser does after opening the printed URL: the `?token=` is exchanged for a cookie
 * (303 + Set-Cookie), then the page is fetched again with that cookie. Resolves like httpGet, plus `cookie`.
 */
export async function getPage(url) {
  const first = await httpGet(url);
  if (first.status !== 303) return { ...first, cookie: undefined };
  const setCookie = [first.headers['set-cookie'] ?? []].flat()[0] ?? '';
  const cookie = setCookie.split(';')[0];
  const next = new URL(first.headers.location, url);
  return { ...(await httpGet(next, cookie ? { cookie } : {})), cookie, setCookie };
}

/**
 * Seeds a session through the API, signed in as a browser would be: a session titled `title`, then one run per
 * prompt of `prompts`, each to its end (the answer is a stream that ends with the run). Resolves to its id.
 */
export async function seedSession(server, title, prompts) {
  const { cookie } = await getPage(server.url);
  const post = async (route, body) => {
    const response = await fetch(new URL(route, server.origin), {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
    return response;
  };
  const { sessionId } = (await (await post('/api/sessions', { title })).json()).session;
  for (const message of prompts) await (await post('/api/chat', { sessionId, message })).text();
  return sessionId;
}

/** Attributes of every <link> tag in the HTML, as plain objects with lower-case names. */
export function linkTags(html) {
  const links = [];
  for (const [tag] of html.matchAll(/<link\b[^>]*>/gi)) {
    const attrs = {};
    for (const m of tag.slice(5).matchAll(/([^\s"'<>\/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
      attrs[m[1].toLowerCase()] = m[2] ?? m[3] ?? m[4] ?? '';
    }
    links.push(attrs);
  }
  return links;
}

/** The opening tag of the first element whose class list contains `className`, or undefined. */
export function openingTagWithClass(html, className) {
  for (const [tag] of html.matchAll(/<[a-z][^>]*>/gi)) {
    const cls = tag.match(/\sclass\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i);
    if (cls && (cls[1] ?? cls[2] ?? cls[3]).split(/\s+/).includes(className)) return tag;
  }
  return undefined;
}

/**
 * Launches Debian's Chromium with a fresh profile dir. `options` go to Playwright's launchPersistentContext
 * (e.g. `viewport`). Resolves to { context, close() }; close() also removes the profile, which Chromium writes
 * to until it has exited.
 */
export async function launchBrowser(options = {}) {
  const userDataDir = await makeTempDir('chatwire-profile-');
  try {
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      ...options,
    });
    return {
      context,
      async close() {
        await context.close();
        await removeDir(userDataDir);
      },
    };
  } catch (err) {
    await removeDir(userDataDir);
    throw err;
  }
}

/**
 * Records what goes wrong in every page of `context`, present and future: console errors, page errors, dialogs
 * (dismissed at once: a dialog is what injected markup would open) and, unless `requests` is false, failed
 * requests. A stream the client announced it closed on purpose (the events route tails forever, so the client cuts
 * it off once the run's last frame is in) is not a failure. Returns { problems, check() }; check() fails the test
 * if anything was recorded.
 */
export function watchProblems(context, { requests = true } = {}) {
  const problems = [];
  const failures = [];
  const closedOnPurpose = new Set();
  const watch = (page) => {
    page.on('console', (msg) => {
      const closed = msg.text().match(/^chatwire: closed (\S+) after the run ended$/);
      if (closed) closedOnPurpose.add(new URL(closed[1], page.url()).href);
      if (msg.type() !== 'error') return;
      const loc = msg.location();
      problems.push(`console error: ${msg.text()}${loc?.url ? ` (${loc.url}:${loc.lineNumber})` : ''}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.stack || err.message}`));
    page.on('dialog', async (dialog) => {
      problems.push(`dialog opened: ${dialog.message()}`);
      await dialog.dismiss();
    });
    if (requests) {
      page.on('requestfailed', (req) =>
        failures.push({ url: req.url(), method: req.method(), error: req.failure()?.errorText }),
      );
    }
  };
  context.pages().forEach(watch);
  context.on('page', watch);
  return {
    problems,
    check() {
      for (const { url, method, error } of failures.splice(0)) {
        if (error === 'net::ERR_ABORTED' && closedOnPurpose.has(url)) continue;
        // The activity feed lives as long as the page: leaving or reloading the page cuts it off.
        if (error === 'net::ERR_ABORTED' && new URL(url).pathname === '/api/activity') continue;
        problems.push(`request failed: ${method} ${url} — ${error}`);
      }
      assert.deepEqual(problems, [], `browser reported problems:\n${problems.join('\n')}`);
    },
  };
}

/** Opens the server's printed URL (its token becomes a cookie) in `page` and waits until the app has hydrated. */
export async function openApp(page, server) {
  await page.goto(server.url, { waitUntil: 'domcontentloaded' });
  await waitForHydration(page);
}

/**
 * The start of a browser test: Chromium with a fresh profile (closed when test `t` ends), problems watched (see
 * `watchProblems`; `requests` goes to it), the artifacts directory made, and the app open and hydrated.
 * Resolves to { context, page, check }.
 */
export async function openChat(t, server, { viewport, requests = true } = {}) {
  const browser = await launchBrowser({ viewport });
  t.after(() => browser.close());
  const { context } = browser;
  const { check } = watchProblems(context, { requests });
  const page = context.pages()[0] ?? (await context.newPage());
  await fs.mkdir(ARTIFACTS_DIR, { recursive: true });
  await openApp(page, server);
  return { context, page, check };
}

/** Waits until the page has drawn what it last changed: two animation frames (the first may have begun already). */
export function settled(page) {
  return page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
}

let markers = 0;

/**
 * Resolves once the test has seen every request the page started before this call (Playwright's `request` events
 * and `page.route` handlers): the page then fetches a marker address of its own, and the browser reports requests
 * in the order the page starts them. A check that something was not fetched waits for this, not for a while.
 */
export async function requestsSeen(page) {
  markers += 1;
  const marker = `/api/health?seen=${markers}`;
  const seen = page.waitForRequest((request) => {
    const url = new URL(request.url());
    return url.pathname + url.search === marker;
  });
  await page.evaluate(async (marker) => {
    await fetch(marker);
  }, marker);
  await seen;
}

/**
 * Call before the page opens the app; the function it returns resolves once that first load is over: the `load`
 * event has fired, the requests the client makes as it starts (the session list, the models, the agents) are
 * answered and drawn, and every request the page started meanwhile has been seen (`requestsSeen`). Whatever the
 * first load fetches has been asked for by then.
 */
export function firstLoad(page) {
  const startup = ['/api/sessions', '/api/models', '/api/agents'].map((route) =>
    page
      .waitForResponse((r) => r.request().method() === 'GET' && new URL(r.url()).pathname === route, { timeout: 60_000 })
      .then((response) => response.finished()),
  );
  // Awaited only by the returned function: a page that fails to start must not also leave a rejection unhandled.
  startup.forEach((answer) => answer.catch(() => {}));
  return async () => {
    await Promise.all(startup);
    await page.waitForLoadState('load');
    await settled(page);
    await requestsSeen(page);
  };
}

/** Types `text` into the composer and sends it with Enter. */
export async function sendPrompt(page, text) {
  const input = page.locator('[data-testid="composer"] textarea');
  await input.fill(text);
  await input.press('Enter');
}

/** Waits until the client has taken over the server-rendered page. */
export async function waitForHydration(page) {
  await page.waitForSelector('.app[data-hydrated="true"]', { timeout: HYDRATION_TIMEOUT_MS, state: 'attached' });
}

/** Writes a `scripted` provider script into a fresh temp dir. Resolves to { file, remove() }. */
export async function writeScript(script, name = 'script.json') {
  const dir = await makeTempDir('chatwire-script-');
  const file = path.join(dir, name);
  await fs.writeFile(file, JSON.stringify(script));
  return { file, remove: () => removeDir(dir) };
}

/** The MCP server of the tests (tests/support/mcp-server.mjs): tools `lookup`, `add_note`, `fail`, `slow`, `crash`. */
export const MCP_TEST_SERVER = fileURLToPath(new URL('../../tests/support/mcp-server.mjs', import.meta.url));

/** The `[mcp.<name>]` table of a config file that runs the test MCP server. */
export function mcpTestServerConfig(name = 'weather') {
  return [`[mcp.${name}]`, 'command = "node"', `args = [${JSON.stringify(MCP_TEST_SERVER)}]`, ''].join('\n');
}

/**
 * A local search backend in the SearXNG JSON shape (a test double of the external service; the tests cannot reach
 * the internet) on a free port, answering every query with `results`, except `failingQuery` with HTTP 500.
 * Resolves to { url, queries, close() }; `queries` records each request's path, `q` and `format`.
 */
export async function startSearchBackend(results, { failingQuery } = {}) {
  const queries = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    queries.push({ path: url.pathname, q: url.searchParams.get('q'), format: url.searchParams.get('format') });
    if (failingQuery !== undefined && url.searchParams.get('q') === failingQuery) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('search engine unavailable');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ query: url.searchParams.get('q'), number_of_results: results.length, results }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/search`,
    queries,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

let axeSource;

/**
 * Runs axe-core (npm) over the whole page and resolves to its violations above minor, one line each with a few of
 * the offending elements. axe goes in through `page.evaluate`, which the page's CSP does not govern.
 */
export async function axeViolations(page) {
  axeSource ??= await fs.readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  // A colour measured half way through a transition is neither of its states: the message's buttons fade in when
  // the pointer is over the message, and a click can leave it there. Finite transitions end first.
  await page.evaluate(() =>
    Promise.all(document.getAnimations().filter((a) => a.effect?.getTiming().iterations !== Infinity).map((a) => a.finished.catch(() => {}))),
  );
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => v.impact !== 'minor')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')})`);
}
