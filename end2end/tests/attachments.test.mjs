// End-to-end check of attachments in Chromium against the release binary: files come in by the Attach button (a
// real file chooser), by dropping them on the composer and by pasting an image from the clipboard; each shows as a
// chip that can be removed; refusals (over the limit, a fake PNG) name the file and lose nothing; the sent message
// shows its image (which opens full size and closes with Esc, focus back) and its file chip, also after a reload.
// A model that takes no images answers a message with one with an error naming it. axe checks the composer.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ARTIFACTS_DIR,
  axeViolations as violations,
  launchBrowser,
  makeTempDir,
  openApp,
  removeDir,
  startServer,
  watchProblems,
} from './support.mjs';

// A 1×1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const SCRIPT = { delayMs: 0, turns: [{ text: 'I see a single pixel.' }] };
const FILE_LIMIT = 4096;

const composer = '[data-testid="composer"]';
const chips = '[data-testid="attachment-chip"]';
const note = '[data-testid="composer-note"]';

describe('attachments', () => {
  let server;
  let dir;

  before(async () => {
    dir = await makeTempDir('chatwire-attachments-');
    const script = path.join(dir, 'script.json');
    await fs.writeFile(script, JSON.stringify(SCRIPT));
    const config = path.join(dir, 'models.toml');
    await fs.writeFile(
      config,
      [
        '[[model]]',
        'name = "sees"',
        'provider = "scripted"',
        `script = ${JSON.stringify(script)}`,
        '',
        '[[model]]',
        'name = "blind"',
        'provider = "scripted"',
        `script = ${JSON.stringify(script)}`,
        'images = false',
        '',
      ].join('\n'),
    );
    server = await startServer({
      args: ['--config', config, '--approve', 'never', '--attachment-file-limit', String(FILE_LIMIT)],
    });
  }, { timeout: 90_000 });

  after(async () => {
    await server?.stop();
    await removeDir(dir);
  }, { timeout: 30_000 });

  test('files come in by button, drop and paste, go with the message, and are refused by name', {
    timeout: 120_000,
  }, async (t) => {
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const { context } = browser;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.origin });
    const { problems, check } = watchProblems(context);
    const page = context.pages()[0] ?? (await context.newPage());
    await openApp(page, server);
    const sent = [];
    const uploads = [];
    page.on('request', (request) => {
      const { pathname } = new URL(request.url());
      if (request.method() === 'POST' && pathname === '/api/chat') sent.push(JSON.parse(request.postData()));
      if (request.method() === 'POST' && pathname === '/api/attachments') uploads.push(request.url());
    });

    // The Attach button opens the system's file chooser.
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByTestId('attach-button').click()]);
    assert.equal(chooser.isMultiple(), true);
    await chooser.setFiles([
      { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('remember the milk\n') },
    ]);
    await page.locator(`${chips} .chip__thumb`).waitFor({ timeout: 10_000 });
    await page.waitForFunction((selector) => [...document.querySelectorAll(selector)].every((chip) => !chip.dataset.uploading), chips);
    assert.deepEqual(await page.locator(`${chips} .chip__name`).allInnerTexts(), ['dot.png', 'notes.txt']);

    // A chip goes with its × button.
    await page.getByRole('button', { name: 'Remove notes.txt' }).click();
    assert.deepEqual(await page.locator(`${chips} .chip__name`).allInnerTexts(), ['dot.png']);

    // Dropped on the composer.
    const dropped = await page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(['fn main() {}\n'], 'main.rs', { type: '' }));
      return data;
    });
    await page.dispatchEvent(composer, 'drop', { dataTransfer: dropped });
    await page.locator(chips).nth(1).waitFor({ timeout: 10_000 });

    // Pasted: an image put on the clipboard, then Ctrl+V in the message box.
    await page.evaluate(async (bytes) => {
      const blob = new Blob([new Uint8Array(bytes)], { type: 'image/png' });
      await navigator.clipboard.write([new ClipboardItem({ 'image/png': blob })]);
    }, [...PNG]);
    const box = page.locator(`${composer} textarea`);
    await box.click();
    await page.keyboard.press('Control+V');
    await page.locator(chips).nth(2).waitFor({ timeout: 10_000 });
    assert.equal(await box.inputValue(), '', 'a pasted image is an attachment, not text');
    assert.equal(await page.locator(chips).count(), 3);

    // Refused before any upload: over the server's limit. Refused by the server: a PNG that is none.
    const before = uploads.length;
    await page.getByTestId('attach-input').setInputFiles([
      { name: 'big.log', mimeType: 'text/plain', buffer: Buffer.alloc(FILE_LIMIT + 1, 'a') },
    ]);
    await page.locator(note).getByText('big.log is 4 KiB; a file may be at most 4 KiB').waitFor({ timeout: 10_000 });
    assert.equal(uploads.length, before, 'a file over the limit is not uploaded');
    await page.getByTestId('attach-input').setInputFiles([
      { name: 'fake.png', mimeType: 'image/png', buffer: Buffer.from('not a picture') },
    ]);
    await page.locator(note).getByText('fake.png is not a PNG image').waitFor({ timeout: 10_000 });
    await page.waitForFunction((selector) => [...document.querySelectorAll(selector)].every((chip) => !chip.dataset.uploading), chips);
    assert.equal(await page.locator(chips).count(), 3, 'the refusals took nothing away');
    assert.deepEqual(await violations(page), [], 'the composer with chips');
    await page.screenshot({ path: path.join(ARTIFACTS_DIR, 'attachments-composer.png') });

    // Sent with the message: the chips go, the message shows the image and the file.
    await box.fill('What is in these?');
    await box.press('Enter');
    const transcript = page.getByTestId('transcript');
    await transcript.getByText('I see a single pixel.').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(chips).count(), 0);
    assert.equal(sent.at(-1).attachments.length, 3);
    assert.deepEqual(sent.at(-1).attachments.map((file) => file.name), ['dot.png', 'main.rs', 'image.png']);
    const user = transcript.locator('[data-role="user"]').last();
    const shown = async () => ({
      images: await user.locator('[data-testid="attachment-image"] img').count(),
      files: await user.locator('[data-testid="attachment-file"] .attachment__name').allInnerTexts(),
    });
    assert.deepEqual(await shown(), { images: 2, files: ['main.rs'] });
    const thumbnail = user.locator('[data-testid="attachment-image"]').first();
    await page.waitForFunction((img) => img.complete && img.naturalWidth === 1, await thumbnail.locator('img').elementHandle());

    // Click to enlarge; Esc closes and gives the focus back.
    await thumbnail.click();
    const lightbox = user.locator('[data-testid="lightbox"]').first();
    await page.waitForFunction((dialog) => dialog.open, await lightbox.elementHandle());
    await page.keyboard.press('Escape');
    await page.waitForFunction((dialog) => !dialog.open, await lightbox.elementHandle());
    assert.equal(await thumbnail.evaluate((button) => document.activeElement === button), true, 'focus back on the thumbnail');

    // Kept in the log: a reload shows the same.
    await page.reload();
    await page.waitForSelector('.app[data-hydrated="true"]', { state: 'attached', timeout: 30_000 });
    await transcript.getByText('I see a single pixel.').waitFor({ timeout: 10_000 });
    assert.deepEqual(await shown(), { images: 2, files: ['main.rs'] });

    // A model that takes no images: the run ends in an error that names the image.
    await page.getByTestId('model-picker').selectOption('blind');
    await page.getByTestId('attach-input').setInputFiles([{ name: 'dot.png', mimeType: 'image/png', buffer: PNG }]);
    await page.waitForFunction((selector) => {
      const all = [...document.querySelectorAll(selector)];
      return all.length === 1 && !all[0].dataset.uploading;
    }, chips);
    await box.fill('And this?');
    await box.press('Enter');
    await transcript.getByText('the model blind does not take images, so it cannot see dot.png').waitFor({ timeout: 10_000 });

    // The server's refusal of fake.png is a 400 the browser logs; it is what the test asked for.
    for (let at = problems.length - 1; at >= 0; at -= 1) {
      if (/status of 400/.test(problems[at]) && problems[at].includes('/api/attachments')) problems.splice(at, 1);
    }
    check();
  });
});
