import { createPublicKey, verify } from 'node:crypto';
import { jwtVerify } from 'jose';
import { decodeJwt, verifyEs256 } from '../packages/server/src/tokens/jwt.js';

/**
 * In-process ES256 verification of a real access token with the issuer's public key (from the
 * JWKS), on the benchmark's own single thread, meant to run while the servers are idle.
 */
export class CryptoVerify {
  readonly #token: string;
  readonly #issuer: string;
  readonly #key;
  readonly #input: Buffer;
  readonly #signature: Buffer;

  constructor(token: string, publicJwk: Record<string, unknown>, issuer: string) {
    this.#token = token;
    this.#issuer = issuer;
    this.#key = createPublicKey({ key: publicJwk, format: 'jwk' });
    const decoded = decodeJwt(token);
    if (!decoded) throw new Error('token does not decode');
    this.#input = Buffer.from(decoded.signingInput);
    this.#signature = decoded.signature;
    if (!this.#raw()) throw new Error('signature does not verify');
  }

  #raw(): boolean {
    return verify('sha256', this.#input, { key: this.#key, dsaEncoding: 'ieee-p1363' }, this.#signature);
  }

  /** `crypto.verify` of the signing input alone, per second: the "raw" of the targets. */
  raw(seconds: number): number {
    return loop(seconds, () => {
      this.#raw();
    });
  }

  /** The server's own `decodeJwt` + `verifyEs256`, i.e. what /verify does on a cache miss. */
  decodeAndVerify(seconds: number): number {
    return loop(seconds, () => {
      const d = decodeJwt(this.#token);
      if (!d || !verifyEs256(d, this.#key)) throw new Error('verification failed');
    });
  }

  /** jose `jwtVerify` (signature and claims), awaited one after another. */
  jose(seconds: number): Promise<number> {
    return loopAsync(seconds, () =>
      jwtVerify(this.#token, this.#key, { algorithms: ['ES256'], issuer: this.#issuer }),
    );
  }
}

function loop(seconds: number, fn: () => void): number {
  for (let i = 0; i < 100; i++) fn(); // warm-up
  const start = performance.now();
  const end = start + seconds * 1000;
  let n = 0;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 25; i++) fn();
    n += 25;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

async function loopAsync(seconds: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 100; i++) await fn();
  const start = performance.now();
  const end = start + seconds * 1000;
  let n = 0;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 25; i++) await fn();
    n += 25;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}
