import { createHash, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { ErrorCodes } from '@tessera/core';
import { badRequest } from '../../errors.js';

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
 * DER (what iOS and Android key stores produce).
 */
export function verifyDeviceSignature(key: KeyObject, message: Buffer, signature: string): boolean {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(signature)) return false;
  const bytes = Buffer.from(signature, 'base64url');
  try {
    if (bytes.length === 64) return verify('sha256', message, { key, dsaEncoding: 'ieee-p1363' }, bytes);
    if (bytes[0] === 0x30) return verify('sha256', message, { key, dsaEncoding: 'der' }, bytes);
  } catch {
    return false;
  }
  return false;
}
