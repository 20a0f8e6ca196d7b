import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { AccessTokenClaims } from '@tessera/core';
import { cachedTokenBytes, VerifiedTokens } from '../../src/modules/verify/verified-tokens.js';

/** A token-shaped string: a header, a payload of `payloadBytes` and a 64-byte signature. */
function token(payloadBytes = 400, signature = randomBytes(64).toString('base64url')): string {
  return `eyJhbGciOiJFUzI1NiJ9.${randomBytes(payloadBytes).toString('base64url')}.${signature}`;
}

const claims = (jti: string) => ({ jti }) as unknown as AccessTokenClaims;

test('a token is cached the second time it is added, not the first', () => {
  const cache = new VerifiedTokens(1024 * 1024);
  const t = token();
  cache.add(t, { claims: claims('a'), kid: 'k1' });
  assert.equal(cache.get(t), undefined);
  assert.deepEqual(cache.size, { entries: 0, bytes: 0 });
  cache.add(t, { claims: claims('a'), kid: 'k1' });
  assert.deepEqual(cache.get(t), { claims: claims('a'), kid: 'k1', token: t, bytes: cachedTokenBytes(t) });
  assert.deepEqual(cache.size, { entries: 1, bytes: cachedTokenBytes(t) });
  // Added again (verified again after a key reload): updated in place, counted once.
  cache.add(t, { claims: claims('b'), kid: 'k2' });
  assert.equal(cache.get(t)?.kid, 'k2');
  assert.deepEqual(cache.size, { entries: 1, bytes: cachedTokenBytes(t) });
});

test('a hit compares the whole token: another payload with the same signature is not found', () => {
  const cache = new VerifiedTokens(1024 * 1024);
  const signature = randomBytes(64).toString('base64url');
  const real = token(400, signature);
  cache.add(real, { claims: claims('a'), kid: 'k1' });
  cache.add(real, { claims: claims('a'), kid: 'k1' });
  const forged = token(400, signature);
  assert.equal(cache.get(forged), undefined);
  cache.delete(forged);
  assert.equal(cache.get(real)?.claims.jti, 'a', 'deleting another token removed the cached one');
});

test('the oldest tokens are evicted to stay within the byte budget and the entry bound', () => {
  const t0 = token();
  const perToken = cachedTokenBytes(t0);
  const cache = new VerifiedTokens(perToken * 5);
  const tokens = [t0, ...Array.from({ length: 9 }, () => token())];
  for (const t of tokens) {
    cache.add(t, { claims: claims(t), kid: 'k' });
    cache.add(t, { claims: claims(t), kid: 'k' });
  }
  assert.deepEqual(cache.size, { entries: 5, bytes: perToken * 5 });
  assert.deepEqual(
    tokens.map((t) => cache.get(t) !== undefined),
    [false, false, false, false, false, true, true, true, true, true],
  );

  const bounded = new VerifiedTokens(1024 * 1024, 3);
  for (const t of tokens) {
    bounded.add(t, { claims: claims(t), kid: 'k' });
    bounded.add(t, { claims: claims(t), kid: 'k' });
  }
  assert.equal(bounded.size.entries, 3);
  assert.ok(tokens.slice(-3).every((t) => bounded.get(t) !== undefined));
});

test('a deleted token gives its bytes back, and eviction later skips its slot', () => {
  const t = token();
  const perToken = cachedTokenBytes(t);
  const cache = new VerifiedTokens(perToken * 3);
  const others = [token(), token(), token()];
  for (const x of [t, ...others.slice(0, 2)]) {
    cache.add(x, { claims: claims(x), kid: 'k' });
    cache.add(x, { claims: claims(x), kid: 'k' });
  }
  cache.delete(t);
  assert.deepEqual(cache.size, { entries: 2, bytes: perToken * 2 });
  cache.add(others[2]!, { claims: claims('c'), kid: 'k' });
  cache.add(others[2]!, { claims: claims('c'), kid: 'k' });
  assert.deepEqual(cache.size, { entries: 3, bytes: perToken * 3 });
  assert.ok(
    others.every((x) => cache.get(x) !== undefined),
    'a live token was evicted for a deleted one',
  );
});

test('a token larger than the whole budget is never cached', () => {
  const cache = new VerifiedTokens(1000);
  const big = token(2000);
  cache.add(big, { claims: claims('big'), kid: 'k' });
  cache.add(big, { claims: claims('big'), kid: 'k' });
  assert.deepEqual(cache.size, { entries: 0, bytes: 0 });
});
