// The element's weight in a browser app on top of @tessera/client: bundled from its entry point
// with the client left out (an app has it already), minified, gzipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** The budget of @tessera/ui on top of @tessera/client, minified and gzipped, in bytes. */
const BUDGET = 15 * 1024;

const bundle = async (external: string[]) => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../src/index.ts', import.meta.url))],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['tessera-source'],
    external,
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.contents;
  return { minified: code.length, gzipped: gzipSync(code, { level: 9 }).length };
};

test(`@tessera/ui adds at most ${BUDGET / 1024} KB gzipped to @tessera/client`, async (t) => {
  const alone = await bundle(['@tessera/client']);
  const whole = await bundle([]);
  t.diagnostic(
    `@tessera/ui: ${alone.minified} B minified, ${alone.gzipped} B (${(alone.gzipped / 1024).toFixed(2)} KB) gzipped on top of @tessera/client; with the client: ${whole.gzipped} B (${(whole.gzipped / 1024).toFixed(2)} KB) gzipped`,
  );
  assert.ok(alone.minified > 4096, 'the bundle holds the element');
  assert.ok(whole.gzipped > alone.gzipped + 4096, 'the client was left out of the first figure');
  assert.ok(alone.gzipped <= BUDGET, `${alone.gzipped} B gzipped is over the budget of ${BUDGET} B`);
});
