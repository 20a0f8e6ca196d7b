// src/generated/ cannot drift from the server: it is made again here from the server's current
// OpenAPI document and compared, file by file; the runtime needs no Node (a browser bundle builds).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { adminOperations, buildDocument, GENERATED_DIR, generatedFiles } from '../scripts/generate.js';
import { OPERATIONS } from '../src/generated/operations.js';

/** The first line where two texts differ, for a readable failure. */
function firstDifference(actual: string, expected: string): string {
  const a = actual.split('\n');
  const e = expected.split('\n');
  const line = a.findIndex((text, i) => text !== e[i]);
  const at = line === -1 ? a.length : line;
  return `line ${at + 1}: has ${JSON.stringify(a[at])}, the document gives ${JSON.stringify(e[at])}`;
}

test('src/generated is what scripts/generate.ts makes from the server’s current OpenAPI document', async () => {
  const doc = await buildDocument();
  const files = await generatedFiles(doc);
  assert.deepEqual(readdirSync(GENERATED_DIR).sort(), Object.keys(files).sort());
  for (const [name, text] of Object.entries(files)) {
    const current = readFileSync(join(GENERATED_DIR, name), 'utf8');
    assert.ok(
      current === text,
      `src/generated/${name} is stale (${firstDifference(current, text)}): run npm run generate -w packages/admin`,
    );
  }
  // The runtime table names exactly the document's admin operations.
  assert.deepEqual(
    Object.entries(OPERATIONS)
      .map(([id, o]) => `${id} ${o.method} ${o.path}`)
      .sort(),
    adminOperations(doc)
      .map((o) => `${o.id} ${o.method} ${o.path}`)
      .sort(),
  );
});

test('the client bundles for browsers: no node: module, nothing but fetch', async () => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../src/index.ts', import.meta.url))],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['tessera-source'],
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  assert.ok(inputs.every((file) => !file.startsWith('node:')));
  assert.ok(
    inputs.every((file) => /packages\/(admin|core)\/src\//.test(file)),
    inputs.join(', '),
  );
  const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path));
  assert.deepEqual(
    imports.filter((path) => path.startsWith('node:')),
    [],
  );
});
