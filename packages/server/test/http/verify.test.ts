import assert from 'node:assert/strict';
import { createHmac, createPublicKey, verify as verifySignature } from 'node:crypto';
import { after, before, test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { signJwt } from '../../src/tokens/jwt.js';
import { eachDialect, startServer, type TestServer, uniqueEmail } from '../helpers/harness.js';
import { otherS } from '../helpers/sign-in-methods.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60' };

const nextEmail = () => uniqueEmail('verify');

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function parts(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  return { header: decodeProtectedHeader(token) as Record<string, unknown>, payload: decodeJwt(token) };
}

eachDialect('POST /verify', (dialect) => {
  let server: TestServer;
  // The injected clock only moves forward: tests advance it, never rewind it.
  let nowMs = Date.now();
  const verify = (accessToken: unknown, apiKeyId?: string) =>
    server.request('POST', '/verify', {
      body: { oauth_token: { access_token: accessToken } },
      headers: apiKeyId === undefined ? {} : { api_key_id: apiKeyId },
    });
  /** Signs with the issuer's real active key: only the claims under test differ. */
  const mint = (header: Record<string, unknown>, payload: Record<string, unknown>) => {
    const key = server.ctx.keys.signingKey();
    return signJwt({ alg: 'ES256', kid: key.kid, typ: 'at+jwt', ...header }, payload, key.privateKey);
  };

  before(async () => {
    server = await startServer(dialect, { env: ENV, now: () => nowMs });
  });
  after(() => server.close());

  test('a valid token gives exactly {"success":true}, with or without API_KEY_ID', async () => {
    const bundle = await server.signIn(nextEmail());
    const withKey = await server.request('POST', '/verify', {
      body: { oauth_token: bundle },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.equal(withKey.status, 200);
    assert.equal(withKey.text, '{"success":true}');
    const withoutKey = await server.request('POST', '/verify', { body: { oauth_token: bundle } });
    assert.equal(withoutKey.status, 200);
    assert.equal(withoutKey.text, '{"success":true}');
    // Only access_token is required in oauth_token.
    const onlyAccess = await verify(bundle.access_token, server.project.api_key_id);
    assert.equal(onlyAccess.text, '{"success":true}');
    // The header name is case-insensitive.
    const upper = await server.request('POST', '/verify', {
      body: { oauth_token: bundle },
      headers: { API_KEY_ID: server.project.api_key_id },
    });
    assert.deepEqual(upper.body, { success: true });
  });

  test('a wrong API_KEY_ID is refused', async () => {
    const bundle = await server.signIn(nextEmail());
    const other = await server.ctx.projects.create({ name: 'other', origins: [] });
    for (const apiKeyId of [other.api_key_id, 'pk_not_a_project']) {
      const answer = await verify(bundle.access_token, apiKeyId);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.wrongAudience });
      assert.equal(answer.body.reason, 'JWT token was issued for another API key');
    }
  });

  test('a token signed by a key outside the JWKS but naming a known kid is invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const { header, payload } = parts(bundle.access_token);
    const { privateKey } = await generateKeyPair('ES256');
    const forged = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: header.kid as string, typ: 'at+jwt' })
      .sign(privateKey);
    const answer = await verify(forged, server.project.api_key_id);
    assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid });

    const unknownKid = await new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: 'not-a-kid-of-this-issuer', typ: 'at+jwt' })
      .sign(privateKey);
    const unknown = await verify(unknownKid, server.project.api_key_id);
    assert.deepEqual(unknown.body, { success: false, reason: VerifyReasons.unknownKey });
  });

  test('a tampered payload is invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const [h, , s] = bundle.access_token.split('.');
    const { payload } = parts(bundle.access_token);
    for (const change of [
      { sub: 'someone-else' },
      { exp: (payload.exp as number) + 86400 },
      { aud: server.project.api_key_id, scope: 'admin' },
    ]) {
      const tampered = `${h}.${b64({ ...payload, ...change })}.${s}`;
      const answer = await verify(tampered, server.project.api_key_id);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid });
    }
    // A flipped signature byte as well.
    const sig = Buffer.from(s!, 'base64url');
    sig[10] = (sig[10] ?? 0) ^ 1;
    const flipped = `${h}.${bundle.access_token.split('.')[1]}.${sig.toString('base64url')}`;
    assert.deepEqual((await verify(flipped)).body, { success: false, reason: VerifyReasons.invalid });
  });

  test('alg none is invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const { header, payload } = parts(bundle.access_token);
    const unsigned = `${b64({ ...header, alg: 'none' })}.${b64(payload)}`;
    for (const token of [`${unsigned}.`, `${unsigned}.${bundle.access_token.split('.')[2]}`]) {
      const answer = await verify(token, server.project.api_key_id);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid });
    }
    const noneLower = `${b64({ ...header, alg: 'NONE' })}.${b64(payload)}.`;
    assert.equal((await verify(noneLower)).body.success, false);
  });

  test('HS256 signed with the public key as the secret is invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const { header, payload } = parts(bundle.access_token);
    const jwks = (await server.request('GET', '/.well-known/jwks.json')).body.keys as Array<{ kid: string }>;
    const jwk = jwks.find((k) => k.kid === header.kid);
    assert.ok(jwk);
    const publicKey = createPublicKey({ key: jwk as never, format: 'jwk' });
    const secrets = [
      Buffer.from(publicKey.export({ type: 'spki', format: 'pem' }) as string),
      publicKey.export({ type: 'spki', format: 'der' }),
      Buffer.from(JSON.stringify(jwk)),
    ];
    for (const secret of secrets) {
      const input = `${b64({ ...header, alg: 'HS256' })}.${b64(payload)}`;
      const mac = createHmac('sha256', secret).update(input).digest('base64url');
      const answer = await verify(`${input}.${mac}`, server.project.api_key_id);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid });
    }
  });

  test('an expired token is refused (injected clock)', async () => {
    const bundle = await server.signIn(nextEmail());
    const { payload } = parts(bundle.access_token);
    nowMs = (payload.exp as number) * 1000 - 1000;
    assert.deepEqual((await verify(bundle.access_token)).body, { success: true });
    // Past exp and the clock leeway (TESSERA_CLOCK_LEEWAY, 5 s by default).
    nowMs = ((payload.exp as number) + server.config.clockLeeway) * 1000;
    const answer = await verify(bundle.access_token, server.project.api_key_id);
    assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.expired });
    // And stays expired (the verified-signature cache does not bring it back).
    assert.deepEqual((await verify(bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.expired,
    });
  });

  test('a token issued in the future is refused', async () => {
    const bundle = await server.signIn(nextEmail());
    const { payload } = parts(bundle.access_token);
    const iat = Math.floor(nowMs / 1000) + 3600;
    const future = mint({}, { ...payload, iat, exp: iat + 3600 });
    assert.deepEqual((await verify(future)).body, { success: false, reason: VerifyReasons.notYetValid });
  });

  test('an ID token is not an access token', async () => {
    const bundle = await server.signIn(nextEmail());
    const answer = await verify(bundle.id_token, server.project.api_key_id);
    assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.notAccessToken });
    // Neither is an access-token payload with a JWT typ, nor an at+jwt header with type id_token.
    const { payload } = parts(bundle.access_token);
    assert.deepEqual((await verify(mint({ typ: 'JWT' }, payload))).body, {
      success: false,
      reason: VerifyReasons.notAccessToken,
    });
    assert.deepEqual((await verify(mint({}, { ...payload, type: 'id_token' }))).body, {
      success: false,
      reason: VerifyReasons.notAccessToken,
    });
  });

  test('a refresh token and garbage are invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const tokens = [
      bundle.refresh_token,
      'garbage',
      '',
      'a.b.c',
      '...',
      `${bundle.access_token}.extra`,
      bundle.access_token.slice(0, -3),
      'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.',
      `${b64(['ES256'])}.${b64({})}.AAAA`,
      `${b64({ alg: 'ES256' })}.${b64({})}.AAAA`,
    ];
    for (const [i, token] of tokens.entries()) {
      const answer = await verify(token, server.project.api_key_id);
      assert.equal(answer.status, 200, `case ${i}`);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid }, `case ${i}`);
    }
  });

  test('a token from another issuer is refused', async () => {
    const bundle = await server.signIn(nextEmail());
    const { payload } = parts(bundle.access_token);
    const foreign = mint({}, { ...payload, iss: 'https://issuer.example' });
    assert.deepEqual((await verify(foreign)).body, { success: false, reason: VerifyReasons.wrongIssuer });
  });

  test('a token of an unknown project is refused', async () => {
    const bundle = await server.signIn(nextEmail());
    const { payload } = parts(bundle.access_token);
    const token = mint({}, { ...payload, aud: 'pk_no_such_project' });
    assert.deepEqual((await verify(token)).body, { success: false, reason: VerifyReasons.unknownProject });
    assert.deepEqual((await verify(token, 'pk_no_such_project')).body, {
      success: false,
      reason: VerifyReasons.unknownProject,
    });
  });

  test('a token of a deleted project is refused once the project cache has expired', async () => {
    const project = await server.ctx.projects.create({ name: 'doomed', origins: ['http://doomed.test'] });
    const bundle = await server.signIn(nextEmail(), project);
    assert.deepEqual((await verify(bundle.access_token, project.api_key_id)).body, { success: true });
    await server.storage.db.kysely.deleteFrom('projects').where('id', '=', project.project_id).execute();
    // Project lookups are cached for a few seconds by the injected clock.
    nowMs += 10_000;
    const answer = await verify(bundle.access_token, project.api_key_id);
    assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.unknownProject });
    assert.deepEqual((await verify(bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.unknownProject,
    });
  });

  test('a revoked session is refused, also for a token verified (and cached) before', async () => {
    const bundle = await server.signIn(nextEmail());
    for (let i = 0; i < 3; i++) {
      assert.deepEqual((await verify(bundle.access_token, server.project.api_key_id)).body, {
        success: true,
      });
    }
    const revoked = await server.request('POST', '/oauth/revoke', {
      body: { token: bundle.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(revoked.status, 200, revoked.body?.error);
    for (let i = 0; i < 3; i++) {
      const answer = await verify(bundle.access_token, server.project.api_key_id);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.revoked });
      assert.equal(answer.body.reason, 'JWT token has been revoked');
      assert.deepEqual((await verify(bundle.access_token)).body, {
        success: false,
        reason: VerifyReasons.revoked,
      });
    }
    // Still revoked once the in-memory revocation list has been re-read from the database.
    nowMs += 2000;
    assert.deepEqual((await verify(bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
  });

  test('a revocation made elsewhere is seen once the revocation list is 1 s old', async () => {
    const bundle = await server.signIn(nextEmail());
    assert.deepEqual((await verify(bundle.access_token)).body, { success: true });
    const sid = parts(bundle.access_token).payload.sid as string;
    // Through the repository, as another instance would: this instance's list is not told.
    assert.equal(await server.ctx.sessions.revoke(sid, 'test', nowMs), true);
    // The list is re-read when its last read is at least 1 s old (by the injected clock).
    nowMs += 1000;
    assert.deepEqual((await verify(bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
  });

  test('malformed requests get 4xx with a success:false body', async () => {
    const cases: Array<{ raw?: string; body?: unknown; type?: string }> = [
      { raw: 'not json', type: 'application/json' },
      { body: {} },
      { body: { oauth_token: 'a.b.c' } },
      { body: { oauth_token: { access_token: 42 } } },
      { body: { oauth_token: {} } },
    ];
    for (const c of cases) {
      const answer = await server.request('POST', '/verify', {
        ...(c.raw !== undefined ? { raw: c.raw } : { body: c.body }),
        headers: c.type ? { 'content-type': c.type } : {},
      });
      assert.ok(answer.status >= 400 && answer.status < 500, `${answer.status} for ${JSON.stringify(c)}`);
      assert.equal(answer.body.success, false);
      assert.equal(typeof answer.body.reason, 'string');
    }
  });

  test('an access_token over 8,192 UTF-16 code units is a 400, counted as JavaScript counts length', async () => {
    const at = async (token: string) => (await verify(token)).status;
    assert.equal(await at('a'.repeat(8192)), 200, 'at the bound: checked, and invalid');
    assert.equal(await at('a'.repeat(8193)), 400);
    // 8,192 code points, at the bound, but 8,194 code units, over it: two are emoji.
    assert.equal(await at(`${'a'.repeat(8190)}${'\u{1F600}'.repeat(2)}`), 400);
    const answer = await verify('a'.repeat(8193));
    assert.equal(answer.body.success, false);
    assert.equal(typeof answer.body.reason, 'string');
  });

  test('CORS: a preflight from any origin allows API_KEY_ID and Content-Type', async () => {
    for (const origin of ['https://anywhere.example', 'http://localhost:3000', 'null']) {
      const preflight = await server.request('OPTIONS', '/verify', {
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'api_key_id,content-type',
        },
      });
      assert.ok(preflight.status === 204 || preflight.status === 200, `preflight ${preflight.status}`);
      assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
      const allowed = (preflight.headers.get('access-control-allow-headers') ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase());
      assert.ok(allowed.includes('api_key_id'), `allow-headers: ${allowed}`);
      assert.ok(allowed.includes('content-type'), `allow-headers: ${allowed}`);
      assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
      assert.equal(preflight.headers.get('access-control-allow-credentials'), null);
    }
    const bundle = await server.signIn(nextEmail());
    const actual = await server.request('POST', '/verify', {
      body: { oauth_token: bundle },
      headers: { origin: 'https://anywhere.example', api_key_id: server.project.api_key_id },
    });
    assert.equal(actual.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(actual.body, { success: true });
  });

  // Issue 12: one spelling per token. ECDSA verifies (r, s) and (r, n − s) alike, and a lenient
  // base64url decoder ignores the unused low bits of the last character.
  test('the high-S twin (r, n − s) of a valid token is invalid, at /verify and as a Bearer token', async () => {
    const bundle = await server.signIn(nextEmail());
    const [header, payload, signature] = bundle.access_token.split('.') as [string, string, string];
    const twin = `${header}.${payload}.${otherS(Buffer.from(signature, 'base64url')).toString('base64url')}`;
    // The twin is a genuine signature of the issuer's key: only the low-S rule refuses it.
    const jwk = server.ctx.keys.get(decodeProtectedHeader(twin).kid as string)!.publicKey;
    assert.ok(
      verifySignature(
        'sha256',
        Buffer.from(`${header}.${payload}`),
        { key: jwk, dsaEncoding: 'ieee-p1363' },
        Buffer.from(twin.split('.')[2]!, 'base64url'),
      ),
    );
    for (const apiKeyId of [server.project.api_key_id, undefined]) {
      assert.deepEqual((await verify(twin, apiKeyId)).body, {
        success: false,
        reason: VerifyReasons.invalid,
      });
    }
    const asBearer = await server.request('GET', '/v1/devices', {
      headers: { authorization: `Bearer ${twin}` },
    });
    assert.equal(asBearer.status, 401, asBearer.text);
    assert.equal(asBearer.body.code, 'invalid_token');
    // The token as issued still verifies.
    assert.deepEqual((await verify(bundle.access_token, server.project.api_key_id)).body, { success: true });
  });

  test('a valid token whose signature is respelled with its unused last bits set is invalid', async () => {
    const bundle = await server.signIn(nextEmail());
    const token = bundle.access_token;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const signature = token.slice(token.lastIndexOf('.') + 1);
    assert.equal(signature.length, 86, '64 bytes: the last character carries 4 unused bits');
    for (let bits = 1; bits <= 15; bits++) {
      const respelled = `${token.slice(0, -1)}${alphabet[alphabet.indexOf(token.at(-1)!) | bits]}`;
      const lenient = Buffer.from(respelled.slice(respelled.lastIndexOf('.') + 1), 'base64url');
      assert.ok(lenient.equals(Buffer.from(signature, 'base64url')), 'the same bytes to a lenient decoder');
      assert.deepEqual((await verify(respelled)).body, { success: false, reason: VerifyReasons.invalid });
    }
    assert.deepEqual((await verify(token)).body, { success: true });
  });

  // Issue 12: a header sent empty or too long used to read as absent, skipping the audience check.
  test('an API_KEY_ID sent empty or over 100 characters is checked, never skipped', async () => {
    const bundle = await server.signIn(nextEmail());
    const sent: Record<string, string>[] = [
      { api_key_id: '' },
      { 'api-key-id': '' },
      { api_key_id: 'p'.repeat(101) },
      { api_key_id: `${server.project.api_key_id}${'x'.repeat(100)}` },
      { api_key_id: '', 'api-key-id': server.project.api_key_id },
    ];
    for (const headers of sent) {
      const answer = await server.request('POST', '/verify', { body: { oauth_token: bundle }, headers });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.wrongAudience });
      const asBearer = await server.request('GET', '/v1/devices', {
        headers: { ...headers, authorization: `Bearer ${bundle.access_token}` },
      });
      assert.equal(asBearer.status, 401, asBearer.text);
      assert.equal(asBearer.body.code, 'invalid_token');
    }
    // Absent: any project of this issuer, as before.
    assert.deepEqual((await server.request('POST', '/verify', { body: { oauth_token: bundle } })).body, {
      success: true,
    });
    const asBearer = await server.request('GET', '/v1/devices', {
      headers: { authorization: `Bearer ${bundle.access_token}` },
    });
    assert.equal(asBearer.status, 200, asBearer.text);
  });
});
