import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTesseraSsr } from '../src/index.js';
import { isLocalPath } from '../src/options.js';

const APP = 'https://shop.example';

test('a form redirect never leaves the site, even through dot segments', async () => {
  const ssr = createTesseraSsr({
    issuer: 'https://auth.invalid',
    apiKeyId: 'key',
    appOrigin: APP,
    fetch: async () => {
      throw new Error('no call expected');
    },
  });
  for (const error_to of ['/a/..//evil.test/x', '/.//evil.test', '/%2e//evil.test', '/a/%2E%2E//evil.test']) {
    assert.equal(isLocalPath(error_to), false, error_to);
    // A cross-site form without a CSRF token: refused, and sent to error_to.
    const response = (await ssr.handle(
      new Request(`${APP}/auth/otp/start`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ identifier: 'a@example.com', error_to }),
      }),
    ))!;
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), '/?error=csrf_failed', error_to);
  }
  assert.equal(isLocalPath('/a/../signin?next=/x'), true);
});

test('a body without a declared length is read only up to the limit (413), not whole first', async () => {
  const ssr = createTesseraSsr({
    issuer: 'https://auth.invalid',
    apiKeyId: 'key',
    appOrigin: APP,
    fetch: async () => {
      throw new Error('no call expected');
    },
  });
  let pulled = 0;
  const chunk = new Uint8Array(16 * 1024).fill(0x61);
  // An endless chunked body: reading it whole would never end.
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      controller.enqueue(chunk);
    },
  });
  const response = (await ssr.handle(
    new Request(`${APP}/auth/otp/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: APP },
      body,
      duplex: 'half',
    } as RequestInit),
  ))!;
  assert.equal(response.status, 413);
  assert.ok(pulled <= 8, `read ${pulled} chunks of 16 KiB for a 64 KiB limit`);
});
