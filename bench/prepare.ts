import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { MasterKey } from '../packages/server/src/crypto/master-key.js';
import { connect } from '../packages/server/src/db/connect.js';
import { KeyStore } from '../packages/server/src/keys/key-store.js';
import { decodeJwt, signJwt } from '../packages/server/src/tokens/jwt.js';
import { OTP_CODE_HEADER } from './protocol.js';

export interface SignedIn {
  accessToken: string;
  refreshToken: string;
}

/** The body /verify takes, as sent by an app: the bundle member holding the access token. */
export function verifyBody(accessToken: string): string {
  return JSON.stringify({ oauth_token: { access_token: accessToken } });
}

/**
 * Signs in `count` distinct users by OTP over HTTP (start, then complete with the code the bench
 * delivery returned), `concurrency` at a time. Each gives a session: access and refresh token.
 */
export async function signInMany(
  url: string,
  apiKeyId: string,
  count: number,
  prefix: string,
  concurrency = 16,
): Promise<SignedIn[]> {
  const pool = new Pool(url, { connections: concurrency, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const headers = { 'content-type': 'application/json', api_key_id: apiKeyId };
  const out: SignedIn[] = [];
  let next = 0;
  const post = async (path: string, body: unknown) => {
    const response = await pool.request({ method: 'POST', path, headers, body: JSON.stringify(body) });
    const text = await response.body.text();
    if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}: ${text}`);
    return { json: JSON.parse(text) as Record<string, unknown>, headers: response.headers };
  };
  const worker = async () => {
    while (next < count) {
      const identifier = `${prefix}-${next++}@bench.example.com`;
      const started = await post('/v1/auth/otp/start', { identifier });
      const code = started.headers[OTP_CODE_HEADER];
      if (typeof code !== 'string') throw new Error('otp/start gave no bench code header');
      const done = await post('/v1/auth/otp/complete', {
        challenge_id: started.json.challenge_id,
        code,
        getOAuthToken: true,
      });
      const bundle = done.json.oauth_token as { access_token: string; refresh_token: string };
      out.push({ accessToken: bundle.access_token, refreshToken: bundle.refresh_token });
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
  return out;
}

/**
 * Mints access tokens the server has never seen, with the server's own signing key (read once
 * from its database with the master key) and the server's own `signJwt`. Each copies the header
 * and claims of one of the real `templates` (so sessions, audience and size are real) and gets a
 * fresh `jti` and `iat`/`exp`. Returns a function minting `count` ready-to-send /verify bodies.
 */
export async function verifyBodyMinter(
  databaseUrl: string,
  masterKey: string,
  templates: string[],
): Promise<(count: number) => Buffer[]> {
  const db = await connect(databaseUrl);
  let key: ReturnType<KeyStore['signingKey']>;
  try {
    const keys = new KeyStore(db, MasterKey.parse(masterKey).derive('signing-key-encryption'));
    await keys.reload();
    key = keys.signingKey();
  } finally {
    await db.close();
  }
  const decoded = templates.map((token) => {
    const jwt = decodeJwt(token);
    if (!jwt) throw new Error('a template access token does not decode');
    if (jwt.header.kid !== key.kid) throw new Error('the signing key changed since the sign-ins');
    return jwt;
  });
  let next = 0;
  return (count) => {
    const bodies: Buffer[] = new Array(count);
    const iat = Math.floor(Date.now() / 1000);
    for (let i = 0; i < count; i++) {
      const template = decoded[next++ % decoded.length]!;
      const ttl = Number(template.payload.exp) - Number(template.payload.iat);
      const claims = { ...template.payload, iat, exp: iat + ttl, jti: randomBytes(16).toString('base64url') };
      bodies[i] = Buffer.from(verifyBody(signJwt(template.header, claims, key.privateKey)));
    }
    return bodies;
  };
}
