import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type AccessTokenClaims, createVerifier, type Verifier, type VerifierOptions } from '@tessera/verify';
import { base64url, SignJWT } from 'jose';
import {
  API_KEY_ID,
  assertRejects,
  deadUrl,
  type FakeIssuer,
  makeKey,
  mintAccessToken,
  NOW,
  NOW_S,
  type SigningKey,
  startIssuer,
} from './support.ts';

describe('createVerifier', () => {
  let key: SigningKey;
  let rsaKey: SigningKey;
  let idp: FakeIssuer;
  let verifier: Verifier;
  const make = (options: Partial<VerifierOptions> = {}) =>
    createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW, ...options });

  before(async () => {
    key = await makeKey('key-1');
    // Published in the JWKS so that only the algorithm allowlist can refuse RS256 tokens.
    rsaKey = await makeKey('rsa-1', 'RS256');
    idp = await startIssuer([key, rsaKey]);
    verifier = make();
  });
  after(() => idp.close());

  it('accepts a valid access token and returns its typed claims, custom claims included', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    const claims: AccessTokenClaims = await verifier.verify(token);
    assert.equal(claims.sub, 'usr_8d2f0c');
    assert.equal(claims.client_user_id, 'customer-42');
    assert.equal(claims.authentication_method, 'OTP');
    assert.equal(claims.type, 'access_token');
    assert.equal(claims.identifier, 'ada@example.com');
    assert.equal(claims.scope, 'access');
    assert.equal(claims.aud, API_KEY_ID);
    assert.equal(claims.iss, idp.issuer);
    assert.equal(claims.sid, 'ses_71ab');
    assert.equal(claims.exp - claims.iat, 3600);
    assert.equal(claims['plan'], 'pro');
  });

  it('reads the token from an Authorization header', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    assert.equal((await verifier.verifyAuthorization(`Bearer ${token}`)).sub, 'usr_8d2f0c');
    await assertRejects(verifier.verifyAuthorization(undefined), 'missing_token');
    await assertRejects(verifier.verifyAuthorization(`Basic ${token}`), 'missing_token', token);
    await assertRejects(verifier.verifyAuthorization('Bearer not a token'), 'invalid_token');
  });

  it('refuses an expired token, with the default 5 s of clock tolerance', async () => {
    const expired = await mintAccessToken(key, idp.issuer, { claims: { exp: NOW_S - 6 } });
    await assertRejects(verifier.verify(expired), 'token_expired', expired);
    const justExpired = await mintAccessToken(key, idp.issuer, { claims: { exp: NOW_S - 4 } });
    assert.equal((await verifier.verify(justExpired)).sub, 'usr_8d2f0c');
    await assertRejects(make({ clockTolerance: 0 }).verify(justExpired), 'token_expired', justExpired);
  });

  it('refuses a token issued for another API key', async () => {
    const token = await mintAccessToken(key, idp.issuer, { claims: { aud: 'pk_other' } });
    await assertRejects(verifier.verify(token), 'wrong_audience', token);
    const list = await mintAccessToken(key, idp.issuer, { claims: { aud: [API_KEY_ID, 'pk_other'] } });
    await assertRejects(verifier.verify(list), 'invalid_token', list);
  });

  it('refuses a token of another issuer', async () => {
    const token = await mintAccessToken(key, idp.issuer, { claims: { iss: 'https://evil.example' } });
    await assertRejects(verifier.verify(token), 'wrong_issuer', token);
  });

  it('refuses a token whose typ header is not at+jwt', async () => {
    for (const typ of ['JWT', undefined]) {
      const token = await mintAccessToken(key, idp.issuer, { header: { typ } });
      const err = await assertRejects(verifier.verify(token), 'invalid_token', token);
      assert.match(err.message, /not an access token/);
    }
  });

  it('refuses an ID token and any token whose type claim is not access_token', async () => {
    const idToken = await mintAccessToken(key, idp.issuer, { claims: { type: 'id_token' } });
    await assertRejects(verifier.verify(idToken), 'invalid_token', idToken);
    const untyped = await mintAccessToken(key, idp.issuer, { omit: ['type'] });
    await assertRejects(verifier.verify(untyped), 'invalid_token', untyped);
  });

  it('requires sub, sid and jti as strings', async () => {
    for (const claim of ['sub', 'sid', 'jti']) {
      const missing = await mintAccessToken(key, idp.issuer, { omit: [claim] });
      const err = await assertRejects(verifier.verify(missing), 'invalid_token', missing);
      assert.match(err.message, new RegExp(`"${claim}"`));
      const number = await mintAccessToken(key, idp.issuer, { claims: { [claim]: 42 } });
      await assertRejects(verifier.verify(number), 'invalid_token', number);
    }
  });

  it('refuses HS256 tokens, even keyed with the public key material', async () => {
    const secret = new TextEncoder().encode(JSON.stringify(key.publicJwk));
    const token = await new SignJWT({ type: 'access_token', sub: 'x', sid: 's', jti: 'j', aud: API_KEY_ID })
      .setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' })
      .setIssuer(idp.issuer)
      .setIssuedAt(NOW_S)
      .setExpirationTime(NOW_S + 60)
      .sign(secret);
    const err = await assertRejects(verifier.verify(token), 'invalid_token', token);
    assert.match(err.message, /ES256/);
  });

  it('refuses unsigned (alg none) tokens', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', kid: key.kid, typ: 'at+jwt' }));
    const valid = await mintAccessToken(key, idp.issuer);
    const payload = valid.split('.')[1];
    await assertRejects(verifier.verify(`${header}.${payload}.`), 'invalid_token');
  });

  it('refuses RS256 tokens although their key is in the JWKS', async () => {
    const token = await mintAccessToken(rsaKey, idp.issuer, { alg: 'RS256' });
    const err = await assertRejects(verifier.verify(token), 'invalid_token', token);
    assert.match(err.message, /ES256/);
  });

  it('refuses a token whose payload was tampered with', async () => {
    const token = await mintAccessToken(key, idp.issuer);
    const [header, payload, signature] = token.split('.');
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload!)));
    const forged = base64url.encode(JSON.stringify({ ...claims, sub: 'usr_admin' }));
    const tampered = `${header}.${forged}.${signature}`;
    const err = await assertRejects(verifier.verify(tampered), 'invalid_token', tampered);
    assert.match(err.message, /signature/);
  });

  it('refuses garbage and empty input as invalid or missing', async () => {
    await assertRejects(verifier.verify('abc.def.ghi'), 'invalid_token');
    await assertRejects(verifier.verify('not-a-jwt'), 'invalid_token');
    await assertRejects(verifier.verify(''), 'missing_token');
  });

  it('refuses a token not yet valid (nbf)', async () => {
    const token = await mintAccessToken(key, idp.issuer, { claims: { nbf: NOW_S + 60 } });
    await assertRejects(verifier.verify(token), 'invalid_token', token);
  });

  it('fails fast on invalid options', () => {
    assert.throws(() => createVerifier({ issuer: 'auth.example.com', apiKeyId: API_KEY_ID }), TypeError);
    assert.throws(
      () => createVerifier({ issuer: 'https://auth.example.com/', apiKeyId: API_KEY_ID }),
      /trailing|end/,
    );
    assert.throws(() => createVerifier({ issuer: 'https://auth.example.com', apiKeyId: '' }), /apiKeyId/);
    assert.throws(
      () => createVerifier({ issuer: 'https://a.example', apiKeyId: 'k', clockTolerance: -1 }),
      /clockTolerance/,
    );
    assert.throws(
      () => createVerifier({ issuer: 'https://a.example', apiKeyId: 'k', revocation: 'always' as 'online' }),
      /revocation/,
    );
  });
});

