import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isInternalHost } from '../../src/modules/webhooks/webhooks.service.js';

test('internal webhook targets are recognised (SSRF guard in production)', () => {
  for (const host of [
    'localhost',
    'api.localhost',
    '127.0.0.1',
    '127.8.9.10',
    '[::1]',
    '10.1.2.3',
    '172.20.1.1',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '[fd00::1]',
    '[fe80::1]',
  ]) {
    assert.equal(isInternalHost(host), true, host);
  }
  for (const host of ['example.com', 'hooks.example.org', '8.8.8.8', '172.32.0.1', '[2001:db8::1]']) {
    assert.equal(isInternalHost(host), false, host);
  }
});
