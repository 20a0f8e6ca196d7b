import { type KeyObject, sign, verify } from 'node:crypto';

const ES256 = { dsaEncoding: 'ieee-p1363' } as const;

function b64json(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Signs a compact JWS with ES256 (raw r‖s signature, RFC 7518 §3.4). */
export function signJwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
): string {
  const input = `${b64json(header)}.${b64json(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key, ...ES256 });
  return `${input}.${signature.toString('base64url')}`;
}

export interface DecodedJwt {
  header: { alg: string; kid?: string; typ?: string; [k: string]: unknown };
  payload: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Splits and parses a compact JWS without trusting anything in it. Returns undefined for
 * anything that is not three base64url parts holding JSON objects.
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
  if (!B64URL.test(h) || !B64URL.test(p) || !B64URL.test(s)) return undefined;
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

/** ES256 signature check; the signature must be exactly 64 bytes (r‖s). */
export function verifyEs256(decoded: DecodedJwt, key: KeyObject): boolean {
  if (decoded.signature.length !== 64) return false;
  return verify('sha256', Buffer.from(decoded.signingInput), { key, ...ES256 }, decoded.signature);
}
