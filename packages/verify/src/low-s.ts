import { base64url } from 'jose';

/** ⌊n/2⌋ for n, the order of the P-256 group, big-endian. */
const HALF_ORDER = Uint8Array.from(
  '7fffffff800000007fffffffffffffffde737d56d38bcf4279dce5617e3192a8'.match(/../g)!,
  (byte) => Number.parseInt(byte, 16),
);

/**
 * Whether the ES256 signature of a compact JWS has a low s (s ≤ n/2). ECDSA, and so jose, verifies
 * (r, s) and its twin (r, n − s) alike; Tessera signs with the low s only, so a high one is a token
 * respelled by someone else. A token that is not three parts with a 64-byte signature is left for
 * jose to refuse (true).
 */
export function hasLowS(token: string): boolean {
  let signature: Uint8Array;
  try {
    signature = base64url.decode(token.slice(token.lastIndexOf('.') + 1));
  } catch {
    return true;
  }
  if (signature.length !== 64) return true;
  for (let i = 0; i < 32; i++) {
    if (signature[32 + i] !== HALF_ORDER[i]) return signature[32 + i]! < HALF_ORDER[i]!;
  }
  return true;
}
