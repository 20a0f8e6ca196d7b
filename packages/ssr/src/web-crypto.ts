// Web Crypto only (globalThis.crypto), never node:crypto: the same code runs in Node, Next.js
// middleware and proxy (Edge and Node runtimes), Cloudflare Workers, Deno and Bun.

const encoder = new TextEncoder();

/** `bytes` as unpadded base64url. */
function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `size` bytes from the platform's CSPRNG, as base64url. */
export function randomToken(size: number): string {
  return base64url(globalThis.crypto.getRandomValues(new Uint8Array(size)));
}

/** The SHA-256 of `text` (UTF-8), as base64url. */
export async function sha256(text: string): Promise<string> {
  return base64url(new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', encoder.encode(text))));
}

/**
 * Whether two strings are equal, in time that depends only on their lengths: every byte is
 * compared, and the differences are OR-ed together instead of returning at the first one. The
 * length is not secret (CSRF tokens are always 43 characters).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.length !== y.length) return false;
  let difference = 0;
  for (let i = 0; i < x.length; i++) difference |= x[i]! ^ y[i]!;
  return difference === 0;
}
