import { type KeyObject, sign, verify } from 'node:crypto';

const ES256 = { dsaEncoding: 'ieee-p1363' } as const;

/** n, the order of the P-256 group, big-endian. */
const P256_ORDER = Buffer.from('ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551', 'hex');
/** ⌊n/2⌋: an s above it is the "high" twin of n − s, which verifies the same message. */
const P256_HALF_ORDER = Buffer.from(
  '7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8',
  'hex',
);

const BASE64URL = /^[A-Za-z0-9_-]*$/;
/** The value of each base64url character (RFC 4648 §5), by code unit. */
const BASE64URL_VALUE = (() => {
  const table = new Uint8Array(128);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  return table;
})();

/**
 * Whether `text` is the one base64url spelling of its bytes (RFC 7515 §2): the URL-safe alphabet
 * only, no padding, no length that leaves a lone character, and zero in the low bits of the last
 * character, which carry no data. These are exactly the strings that decoding and re-encoding give
 * back; deciding on the characters spares /verify a decode and an allocation.
 */
export function isCanonicalBase64url(text: string): boolean {
  if (!BASE64URL.test(text)) return false;
  const tail = text.length % 4;
  if (tail === 0) return true;
  if (tail === 1) return false;
  const last = BASE64URL_VALUE[text.charCodeAt(text.length - 1)]!;
  return (last & (tail === 2 ? 0x0f : 0x03)) === 0;
}

/**
 * Whether a raw r‖s P-256 signature (64 bytes) has s ≤ n/2. ECDSA accepts (r, s) and (r, n − s)
 * alike; accepting only the low one leaves each token a single spelling.
 */
export function isLowS(signature: Uint8Array): boolean {
  return signature.length === 64 && P256_HALF_ORDER.compare(signature, 32, 64) >= 0;
}

/** Replaces a high s by n − s, in place (OpenSSL leaves s to chance). */
export function normaliseLowS(signature: Buffer): Buffer {
  if (isLowS(signature)) return signature;
  let borrow = 0;
  for (let i = 31; i >= 0; i--) {
    const difference = P256_ORDER[i]! - signature[32 + i]! - borrow;
    borrow = difference < 0 ? 1 : 0;
    signature[32 + i] = difference & 0xff;
  }
  return signature;
}

function b64json(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Signs a compact JWS with ES256 (raw r‖s signature, RFC 7518 §3.4, always low-S). */
export function signJwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
): string {
  const input = `${b64json(header)}.${b64json(claims)}`;
  const signature = normaliseLowS(sign('sha256', Buffer.from(input), { key, ...ES256 }));
  return `${input}.${signature.toString('base64url')}`;
}

export interface DecodedJwt {
  header: { alg: string; kid?: string; typ?: string; [k: string]: unknown };
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

/**
 * Splits and parses a compact JWS without trusting anything in it. Returns undefined for
 * anything that is not three canonical base64url parts (see {@link isCanonicalBase64url}) of
 * which the first two hold JSON objects.
 */
export function decodeJwt(token: string): DecodedJwt | undefined {
  if (token.length > 8192) return undefined;
  const first = token.indexOf('.');
  const second = token.indexOf('.', first + 1);
  if (
    first <= 0 ||
    second <= first + 1 ||
    second === token.length - 1 ||
    token.indexOf('.', second + 1) !== -1
  ) {
    return undefined;
  }
  const h = token.slice(0, first);
  const p = token.slice(first + 1, second);
  const s = token.slice(second + 1);
  if (!isCanonicalBase64url(h) || !isCanonicalBase64url(p) || !isCanonicalBase64url(s)) return undefined;
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
    if (!isObject(header) || !isObject(payload) || typeof header.alg !== 'string') return undefined;
    return {
      header: header as DecodedJwt['header'],
      payload,
      signingInput: token.slice(0, second),
      signature: Buffer.from(s, 'base64url'),
    };
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** ES256 signature check; the signature must be exactly 64 bytes (r‖s) with a low s. */
export function verifyEs256(decoded: DecodedJwt, key: KeyObject): boolean {
  if (!isLowS(decoded.signature)) return false;
  return verify('sha256', Buffer.from(decoded.signingInput), { key, ...ES256 }, decoded.signature);
}
