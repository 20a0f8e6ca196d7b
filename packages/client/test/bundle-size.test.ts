// The SDK's weight in a browser app: bundled from its entry point, minified, gzipped.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** The budget of @tessera/client, minified and gzipped, in bytes. */
const BUDGET = 12 * 1024;

test(`@tessera/client bundles to at most ${BUDGET / 1024} KB gzipped for the browser`, async (t) => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../src/index.ts', import.meta.url))],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['tessera-source'],
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.contents;
  const gzipped = gzipSync(code, { level: 9 }).length;
  t.diagnostic(
    `@tessera/client: ${code.length} B minified, ${gzipped} B (${(gzipped / 1024).toFixed(2)} KB) gzipped`,
  );
  assert.ok(code.length > 1024, 'the bundle holds the SDK');
  assert.ok(gzipped <= BUDGET, `${gzipped} B gzipped is over the budget of ${BUDGET} B`);
});
