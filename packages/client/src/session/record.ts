import type { OAuthTokenBundle } from '@tessera/core';
import { tokenTimes } from '../encoding/jwt.js';
import type { TokenStorage } from '../storage/token-storage.js';

/** What is stored under the session key: the bundle and the clock skew measured with it. */
export interface SessionRecord {
  v: 1;
  bundle: OAuthTokenBundle;
  skewMs: number;
}

/** Storage keys of one project (API key id): apps with several projects keep them apart. */
export const storageKeys = (apiKeyId: string) => ({
  session: `tessera.${apiKeyId}.session`,
  device: `tessera.${apiKeyId}.device`,
  deviceKey: `tessera.${apiKeyId}.device-key`,
  /** Set once a passkey was created or used here: a dismissed prompt then is not "no passkey". */
  passkeyUsed: `tessera.${apiKeyId}.passkey-used`,
});

function isBundle(value: unknown): value is OAuthTokenBundle {
  const b = value as Partial<OAuthTokenBundle> | null;
  return (
    typeof b === 'object' &&
    b !== null &&
    typeof b.access_token === 'string' &&
    typeof b.id_token === 'string' &&
    typeof b.refresh_token === 'string'
  );
}

/** The stored record, or null when absent or unreadable (an unreadable one is dropped). */
export async function readRecord(storage: TokenStorage, key: string): Promise<SessionRecord | null> {
  const raw = await storage.get(key);
  if (raw === null) return null;
  try {
    const parsed = JSON.parse(raw) as Partial<SessionRecord>;
    if (parsed.v === 1 && isBundle(parsed.bundle))
      return { v: 1, bundle: parsed.bundle, skewMs: Number(parsed.skewMs) || 0 };
  } catch {}
  await storage.remove(key);
  return null;
}

export async function writeRecord(storage: TokenStorage, key: string, record: SessionRecord): Promise<void> {
  await storage.set(key, JSON.stringify(record));
}

/**
 * True while `token` has more than the renewal margin left, by the server's clock. The margin is
 * at most half the token's lifetime, so short-lived tokens are not renewed on every call.
 */
export function isFresh(token: string, serverNowMs: number, marginMs: number): boolean {
  const { exp, iat } = tokenTimes(token);
  if (exp === undefined) return false;
  const lifetimeMs = iat === undefined ? Number.POSITIVE_INFINITY : (exp - iat) * 1000;
  return exp * 1000 - serverNowMs > Math.min(marginMs, lifetimeMs / 2);
}

/** True until `exp` has passed, by the server's clock. */
export function isUnexpired(token: string, serverNowMs: number): boolean {
  const { exp } = tokenTimes(token);
  return exp !== undefined && exp * 1000 > serverNowMs;
}