describe('JWKS fetching', () => {
  it('fetches the keys once and caches them', async () => {
    const key = await makeKey('key-1');
    const idp = await startIssuer([key]);
    try {
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
      for (let i = 0; i < 3; i++) await verifier.verify(await mintAccessToken(key, idp.issuer));
      assert.equal(idp.jwksFetches, 1);
    } finally {
      await idp.close();
    }
  });

  it('re-fetches the JWKS on an unknown kid and finds a rotated-in key', async () => {
    const oldKey = await makeKey('key-2029');
    const newKey = await makeKey('key-2030');
    const idp = await startIssuer([oldKey]);
    try {
      const verifier = createVerifier({
        issuer: idp.issuer,
        apiKeyId: API_KEY_ID,
        jwksCooldown: 0,
        now: () => NOW,
      });
      await verifier.verify(await mintAccessToken(oldKey, idp.issuer));
      idp.keys = [oldKey, newKey];
      const claims = await verifier.verify(await mintAccessToken(newKey, idp.issuer));
      assert.equal(claims.sub, 'usr_8d2f0c');
      assert.equal(idp.jwksFetches, 2);
    } finally {
      await idp.close();
    }
  });

  it('rate-limits re-fetches: an unknown kid within the cooldown is refused without a fetch', async () => {
    const oldKey = await makeKey('key-2029');
    const newKey = await makeKey('key-2030');
    const idp = await startIssuer([oldKey]);
    try {
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
      await verifier.verify(await mintAccessToken(oldKey, idp.issuer));
      idp.keys = [oldKey, newKey];
      for (let i = 0; i < 5; i++) {
        const token = await mintAccessToken(newKey, idp.issuer);
        const err = await assertRejects(verifier.verify(token), 'invalid_token', token);
        assert.match(err.message, /unknown key/);
      }
      assert.equal(idp.jwksFetches, 1);
    } finally {
      await idp.close();
    }
  });

  it('reports jwks_unavailable when nothing listens at the JWKS URL', async () => {
    const key = await makeKey('key-1');
    const issuer = await deadUrl();
    const verifier = createVerifier({ issuer, apiKeyId: API_KEY_ID, now: () => NOW });
    const token = await mintAccessToken(key, issuer);
    const err = await assertRejects(verifier.verify(token), 'jwks_unavailable', token);
    assert.equal(err.status, 503);
    assert.ok(err.cause, 'the network error is kept as cause for logs');
  });

  it('reports jwks_unavailable when the JWKS endpoint fails, and recovers when it is back', async () => {
    const key = await makeKey('key-1');
    const idp = await startIssuer([key]);
    try {
      idp.jwksFailing = true;
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
      await assertRejects(verifier.verify(await mintAccessToken(key, idp.issuer)), 'jwks_unavailable');
      idp.jwksFailing = false;
      assert.equal((await verifier.verify(await mintAccessToken(key, idp.issuer))).sub, 'usr_8d2f0c');
    } finally {
      await idp.close();
    }
  });

  it('uses jwksUri and the injected fetch when given', async () => {
    const key = await makeKey('key-1');
    const idp = await startIssuer([key]);
    try {
      const seen: string[] = [];
      const verifier = createVerifier({
        issuer: 'https://auth.example.com',
        apiKeyId: API_KEY_ID,
        jwksUri: `${idp.issuer}/.well-known/jwks.json`,
        fetch: (input, init) => {
          seen.push(String(input));
          return fetch(input, init);
        },
        now: () => NOW,
      });
      await verifier.verify(await mintAccessToken(key, 'https://auth.example.com'));
      assert.deepEqual(seen, [`${idp.issuer}/.well-known/jwks.json`]);
    } finally {
      await idp.close();
    }
  });
});
