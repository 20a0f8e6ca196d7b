import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createVerifier, type VerifierOptions } from '@tessera/verify';
import {
  API_KEY_ID,
  assertRejects,
  deadUrl,
  type FakeIssuer,
  makeKey,
  mintAccessToken,
  NOW,
  type SigningKey,
  startIssuer,
} from './support.ts';

describe("revocation: 'online'", () => {
  let key: SigningKey;
  let idp: FakeIssuer;
  let clock: number;
  const make = (options: Partial<VerifierOptions> = {}) =>
    createVerifier({
      issuer: idp.issuer,
      apiKeyId: API_KEY_ID,
      revocation: 'online',
      now: () => clock,
      ...options,
    });

  before(async () => {
    key = await makeKey('key-1');
    idp = await startIssuer([key]);
  });
  beforeEach(() => {
    clock = NOW;
    idp.verifyMode = 'contract';
    idp.verifyCalls = [];
    idp.revokedSessions.clear();
  });
  after(() => idp.close());

  it('asks POST /verify with the contract headers and body, and accepts success: true', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    assert.equal((await make().verify(token)).sub, 'usr_8d2f0c');
    assert.equal(idp.verifyCalls.length, 1);
    const [call] = idp.verifyCalls;
    assert.equal(call!.headers['content-type'], 'application/json');
    assert.equal(call!.headers['api_key_id'], API_KEY_ID);
    assert.deepEqual(call!.body, { oauth_token: { access_token: token } });
  });

  it('a resource server sends its resource, so that tokens bound to it verify (RFC 8707)', async () => {
    const resource = 'https://mcp.example.com/mcp';
    const token = await mintAccessToken(key, idp.issuer, {
      claims: { aud: resource, api_key_id: API_KEY_ID },
    });
    assert.equal((await make({ resource }).verify(token)).aud, resource);
    const [call] = idp.verifyCalls;
    assert.equal(call!.headers['api_key_id'], API_KEY_ID);
    assert.deepEqual(call!.body, { oauth_token: { access_token: token }, resource });
    const refusing = make({
      resource,
      fetch: async (input, init) =>
        String(input).endsWith('/verify')
          ? Response.json({ success: false, reason: 'JWT token was issued for another resource' })
          : fetch(input, init),
    });
    await assertRejects(refusing.verify(token), 'wrong_audience');
  });

  it('refuses a token of a revoked session (success: false) with token_revoked', async () => {
    idp.revokedSessions.add('ses_71ab');
    const token = await mintAccessToken(key, idp.issuer);
    const err = await assertRejects(make().verify(token), 'token_revoked', token);
    assert.equal(err.status, 401);
    assert.match(err.message, /revoked/);
  });

  it('maps other reasons of success: false to their codes, unknown ones to invalid_token', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    const answering = (reason: string) =>
      make({
        fetch: async (input, init) =>
          String(input).endsWith('/verify') ? Response.json({ success: false, reason }) : fetch(input, init),
      });
    await assertRejects(answering('JWT token has expired').verify(token), 'token_expired', token);
    await assertRejects(
      answering('JWT token was issued for another API key').verify(token),
      'wrong_audience',
    );
    await assertRejects(answering('JWT token is invalid').verify(token), 'invalid_token', token);
    await assertRejects(answering('something new').verify(token), 'invalid_token', token);
  });

  it('does not ask again for the same token within one second', async () => {
    const verifier = make();
    const token = await mintAccessToken(key, idp.issuer);
    await verifier.verify(token);
    idp.revokedSessions.add('ses_71ab');
    clock += 999;
    await verifier.verify(token);
    assert.equal(idp.verifyCalls.length, 1, 'a positive answer is reused within the second');
    clock += 1;
    await assertRejects(verifier.verify(token), 'token_revoked', token);
    assert.equal(idp.verifyCalls.length, 2);
  });

  it('never caches negative answers', async () => {
    const verifier = make();
    const token = await mintAccessToken(key, idp.issuer);
    idp.revokedSessions.add('ses_71ab');
    await assertRejects(verifier.verify(token), 'token_revoked', token);
    await assertRejects(verifier.verify(token), 'token_revoked', token);
    assert.equal(idp.verifyCalls.length, 2);
  });

  it('does not ask the service when the token already fails locally', async () => {
    const token = await mintAccessToken(key, idp.issuer, { claims: { aud: 'pk_other' } });
    await assertRejects(make().verify(token), 'wrong_audience', token);
    assert.equal(idp.verifyCalls.length, 0);
  });

  it('fails closed when the verification service is down', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    const verifier = make({ verifyUri: `${await deadUrl()}/verify` });
    const err = await assertRejects(verifier.verify(token), 'verification_unavailable', token);
    assert.equal(err.status, 503);
    assert.ok(err.cause);
  });

  it('fails closed on HTTP 500 and on an unreadable answer', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    idp.verifyMode = 'error';
    await assertRejects(make().verify(token), 'verification_unavailable', token);
    const html = make({
      fetch: async (input, init) =>
        String(input).endsWith('/verify') ? new Response('<html>', { status: 200 }) : fetch(input, init),
    });
    await assertRejects(html.verify(token), 'verification_unavailable', token);
  });

  it('fails closed when the service does not answer within the timeout', { timeout: 10_000 }, async () => {
    const token = await mintAccessToken(key, idp.issuer);
    idp.verifyMode = 'hang';
    await assertRejects(make({ timeout: 200 }).verify(token), 'verification_unavailable', token);
  });

  it('is off by default: a revoked session verifies locally without a call', async () => {
    idp.revokedSessions.add('ses_71ab');
    const token = await mintAccessToken(key, idp.issuer);
    const local = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => clock });
    assert.equal((await local.verify(token)).sid, 'ses_71ab');
    assert.equal(idp.verifyCalls.length, 0);
  });
});
