import { createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { ErrorCodes } from '@tessera/core';
import { badRequest } from '../../errors.js';
import { isCanonicalBase64url } from '../../tokens/jwt.js';

/** What a device signs. Purposes keep a signature for one ceremony useless for another. */
export type SignaturePurpose = 'device-register' | 'device-signin' | 'pin-signin';

/**
 * The exact bytes a device signs (UTF-8, fields joined by a line feed, no trailing newline):
 *
 *     tessera/v1/<purpose>\n<api_key_id>\n<challenge_id>\n<nonce>
 *
 * e.g. `tessera/v1/device-signin\npk_abc…\nch_xyz…\nQm9…`. See docs/FLOWS.md.
 */
export function signedMessage(
  purpose: SignaturePurpose,
  apiKeyId: string,
  challengeId: string,
  nonce: string,
): Buffer {
  return Buffer.from(`tessera/v1/${purpose}\n${apiKeyId}\n${challengeId}\n${nonce}`, 'utf8');
}

export interface DeviceKey {
  /** The public JWK reduced to its public members. */
  jwk: { kty: 'EC'; crv: 'P-256'; x: string; y: string };
  key: KeyObject;
  /** RFC 7638 thumbprint (SHA-256, base64url). */
  thumbprint: string;
}

const COORDINATE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Accepts a P-256 public JWK only: private members are refused (the private key must never
 * leave the device), as are other curves and points not on the curve.
 */
export function importDeviceKey(value: unknown): DeviceKey {
  const invalid = (why: string) => badRequest(`public_key ${why}`, ErrorCodes.invalidPublicKey);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('must be a JWK object');
  const jwk = value as Record<string, unknown>;
  if ('d' in jwk) throw invalid('holds a private key; send the public key only');
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256')
    throw invalid('must be an EC key on P-256 (kty "EC", crv "P-256")');
  if (
    typeof jwk.x !== 'string' ||
    typeof jwk.y !== 'string' ||
    !COORDINATE.test(jwk.x) ||
    !COORDINATE.test(jwk.y)
  ) {
    throw invalid('needs x and y as 32-byte base64url coordinates');
  }
  const publicJwk = { kty: 'EC' as const, crv: 'P-256' as const, x: jwk.x, y: jwk.y };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: publicJwk, format: 'jwk' });
  } catch {
    throw invalid('is not a point on the P-256 curve');
  }
  const thumbprint = createHash('sha256')
    .update(`{"crv":"P-256","kty":"EC","x":"${publicJwk.x}","y":"${publicJwk.y}"}`)
    .digest('base64url');
  return { jwk: publicJwk, key, thumbprint };
}

/**
 * Checks an ES256 signature given as base64url of raw r‖s (64 bytes, WebCrypto's format) or of
 * DER (what iOS and Android key stores produce), in canonical base64url and strict DER. Either s
 * is accepted, high or low: WebCrypto, the Android Keystore, the Secure Enclave and OpenSSL leave
 * s to chance, and the twin (r, n − s) of a signature over a single-use challenge gains an
 * attacker nothing (the challenge is spent by the first attempt). Access tokens, whose text is a
 * lasting credential, keep one spelling (`verifyEs256` refuses a high s).
 */
export function verifyDeviceSignature(key: KeyObject, message: Buffer, signature: string): boolean {
  if (signature.length === 0 || signature.length > 200 || !isCanonicalBase64url(signature)) return false;
  const bytes = Buffer.from(signature, 'base64url');
  const raw = bytes.length === 64 ? bytes : derToRaw(bytes);
  if (!raw) return false;
  try {
    return verify('sha256', message, { key, dsaEncoding: 'ieee-p1363' }, raw);
  } catch {
    return false;
  }
}

/**
 * The raw r‖s of a DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs, RFC 3279 §2.2.3) in its one
 * valid encoding — short lengths, minimal positive integers of at most 32 bytes, nothing after —
 * or undefined.
 */
function derToRaw(der: Buffer): Buffer | undefined {
  if (der.length < 8 || der.length > 72 || der[0] !== 0x30 || der[1] !== der.length - 2) return undefined;
  const raw = Buffer.alloc(64);
  let at = 2;
  for (const offset of [0, 32]) {
    const length = der[at + 1] ?? 0;
    const start = at + 2;
    const end = start + length;
    if (der[at] !== 0x02 || length === 0 || length > 33 || end > der.length) return undefined;
    const lead = der[start]!;
    if (lead & 0x80) return undefined; // negative
    if (lead === 0 && length > 1 && !(der[start + 1]! & 0x80)) return undefined; // not minimal
    const value = lead === 0 && length > 1 ? der.subarray(start + 1, end) : der.subarray(start, end);
    if (value.length > 32) return undefined;
    value.copy(raw, offset + 32 - value.length);
    at = end;
  }
  return at === der.length ? raw : undefined;
}
