import { randomBytes, randomInt, randomUUID } from 'node:crypto';

/** `bytes` bytes from the CSPRNG, base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A random id with a readable prefix, e.g. `otp_…` (128 bits). */
export function randomId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

/** A string of `length` decimal digits, uniformly from the CSPRNG. */
export function randomDigits(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += randomInt(10).toString();
  return out;
}

export { randomUUID };
