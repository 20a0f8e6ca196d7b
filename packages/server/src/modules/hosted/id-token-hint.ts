import { ID_TOKEN_TYP } from '@tessera/core';
import type { KeyStore } from '../../keys/key-store.js';
import { decodeJwt, verifyEs256 } from '../../tokens/jwt.js';

/**
 * The claims of an `id_token_hint` (OpenID RP-Initiated Logout §2) that Tessera signed: signature,
 * type and issuer are checked; expiry is not (the specification lets an expired ID token name the
 * session to end). Undefined when it is not one of ours.
 */
export function idTokenHint(
  keys: KeyStore,
  issuer: string,
  token: string,
): { sub: string; aud: string; sid?: string } | undefined {
  if (token.length > 8192) return undefined;
  const decoded = decodeJwt(token);
  const kid = decoded?.header.kid;
  if (decoded?.header.alg !== 'ES256' || typeof kid !== 'string') return undefined;
  const key = keys.get(kid);
  if (!key || !verifyEs256(decoded, key.publicKey)) return undefined;
  const claims = decoded.payload as Record<string, unknown>;
  if (decoded.header.typ !== ID_TOKEN_TYP || claims.type !== 'id_token' || claims.iss !== issuer)
    return undefined;
  if (typeof claims.sub !== 'string' || typeof claims.aud !== 'string') return undefined;
  return { sub: claims.sub, aud: claims.aud, ...(typeof claims.sid === 'string' ? { sid: claims.sid } : {}) };
}
