import { createHmac, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

// scrypt N=2^15, r=8, p=1: 32 MiB and tens of milliseconds per hash, on libuv's thread pool.
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEYLEN = 32;
const MAXMEM = 64 * 1024 * 1024;

function derive(input: Buffer, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(input, salt, KEYLEN, { N: n, r, p, maxmem: MAXMEM }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/** The pepper (a server secret) turns a stolen table into nothing without the master key. */
function peppered(pepper: Buffer, pin: string): Buffer {
  return createHmac('sha256', pepper).update(pin).digest();
}

/** `scrypt$N$r$p$salt$hash`, parameters stored so they can be raised later. */
export async function hashPin(pepper: Buffer, pin: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(peppered(pepper, pin), salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Constant-time check; the work does not depend on the stored PIN. */
export async function verifyPin(pepper: Buffer, pin: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(
    peppered(pepper, pin),
    Buffer.from(salt, 'base64url'),
    Number(n),
    Number(r),
    Number(p),
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

const COMMON = new Set([
  '1212',
  '1004',
  '2000',
  '6969',
  '1122',
  '1313',
  '2580',
  '0852',
  '5683',
  '7777',
  '1010',
  '2001',
  '4444',
  '2222',
  '123123',
  '121212',
  '112233',
  '159753',
  '147258',
  '258369',
  '0007',
  '1984',
  '2468',
  '1357',
  '9876',
]);

/** Why a PIN is refused, or undefined when it is acceptable. */
export function weakPinReason(pin: string): string | undefined {
  if (!/^\d{4,12}$/.test(pin)) return 'a PIN is 4 to 12 digits';
  if (/^(\d)\1+$/.test(pin)) return 'a PIN of one repeated digit is too easy to guess';
  const digits = [...pin].map(Number);
  const steps = new Set(digits.slice(1).map((d, i) => (d - digits[i]! + 10) % 10));
  if (steps.size === 1 && (steps.has(1) || steps.has(9)))
    return 'a straight run of digits is too easy to guess';
  if (COMMON.has(pin)) return 'this PIN is among the most commonly used; choose another';
  if (pin.length % 2 === 0 && pin.length >= 4 && /^(\d\d)\1+$/.test(pin))
    return 'a repeated pair of digits is too easy to guess';
  return undefined;
}
