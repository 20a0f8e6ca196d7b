/**
 * The returning-user sign-in methods over HTTP, as an app performs them: a trusted device
 * (WebCrypto P-256 key made here, raw r‖s signatures), a PIN on that device, and a passkey of the
 * software authenticator in ./webauthn.ts.
 */
import assert from 'node:assert/strict';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import type { TestResponse, TestServer } from './harness.js';
import { type AuthenticationOptions, SoftwareAuthenticator } from './webauthn.js';

const { subtle } = globalThis.crypto;

export type DevicePurpose = 'device-register' | 'device-signin' | 'pin-signin';

/**
 * The bytes a device signs, written out rather than imported from the server, so that a change
 * of the format fails the tests (apps in the field sign exactly this).
 */
export const signedText = (purpose: DevicePurpose, apiKeyId: string, challengeId: string, nonce: string) =>
  `tessera/v1/${purpose}\n${apiKeyId}\n${challengeId}\n${nonce}`;

export interface TestDevice {
  jwk: JsonWebKey;
  /** base64url of the raw r‖s signature over the text. */
  sign(text: string): Promise<string>;
}

/** A browser-style device key: WebCrypto ECDSA P-256, private key not extractable. */
export async function webCryptoDevice(): Promise<TestDevice> {
  const pair = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify']);
  return {
    jwk: await subtle.exportKey('jwk', pair.publicKey),
    sign: async (text) =>
      lowS(
        await subtle.sign(
          { name: 'ECDSA', hash: 'SHA-256' },
          pair.privateKey,
          new TextEncoder().encode(text),
        ),
      ).toString('base64url'),
  };
}

/** n, the order of the P-256 group. */
export const P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

/** (r, n − s): the other spelling of a raw r‖s P-256 signature, which ECDSA verifies just the same. */
export function otherS(signature: ArrayBuffer | Uint8Array): Buffer {
  const bytes = Buffer.from(signature instanceof Uint8Array ? signature : new Uint8Array(signature));
  const s = BigInt(`0x${bytes.subarray(32).toString('hex')}`);
  bytes.set(Buffer.from((P256_N - s).toString(16).padStart(64, '0'), 'hex'), 32);
  return bytes;
}

/**
 * A raw r‖s P-256 signature with s ≤ n/2, the only spelling the service accepts: what an app does
 * after WebCrypto, which leaves s to chance. Written with BigInt, apart from the server's code.
 */
export function lowS(signature: ArrayBuffer | Uint8Array): Buffer {
  const bytes = Buffer.from(signature instanceof Uint8Array ? signature : new Uint8Array(signature));
  return BigInt(`0x${bytes.subarray(32).toString('hex')}`) > P256_N / 2n ? otherS(bytes) : bytes;
}

export const bearer = (bundle: OAuthTokenBundle) => ({ authorization: `Bearer ${bundle.access_token}` });
export const keyOf = (project: ProjectCredentials) => ({ api_key_id: project.api_key_id });

/** `POST /oauth/token` with a refresh token of the server's project (JSON, client_id in the body). */
export const refreshGrant = (
  server: TestServer,
  refreshToken: string,
  headers: Record<string, string> = {},
) =>
  server.request('POST', '/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: server.project.api_key_id },
    headers,
  });

/** A user signed in by OTP (in `server.project` unless another project is given). */
export interface SignedInUser {
  email: string;
  userId: string;
  bundle: OAuthTokenBundle;
  project: ProjectCredentials;
}

export async function otpUser(
  server: TestServer,
  email: string,
  project = server.project,
): Promise<SignedInUser> {
  const bundle = await server.signIn(email, project);
  return { email, userId: decodeJwt(bundle.access_token).sub as string, bundle, project };
}

/** Registers a new WebCrypto device for the signed-in user; returns its id and key. */
export async function registerDevice(
  server: TestServer,
  user: SignedInUser,
  name?: string,
): Promise<{ deviceId: string; device: TestDevice }> {
  const device = await webCryptoDevice();
  const started = await server.request('POST', '/v1/devices/register/start', {
    headers: bearer(user.bundle),
  });
  assert.equal(started.status, 200, started.text);
  const { challenge_id, nonce } = started.body;
  const registered = await server.request('POST', '/v1/devices', {
    body: {
      challenge_id,
      public_key: device.jwk,
      signature: await device.sign(
        signedText('device-register', user.project.api_key_id, challenge_id, nonce),
      ),
      ...(name ? { name } : {}),
    },
    headers: bearer(user.bundle),
  });
  assert.equal(registered.status, 201, registered.text);
  return { deviceId: registered.body.device_id as string, device };
}

/** `POST /v1/auth/{device|pin}/start` for a device id. */
export const startDeviceSignIn = (
  server: TestServer,
  method: 'device' | 'pin',
  deviceId: string,
  project = server.project,
) =>
  server.request('POST', `/v1/auth/${method}/start`, {
    body: { device_id: deviceId },
    headers: keyOf(project),
  });

