#!/usr/bin/env node
// Bundles @tessera/ui (with @tessera/client) for the hosted sign-in pages (issue 31) into
// dist/hosted/sign-in.js, which the server serves at /oauth/assets/sign-in.js. Without it the
// hosted pages sign in by code with server-rendered forms alone. Run by `npm run build`;
// `--source` bundles the workspace sources (tests) instead of the packages' dist.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const out = fileURLToPath(new URL('../dist/hosted/sign-in.js', import.meta.url));
mkdirSync(fileURLToPath(new URL('../dist/hosted/', import.meta.url)), { recursive: true });
await build({
  stdin: { contents: "import '@tessera/ui';", resolveDir: fileURLToPath(new URL('..', import.meta.url)) },
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  conditions: process.argv.includes('--source') ? ['tessera-source'] : [],
  outfile: out,
  logLevel: 'warning',
});
