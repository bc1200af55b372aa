// Keyboard use in Chromium against the release binary (issue 19, item 5): Tab alone reaches every control of a
// finished demo run, each shows where the focus is and is on screen while it has it; the question card, the
// thinking toggle and the mode switch work from the keyboard; and the sidebar's rename and delete give the focus
// back when they are done, as the quick switcher does (palette.test.mjs).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { openChat, sendPrompt, serverForSuite } from './support.mjs';

/** What a browser puts in the Tab order by itself, unless it is disabled, hidden, or an unchecked radio. */
const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), select:not([disabled]), ' +
  'textarea:not([disabled]), summary, [tabindex]:not([tabindex="-1"])';

/** Marks every control Tab should reach with `data-kb`; resolves to their descriptions, by mark. */
function markControls(page) {
  return page.evaluate((selector) => {
    const marked = {};
    let next = 0;
    for (const element of document.querySelectorAll(selector)) {
      if (!element.checkVisibility({ visibilityProperty: true })) continue;
      // Of a group of radios only the checked one is a Tab stop; arrows move inside the group.
      if (element.type === 'radio' && !element.checked) continue;
      element.dataset.kb = String(next);
      const name = element.getAttribute('aria-label') || element.innerText || element.placeholder || element.name;
      marked[next] = `${element.tagName.toLowerCase()} "${(name || '').trim().slice(0, 40)}"`;
      next += 1;
    }
    return marked;
  }, FOCUSABLE);
}

/** The focused element: its mark, a description, and whether a person can see that it has the focus. */
function focusedControl(page) {
  return page.evaluate(async () => {
    const element = document.activeElement;
    if (!element || element === document.body) return null;
    // Controls that fade in on focus are judged once their fade is over.
    const fades = document.getAnimations().filter((animation) => animation instanceof CSSTransition);
    await Promise.all(fades.map((fade) => fade.finished.catch(() => {})));
    // The mode switch's radios are drawn by the label's text beside them.
    const drawn = element.type === 'radio' && element.nextElementSibling ? element.nextElementSibling : element;
    const style = getComputedStyle(drawn);
    const ring =
      (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 1) || style.boxShadow !== 'none';
    let opacity = 1;
    for (let node = drawn; node instanceof Element; node = node.parentElement) {
      opacity *= parseFloat(getComputedStyle(node).opacity);
    }
    const box = drawn.getBoundingClientRect();
    const onScreen =
      box.width > 0 && box.height > 0 && box.bottom > 0 && box.right > 0 &&
      box.top < window.innerHeight && box.left < window.innerWidth;
    const name = element.getAttribute('aria-label') || element.innerText || element.placeholder || element.name;
    return {
      mark: element.dataset.kb ?? null,
      what: `${element.tagName.toLowerCase()} "${(name || '').trim().slice(0, 40)}"`,
      ring,
      opacity,
      onScreen,
    };
  });
}

/** Presses Tab until the focused control's text or label is `name`; fails after `limit` presses. */
async function tabTo(page, name, limit = 300) {
  for (let presses = 0; presses < limit; presses += 1) {
    await page.keyboard.press('Tab');
    const found = await page.evaluate((wanted) => {
      const element = document.activeElement;
      return (element?.getAttribute('aria-label') || element?.innerText || '').trim() === wanted;
    }, name);
    if (found) return;
  }
  assert.fail(`Tab never reached "${name}" in ${limit} presses`);
}

const focusedName = (page) =>
  page.evaluate(() => {
    const element = document.activeElement;
    return element === document.body ? 'body' : (element.getAttribute('aria-label') || element.innerText).trim();
  });

