import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { eachDialect, startServer, type TestResponse, type TestServer } from '../helpers/harness.js';

// Values no answer may ever repeat: a code, a refresh token, an access token.
const CODE = '918273';
const REFRESH = `tsr_${'R7'.repeat(24)}.${'x9'.repeat(20)}`;
const ACCESS = `eyJhbGciOiJFUzI1NiJ9.${'eyJzZWNyZXQiOjF9'}.${'S1g'.repeat(20)}`;
const SECRETS = [CODE, REFRESH, ACCESS];

type Family = 'problem' | 'oauth' | 'verify';

interface Endpoint {
  path: string;
  family: Family;
  /** A body of the right shape (it may still fail later, e.g. an unknown challenge). */
  valid: Record<string, unknown>;
  required: string[];
  /** Wrong values per field (the server does not coerce types). */
  wrongTypes: Record<string, unknown[]>;
  /** Strings longer than the field allows. */
  tooLong: Record<string, number>;
}

const notString = [42, 918273, true, null, {}, [CODE]];

function endpoints(apiKeyId: string): Endpoint[] {
  return [
    {
      path: '/v1/auth/otp/start',
      family: 'problem',
      valid: { identifier: 'ada@example.com' },
      required: ['identifier'],
      wrongTypes: { identifier: [...notString, ''] },
      tooLong: { identifier: 321 },
    },
    {
      path: '/v1/auth/otp/complete',
      family: 'problem',
      valid: { challenge_id: 'otp_unknown', code: CODE, getOAuthToken: true },
      required: ['challenge_id', 'code'],
      wrongTypes: {
        challenge_id: [...notString, ''],
        code: [...notString, ''],
        getOAuthToken: ['true', 'false', 1, 0, null, {}, []],
      },
      tooLong: { challenge_id: 101, code: 33 },
    },
    {
      path: '/verify',
      family: 'verify',
      valid: { oauth_token: { access_token: ACCESS, refresh_token: REFRESH } },
      required: ['oauth_token'],
      wrongTypes: { oauth_token: [ACCESS, 1, true, null, [ACCESS]] },
      tooLong: {},
    },
    {
      path: '/oauth/token',
      family: 'oauth',
      valid: { grant_type: 'refresh_token', refresh_token: REFRESH, client_id: apiKeyId },
      required: ['grant_type'],
      wrongTypes: {
        grant_type: [1, true, null, ['refresh_token'], {}],
        refresh_token: [1, true, null, [REFRESH], { value: REFRESH }],
        client_id: [1, true, null, [apiKeyId], {}],
      },
      // grant_type is an enum (refresh_token): any other value, long or short, is unsupported_grant_type.
      // client_id may be a Client ID Metadata Document's https URL (issue 31): up to 2000 characters.
      tooLong: { refresh_token: 513, client_id: 2001 },
    },
    {
      path: '/oauth/revoke',
      family: 'oauth',
      valid: { token: REFRESH, client_id: apiKeyId },
      required: ['token'],
      wrongTypes: {
        token: [1, true, null, [REFRESH], { value: REFRESH }],
        token_type_hint: [1, true, null, ['refresh_token']],
        client_id: [1, true, null, [apiKeyId], {}],
      },
      tooLong: { token: 8193, token_type_hint: 101, client_id: 2001 },
    },
  ];
}

const PROBLEM_KEYS = ['code', 'detail', 'status', 'title', 'type'];

/** Checks the status and the body family of an error answer, and that no secret is echoed. */
function assertRefused(
  response: TestResponse,
  family: Family,
  status: number,
  expected: { code?: string; error?: string; reason?: string } = {},
): void {
  const label = `${status} expected, got ${response.status}: ${response.text}`;
  assert.equal(response.status, status, label);
  for (const secret of SECRETS)
    assert.ok(!response.text.includes(secret), `answer echoes a secret: ${response.text}`);
  const type = response.headers.get('content-type') ?? '';
  if (family === 'problem') {
    assert.match(type, /^application\/problem\+json/, label);
    assert.deepEqual(Object.keys(response.body).sort(), PROBLEM_KEYS, label);
    assert.equal(response.body.status, status);
    assert.equal(response.body.code, expected.code ?? 'invalid_request', label);
    assert.equal(response.body.type, `https://tessera.dev/problems/${response.body.code}`);
    assert.ok(response.body.detail.length > 0);
  } else if (family === 'oauth') {
    assert.match(type, /^application\/json/, label);
    assert.deepEqual(Object.keys(response.body).sort(), ['error', 'error_description'], label);
    assert.equal(response.body.error, expected.error ?? 'invalid_request', label);
    assert.equal(typeof response.body.error_description, 'string');
    assert.equal(response.headers.get('cache-control'), 'no-store');
  } else {
    assert.match(type, /^application\/json/, label);
    assert.deepEqual(
      response.body,
      { success: false, reason: expected.reason ?? VerifyReasons.malformedRequest },
      label,
    );
  }
}

