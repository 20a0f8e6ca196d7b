import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { lazyImport, lazyRequire } from '../../src/lazy.js';
import { normaliseIdentifier } from '../../src/modules/otp/identifier.js';

test('a lazy import runs once, and callers that come meanwhile share it', async () => {
  let calls = 0;
  let finish!: (value: { name: string }) => void;
  const load = lazyImport(() => {
    calls++;
    return new Promise<{ name: string }>((resolve) => {
      finish = resolve;
    });
  });
  const first = load();
  const second = load();
  finish({ name: 'module' });
  assert.equal(await first, await second);
  assert.equal(await load(), await first);
  assert.equal(calls, 1);
});

test('a lazy import that failed is tried again by the next call', async () => {
  let calls = 0;
  const load = lazyImport(async () => {
    calls++;
    if (calls === 1) throw new Error('not installed');
    return { name: 'module' };
  });
  await assert.rejects(load(), /not installed/);
  assert.deepEqual(await load(), { name: 'module' });
  assert.equal(calls, 2);
});

test('a serving process does not load the passkey, SMTP, PostgreSQL or phone-number libraries until it needs them', () => {
  // A fresh process (the same loader as this one) that imports what `tessera serve` imports.
  const script = `
    import Module from 'node:module';
    await import(${JSON.stringify(new URL('../../src/main.ts', import.meta.url).href)});
    const loaded = Object.keys(Module._cache);
    console.log(JSON.stringify({
      total: loaded.length,
      lazy: loaded.filter((p) => /[\\\\/]node_modules[\\\\/](nodemailer|@simplewebauthn|@peculiar|asn1js|pg|pg-pool|pg-protocol|libphonenumber-js)[\\\\/]/.test(p)),
    }));
  `;
  const output = execFileSync(process.execPath, [...process.execArgv, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  const { total, lazy } = JSON.parse(output.trim().split('\n').pop()!) as { total: number; lazy: string[] };
  assert.ok(total > 50, `the check sees the modules loaded (${total})`);
  assert.deepEqual(lazy, []);
});

test('a lazy require loads its CommonJS package once, on first use', () => {
  const load = lazyRequire<typeof import('node:path')>('node:path');
  assert.equal(load(), load());
  assert.equal(load().join('a', 'b'), ['a', 'b'].join(load().sep));
  assert.throws(lazyRequire('tessera-no-such-package'), /Cannot find module/);
});

test('phone numbers still normalise through the lazily loaded library', () => {
  assert.deepEqual(normaliseIdentifier('0033 6 12 34 56 78'), {
    value: '+33612345678',
    type: 'phone',
    channel: 'sms',
    mailbox: '+33612345678',
  });
});
