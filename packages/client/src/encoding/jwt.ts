import { decodeBase64url } from './base64url.js';

/**
 * The payload of a JWT, decoded WITHOUT checking its signature: the SDK reads its own tokens to
 * know when they expire. Never use this to make an authorization decision (that is the job of
 * `@tessera/verify` on your backend). Undefined when the token is not a readable JWT.
 */
export function readClaims<T extends object = Record<string, unknown>>(token: string): T | undefined {
  const part = token.split('.')[1];
  if (!part) return undefined;
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(decodeBase64url(part)));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/** `exp` and `iat` of a token in seconds, when present. */
export function tokenTimes(token: string): { exp?: number; iat?: number } {
  const claims = readClaims<{ exp?: unknown; iat?: unknown }>(token);
  return {
    ...(typeof claims?.exp === 'number' && { exp: claims.exp }),
    ...(typeof claims?.iat === 'number' && { iat: claims.iat }),
  };
}
