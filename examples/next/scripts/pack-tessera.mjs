#!/usr/bin/env node
// Packs @tessera/core, @tessera/verify and @tessera/ssr (built: run `npm run build` at the
// repository's root first) into the folder given, as the tarballs this app's package.json installs
// until the packages are on the registry. Usage: node scripts/pack-tessera.mjs <folder>
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';

const folder = process.argv[2];
if (!folder) {
  console.error('usage: node scripts/pack-tessera.mjs <folder>');
  process.exit(2);
}
const destination = resolve(folder);
const root = new URL('../../../', import.meta.url).pathname;
mkdirSync(destination, { recursive: true });
const workspaces = ['packages/core', 'packages/verify', 'packages/ssr'].flatMap((w) => ['-w', w]);
execFileSync('npm', ['pack', '--silent', '--pack-destination', destination, ...workspaces], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});
console.log(`packed @tessera/core, @tessera/verify and @tessera/ssr into ${destination}`);
