import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomDigits, randomId, randomToken, requestIds } from '../../src/crypto/random.js';

test('random tokens from the pool: right length and alphabet, never repeated across refills', () => {
  const seen = new Set<string>();
  // 3,000 × 32 bytes crosses the 8 KiB pool about a dozen times, at odd offsets too.
  for (let i = 0; i < 3000; i++) {
    const token = randomToken(i % 2 ? 32 : 17);
    assert.match(token, i % 2 ? /^[A-Za-z0-9_-]{43}$/ : /^[A-Za-z0-9_-]{23}$/);
    assert.ok(!seen.has(token), 'a token repeated');
    seen.add(token);
  }
  assert.match(randomId('evt'), /^evt_[A-Za-z0-9_-]{22}$/);
  assert.match(randomToken(10_000), /^[A-Za-z0-9_-]{13334}$/);
  assert.match(randomDigits(6), /^\d{6}$/);
});

test('pooled bytes are uniform enough: every base64url symbol appears at about its share', () => {
  const counts = new Map<string, number>();
  for (let i = 0; i < 2000; i++) for (const c of randomToken(30)) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 64);
  // 2,000 × 40 symbols / 64 = 1,250 expected each; a broken pool (zeros, repeats) is far off.
  for (const [symbol, n] of counts) assert.ok(n > 1000 && n < 1500, `${symbol} appeared ${n} times`);
});

test('request ids: distinct within a process by the counter, across processes by the prefix', () => {
  const next = requestIds();
  const ids = Array.from({ length: 1000 }, () => next());
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{12}-[0-9a-z]+$/);
  const prefix = (id: string) => id.slice(0, 12);
  assert.equal(new Set(ids.map(prefix)).size, 1);
  // Another generator (another process, worker or app): another prefix, so no id is shared.
  const other = requestIds();
  assert.notEqual(prefix(other()), prefix(ids[0]!));
});