/** `POST /v1/auth/{device|pin}/complete` (with the PIN for `pin`). */
export const completeDeviceSignIn = (
  server: TestServer,
  method: 'device' | 'pin',
  body: { challenge_id: string; signature: string; pin?: string; getOAuthToken?: boolean },
  project = server.project,
) =>
  server.request('POST', `/v1/auth/${method}/complete`, {
    body: { getOAuthToken: true, ...body },
    headers: keyOf(project),
  });

/**
 * A whole device sign-in (`pin` absent) or PIN sign-in (`pin` given): start, the device's
 * signature over the nonce, complete. Fails the test if start is refused.
 */
export async function deviceSignIn(
  server: TestServer,
  device: { deviceId: string; device: TestDevice },
  options: { pin?: string; project?: ProjectCredentials; getOAuthToken?: boolean } = {},
): Promise<TestResponse> {
  const method = options.pin === undefined ? 'device' : 'pin';
  const project = options.project ?? server.project;
  const started = await startDeviceSignIn(server, method, device.deviceId, project);
  assert.equal(started.status, 200, started.text);
  const { challenge_id, nonce } = started.body;
  const purpose = method === 'pin' ? 'pin-signin' : 'device-signin';
  const signature = await device.device.sign(signedText(purpose, project.api_key_id, challenge_id, nonce));
  return completeDeviceSignIn(
    server,
    method,
    {
      challenge_id,
      signature,
      ...(options.pin !== undefined ? { pin: options.pin } : {}),
      getOAuthToken: options.getOAuthToken ?? true,
    },
    project,
  );
}

/** Sets the signed-in user's PIN (`PUT /v1/pin`). */
export async function setPin(server: TestServer, user: SignedInUser, pin: string): Promise<void> {
  const set = await server.request('PUT', '/v1/pin', { body: { pin }, headers: bearer(user.bundle) });
  assert.equal(set.status, 200, set.text);
}

/** Registers a passkey of a new software authenticator for the signed-in user. */
export async function registerPasskey(
  server: TestServer,
  user: SignedInUser,
): Promise<SoftwareAuthenticator> {
  const started = await server.request('POST', '/v1/biometrics/register/start', {
    headers: bearer(user.bundle),
  });
  assert.equal(started.status, 200, started.text);
  const { challenge_id, options } = started.body as {
    challenge_id: string;
    options: PublicKeyCredentialCreationOptionsJSON;
  };
  const authenticator = new SoftwareAuthenticator();
  const credential = authenticator.register({ challenge: options.challenge, userHandle: options.user.id });
  const registered = await server.request('POST', '/v1/biometrics/register/complete', {
    body: { challenge_id, credential },
    headers: bearer(user.bundle),
  });
  assert.equal(registered.status, 201, registered.text);
  return authenticator;
}

/** `POST /v1/auth/biometric/start`: discoverable without an identifier, identifier-first with one. */
export const startPasskeySignIn = (server: TestServer, identifier?: string, project = server.project) =>
  server.request('POST', '/v1/auth/biometric/start', {
    body: identifier === undefined ? {} : { identifier },
    headers: keyOf(project),
  });

/** `POST /v1/auth/biometric/complete`. */
export const completePasskeySignIn = (
  server: TestServer,
  challengeId: string,
  credential: unknown,
  project = server.project,
) =>
  server.request('POST', '/v1/auth/biometric/complete', {
    body: { challenge_id: challengeId, credential, getOAuthToken: true },
    headers: keyOf(project),
  });

/**
 * A whole passkey sign-in: start (discoverable unless an identifier is given), the authenticator's
 * assertion (with `ceremony` overrides such as `uv: false`), complete.
 */
export async function passkeySignIn(
  server: TestServer,
  authenticator: SoftwareAuthenticator,
  options: { identifier?: string; ceremony?: Omit<AuthenticationOptions, 'challenge'> } = {},
): Promise<TestResponse> {
  const started = await startPasskeySignIn(server, options.identifier);
  assert.equal(started.status, 200, started.text);
  const credential = authenticator.authenticate({
    challenge: started.body.options.challenge,
    ...options.ceremony,
  });
  return completePasskeySignIn(server, started.body.challenge_id, credential);
}

/** The problem document of a refused request: status, content type, stable code. */
export function assertProblem(response: TestResponse, status: number, code: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(response.body.code, code, response.text);
  assert.equal(response.body.status, status);
}

/** A 429 problem document with `Retry-After` (seconds, within the window) and `retry_after`. */
export function assertRateLimited(response: TestResponse, code: string, windowSeconds: number): void {
  assertProblem(response, 429, code);
  const retryAfter = response.headers.get('retry-after');
  assert.match(retryAfter ?? '', /^\d+$/, 'a Retry-After header in seconds');
  const seconds = Number(retryAfter);
  assert.ok(
    seconds >= 1 && seconds <= windowSeconds,
    `Retry-After ${seconds} within the ${windowSeconds} s window`,
  );
  assert.equal(response.body.retry_after, seconds);
}
