// The Next.js snippets of packages/ssr/README.md are the files of this example, which e2e.test.ts
// builds and drives: each block marked `<!-- file: examples/next/<path> -->` must be that file,
// after a first line naming it, and the README must show every file a Next app needs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const NEEDED = [
  'lib/tessera.ts',
  'app/auth/[...tessera]/route.ts',
  'proxy.ts',
  'app/signin/page.tsx',
  'app/signin/code/page.tsx',
  'app/account/page.tsx',
];

test('the README Next.js snippets are the files of examples/next, every one of them', () => {
  const readme = readFileSync(join(ROOT, 'packages/ssr/README.md'), 'utf8');
  const shown = new Map<string, string>();
  for (const m of readme.matchAll(/<!-- file: examples\/next\/(\S+) -->\n```\w+\n([\s\S]*?)\n```\n/g)) {
    shown.set(m[1]!, m[2]!);
  }
  assert.deepEqual([...shown.keys()].sort(), [...NEEDED].sort());
  for (const [path, code] of shown) {
    const [first, ...rest] = code.split('\n');
    assert.equal(first, `// ${path}`, `${path}: the snippet starts by naming its file`);
    const file = readFileSync(join(ROOT, 'examples/next', path), 'utf8').replace(/\n$/, '');
    assert.equal(rest.join('\n'), file, `${path}: the README shows the file as it is`);
  }
  for (const helper of ['routeHandlers', 'middlewareSession', 'readSession', 'csrfTokenOf']) {
    assert.match(readme, new RegExp(`\`${helper}\\(`), `${helper} is documented`);
  }
});
