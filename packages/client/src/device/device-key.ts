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
 * raw r‖s (64 bytes), sent base64url.
 */
export async function signChallenge(
  keyPair: CryptoKeyPair,
  purpose: SignaturePurpose,
  apiKeyId: string,
  challenge: { challenge_id: string; nonce: string },
): Promise<string> {
  const message = utf8(`tessera/v1/${purpose}\n${apiKeyId}\n${challenge.challenge_id}\n${challenge.nonce}`);
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, keyPair.privateKey, message);
  return encodeBase64url(signature);
}

export function isKeyPair(value: unknown): value is CryptoKeyPair {
  return typeof value === 'object' && value !== null && 'privateKey' in value && 'publicKey' in value;
}
