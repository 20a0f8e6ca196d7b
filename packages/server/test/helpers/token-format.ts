/**
 * The token formats of the specification, checked exactly: the bundle's members, and both JWTs'
 * headers and claim sets with their values. Every authentication method ends in the same bundle,
 * so each method's suite runs these same assertions.
 */
import assert from 'node:assert/strict';
import type { OAuthTokenBundle } from '@tessera/core';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import type { TestServer } from './harness.js';

export const ACCESS_CLAIMS = [
  'aud',
  'authentication_method',
  'client_user_id',
  'exp',
  'iat',
  'identifier',
  'iss',
  'jti',
  'scope',
  'sid',
  'sub',
  'type',
];
export const ID_CLAIMS = [
  'aud',
  'auth_time',
  'client_user_id',
  'exp',
  'iat',
  'identifier',
  'iss',
  'jti',
  'sub',
  'type',
];
export const BUNDLE_MEMBERS = [
  'access_token',
  'auth_method',
  'expires_in',
  'id_token',
  'refresh_token',
  'token_type',
];

/** The bundle's `auth_method` and the access token's `authentication_method` of each method. */
export const CLAIM_OF_METHOD = {
  OTP: 'OTP',
  'TRUSTED DEVICE': 'TRUSTED_DEVICE',
  PIN: 'PIN',
  BIOMETRIC: 'BIOMETRIC',
} as const;

export type BundleMethod = keyof typeof CLAIM_OF_METHOD;

export function sorted(object: object): string[] {
  return Object.keys(object).sort();
}

export async function verifyAccess(server: TestServer, token: string, audience = server.project.api_key_id) {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  return jwtVerify(token, jwks, {
    issuer: server.url,
    audience,
    typ: 'at+jwt',
    algorithms: ['ES256'],
  });
}

export async function verifyId(server: TestServer, token: string, audience = server.project.api_key_id) {
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
  return jwtVerify(token, jwks, { issuer: server.url, audience, typ: 'JWT', algorithms: ['ES256'] });
}

/** What a sign-in must have produced. */
export interface ExpectedTokens {
  method: BundleMethod;
  /** The user's e-mail address or E.164 phone number. */
  identifier: string;
  /** The user's id (`sub`), when the test knows it. */
  userId?: string;
  /** The server clock (ms) at the sign-in: `iat` and `auth_time` are its Unix seconds. */
  at: number;
  /** exp − iat of both tokens (the default 3600). */
  ttl?: number;
}

/** The bundle has exactly the specified members and values. */
export function assertSpecBundle(bundle: OAuthTokenBundle, expected: Pick<ExpectedTokens, 'method' | 'ttl'>) {
  assert.deepEqual(sorted(bundle), BUNDLE_MEMBERS);
  assert.equal(bundle.expires_in, expected.ttl ?? 3600);
  assert.equal(bundle.token_type, 'Bearer');
  assert.equal(bundle.auth_method, expected.method);
  assert.equal(typeof bundle.access_token, 'string');
  assert.equal(typeof bundle.id_token, 'string');
  assert.equal(typeof bundle.refresh_token, 'string');
}

/** The access token verifies (ES256, issuer, audience, typ) and has exactly the specified claims. */
export async function assertSpecAccessToken(
  server: TestServer,
  token: string,
  expected: ExpectedTokens,
): Promise<JWTPayload> {
  const { payload, protectedHeader } = await verifyAccess(server, token);
  assert.deepEqual(sorted(protectedHeader), ['alg', 'kid', 'typ']);
  assert.equal(protectedHeader.alg, 'ES256');
  assert.equal(protectedHeader.typ, 'at+jwt');
  assert.equal(typeof protectedHeader.kid, 'string');
  assert.ok((protectedHeader.kid ?? '').length > 0);

  assert.deepEqual(sorted(payload), ACCESS_CLAIMS);
  assert.equal(typeof payload.sub, 'string');
  assert.ok((payload.sub ?? '').length > 0);
  if (expected.userId !== undefined) assert.equal(payload.sub, expected.userId);
  assert.equal(payload.client_user_id, payload.sub);
  assert.equal(payload.authentication_method, CLAIM_OF_METHOD[expected.method]);
  assert.equal(payload.type, 'access_token');
  assert.equal(payload.identifier, expected.identifier);
  assert.equal(payload.scope, 'access');
  assert.equal(payload.aud, server.project.api_key_id);
  assert.equal(payload.iss, server.url);
  assert.ok(Number.isInteger(payload.iat));
  assert.ok(Number.isInteger(payload.exp));
  assert.equal(payload.iat, Math.floor(expected.at / 1000));
  assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), expected.ttl ?? 3600);
  assert.equal(typeof payload.jti, 'string');
  assert.equal(typeof payload.sid, 'string');
  return payload;
}

/** The ID token verifies and has exactly the specified claims, `auth_time` a string of digits. */
export async function assertSpecIdToken(
  server: TestServer,
  bundle: OAuthTokenBundle,
  expected: ExpectedTokens,
): Promise<JWTPayload> {
  const { payload, protectedHeader } = await verifyId(server, bundle.id_token);
  assert.deepEqual(sorted(protectedHeader), ['alg', 'kid', 'typ']);
  assert.equal(protectedHeader.alg, 'ES256');
  assert.equal(protectedHeader.typ, 'JWT');
  assert.equal(protectedHeader.kid, decodeProtectedHeader(bundle.access_token).kid);

  const access = (await verifyAccess(server, bundle.access_token)).payload;
  assert.deepEqual(sorted(payload), ID_CLAIMS);
  assert.equal(payload.sub, access.sub);
  if (expected.userId !== undefined) assert.equal(payload.sub, expected.userId);
  assert.equal(payload.client_user_id, payload.sub);
  assert.equal(typeof payload.auth_time, 'string');
  assert.match(payload.auth_time as string, /^\d+$/);
  assert.equal(payload.auth_time, String(Math.floor(expected.at / 1000)));
  assert.equal(payload.identifier, expected.identifier);
  assert.equal(payload.type, 'id_token');
  assert.equal(payload.aud, server.project.api_key_id);
  assert.equal(payload.iss, server.url);
  assert.ok(Number.isInteger(payload.iat));
  assert.ok(Number.isInteger(payload.exp));
  assert.equal(payload.iat, Math.floor(expected.at / 1000));
  assert.equal((payload.exp ?? 0) - (payload.iat ?? 0), expected.ttl ?? 3600);
  assert.equal(typeof payload.jti, 'string');
  assert.notEqual(payload.jti, access.jti);
  return payload;
}

/** All of the above for one sign-in's bundle. */
export async function assertSpecTokens(
  server: TestServer,
  bundle: OAuthTokenBundle,
  expected: ExpectedTokens,
): Promise<void> {
  assertSpecBundle(bundle, expected);
  await assertSpecAccessToken(server, bundle.access_token, expected);
  await assertSpecIdToken(server, bundle, expected);
}
