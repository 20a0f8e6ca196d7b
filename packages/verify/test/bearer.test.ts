import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBearer, rejection, TesseraVerifyError } from '@tessera/verify';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof TesseraVerifyError);
    return err.code;
  }
  return 'none';
};

describe('parseBearer', () => {
  it('extracts the token, whatever the case of the scheme and the spaces around', () => {
    assert.equal(parseBearer('Bearer abc.DEF-_.x~+/=='), 'abc.DEF-_.x~+/==');
    assert.equal(parseBearer('bearer abc'), 'abc');
    assert.equal(parseBearer('BEARER   abc  '), 'abc');
  });

  it('reports missing_token without a header or with another scheme', () => {
    for (const header of [undefined, null, '', '   ', 'Basic dXNlcjpwYXNz', 'Bearerabc', 'Token abc']) {
      assert.equal(
        code(() => parseBearer(header)),
        'missing_token',
        String(header),
      );
    }
  });

  it('reports invalid_token for a Bearer scheme without a well-formed token', () => {
    for (const header of [
      'Bearer',
      'Bearer ',
      'Bearer a b',
      'Bearer "abc"',
      'Bearer abc,def',
      'Bearer =abc',
    ]) {
      assert.equal(
        code(() => parseBearer(header)),
        'invalid_token',
        header,
      );
    }
  });
});

describe('rejection', () => {
  it('builds a bare challenge for a missing token', () => {
    const r = rejection(new TesseraVerifyError('missing_token', 'No bearer token'), 'api');
    assert.equal(r.status, 401);
    assert.equal(r.headers['WWW-Authenticate'], 'Bearer realm="api"');
    assert.deepEqual(r.body, { error: 'missing_token', error_description: 'No bearer token' });
  });

  it('keeps the challenge a valid quoted-string', () => {
    const r = rejection(new TesseraVerifyError('token_revoked', 'Tessera said "no"\\\n'), 'api');
    assert.equal(
      r.headers['WWW-Authenticate'],
      'Bearer realm="api", error="invalid_token", error_description="Tessera said no"',
    );
  });

  it('answers 503 without a challenge when the issuer is unreachable', () => {
    const r = rejection(new TesseraVerifyError('verification_unavailable', 'down'), 'api');
    assert.equal(r.status, 503);
    assert.equal(r.headers['WWW-Authenticate'], undefined);
  });
});
