// End-to-end check of an ACP agent: the release binary with the real opencode 1.18.33 (installed by `./x test` into
// ~/.cache/chatwire/opencode-1.18.33, or named by CHATWIRE_TEST_OPENCODE) as its agent, whose model is the scripted
// OpenAI-compatible server of tests/fixtures/acp/record, and whose permission rules ask before bash. The permission
// request is an approval card with opencode's own options as buttons; the page is reloaded while the card waits (the
// run resumes, the card is still there), and "Always allow" goes back to opencode, which runs the command, answers,
// and runs the next command without asking again. Also: after a first run the composer's `/` list shows opencode's
// own commands, marked as its, and the model option is a select whose pick holds across a reload.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  getPage, makeTempDir, openChat, removeDir, seedSession, sendPrompt, startServer, waitForHydration,
} from './support.mjs';

const OPENCODE_VERSION = '1.18.33';
const OPENCODE =
  process.env.CHATWIRE_TEST_OPENCODE ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), `chatwire/opencode-${OPENCODE_VERSION}/node_modules/.bin/opencode`);
const FAKE_OPENAI = fileURLToPath(new URL('../../tests/fixtures/acp/record/fake-openai.mjs', import.meta.url));

const SCRIPT = [
  [{ text: 'Running it.' }, { tool_calls: [{ id: 'call_echo', name: 'bash', arguments: { command: 'echo approved', description: 'Print approved' } }] }],
  [{ text: 'Approved and done.' }],
  [{ tool_calls: [{ id: 'call_again', name: 'bash', arguments: { command: 'echo again', description: 'Print again' } }] }],
  [{ text: 'And hello after that.' }],
];

const MODEL = { name: 'Fake Model', tool_call: true, limit: { context: 100000, output: 8192 } };

/** opencode's environment: everything of its own in `home`, its models the fake server's, bash asked for. */
async function opencodeEnv(home, baseURL, models = { 'fake-model': MODEL }) {
  const config = path.join(home, 'config/opencode');
  await fs.mkdir(path.join(config, 'node_modules'), { recursive: true });
  // Without these opencode installs its plugin package from the npm registry in the background.
  const plugin = { '@opencode-ai/plugin': OPENCODE_VERSION };
  await fs.writeFile(path.join(config, 'package.json'), JSON.stringify({ dependencies: plugin }));
  await fs.writeFile(path.join(config, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: { '': { dependencies: plugin } } }));
  const opencodeConfig = {
    provider: { fake: { npm: '@ai-sdk/openai-compatible', name: 'Fake', options: { baseURL, apiKey: 'test-key' },
      models } },
    model: 'fake/fake-model',
    small_model: 'fake/fake-model',
    permission: { bash: 'ask' },
  };
  return {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_DATA_HOME: path.join(home, 'data'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    XDG_STATE_HOME: path.join(home, 'state'),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_CONFIG_CONTENT: JSON.stringify(opencodeConfig),
  };
}

/** A chatwire config file in `dir` whose agent `opencode` runs opencode with `env`; its path. */
async function opencodeConfig(dir, env) {
  const table = Object.entries(env).map(([key, value]) => `${key} = ${JSON.stringify(value)}`).join(', ');
  const config = path.join(dir, 'chatwire.toml');
  await fs.writeFile(config, `[agent.opencode]\ncommand = ${JSON.stringify(OPENCODE)}\nargs = ["acp"]\nenv = { ${table} }\n`);
  return config;
}

