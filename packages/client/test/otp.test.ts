import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTesseraClient, memoryStorage, TesseraClientError, type TokenStorage } from '@tessera/client';
import { codeOf, recordEvents, type Setup, setup } from './helpers/setup.js';

/** A storage that records every write, to prove that nothing was written. */
function recordingStorage(): TokenStorage & { writes: string[] } {
  const inner = memoryStorage();
  const writes: string[] = [];
  return {
    writes,
    get: (key) => inner.get(key),
    set: async (key, value) => {
      writes.push(key);
      await inner.set(key, value);
    },
    remove: (key) => inner.remove(key),
  };
}

describe('OTP sign-in', () => {
  let s: Setup;
  before(async () => {
    s = await setup();
  });
  after(() => s.close());

  it('stores the bundle and reports who signed in', async () => {
    const storage = recordingStorage();
    const client = s.client({ storage });
    const events = await recordEvents(client);
    assert.equal(await client.isSignedIn(), false);
    assert.equal(await client.getAccessToken(), null);

    const challenge = await client.otp.start('ada@example.com');
    assert.match(challenge.challengeId, /.+/);
    assert.equal(challenge.channel, 'email');
    assert.ok(challenge.expiresIn > 0);
    const result = await client.otp.complete(challenge.challengeId, s.server.lastCode('ada@example.com'));

    assert.equal(result.authMethod, 'OTP');
    assert.equal(result.tokensStored, true);
    assert.deepEqual(events, ['signedIn']);
    assert.equal(await client.isSignedIn(), true);
    const claims = await client.getClaims();
    assert.equal(claims?.identifier, 'ada@example.com');
    assert.equal(claims?.sub, result.userId);
    assert.equal(claims?.aud, s.server.project.api_key_id);
    const stored = await storage.get(`tessera.${s.server.project.api_key_id}.session`);
    assert.ok(stored);
    const record = JSON.parse(stored);
    assert.equal(record.bundle.access_token, await client.getAccessToken());
    assert.equal(record.bundle.id_token, await client.getIdToken());
    assert.match(record.bundle.refresh_token, /^tsr_/);
    assert.equal((await client.verify()).success, true);
  });

  it('with getOAuthToken false stores nothing', async () => {
    const storage = recordingStorage();
    const client = s.client({ storage });
    const events = await recordEvents(client);
    const { challengeId } = await client.otp.start('grace@example.com');
    const result = await client.otp.complete(challengeId, s.server.lastCode('grace@example.com'), {
      getOAuthToken: false,
    });
    assert.equal(result.tokensStored, false);
    assert.equal(result.authMethod, 'OTP');
    assert.match(result.userId, /.+/);
    assert.deepEqual(storage.writes, []);
    assert.deepEqual(events, []);
    assert.equal(await client.isSignedIn(), false);
    assert.equal(await client.getAccessToken(), null);
  });
});

describe('errors', () => {
  let s: Setup;
  before(async () => {
    s = await setup();
  });
  after(() => s.close());

  it('surface the stable code, status and detail of problem documents', async () => {
    const client = s.client();
    const { challengeId } = await client.otp.start('errors@example.com');
    const error = await client.otp.complete(challengeId, '000000').catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'invalid_code');
    assert.equal(error.status, 400);
    assert.match(error.detail, /.+/);
    assert.equal(error.message, error.detail);

    assert.equal(await codeOf(client.otp.start('not an identifier')), 'invalid_identifier');
    const tooSoon = await client.otp.start('errors@example.com').catch((e: unknown) => e);
    assert.ok(tooSoon instanceof TesseraClientError);
    assert.equal(tooSoon.code, 'resend_too_soon');
    assert.equal(tooSoon.status, 429);
    assert.ok((tooSoon.retryAfter ?? 0) > 0);
  });

  it('name an unknown API key id', async () => {
    const client = s.client({ apiKeyId: 'pk_unknown' });
    assert.equal(await codeOf(client.otp.start('someone@example.com')), 'unknown_api_key');
  });

  it('turn an unreachable service into network_error', async () => {
    const client = createTesseraClient({
      issuer: 'http://127.0.0.1:9',
      apiKeyId: 'pk_x',
      storage: memoryStorage(),
      channel: null,
    });
    const error = await client.otp.start('someone@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'network_error');
    assert.equal(error.status, undefined);
  });

  it('turn a slow service into network_error after the request timeout', async () => {
    const client = createTesseraClient({
      issuer: 'http://service.test',
      apiKeyId: 'pk_x',
      storage: memoryStorage(),
      channel: null,
      requestTimeoutMs: 50,
      fetch: (_input, init) =>
        new Promise((_resolve, reject) => {
          init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        }),
    });
    const error = await client.otp.start('someone@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'network_error');
    assert.match(error.detail, /in time/);
  });

  it('read a gateway page that is not JSON as service_unavailable', async () => {
    const client = createTesseraClient({
      issuer: 'http://service.test',
      apiKeyId: 'pk_x',
      storage: memoryStorage(),
      channel: null,
      fetch: async () => new Response('<html>Bad gateway</html>', { status: 502 }),
    });
    const error = await client.otp.start('someone@example.com').catch((e: unknown) => e);
    assert.ok(error instanceof TesseraClientError);
    assert.equal(error.code, 'service_unavailable');
    assert.equal(error.status, 502);
  });
});
