import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCodes, isTesseraClientError, TesseraClientError } from '@tessera/client';
import { ServerClock } from '../src/clock.js';
import { decodeBase64url, encodeBase64url } from '../src/encoding/base64url.js';
import { readClaims } from '../src/encoding/jwt.js';
import { errorFromAnswer } from '../src/errors.js';
import { isFresh } from '../src/session/record.js';
import { authenticationToJSON, toCreationOptions, toRequestOptions } from '../src/webauthn/convert.js';

const jwt = (claims: object) =>
  `e30.${encodeBase64url(new TextEncoder().encode(JSON.stringify(claims)))}.sig`;

describe('base64url', () => {
  it('round-trips every length and matches Node', () => {
    for (let n = 0; n < 70; n++) {
      const bytes = crypto.getRandomValues(new Uint8Array(n));
      const encoded = encodeBase64url(bytes);
      assert.equal(encoded, Buffer.from(bytes).toString('base64url'));
      assert.deepEqual(decodeBase64url(encoded), bytes);
    }
    assert.deepEqual(decodeBase64url('+/8='), new Uint8Array([0xfb, 0xff]));
    assert.throws(() => decodeBase64url('a'));
    assert.throws(() => decodeBase64url('ab$d'));
  });
});

describe('readClaims', () => {
  it('reads a payload, including non-ASCII text, and refuses what is not a JWT', () => {
    assert.deepEqual(readClaims(jwt({ sub: 'u', name: 'Zoë' })), { sub: 'u', name: 'Zoë' });
    assert.equal(readClaims('not-a-jwt'), undefined);
    assert.equal(readClaims('a.!!!.c'), undefined);
    assert.equal(readClaims(`a.${encodeBase64url(new TextEncoder().encode('[1]'))}.c`), undefined);
  });
});

describe('isFresh', () => {
  const now = 1_000_000_000_000;
  const s = now / 1000;
  it('wants more than the margin left, the margin capped at half the lifetime', () => {
    assert.equal(isFresh(jwt({ iat: s, exp: s + 3600 }), now, 60_000), true);
    assert.equal(isFresh(jwt({ iat: s - 3550, exp: s + 50 }), now, 60_000), false);
    assert.equal(isFresh(jwt({ iat: s - 10, exp: s + 20 }), now, 60_000), true);
    assert.equal(isFresh(jwt({ iat: s - 20, exp: s + 10 }), now, 60_000), false);
    assert.equal(isFresh(jwt({ iat: s }), now, 60_000), false);
  });
});

describe('ServerClock', () => {
  it('prefers token iat over the Date header, and both over the stored skew', () => {
    let local = 10_000_000;
    const clock = new ServerClock(() => local);
    clock.seed(5_000);
    assert.equal(clock.skewMs, 5_000);
    clock.observeDateHeader(new Date(local + 60_000).toUTCString());
    assert.ok(Math.abs(clock.skewMs - 60_000) <= 1_000);
    clock.observeIssuedAt(Math.floor((local - 120_000) / 1000));
    assert.ok(Math.abs(clock.skewMs + 120_000) <= 1_000);
    clock.observeDateHeader(new Date(local).toUTCString());
    clock.seed(0);
    assert.ok(Math.abs(clock.skewMs + 120_000) <= 1_000);
    local += 1000;
    assert.ok(Math.abs(clock.now() - (local - 120_000)) <= 1_000);
    clock.observeDateHeader('not a date');
  });
});

describe('errorFromAnswer', () => {
  it('keeps a problem document’s code, detail and retry_after', () => {
    const e = errorFromAnswer(429, {
      code: 'rate_limited',
      detail: 'slow down',
      retry_after: 7,
      status: 429,
    });
    assert.ok(isTesseraClientError(e, 'rate_limited'));
    assert.equal(e.detail, 'slow down');
    assert.equal(e.retryAfter, 7);
    assert.equal(e.status, 429);
  });

  it('maps OAuth errors and keeps the original', () => {
    const e = errorFromAnswer(400, { error: 'invalid_grant', error_description: 'refresh token is invalid' });
    assert.equal(e.code, ErrorCodes.invalidToken);
    assert.equal(e.oauthError, 'invalid_grant');
    assert.equal(errorFromAnswer(401, { error: 'invalid_client' }).code, 'invalid_client');
    assert.equal(errorFromAnswer(400, { error: 'unsupported_grant_type' }).code, 'invalid_request');
  });

  it('falls back on the status for unknown codes and bodies', () => {
    assert.equal(errorFromAnswer(418, { code: 'teapot' }).code, 'invalid_request');
    assert.equal(errorFromAnswer(404, undefined).code, 'not_found');
    assert.equal(errorFromAnswer(503, 'down').code, 'service_unavailable');
    assert.equal(errorFromAnswer(500, null).code, 'internal_error');
    assert.ok(new TesseraClientError('network_error', 'x') instanceof Error);
  });
});

describe('WebAuthn JSON conversion', () => {
  it('turns base64url members into bytes and back', () => {
    const creation = toCreationOptions({
      rp: { id: 'app.test', name: 'App' },
      user: { id: 'dXNlcg', name: 'ada', displayName: 'Ada' },
      challenge: 'Y2hhbGxlbmdl',
      pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
      excludeCredentials: [{ id: 'AQID', type: 'public-key', transports: ['internal'] }],
      authenticatorSelection: { userVerification: 'required' },
    });
    assert.deepEqual(new Uint8Array(creation.challenge as Uint8Array), new TextEncoder().encode('challenge'));
    assert.deepEqual(new Uint8Array(creation.user.id as Uint8Array), new TextEncoder().encode('user'));
    assert.deepEqual(
      new Uint8Array(creation.excludeCredentials?.[0]?.id as Uint8Array),
      new Uint8Array([1, 2, 3]),
    );
    assert.equal(creation.authenticatorSelection?.userVerification, 'required');

    const request = toRequestOptions({
      challenge: 'AA',
      allowCredentials: [{ id: 'AQID', type: 'public-key' }],
    });
    assert.deepEqual(new Uint8Array(request.challenge as Uint8Array), new Uint8Array([0]));

    const buffer = (bytes: number[]) => new Uint8Array(bytes).buffer;
    const json = authenticationToJSON({
      id: 'AQID',
      rawId: buffer([1, 2, 3]),
      type: 'public-key',
      authenticatorAttachment: null,
      getClientExtensionResults: () => ({}),
      response: {
        clientDataJSON: buffer([123, 125]),
        authenticatorData: buffer([4]),
        signature: buffer([5]),
        userHandle: null,
      },
    } as unknown as PublicKeyCredential);
    assert.deepEqual(json, {
      id: 'AQID',
      rawId: 'AQID',
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: 'e30', authenticatorData: 'BA', signature: 'BQ' },
    });
  });
});
