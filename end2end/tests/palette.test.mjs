// End-to-end check of the quick switcher in Chromium against the release binary: Ctrl+K (and Cmd+K) opens a modal
// combobox over the sessions and actions, typing filters fuzzily, the arrows and Enter open a session, actions switch
// the mode, the model and the theme, Tab stays inside, Esc closes and gives the focus back; the dialog's chunk is
// fetched only when the switcher is wanted.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { makeTempDir, openChat, removeDir, startServer, waitForHydration } from './support.mjs';

const TITLES = ['Alpha report', 'Beta notes', 'Gamma release'];

const dialog = '[data-testid="palette"] [role="dialog"]';
const combobox = `${dialog} [role="combobox"]`;
const options = `${dialog} [role="option"]`;
const textarea = '[data-testid="composer"] textarea';

/** What has the focus: its tag, role and test id. */
const focused = (page) =>
  page.evaluate(() => {
    const el = document.activeElement;
    return { tag: el?.tagName.toLowerCase(), role: el?.getAttribute('role'), inDialog: !!el?.closest('[role="dialog"]') };
  });

/** Presses the shortcut and waits until the dialog's field has the focus. */
async function openSwitcher(page, keys = 'Control+k') {
  await page.keyboard.press(keys);
  // The message box is a combobox too (its @ and / suggestions): wait for the dialog's own field.
  await page.waitForFunction(() => document.activeElement?.closest('[role="dialog"]') && document.activeElement.getAttribute('role') === 'combobox');
}

/** Waits until the page has drawn what the last key changed (Leptos updates the DOM in a microtask). */
const settled = (page) => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));

const optionTexts = (page) =>
  page.locator(options).evaluateAll((items) => items.map((item) => item.querySelector('.palette__label').textContent));

