// A real, small Tessera issuer for the tests: a node:http server on 127.0.0.1 serving the JWKS and
// a POST /verify endpoint that follows the contract of API.md ("Verification").
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TesseraVerifyError, type VerifyErrorCode } from '@tessera/verify';
import { type CryptoKey, decodeJwt, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';

export const API_KEY_ID = 'pk_test_4f1c';
/** A fixed clock for the verifiers under test (ms); tokens are minted relative to it. */
export const NOW = Date.UTC(2030, 0, 1, 12, 0, 0);
export const NOW_S = NOW / 1000;

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function makeKey(kid: string, alg: 'ES256' | 'RS256' = 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, privateKey, publicJwk };
}

/** How POST /verify behaves: per contract, answering 500, or never answering. */
export type VerifyMode = 'contract' | 'error' | 'hang';

export interface VerifyCall {
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface FakeIssuer {
  issuer: string;
  /** Keys currently published in the JWKS. */
  keys: SigningKey[];
  /** Answer GET /.well-known/jwks.json with HTTP 500 while true. */
  jwksFailing: boolean;
  jwksFetches: number;
  verifyMode: VerifyMode;
  verifyCalls: VerifyCall[];
  /** Sessions the /verify endpoint reports as revoked. */
  revokedSessions: Set<string>;
  close(): Promise<void>;
}

export async function startIssuer(keys: SigningKey[]): Promise<FakeIssuer> {
  const state: FakeIssuer = {
    issuer: '',
    keys,
    jwksFailing: false,
    jwksFetches: 0,
    verifyMode: 'contract',
    verifyCalls: [],
    revokedSessions: new Set(),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  const server = createServer(async (req, res) => {
    if (req.method === 'GET' && req.url === '/.well-known/jwks.json') {
      state.jwksFetches++;
      if (state.jwksFailing) {
        res.writeHead(500).end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ keys: state.keys.map((k) => k.publicJwk) }));
      return;
    }
    if (req.method === 'POST' && req.url === '/verify') {
      const text = await readBody(req);
      if (state.verifyMode === 'hang') return;
      if (state.verifyMode === 'error') {
        res.writeHead(500).end();
        return;
      }
      const { status, answer } = answerVerify(state, req, text);
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(answer));
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  state.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

// The contract: 200 {success:true} | 200 {success:false, reason} | 4xx for malformed requests.
function answerVerify(state: FakeIssuer, req: IncomingMessage, text: string) {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  state.verifyCalls.push({ headers: req.headers, body });
  const token = (body as { oauth_token?: { access_token?: unknown } } | undefined)?.oauth_token?.access_token;
  if (typeof token !== 'string') {
    return {
      status: 400,
      answer: { success: false, reason: 'Request body must be JSON with an oauth_token' },
    };
  }
  const claims = decodeJwt(token);
  const wrong = (reason: string) => ({ status: 200, answer: { success: false, reason } });
  // A token bound to a resource (RFC 8707) verifies only for a caller naming that resource.
  const resource = (body as { resource?: unknown }).resource;
  const bound = typeof claims['api_key_id'] === 'string' ? claims.aud : undefined;
  if (resource !== undefined) {
    if (bound !== resource) return wrong('JWT token was issued for another resource');
    if (req.headers['api_key_id'] !== undefined && claims['api_key_id'] !== req.headers['api_key_id'])
      return wrong('JWT token was issued for another API key');
  } else {
    if (req.headers['api_key_id'] !== undefined && claims.aud !== req.headers['api_key_id'])
      return wrong('JWT token was issued for another API key');
    if (bound !== undefined) return wrong('JWT token was issued for another resource');
  }
  if (state.revokedSessions.has(String(claims['sid']))) {
    return { status: 200, answer: { success: false, reason: 'JWT token has been revoked' } };
  }
  return { status: 200, answer: { success: true } };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** An http URL on which nothing listens. */
export async function deadUrl(): Promise<string> {
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return `http://127.0.0.1:${port}`;
}

export interface MintOptions {
  claims?: Record<string, unknown>;
  /** Claims to remove from the default set. */
  omit?: string[];
  header?: Record<string, unknown>;
  alg?: 'ES256' | 'RS256';
}

/** Signs an access token with exactly the claim set of API.md ("Token formats"). */
export async function mintAccessToken(
  key: SigningKey,
  issuer: string,
  options: MintOptions = {},
): Promise<string> {
  const claims: Record<string, unknown> = {
    sub: 'usr_8d2f0c',
    client_user_id: 'customer-42',
    authentication_method: 'OTP',
    type: 'access_token',
    identifier: 'ada@example.com',
    scope: 'access',
    aud: API_KEY_ID,
    exp: NOW_S + 3540,
    iat: NOW_S - 60,
    jti: `jti_${Math.random().toString(36).slice(2)}`,
    iss: issuer,
    sid: 'ses_71ab',
    plan: 'pro',
    ...options.claims,
  };
  for (const name of options.omit ?? []) delete claims[name];
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: key.kid, typ: 'at+jwt', ...options.header })
    .sign(key.privateKey);
  return (options.alg ?? 'ES256') === 'ES256' && highS(token) ? otherS(token) : token;
}

/** n, the order of the P-256 group. */
const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

const sOf = (token: string) =>
  BigInt(
    `0x${Buffer.from(token.slice(token.lastIndexOf('.') + 1), 'base64url')
      .subarray(32)
      .toString('hex')}`,
  );

/** Whether an ES256 token's s is above n/2 (jose, like WebCrypto, leaves s to chance; Tessera never). */
export const highS = (token: string) => sOf(token) > P256_N / 2n;

/** The token with its ES256 signature (r, s) replaced by the twin (r, n − s), which ECDSA verifies too. */
export function otherS(token: string): string {
  const dot = token.lastIndexOf('.');
  const signature = Buffer.from(token.slice(dot + 1), 'base64url');
  signature.set(Buffer.from((P256_N - sOf(token)).toString(16).padStart(64, '0'), 'hex'), 32);
  return `${token.slice(0, dot)}.${signature.toString('base64url')}`;
}

/** Asserts a TesseraVerifyError with `code` whose message holds no part of the token. */
export async function assertRejects(promise: Promise<unknown>, code: VerifyErrorCode, token?: string) {
  const err = await promise.then(
    () => assert.fail(`expected a ${code} rejection, but verification succeeded`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TesseraVerifyError, `expected TesseraVerifyError, got ${String(err)}`);
  assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`);
  if (token) {
    for (const part of token.split('.').filter((p) => p.length > 8)) {
      assert.ok(!err.message.includes(part), 'the error message must not contain the token');
    }
  }
  return err;
}

/** A test app listening on loopback, and how to stop it. */
export interface Running {
  url: string;
  close(): Promise<void>;
}

/** The URL of a listening server, and a close that also ends its keep-alive connections. */
export function running(server: Server): Running {
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
