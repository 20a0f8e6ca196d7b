import { randomToken } from '../crypto/random.js';

const REFRESH_PREFIX = 'tsr_';

/** `tsr_<id>.<secret>`: the id finds the row, only a hash of the secret is stored (lucia's pattern). */
export function parseRefreshToken(token: string): { id: string; secret: string } | undefined {
  if (!token.startsWith(REFRESH_PREFIX) || token.length > 200) return undefined;
  const dot = token.indexOf('.', REFRESH_PREFIX.length);
  if (dot < 0) return undefined;
  const id = token.slice(REFRESH_PREFIX.length, dot);
  const secret = token.slice(dot + 1);
  if (!/^[A-Za-z0-9_-]{22}$/.test(id) || !/^[A-Za-z0-9_-]{43}$/.test(secret)) return undefined;
  return { id, secret };
}

/** Whether a presented token has the refresh-token shape (revocation and introspection dispatch on it). */
export const looksLikeRefreshToken = (token: string): boolean => token.startsWith(REFRESH_PREFIX);

export function newRefreshToken(): { id: string; secret: string; token: string } {
  const id = randomToken(16);
  const secret = randomToken(32);
  return { id, secret, token: `${REFRESH_PREFIX}${id}.${secret}` };
}
