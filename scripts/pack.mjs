// Packs every publishable workspace package into one folder and prints, for each, the
// `npm install` line an app needs: its tarball and the tarballs of the @tessera packages it
// depends on (they are not on the npm registry yet, so npm cannot fetch them by name).
//
//   npm run pack                          builds, then packs into ./packed
//   npm run pack -- --out /tmp/tessera    another folder (created if missing)
//   npm run pack -- --json                the result as JSON (for scripts and the pack test)
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { publishable, ROOT } from './lib/workspaces.mjs';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: join(ROOT, 'packed') },
    json: { type: 'boolean', default: false },
  },
});
const out = resolve(values.out);
mkdirSync(out, { recursive: true });

const packages = publishable();
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const stdout = execFileSync(
  npm,
  ['pack', '--json', '--pack-destination', out, ...packages.flatMap((p) => ['-w', p.path])],
  { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 },
);
const packed = JSON.parse(stdout);
const tarballOf = new Map(packed.map((p) => [p.name, join(out, p.filename)]));
const manifestOf = new Map(packages.map((p) => [p.manifest.name, p.manifest]));

/** The package and every workspace package it needs, dependencies first. */
function closure(name, seen = new Set()) {
  if (seen.has(name)) return [];
  seen.add(name);
  const manifest = manifestOf.get(name);
  const needs = Object.keys({
    ...manifest.dependencies,
    ...manifest.optionalDependencies,
    ...manifest.peerDependencies,
  }).filter((dep) => manifestOf.has(dep));
  return [...needs.flatMap((dep) => closure(dep, seen)), name];
}

const install = Object.fromEntries(
  packed.map((p) => [p.name, closure(p.name).map((name) => tarballOf.get(name))]),
);
if (values.json) {
  console.log(JSON.stringify({ out, packed, install }, null, 2));
} else {
  const width = Math.max(...packed.map((p) => p.name.length));
  console.log(`Packed ${packed.length} packages into ${out}:`);
  for (const p of packed) console.log(`  ${p.name.padEnd(width)}  ${p.filename}`);
  console.log('\nIn your app, install a package with the @tessera packages it depends on:');
  for (const [name, tarballs] of Object.entries(install))
    console.log(`\n  # ${name}\n  npm install ${tarballs.join(' ')}`);
}