eachDialect('bad input never reaches a 500', (dialect) => {
  let server: TestServer;
  let headers: Record<string, string>;
  const json = () => ({ ...headers, 'content-type': 'application/json' });

  before(async () => {
    server = await startServer(dialect, { env: { TESSERA_RATE_LIMIT_IP: '10000/60' } });
    headers = { api_key_id: server.project.api_key_id };
  });
  after(() => server.close());

  const post = (path: string, raw: string | undefined, extra: Record<string, string>) =>
    server.request('POST', path, { ...(raw === undefined ? {} : { raw }), headers: extra });

  for (const index of [0, 1, 2, 3, 4]) {
    // The endpoint list needs the project's key, known only once the server runs.
    const sample = endpoints('pk_sample')[index]!;
    const endpoint = () => endpoints(server.project.api_key_id)[index]!;

    test(`${sample.path}: malformed JSON is 400`, async () => {
      const { path, family } = endpoint();
      for (const raw of [
        `{"code":"${CODE}",`,
        `{code:${CODE}}`,
        `{"token":"${REFRESH}"`,
        "{'a':1}",
        '\u0000',
        'undefined',
      ]) {
        const answer = await post(path, raw, json());
        assertRefused(answer, family, 400);
        if (family !== 'verify') assert.match(answer.text, /request body is not valid JSON/);
      }
    });

    test(`${sample.path}: an empty body is 400`, async () => {
      const { path, family } = endpoint();
      const empty = await post(path, '', json());
      assertRefused(empty, family, 400);
      if (family !== 'verify') assert.match(empty.text, /request body is empty/);
      assertRefused(await post(path, undefined, headers), family, 400);
      assertRefused(await post(path, '{}', json()), family, 400);
    });

    test(`${sample.path}: JSON that is not an object is 400`, async () => {
      const { path, family } = endpoint();
      for (const raw of [
        'null',
        '[]',
        `["${CODE}"]`,
        `"${REFRESH}"`,
        '42',
        'true',
        `[{"token":"${ACCESS}"}]`,
      ]) {
        assertRefused(await post(path, raw, json()), family, 400);
      }
    });

    test(`${sample.path}: a __proto__ key is 400`, async () => {
      const { path, family, valid } = endpoint();
      const raw = JSON.stringify(valid).replace(/^\{/, '{"__proto__":{"admin":true},');
      assertRefused(await post(path, raw, json()), family, 400);
      const nested = `{"constructor":{"prototype":{"admin":true}},${JSON.stringify(valid).slice(1)}`;
      assertRefused(await post(path, nested, json()), family, 400);
    });

    test(`${sample.path}: deeply nested JSON is 400`, async () => {
      const { path, family, required } = endpoint();
      const deep = `${'['.repeat(3000)}${']'.repeat(3000)}`;
      assertRefused(await post(path, `{"${required[0]}":${deep}}`, json()), family, 400);
    });

    test(`${sample.path}: wrong types are refused, never coerced`, async () => {
      const { path, family, valid, wrongTypes } = endpoint();
      for (const [field, values] of Object.entries(wrongTypes)) {
        for (const value of values) {
          const answer = await server.request('POST', path, { body: { ...valid, [field]: value }, headers });
          assertRefused(answer, family, 400);
          if (family === 'problem') {
            assert.match(
              answer.body.detail,
              new RegExp(`\\b${field}\\b`),
              `the detail names the field: ${answer.text}`,
            );
          }
        }
      }
    });

    test(`${sample.path}: each missing required field is 400 naming it`, async () => {
      const { path, family, valid, required } = endpoint();
      for (const field of required) {
        const { [field]: _dropped, ...rest } = valid;
        const answer = await server.request('POST', path, { body: rest, headers });
        assertRefused(answer, family, 400);
        if (family !== 'verify') assert.match(answer.text, new RegExp(`required property '${field}'`));
      }
    });

    test(`${sample.path}: strings over their limit are 400`, async () => {
      const { path, family, valid, tooLong } = endpoint();
      for (const [field, length] of Object.entries(tooLong)) {
        const value = CODE.repeat(Math.ceil(length / CODE.length)).slice(0, length);
        const answer = await server.request('POST', path, { body: { ...valid, [field]: value }, headers });
        assertRefused(answer, family, 400);
        if (family !== 'verify') assert.match(answer.text, /must NOT have more than \d+ characters/);
      }
    });

    test(`${sample.path}: a body over 16 KiB is 413`, async () => {
      const { path, family, valid } = endpoint();
      const expected = { code: 'payload_too_large', reason: VerifyReasons.tooLarge };
      const big = JSON.stringify({ ...valid, padding: CODE.repeat(3000) });
      assert.ok(big.length > 16 * 1024);
      assertRefused(await post(path, big, json()), family, 413, expected);
      // A form: too large where forms are read (/oauth/*), refused for its type everywhere else.
      const form = `padding=${CODE.repeat(3000)}&token=${REFRESH}`;
      assertRefused(
        await post(path, form, { ...headers, 'content-type': 'application/x-www-form-urlencoded' }),
        family,
        family === 'oauth' ? 413 : 415,
        family === 'oauth' ? expected : { code: 'unsupported_media_type' },
      );
      // Just under the limit is parsed (and then judged on its content, not its size).
      const fits = JSON.stringify({ ...valid, padding: 'p'.repeat(16 * 1024 - 400) });
      const answer = await post(path, fits, json());
      assert.notEqual(answer.status, 413, answer.text);
      assert.ok(answer.status < 500, answer.text);
    });

    test(`${sample.path}: a content type the endpoint does not read is 4xx`, async () => {
      const { path, family, valid } = endpoint();
      const body = JSON.stringify(valid);
      for (const type of ['application/xml', 'multipart/form-data; boundary=x', 'application/octet-stream']) {
        assertRefused(await post(path, body, { ...headers, 'content-type': type }), family, 415, {
          code: 'unsupported_media_type',
        });
      }
      // Forms are read by /oauth/* alone (docs/API.md, "Bodies").
      if (family !== 'oauth')
        assertRefused(
          await post(path, 'identifier=a%40b.test', {
            ...headers,
            'content-type': 'application/x-www-form-urlencoded',
          }),
          family,
          415,
          { code: 'unsupported_media_type' },
        );
      // text/plain is read as a string, which is not the object the schema asks for.
      assertRefused(await post(path, body, { ...headers, 'content-type': 'text/plain' }), family, 400);
    });

    test(`${sample.path}: U+0000 anywhere in the body is 400 on either database`, async () => {
      const { path, family, valid } = endpoint();
      for (const body of [
        { ...valid, note: 'a\u0000b' },
        { ...valid, ['k\u0000']: 1 },
        { ...valid, deep: [{ a: [{ b: '\u0000' }] }] },
      ]) {
        assertRefused(await post(path, JSON.stringify(body), json()), family, 400);
      }
    });
  }

  test('/v1/auth/otp/complete: "true" for getOAuthToken is refused and the challenge stays usable', async () => {
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'coerce@example.com' },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const code = server.lastCode('coerce@example.com');
    const body = { challenge_id: started.body.challenge_id, code, getOAuthToken: 'true' };
    const refused = await server.request('POST', '/v1/auth/otp/complete', { body, headers });
    assertRefused(refused, 'problem', 400);
    assert.ok(!refused.text.includes(code));
    const asNumber = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...body, code: Number(code), getOAuthToken: true },
      headers,
    });
    assertRefused(asNumber, 'problem', 400);
    const done = await server.request('POST', '/v1/auth/otp/complete', {
      body: { ...body, getOAuthToken: true },
      headers,
    });
    assert.equal(done.status, 200, done.text);
    assert.equal(typeof done.body.oauth_token.access_token, 'string');
  });

  test('/v1/auth/otp/start: a number is not read as a phone number', async () => {
    const answer = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 14155552671 },
      headers,
    });
    assertRefused(answer, 'problem', 400);
    assert.equal(answer.body.detail, 'body identifier must be string');
    assert.equal(server.outbox.list().filter((m) => m.to === '+14155552671').length, 0);
  });

  test('validation details name the field in plain words (regression: "body  must be string")', async () => {
    const cases: [string, unknown, string][] = [
      ['/v1/auth/otp/start', [], 'body must be object'],
      ['/v1/auth/otp/start', {}, "body must have required property 'identifier'"],
      ['/v1/auth/otp/complete', { challenge_id: 'otp_x', code: 1 }, 'body code must be string'],
      [
        '/v1/auth/otp/complete',
        { challenge_id: 'otp_x', code: CODE, getOAuthToken: 'yes' },
        'body getOAuthToken must be boolean',
      ],
      ['/oauth/token', { grant_type: 7 }, 'body grant_type must be string'],
    ];
    for (const [path, body, detail] of cases) {
      const answer = await post(path, JSON.stringify(body), json());
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.detail ?? answer.body.error_description, detail);
    }
  });

  test('/oauth endpoints: form-encoded input is read; repeated or missing parameters are refused', async () => {
    const form = { ...headers, 'content-type': 'application/x-www-form-urlencoded' };
    const key = server.project.api_key_id;
    assertRefused(
      await post(
        '/oauth/token',
        `grant_type=refresh_token&grant_type=password&refresh_token=${REFRESH}`,
        form,
      ),
      'oauth',
      400,
    );
    assertRefused(await post('/oauth/revoke', `token=${REFRESH}&token=${REFRESH}`, form), 'oauth', 400);
    assertRefused(
      await post('/oauth/token', `refresh_token=${REFRESH}&client_id=${key}`, form),
      'oauth',
      400,
    );
    assertRefused(await post('/oauth/token', `grant_type=password&client_id=${key}`, form), 'oauth', 400, {
      error: 'unsupported_grant_type',
    });
    assertRefused(
      await post('/oauth/token', `grant_type=refresh_token&client_id=${key}`, form),
      'oauth',
      400,
    );
    assertRefused(
      await post('/oauth/token', `grant_type=refresh_token&client_id=${key}&refresh_token=${REFRESH}`, form),
      'oauth',
      400,
      { error: 'invalid_grant' },
    );
    // Without client_id or API_KEY_ID the client is unknown.
    const anonymous = { 'content-type': 'application/x-www-form-urlencoded' };
    assertRefused(
      await post('/oauth/token', `grant_type=refresh_token&refresh_token=${REFRESH}`, anonymous),
      'oauth',
      401,
      {
        error: 'invalid_client',
      },
    );
    assertRefused(await post('/oauth/revoke', `token=${REFRESH}`, anonymous), 'oauth', 401, {
      error: 'invalid_client',
    });
    assertRefused(
      await post('/oauth/revoke', `token=${REFRESH}&client_id=pk_unknown`, anonymous),
      'oauth',
      401,
      {
        error: 'invalid_client',
      },
    );
    // RFC 7009: an unknown token is answered 200.
    const unknown = await post('/oauth/revoke', `token=${REFRESH}&client_id=${key}`, anonymous);
    assert.equal(unknown.status, 200);
    assert.deepEqual(unknown.body, {});
  });

  test('/verify: a well-formed request with a garbage token is 200 success false, without the token', async () => {
    for (const access_token of [ACCESS, '', 'not-a-jwt', `${ACCESS}.${ACCESS}`]) {
      const answer = await server.request('POST', '/verify', {
        body: { oauth_token: { access_token } },
        headers,
      });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body, { success: false, reason: VerifyReasons.invalid });
      assert.ok(!answer.text.includes(ACCESS));
    }
    // access_token missing, of the wrong type, or too long: a malformed request.
    for (const oauth_token of [
      {},
      { access_token: 1 },
      { access_token: null },
      { access_token: [ACCESS] },
      { id_token: ACCESS },
    ]) {
      assertRefused(
        await server.request('POST', '/verify', { body: { oauth_token }, headers }),
        'verify',
        400,
      );
    }
    assertRefused(
      await server.request('POST', '/verify', {
        body: { oauth_token: { access_token: ACCESS.repeat(100) } },
        headers,
      }),
      'verify',
      400,
    );
  });

  test('unknown routes and methods are 404 problem documents', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['POST', '/v1/nope'],
      ['GET', '/v1/auth/otp/start'],
      ['PUT', '/v1/auth/otp/complete'],
      ['DELETE', '/verify'],
      ['GET', `/v1/auth/otp?code=${CODE}&token=${REFRESH}`],
    ] as const) {
      const answer = await server.request(method, path, { headers });
      assertRefused(answer, 'problem', 404, { code: 'not_found' });
      assert.equal(answer.body.title, 'Not Found');
      assert.equal(answer.body.detail, `no route ${method} ${path.split('?')[0]}`);
    }
    // Under /oauth the RFC 6749 shape is kept.
    const oauth = await server.request('GET', `/oauth/nope?token=${REFRESH}`, { headers });
    assert.equal(oauth.status, 404);
    assert.deepEqual(oauth.body, { error: 'invalid_request', error_description: 'no route GET /oauth/nope' });
  });
});
