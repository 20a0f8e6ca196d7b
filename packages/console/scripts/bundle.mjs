#!/usr/bin/env node
// Bundles the console (issue 33) into @tessera/server's dist/console/: console.js, console.css and
// index.html, which the server serves at /console when TESSERA_CONSOLE is on. Run by
// `npm run build`; `--source` bundles the workspace sources (tests) instead of the packages' dist.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const outdir = fileURLToPath(new URL('../../server/dist/console/', import.meta.url));
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: { console: fileURLToPath(new URL('../src/main.tsx', import.meta.url)) },
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  conditions: process.argv.includes('--source') ? ['tessera-source'] : [],
  outdir,
  // Nothing is loaded from elsewhere: no fonts, images or chunks beside these two files.
  splitting: false,
  legalComments: 'none',
  logLevel: 'warning',
});
// The page itself: no inline script or style (the CSP allows neither), the two files by path.
writeFileSync(
  `${outdir}index.html`,
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>Tessera console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script type="module" src="/console/assets/console.js"></script>
</head>
<body>
<div id="root"></div>
</body>
</html>
`,
);
