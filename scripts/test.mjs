#!/usr/bin/env node
// Runs every test file of the monorepo with Node's own test runner (node --test), TypeScript
// loaded through tsx. Extra arguments are passed on, e.g. `npm test -- --test-name-pattern=otp`;
// a path argument narrows the run to the test files below it.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const roots = ['packages', 'examples', 'bench', 'test'];
const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, out);
    else if (/\.test\.ts$/.test(name)) out.push(relative(root, full));
  }
  return out;
}

let files = roots.flatMap((r) => {
  try {
    return walk(join(root, r), []);
  } catch {
    return [];
  }
});
if (paths.length > 0) files = files.filter((f) => paths.some((p) => f.startsWith(p.replace(/^\.\//, ''))));
files.sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// A test that hangs fails after 10 minutes, naming itself, instead of stalling the whole run (the
// longest tests take a few minutes on a busy 2-core machine). `--test-timeout=…` overrides it.
const timeout = flags.some((f) => f.startsWith('--test-timeout')) ? [] : ['--test-timeout=600000'];
// TAP as before, then the failed tests listed again at the very end (scripts/failures-reporter.mjs):
// CI shows only the tail of a run of a few thousand lines.
const reporters = flags.some((f) => f.startsWith('--test-reporter'))
  ? []
  : [
      '--test-reporter=tap',
      '--test-reporter-destination=stdout',
      `--test-reporter=${join(root, 'scripts/failures-reporter.mjs')}`,
      '--test-reporter-destination=stdout',
    ];
const result = spawnSync(
  process.execPath,
  [
    '--conditions=tessera-source',
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    ...timeout,
    ...reporters,
    ...flags,
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
// Node's summary counts skipped tests; say outright that a whole dialect was left out.
if (!process.env.TESSERA_TEST_DATABASE_URL && files.some((f) => f.startsWith('packages/server/'))) {
  console.log(
    '\n# PostgreSQL suites were SKIPPED (counted in "skipped" above): set TESSERA_TEST_DATABASE_URL=postgres://… to run them',
  );
}
process.exit(result.status ?? 1);