describe('an ACP agent (opencode)', () => {
  let server;
  let model;
  let dir;

  before(async () => {
    await fs.access(OPENCODE).catch(() => {
      throw new Error(`opencode ${OPENCODE_VERSION} is not installed at ${OPENCODE}: ./x test installs it`);
    });
    const { startFakeOpenAI } = await import(FAKE_OPENAI);
    model = await startFakeOpenAI({ script: SCRIPT });
    dir = await makeTempDir('chatwire-opencode-');
    const env = await opencodeEnv(path.join(dir, 'home'), `http://127.0.0.1:${model.port}/v1`);
    const config = await opencodeConfig(dir, env);
    server = await startServer({ args: ['--config', config, '--default-agent', 'opencode'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await model?.close();
    if (dir) await removeDir(dir);
  }, { timeout: 30_000 });

  test('a permission request is an approval card that survives a reload and lets the command run', { timeout: 180_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 800 } });
    await sendPrompt(page, 'Run echo approved.');
    const approve = page.locator('.approval button', { hasText: 'Always allow' });
    await approve.waitFor({ timeout: 90_000 });
    assert.match(await page.locator('.approval').textContent(), /echo approved/);
    const options = await page.locator('.approval__actions button').evaluateAll((buttons) =>
      buttons.map((button) => `${button.textContent}=${button.dataset.optionKind}`));
    assert.deepEqual(options, ['Allow once=allow_once', 'Always allow=allow_always', 'Reject=reject_once']);

    // Mid-run, the page goes away and comes back: the run goes on in the server and the card is still waiting.
    await page.reload();
    await waitForHydration(page);
    await approve.waitFor({ timeout: 30_000 });

    // ACP has no steering: a message sent now waits, and the page says it goes as the next prompt.
    await page.locator('[data-testid="composer"] textarea').fill('Then say hello.');
    await page.getByRole('button', { name: 'Steer', exact: true }).click();
    const note = page.locator('[data-testid="queue-note"]');
    await note.waitFor({ timeout: 30_000 });
    assert.match(await note.textContent(), /next prompt/);
    assert.equal(await page.locator('.queue__kind').first().textContent(), 'Next');

    await approve.click();
    // "Always": opencode runs the next prompt's `echo again` without asking, so no second card holds the run up.
    await page.getByText('And hello after that.').waitFor({ timeout: 90_000 });
    await page.getByText('Approved and done.').waitFor({ timeout: 10_000 });
    await page.locator('.message[data-role="user"]', { hasText: 'Then say hello.' }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('.approval').count(), 0);
    const bash = page.locator('.tool[data-tool="Bash"]');
    assert.deepEqual(await bash.evaluateAll((rows) => rows.map((row) => row.dataset.status)), ['done', 'done']);
    assert.match(await bash.first().locator('.tool-bash__command').textContent(), /echo approved/);
    assert.match(await bash.first().textContent(), /approved/);
    assert.match(await bash.last().locator('.tool-bash__command').textContent(), /echo again/);
    check();
  });
});

// One of opencode's own sessions of the workspace (made over the API here, as its CLI would make one there) is
// listed in New chat under "Open a session of opencode"; choosing it opens a new session with its messages.
describe("an ACP agent's own sessions (opencode)", () => {
  let server;
  let model;
  let dir;

  before(async () => {
    await fs.access(OPENCODE);
    const { startFakeOpenAI } = await import(FAKE_OPENAI);
    model = await startFakeOpenAI({ script: [[{ text: 'There is notes.txt.' }], [{ text: 'Yes, notes.txt.' }]] });
    dir = await makeTempDir('chatwire-opencode-own-');
    const workspace = path.join(dir, 'ws');
    await fs.mkdir(workspace, { recursive: true });
    await fs.writeFile(path.join(workspace, 'notes.txt'), 'remember me\n');
    const env = await opencodeEnv(path.join(dir, 'home'), `http://127.0.0.1:${model.port}/v1`);
    const config = await opencodeConfig(dir, env);
    server = await startServer({ args: ['--config', config, '--default-agent', 'opencode', '--workspace', workspace] });
    // The session's first run makes opencode's session; the run's stream ends with the run.
    const made = await seedSession(server, 'made here', ['Which files are here?']);
    // That chatwire session goes: what is left is opencode's own session.
    const { cookie } = await getPage(server.url);
    const gone = await fetch(new URL(`/api/sessions/${made}`, server.origin), { method: 'DELETE', headers: { cookie } });
    assert.equal(gone.status, 200, await gone.text());
  }, { timeout: 120_000 });

  after(async () => {
    await server?.stop();
    await model?.close();
    if (dir) await removeDir(dir);
  }, { timeout: 30_000 });

  test('New chat opens one of them with its messages, and it goes on', { timeout: 180_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 800 } });
    const open = page.locator('[data-testid="open-own-session"]');
    await open.waitFor({ timeout: 30_000 });
    assert.match(await open.textContent(), /Open a session of opencode/);
    await open.click();
    const listed = page.locator('[data-testid="own-session"]');
    await listed.first().waitFor({ timeout: 60_000 });
    assert.equal(await listed.count(), 1);
    assert.match(await listed.first().textContent(), /Fake session title/);
    await listed.first().click();

    await page.locator('.message[data-role="user"]', { hasText: 'Which files are here?' }).waitFor({ timeout: 60_000 });
    await page.getByText('There is notes.txt.').waitFor({ timeout: 10_000 });
    await page.waitForURL(/\/s\//, { timeout: 10_000 });
    assert.equal(await open.isVisible(), false, 'a session on screen offers no list');

    await sendPrompt(page, 'Do you remember the files?');
    await page.getByText('Yes, notes.txt.').waitFor({ timeout: 90_000 });
    check();
  });
});

