// What the SDK weighs in a browser app: an app's entry importing the package, bundled with esbuild,
// minified and gzipped (zlib's default level, as Vite reports it). README.md states these figures:
// a test checks that it states what is measured here, and
//   TESSERA_WRITE_SIZES=1 node scripts/test.mjs test/packaging/bundle-size.test.ts
// writes the measured figures into it.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Measured {
  label: string;
  /** What an app's entry imports. */
  entry: string;
  /** The budget, minified and gzipped, in bytes. */
  budget: number;
  /** How README.md states the figure: the sentence around it, with the figure as a group. */
  stated: RegExp;
  gzipped?: number;
}

const BUNDLES: Measured[] = [
  {
    label: '@tessera/client',
    entry: `import { createTesseraClient } from '@tessera/client';
globalThis.client = createTesseraClient({ issuer: 'https://auth.example.com', apiKeyId: 'pk_1' });`,
    budget: 12 * 1024,
    stated: /`@tessera\/client` is ([\d.]+) kB\s+minified\s+and\s+gzipped/,
  },
  {
    label: '@tessera/react with @tessera/client (React not counted)',
    entry: `import { createTesseraClient } from '@tessera/client';
import { TesseraProvider, useSession, useSignIn, useUser } from '@tessera/react';
globalThis.sdk = { createTesseraClient, TesseraProvider, useSession, useSignIn, useUser };`,
    budget: 14 * 1024,
    stated: /([\d.]+) kB\s+with\s+`@tessera\/react`/,
  },
];

/** The largest difference between README's figure and the measured one, in kB. */
const TOLERANCE_KB = 0.2;
const kB = (bytes: number) => (bytes / 1000).toFixed(1);

describe('bundle sizes', () => {
  before(async () => {
    for (const bundle of BUNDLES) {
      const result = await build({
        stdin: { contents: bundle.entry, resolveDir: ROOT, loader: 'ts' },
        bundle: true,
        minify: true,
        format: 'esm',
        platform: 'browser',
        target: 'es2022',
        conditions: ['tessera-source'],
        external: ['react', 'react-dom', 'react/jsx-runtime'],
        write: false,
        logLevel: 'silent',
      });
      const code = result.outputFiles[0]!.contents;
      assert.ok(code.length > 1024, `${bundle.label}: the bundle holds the SDK`);
      bundle.gzipped = gzipSync(code).length;
      console.log(
        `${bundle.label}: ${code.length} B minified, ${bundle.gzipped} B (${kB(bundle.gzipped)} kB) gzipped`,
      );
    }
    if (process.env['TESSERA_WRITE_SIZES'] === '1') {
      let text = readFileSync(README, 'utf8');
      for (const bundle of BUNDLES)
        text = text.replace(bundle.stated, (sentence, figure: string) =>
          sentence.replace(figure, kB(bundle.gzipped!)),
        );
      writeFileSync(README, text);
    }
  });

  for (const bundle of BUNDLES) {
    it(`${bundle.label} is within its budget of ${bundle.budget / 1024} KiB gzipped`, () => {
      assert.ok(bundle.gzipped! <= bundle.budget, `${bundle.gzipped} B gzipped is over ${bundle.budget} B`);
    });

    it(`README.md states the size of ${bundle.label} that this test measures`, () => {
      const match = bundle.stated.exec(readFileSync(README, 'utf8'));
      assert.ok(match, `README.md has no sentence matching ${bundle.stated}`);
      const measured = bundle.gzipped! / 1000;
      assert.ok(
        Math.abs(Number(match[1]) - measured) <= TOLERANCE_KB,
        `README.md says ${match[1]} kB, the test measures ${kB(bundle.gzipped!)} kB: ` +
          'run TESSERA_WRITE_SIZES=1 node scripts/test.mjs test/packaging/bundle-size.test.ts',
      );
    });
  }
});
