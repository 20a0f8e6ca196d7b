import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** SHA-256, base64url. For secrets with ≥ 128 bits of entropy (API key secrets, refresh tokens). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** HMAC-SHA256, base64url. For low-entropy secrets (OTP codes): useless without the server key. */
export function hmac(key: Buffer, ...parts: string[]): string {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part).update('\0');
  return mac.digest('base64url');
}

/** Constant-time equality of two strings (length differences leak only the length of hashes). */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}