// What opencode offers besides the conversation: its commands in the `/` list (marked as opencode's) and its model
// as a select, with two models configured at the fake server.
describe('what an ACP agent offers (opencode)', () => {
  let server;
  let model;
  let dir;

  before(async () => {
    await fs.access(OPENCODE);
    const { startFakeOpenAI } = await import(FAKE_OPENAI);
    model = await startFakeOpenAI({ script: [[{ text: 'Hello from the first model.' }]] });
    dir = await makeTempDir('chatwire-opencode-offers-');
    const models = { 'fake-model': MODEL, 'fake-model-2': { ...MODEL, name: 'Fake Model Two' } };
    const env = await opencodeEnv(path.join(dir, 'home'), `http://127.0.0.1:${model.port}/v1`, models);
    const config = await opencodeConfig(dir, env);
    server = await startServer({ args: ['--config', config, '--default-agent', 'opencode'] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await model?.close();
    if (dir) await removeDir(dir);
  }, { timeout: 30_000 });

  test("the / list shows opencode's commands, and its model select switches the model", { timeout: 180_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1000, height: 800 } });
    // Before the first run the agent has offered nothing: no select.
    const select = page.locator('[data-testid="agent-option-model"]');
    assert.equal(await select.count(), 0);
    await sendPrompt(page, 'Say hello.');
    await page.getByText('Hello from the first model.').waitFor({ timeout: 90_000 });

    const box = page.locator('[data-testid="composer"] textarea');
    await box.click();
    await page.keyboard.type('/in');
    const entry = page.getByTestId('composer-suggestions').locator('[role="option"]', { hasText: '/init' });
    await entry.waitFor({ timeout: 20_000 });
    assert.equal(await entry.getByTestId('agent-command').textContent(), 'opencode');
    await entry.click();
    assert.equal(await box.inputValue(), '/init ');
    await box.fill('');

    await select.waitFor({ timeout: 30_000 });
    assert.equal(await select.inputValue(), 'fake/fake-model');
    assert.equal(await select.getAttribute('aria-label'), 'Model');
    const answered = page.waitForResponse((response) => response.url().endsWith('/agent-option'), { timeout: 60_000 });
    await select.selectOption('fake/fake-model-2');
    assert.equal((await answered).status(), 200);
    assert.equal(await page.locator('.chat__problem').count(), 0);
    assert.equal(await select.inputValue(), 'fake/fake-model-2');

    await page.reload();
    await waitForHydration(page);
    await select.waitFor({ timeout: 30_000 });
    await page.waitForFunction(() => {
      const picked = document.querySelector('[data-testid="agent-option-model"]');
      return picked?.value === 'fake/fake-model-2';
    }, null, { timeout: 30_000 });
    check();
  });
});
