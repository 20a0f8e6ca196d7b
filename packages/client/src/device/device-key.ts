import { encodeBase64url, utf8 } from '../encoding/base64url.js';

/** What a device signs; a signature for one ceremony is useless for another. */
export type SignaturePurpose = 'device-register' | 'device-signin' | 'pin-signin';

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** A new P-256 key pair whose private key can never be exported, even by this code. */
export function generateDeviceKey(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(ECDSA_P256, false, ['sign', 'verify']);
}

/** The public key as the service wants it: a JWK with the public members only. */
export async function publicJwk(
  keyPair: CryptoKeyPair,
): Promise<{ kty: string; crv: string; x: string; y: string }> {
  const jwk = await crypto.subtle.exportKey('jwk', keyPair.publicKey);
  return { kty: jwk.kty ?? 'EC', crv: jwk.crv ?? 'P-256', x: jwk.x ?? '', y: jwk.y ?? '' };
}

/**
 * Signs the service's domain-separated message (UTF-8, fields joined by line feeds):
 * `tessera/v1/<purpose>\n<api_key_id>\n<challenge_id>\n<nonce>`. WebCrypto's ECDSA output is
 * raw r‖s (64 bytes), sent base64url with a low s.
 */
export async function signChallenge(
  keyPair: CryptoKeyPair,
  purpose: SignaturePurpose,
  apiKeyId: string,
  challenge: { challenge_id: string; nonce: string },
): Promise<string> {
  const message = utf8(`tessera/v1/${purpose}\n${apiKeyId}\n${challenge.challenge_id}\n${challenge.nonce}`);
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, keyPair.privateKey, message);
  return encodeBase64url(lowS(new Uint8Array(signature)));
}

/** n, the order of the P-256 group, big-endian. */
const P256_ORDER = Uint8Array.from(
  'ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551'.match(/../g)!,
  (byte) => Number.parseInt(byte, 16),
);

/**
 * The service accepts only s ≤ n/2 (one spelling per signature); WebCrypto leaves s to chance, so a
 * high s is replaced by n − s, which verifies the same message. As n is odd, s is high exactly when
 * s > n − s.
 */
function lowS(signature: Uint8Array): Uint8Array {
  const twin = new Uint8Array(32);
  let borrow = 0;
  for (let i = 31; i >= 0; i--) {
    const difference = P256_ORDER[i]! - signature[32 + i]! - borrow;
    borrow = difference < 0 ? 1 : 0;
    twin[i] = difference & 0xff;
  }
  for (let i = 0; i < 32; i++) {
    if (signature[32 + i] === twin[i]) continue;
    if (signature[32 + i]! > twin[i]!) signature.set(twin, 32);
    break;
  }
  return signature;
}

export function isKeyPair(value: unknown): value is CryptoKeyPair {
  return typeof value === 'object' && value !== null && 'privateKey' in value && 'publicKey' in value;
}
