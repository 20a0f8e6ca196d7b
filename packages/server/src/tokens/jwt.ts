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
  return BASE64URL.test(text) && canonicalEnd(text);
}

/**
 * Of a string of the alphabet: no length that leaves a lone character, and zero in the low bits
 * of the last character, which carry no data.
 */
function canonicalEnd(text: string): boolean {
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
  /** The bytes the signature covers: the token up to its second dot. */
  signingInput: Buffer;
  signature: Buffer;
}

/**
 * The bytes of a base64url segment known to be ASCII, if it is their one spelling (as
 * {@link isCanonicalBase64url}); undefined otherwise. Decided on the decoded length instead of
 * a pass over the characters: Buffer's decoder skips or stops at anything outside the alphabet
 * (white space, padding, other ASCII), which leaves fewer bytes than the length promises, and
 * reads `+` and `/`, the standard alphabet's, which are looked for. Outside ASCII the decoder
 * would read a character by its low byte alone (`Ł` as `A`): hence the precondition.
 */
export function decodeAsciiBase64url(text: string): Buffer | undefined {
  // The end first: a lone last character or stray low bits are refused before any allocation.
  if (!canonicalEnd(text) || text.includes('+') || text.includes('/')) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.length === (text.length * 3) >> 2 ? bytes : undefined;
}

/** The last header segment decoded, and its header: every token of one key has the same. */
let lastHeader: { segment: string; header: DecodedJwt['header'] } | undefined;

/**
 * Splits and parses a compact JWS without trusting anything in it. Returns undefined for
 * anything that is not three canonical base64url parts (see {@link isCanonicalBase64url}) of
 * which the first two hold JSON objects. The header it returns is frozen: a header segment seen
 * again (the last one decoded) gives the same object without being decoded again.
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
  const s = token.slice(second + 1);
  if (!isCanonicalBase64url(s)) return undefined;
  // As many bytes as characters: the header and payload segments are ASCII.
  const signingInput = Buffer.from(token.slice(0, second));
  if (signingInput.length !== second) return undefined;
  const h = token.slice(0, first);
  let header = lastHeader?.segment === h ? lastHeader.header : undefined;
  try {
    if (header === undefined) {
      const bytes = decodeAsciiBase64url(h);
      if (bytes === undefined) return undefined;
      const parsed: unknown = JSON.parse(bytes.toString('utf8'));
      if (!isObject(parsed) || typeof parsed.alg !== 'string') return undefined;
      header = Object.freeze(parsed) as DecodedJwt['header'];
      lastHeader = { segment: h, header };
    }
    const bytes = decodeAsciiBase64url(token.slice(first + 1, second));
    if (bytes === undefined) return undefined;
    const payload: unknown = JSON.parse(bytes.toString('utf8'));
    if (!isObject(payload)) return undefined;
    return { header, payload, signingInput, signature: Buffer.from(s, 'base64url') };
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
  return verify('sha256', decoded.signingInput, { key, dsaEncoding: ES256.dsaEncoding }, decoded.signature);
}