describe('quick switcher', () => {
  let server;
  let configDir;

  before(async () => {
    configDir = await makeTempDir('chatwire-palette-');
    const script = path.join(configDir, 'script.json');
    await fs.writeFile(script, JSON.stringify({ turns: [{ text: 'Noted.' }] }));
    const config = path.join(configDir, 'models.toml');
    const model = (name) => ['[[model]]', `name = "${name}"`, 'provider = "scripted"', `script = ${JSON.stringify(script)}`, ''];
    await fs.writeFile(config, [...model('first'), ...model('second')].join('\n'));
    server = await startServer({ args: ['--config', config] });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await removeDir(configDir);
  }, { timeout: 30_000 });

  test('keyboard only: open, filter, move, open a session, run actions, trap Tab, Esc gives focus back', { timeout: 120_000 }, async (t) => {
    const { page, check } = await openChat(t, server, { viewport: { width: 1100, height: 800 } });
    const splitRequests = [];
    page.on('request', (request) => {
      if (/\/pkg\/split_quick_switcher\.[^/]+\.wasm$/.test(new URL(request.url()).pathname)) splitRequests.push(request.url());
    });
    const ids = {};
    for (const title of TITLES) {
      // One after the other, so that the most recently changed is the last made.
      const session = await page.evaluate(async (title) => {
        const response = await fetch('/api/sessions', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ title }),
        });
        return (await response.json()).session;
      }, title);
      ids[title] = session.sessionId;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await page.reload({ waitUntil: 'domcontentloaded' });
    await waitForHydration(page);
    await page.locator('[data-testid="sidebar"] .sidebar__item').nth(2).waitFor();
    assert.deepEqual(splitRequests, [], 'the first load does not fetch the switcher');

    // Ctrl+K from the message box opens the dialog with the focus in its field.
    await page.locator(textarea).focus();
    await openSwitcher(page);
    assert.equal(splitRequests.length, 1, 'the dialog came in its own chunk');
    assert.equal(await page.locator(dialog).getAttribute('aria-modal'), 'true');
    assert.deepEqual(await focused(page), { tag: 'input', role: 'combobox', inDialog: true });
    const listId = await page.locator(combobox).getAttribute('aria-controls');
    assert.equal(await page.locator(`#${listId}`).getAttribute('role'), 'listbox');

    // Sessions most recent first, then the actions (the model picks, as two models are configured).
    assert.deepEqual(await optionTexts(page), [
      'Gamma release',
      'Beta notes',
      'Alpha report',
      'New chat',
      'Switch to Plan mode',
      'Use model first',
      'Use model second',
      await page.evaluate(() =>
        matchMedia('(prefers-color-scheme: dark)').matches ? 'Switch to light theme' : 'Switch to dark theme',
      ),
    ]);

    // Fuzzy: scattered letters find the one title that has them in order, with the letters marked.
    await page.keyboard.type('gmr');
    await page.waitForFunction((sel) => document.querySelectorAll(sel).length === 1, options);
    assert.deepEqual(await optionTexts(page), ['Gamma release']);
    assert.deepEqual(await page.locator(`${options} mark`).allTextContents(), ['G', 'm', 'r']);
    await page.keyboard.type('xq');
    await page.locator(`${dialog} .palette__empty`, { hasText: 'Nothing matches.' }).waitFor();
    assert.equal(await page.locator(combobox).getAttribute('aria-activedescendant'), null);

    // Arrows move the active entry (wrapping), named by aria-activedescendant; Enter opens it.
    await page.locator(combobox).fill('');
    await page.keyboard.type('e');
    await settled(page);
    const active = async () => {
      const id = await page.locator(combobox).getAttribute('aria-activedescendant');
      const option = page.locator(`#${id}`);
      assert.equal(await option.getAttribute('aria-selected'), 'true');
      return option.locator('.palette__label').textContent();
    };
    const matches = await optionTexts(page);
    assert.ok(matches.length >= 3, `"e" matches every session: ${matches}`);
    assert.equal(await active(), matches[0]);
    await page.keyboard.press('ArrowUp');
    await settled(page);
    assert.equal(await active(), matches.at(-1), 'ArrowUp from the first wraps to the last');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    await settled(page);
    assert.equal(await active(), matches[1]);
    await page.locator(combobox).fill('beta');
    await settled(page);
    assert.equal(await active(), 'Beta notes', 'a new query starts at its best match');
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/s/${ids['Beta notes']}`);
    await page.locator(dialog).waitFor({ state: 'detached' });
    assert.equal(await page.locator('.sidebar__item--current .sidebar__title').textContent(), 'Beta notes');
    assert.deepEqual(await focused(page), { tag: 'textarea', role: 'combobox', inDialog: false }, 'focus back in the box');

    // Tab and Shift+Tab stay in the dialog.
    await openSwitcher(page);
    for (const key of ['Tab', 'Tab', 'Shift+Tab']) {
      await page.keyboard.press(key);
      assert.deepEqual(await focused(page), { tag: 'input', role: 'combobox', inDialog: true }, `after ${key}`);
    }
    // An action: the other mode.
    await page.keyboard.type('plan');
    await page.keyboard.press('Enter');
    await page.locator(dialog).waitFor({ state: 'detached' });
    assert.equal(await page.locator('.mode-switch input[value="Plan"]').isChecked(), true, 'the composer is in Plan mode');

    // Esc closes and gives the focus back to where it was: here the New chat link.
    await page.locator('[data-testid="new-chat"]').focus();
    await openSwitcher(page, 'Meta+k');
    await page.keyboard.press('Escape');
    await page.locator(dialog).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'new-chat');

    // The model: the picker follows.
    await openSwitcher(page);
    await page.keyboard.type('use second');
    await page.keyboard.press('Enter');
    await page.locator(dialog).waitFor({ state: 'detached' });
    assert.equal(await page.locator('[data-testid="model-picker"]').inputValue(), 'second');

    // The theme: flipped, remembered, and there from the first paint after a reload.
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const before = await background();
    await openSwitcher(page);
    await page.keyboard.type('theme');
    await settled(page);
    const [toggle] = await optionTexts(page);
    assert.match(toggle, /^Switch to (dark|light) theme$/, 'the whole word ranks first');
    const wanted = toggle.includes('dark') ? 'dark' : 'light';
    await page.keyboard.press('Enter');
    await page.waitForFunction((theme) => document.documentElement.dataset.theme === theme, wanted);
    assert.notEqual(await background(), before, 'the colours changed');
    await page.reload({ waitUntil: 'commit' });
    await page.waitForSelector('body');
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), wanted, 'set before hydration');
    await waitForHydration(page);

    // A click outside the dialog closes it too.
    await openSwitcher(page);
    await page.mouse.click(10, 790);
    await page.locator(dialog).waitFor({ state: 'detached' });

    check();
  });
});
