// Tests of the decode bench's check (`node decode.mjs --check`, which `./x test` runs): it must fail when the zod
// schema falls behind src/protocol/frame.rs, so that the bench cannot rot unseen again (issue 39, item 5). Each
// test runs the check with a copy of frame-schema.mjs that lacks one thing the golden files hold.
//
//   node --test end2end/bench/      (after end2end/bench/decode/build.sh current)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const schema = fs.readFileSync(path.join(here, 'frame-schema.mjs'), 'utf8');

// The copy sits next to the original so that it resolves `zod` the same way.
function checkWith(text) {
  const file = path.join(here, `.frame-schema-test-${process.pid}.mjs`);
  fs.writeFileSync(file, text);
  try {
    const run = spawnSync(process.execPath, [path.join(here, 'decode.mjs'), '--check', 'current'], {
      encoding: 'utf8',
      env: { ...process.env, DECODE_SCHEMA: file },
    });
    return { status: run.status, out: run.stdout + run.stderr };
  } finally {
    fs.rmSync(file);
  }
}
const without = (line) => {
  assert.ok(schema.includes(line), `frame-schema.mjs no longer has ${line}`);
  return schema.replace(line, '');
};

test('the schema as it is passes', () => {
  const { status, out } = checkWith(schema);
  assert.equal(status, 0, out);
  assert.match(out, /golden lines accepted by zod \(nothing stripped\) and by chatwire current/);
});

test('a frame type the schema lacks fails, naming the types and a golden line zod rejects', () => {
  const { status, out } = checkWith(without("  z.object({ type: z.literal('branch'), seq, messageId: text }),\n"));
  assert.equal(status, 1, out);
  assert.match(out, /frame types: src\/protocol\/frame\.rs has \[.*branch.*\], frame-schema\.mjs has/);
  assert.match(out, /tests\/golden\/.*\.ndjson:\d+: zod rejects it/);
});

test('a field the schema lacks fails, since zod would strip it and be timed on less', () => {
  const { status, out } = checkWith(without('    branch: z.object({ parentId: text.optional() }).optional(),\n'));
  assert.equal(status, 1, out);
  assert.match(out, /tests\/golden\/.*\.ndjson:\d+: zod strips a field the schema lacks\n\{"type":"start"/);
});