describe('chatwire by keyboard', () => {
  const suite = serverForSuite({ args: ['--approve', 'never'] });

  test('Tab reaches every control with a visible focus, and the controls work from the keyboard', {
    timeout: 180_000,
  }, async (t) => {
    const { page, check } = await openChat(t, suite.server, { viewport: { width: 1400, height: 900 } });

    await sendPrompt(page, 'Show me around');
    await page.locator('.question').waitFor({ timeout: 60_000 });
    // The question is answered by Tab and Enter alone, from the top of the page.
    await page.evaluate(() => document.activeElement?.blur());
    await tabTo(page, 'Yes, include it');
    await page.keyboard.press('Enter');
    await page.getByText('Run it yourself:').waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: 'Send' }).waitFor({ timeout: 10_000 });
    await page.locator('.sidebar__item--current .badge--idle').waitFor({ state: 'attached', timeout: 30_000 });

    const controls = await markControls(page);
    const count = Object.keys(controls).length;
    assert.ok(count > 30, `a finished demo run has more than 30 controls (found ${count})`);

    await page.evaluate(() => document.activeElement?.blur());
    const reached = new Set();
    const faults = [];
    let first = null;
    for (let presses = 0; presses < count * 3 + 20; presses += 1) {
      await page.keyboard.press('Tab');
      const focused = await focusedControl(page);
      if (!focused) continue;
      const key = focused.mark ?? focused.what;
      if (key === first) break;
      first ??= key;
      if (focused.mark !== null) reached.add(focused.mark);
      if (!focused.ring) faults.push(`${focused.what} shows no focus ring`);
      if (focused.opacity < 0.9) faults.push(`${focused.what} is faint (opacity ${focused.opacity}) while focused`);
      if (!focused.onScreen) faults.push(`${focused.what} is off screen while focused`);
    }
    const missed = Object.entries(controls).filter(([mark]) => !reached.has(mark)).map(([, what]) => what);
    assert.deepEqual(missed, [], 'controls Tab never reaches');
    assert.deepEqual(faults, [], 'controls whose focus cannot be seen');

    // A thinking block opens and closes with Enter and Space on its summary.
    const thinking = page.locator('details.part--thinking').first();
    const wasOpen = await thinking.evaluate((node) => node.open);
    await thinking.locator('summary').focus();
    await page.keyboard.press('Enter');
    assert.equal(await thinking.evaluate((node) => node.open), !wasOpen, 'Enter toggles the thinking block');
    await page.keyboard.press('Space');
    assert.equal(await thinking.evaluate((node) => node.open), wasOpen, 'Space toggles it back');

    // The mode switch moves with the arrows, as a radio group does.
    await page.getByRole('radio', { name: 'Agent' }).focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getByRole('radio', { name: 'Plan' }).isChecked(), true, 'ArrowRight picks Plan');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.getByRole('radio', { name: 'Agent' }).isChecked(), true, 'ArrowLeft picks Agent');

    // Rename: Enter opens the field, Esc gives the focus back to Rename; a saved title keeps it there too.
    const item = page.locator('.sidebar__item--current');
    const oldTitle = await item.locator('.sidebar__title').innerText();
    await item.getByRole('button', { name: `Rename ${oldTitle}` }).focus();
    await page.keyboard.press('Enter');
    const field = item.getByRole('textbox');
    await field.waitFor();
    assert.equal(await field.evaluate((node) => node === document.activeElement), true, 'the field has the focus');
    await page.keyboard.press('Escape');
    await item.locator('.sidebar__title').waitFor();
    assert.equal(await focusedName(page), `Rename ${oldTitle}`, 'Esc gives the focus back to Rename');
    await page.keyboard.press('Enter');
    await field.waitFor();
    await page.keyboard.type('Toured by keyboard');
    await page.keyboard.press('Enter');
    await page.locator('.sidebar__item--current .sidebar__title').getByText('Toured by keyboard').waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Rename Toured by keyboard');

    // Delete: Enter asks to confirm with the focus on the confirming button; Cancel gives it back to Delete.
    await page.keyboard.press('Tab');
    assert.equal(await focusedName(page), 'Delete Toured by keyboard');
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('group', { name: 'Confirm delete' });
    await confirm.waitFor();
    assert.equal(await focusedName(page), 'Delete', 'the confirming button has the focus');
    await page.keyboard.press('Tab');
    assert.equal(await focusedName(page), 'Cancel');
    await page.keyboard.press('Enter');
    await confirm.waitFor({ state: 'detached' });
    assert.equal(await focusedName(page), 'Delete Toured by keyboard', 'Cancel gives the focus back to Delete');

    // Deleting for real moves the focus to what is left of the list: here, with no session left, New chat.
    await page.keyboard.press('Enter');
    await confirm.waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.sidebar__empty').waitFor({ timeout: 10_000 });
    await page.waitForFunction(() => document.activeElement?.dataset.testid === 'new-chat');
    check();
  });
});
