import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SERVE_NODE_FLAGS, withServeFlags } from '../../src/node-flags.js';

const root = new URL('../../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const flags = SERVE_NODE_FLAGS.join(' ');

test('every way of starting `tessera serve` passes the serving flags to node', () => {
  assert.ok(SERVE_NODE_FLAGS.length > 0);
  const launches: Array<[string, string]> = [
    ['packages/server/bin/tessera.js (shebang)', read('packages/server/bin/tessera.js').split('\n')[0]!],
    [
      'package.json `start`',
      (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start,
    ],
    ['Dockerfile CMD', read('Dockerfile').match(/^CMD .*$/m)?.[0] ?? ''],
    ['deploy/tessera.service ExecStart', read('deploy/tessera.service').match(/^ExecStart=.*$/m)?.[0] ?? ''],
  ];
  for (const [where, line] of launches) {
    const words = line.replace(/[[\]",]/g, ' ').split(/\s+/);
    for (const flag of SERVE_NODE_FLAGS)
      assert.ok(words.includes(flag), `${where} lacks ${flag}: ${line} (expected ${flags})`);
  }
  // The cluster's workers and the benchmark's server take them from the list itself.
  assert.match(read('packages/server/src/cluster.ts'), /setupPrimary\(\{ execArgv: withServeFlags\(/);
  assert.match(read('bench/tessera.ts'), /SERVE_NODE_FLAGS/);
});

test('a cluster worker gets the serving flags its primary lacks, and keeps a value set otherwise', () => {
  assert.deepEqual(withServeFlags(['--enable-source-maps']), ['--enable-source-maps', ...SERVE_NODE_FLAGS]);
  assert.deepEqual(withServeFlags([...SERVE_NODE_FLAGS]), [...SERVE_NODE_FLAGS]);
  // A flag set otherwise keeps its value (V8 spells names with - or _); the others are added.
  assert.deepEqual(withServeFlags(['--max_semi_space_size=16']), [
    '--max_semi_space_size=16',
    ...SERVE_NODE_FLAGS.filter((flag) => !flag.startsWith('--max-semi-space-size=')),
  ]);
  assert.deepEqual(withServeFlags(['--heap-growing-percent=100', '--max-semi-space-size=8']), [
    '--heap-growing-percent=100',
    '--max-semi-space-size=8',
  ]);
});
