import { randomFillSync, randomInt, randomUUID } from 'node:crypto';

/**
 * CSPRNG bytes drawn from a pool refilled 8 KiB at a time (what node:crypto's randomUUID does):
 * one call into OpenSSL per pool instead of one per token (docs/BENCHMARKS.md, "Design
 * measurements"). Every byte is used once and the pool is never exposed.
 */
const POOL_SIZE = 8192;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let offset = POOL_SIZE;

function take(bytes: number): Buffer {
  if (bytes > POOL_SIZE) return randomFillSync(Buffer.allocUnsafe(bytes));
  if (offset + bytes > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = pool.subarray(offset, offset + bytes);
  offset += bytes;
  return out;
}

/** `bytes` bytes from the CSPRNG, base64url. */
export function randomToken(bytes = 32): string {
  return take(bytes).toString('base64url');
}

/** A random id with a readable prefix, e.g. `otp_…` (128 bits). */
export function randomId(prefix: string): string {
  return `${prefix}_${take(16).toString('base64url')}`;
}

/** A string of `length` decimal digits, uniformly from the CSPRNG. */
export function randomDigits(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += randomInt(10).toString();
  return out;
}

/**
 * Request ids, for log lines only: `<12 random base64url characters>-<counter in base 36>`, e.g.
 * `Qk3v9x0aTz1m-1a`. The prefix (72 bits) is drawn once per call, so the ids of one process are
 * distinct by the counter and those of different processes (instances, workers) by the prefix.
 * Not a secret and not meant to be unguessable: a UUID per request cost 0.2–0.4 µs more and
 * carried 122 random bits that nothing needs.
 */
export function requestIds(): () => string {
  const prefix = `${randomToken(9)}-`;
  let counter = 0;
  return () => prefix + (++counter).toString(36);
}

export { randomUUID };
