import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type OAuthTokenBundle, VerifyReasons } from '@tessera/core';
import { decodeJwt } from 'jose';
import {
  eachDialect,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { BUNDLE_MEMBERS } from '../helpers/token-format.js';

const ENV = { TESSERA_RATE_LIMIT_IP: '100000/60' };
const DAY = 86_400_000;

const nextEmail = () => uniqueEmail('refresh');

interface RefreshOptions {
  /** client_id in the body (default: the server's project); null leaves it out. */
  clientId?: string | null;
  /** API_KEY_ID header. */
  header?: string;
  form?: boolean;
  grantType?: string;
}

function refresh(
  server: TestServer,
  token: string | undefined,
  options: RefreshOptions = {},
): Promise<TestResponse> {
  const fields: Record<string, string> = { grant_type: options.grantType ?? 'refresh_token' };
  if (token !== undefined) fields.refresh_token = token;
  const clientId = options.clientId === undefined ? server.project.api_key_id : options.clientId;
  if (clientId !== null) fields.client_id = clientId;
  const headers: Record<string, string> = options.header ? { api_key_id: options.header } : {};
  if (options.form) {
    return server.request('POST', '/oauth/token', {
      raw: new URLSearchParams(fields).toString(),
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    });
  }
  return server.request('POST', '/oauth/token', { body: fields, headers });
}

function verify(server: TestServer, accessToken: string): Promise<TestResponse> {
  return server.request('POST', '/verify', { body: { oauth_token: { access_token: accessToken } } });
}

/** What an answer was, without any token in it (for assertion messages). */
function summary(answer: TestResponse): string {
  return `${answer.status} ${answer.body?.error ?? (answer.status === 200 ? 'bundle' : '')}`;
}

/** An RFC 6749 §5.2 error answer: exactly error and error_description, never cached. */
function assertOAuthError(answer: TestResponse, status: number, error: string): void {
  assert.equal(answer.status, status, summary(answer));
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'error_description']);
  assert.equal(answer.body.error, error);
  assert.equal(typeof answer.body.error_description, 'string');
  assert.equal(answer.headers.get('cache-control'), 'no-store');
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
}

function assertBundle(answer: TestResponse): OAuthTokenBundle {
  assert.equal(answer.status, 200, `${summary(answer)} ${answer.body?.error_description ?? ''}`);
  assert.deepEqual(Object.keys(answer.body).sort(), BUNDLE_MEMBERS);
  assert.equal(answer.body.expires_in, 3600);
  assert.equal(answer.body.token_type, 'Bearer');
  assert.equal(answer.body.auth_method, 'OTP');
  assert.equal(answer.headers.get('cache-control'), 'no-store');
  return answer.body as OAuthTokenBundle;
}

const sidOf = (bundle: OAuthTokenBundle) => decodeJwt(bundle.access_token).sid as string;

eachDialect('POST /oauth/token (refresh grant)', (dialect) => {
  let server: TestServer;
  // The injected clock only moves forward.
  let nowMs = Date.now();
  const graceMs = () => server.config.refreshGrace * 1000;
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: () => nowMs });
  });
  after(() => server.close());

  test('a form-encoded body with client_id refreshes', async () => {
    const bundle = await server.signIn(nextEmail());
    const next = assertBundle(await refresh(server, bundle.refresh_token, { form: true }));
    assert.notEqual(next.refresh_token, bundle.refresh_token);
    assert.equal(sidOf(next), sidOf(bundle));
    assert.deepEqual((await verify(server, next.access_token)).body, { success: true });
  });

  test('a JSON body with client_id refreshes', async () => {
    const bundle = await server.signIn(nextEmail());
    const next = assertBundle(await refresh(server, bundle.refresh_token));
    assert.deepEqual((await verify(server, next.access_token)).body, { success: true });
  });

  test('client_id may come from the API_KEY_ID header instead (JSON and form)', async () => {
    const bundle = await server.signIn(nextEmail());
    const viaJson = assertBundle(
      await refresh(server, bundle.refresh_token, { clientId: null, header: server.project.api_key_id }),
    );
    const viaForm = assertBundle(
      await refresh(server, viaJson.refresh_token, {
        clientId: null,
        header: server.project.api_key_id,
        form: true,
      }),
    );
    assert.deepEqual((await verify(server, viaForm.access_token)).body, { success: true });
  });

  test('rotation: the new token works, the old one is refused after the grace window', async () => {
    const first = await server.signIn(nextEmail());
    const second = assertBundle(await refresh(server, first.refresh_token));
    assert.notEqual(second.refresh_token, first.refresh_token);
    nowMs += graceMs() + 1000;
    const third = assertBundle(await refresh(server, second.refresh_token));
    assert.notEqual(third.refresh_token, second.refresh_token);
    assertOAuthError(await refresh(server, first.refresh_token), 400, 'invalid_grant');
  });

  test('reuse outside the grace window revokes the whole session', async () => {
    const first = await server.signIn(nextEmail());
    const second = assertBundle(await refresh(server, first.refresh_token));
    assert.deepEqual((await verify(server, second.access_token)).body, { success: true });
    nowMs += graceMs() + 1000;
    assertOAuthError(await refresh(server, first.refresh_token), 400, 'invalid_grant');
    // The newest refresh token dies too, and every access token of the session is revoked.
    assertOAuthError(await refresh(server, second.refresh_token), 400, 'invalid_grant');
    for (const bundle of [first, second]) {
      assert.deepEqual((await verify(server, bundle.access_token)).body, {
        success: false,
        reason: VerifyReasons.revoked,
      });
    }
    const session = await server.storage.db.kysely
      .selectFrom('sessions')
      .select(['revoked_at', 'revoked_reason'])
      .where('id', '=', sidOf(first))
      .executeTakeFirstOrThrow();
    assert.notEqual(session.revoked_at, null);
  });

  test('reuse of a token whose successor has been used revokes the session, even inside the grace window', async () => {
    const first = await server.signIn(nextEmail());
    const second = assertBundle(await refresh(server, first.refresh_token));
    const third = assertBundle(await refresh(server, second.refresh_token));
    assertOAuthError(await refresh(server, first.refresh_token), 400, 'invalid_grant');
    assertOAuthError(await refresh(server, third.refresh_token), 400, 'invalid_grant');
    assert.deepEqual((await verify(server, third.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
  });

  test('two concurrent refreshes of one token both succeed with the same new refresh token', async () => {
    for (let round = 0; round < 5; round++) {
      const bundle = await server.signIn(nextEmail());
      const answers = await Promise.all([
        refresh(server, bundle.refresh_token),
        refresh(server, bundle.refresh_token, { form: true }),
      ]);
      const [a, b] = answers.map(assertBundle);
      assert.equal(a!.refresh_token, b!.refresh_token);
      assert.notEqual(a!.refresh_token, bundle.refresh_token);
      assert.notEqual(a!.access_token, b!.access_token);
      for (const next of [a!, b!])
        assert.deepEqual((await verify(server, next.access_token)).body, { success: true });
      // The session lives on: the shared successor rotates normally.
      assertBundle(await refresh(server, a!.refresh_token));
    }
  });

  test('a second use inside the grace window gets the same successor', async () => {
    const bundle = await server.signIn(nextEmail());
    const a = assertBundle(await refresh(server, bundle.refresh_token));
    nowMs += graceMs() - 1000;
    const b = assertBundle(await refresh(server, bundle.refresh_token));
    assert.equal(b.refresh_token, a.refresh_token);
    assertBundle(await refresh(server, b.refresh_token));
  });

  test('the session lives 30 days from the sign-in; rotation does not extend it', async () => {
    const start = nowMs;
    const expiresAt = start + 30 * DAY;
    let bundle = await server.signIn(nextEmail());
    nowMs = start + 29 * DAY;
    bundle = assertBundle(await refresh(server, bundle.refresh_token));
    nowMs = expiresAt - 1000;
    bundle = assertBundle(await refresh(server, bundle.refresh_token));
    const id = decodeJwt(bundle.id_token);
    assert.equal(id.auth_time, String(Math.floor(start / 1000)));
    nowMs = expiresAt;
    assertOAuthError(await refresh(server, bundle.refresh_token), 400, 'invalid_grant');
    nowMs = expiresAt + 60_000;
    assertOAuthError(await refresh(server, bundle.refresh_token), 400, 'invalid_grant');
    const rows = await server.storage.db.kysely
      .selectFrom('refresh_tokens')
      .select('expires_at')
      .where('session_id', '=', sidOf(bundle))
      .execute();
    for (const row of rows) assert.ok(Number(row.expires_at) <= expiresAt);
  });

  test('a refresh token of another client is invalid_grant and stays usable by its own', async () => {
    const other = await server.ctx.projects.create({ name: 'other', origins: [] });
    const bundle = await server.signIn(nextEmail());
    assertOAuthError(
      await refresh(server, bundle.refresh_token, { clientId: other.api_key_id }),
      400,
      'invalid_grant',
    );
    assertOAuthError(
      await refresh(server, bundle.refresh_token, { clientId: null, header: other.api_key_id }),
      400,
      'invalid_grant',
    );
    assertBundle(await refresh(server, bundle.refresh_token));
  });

  test('the right token id with a wrong secret is invalid_grant and rotates nothing', async () => {
    const bundle = await server.signIn(nextEmail());
    const [id] = bundle.refresh_token.split('.');
    const forged = `${id}.${'A'.repeat(43)}`;
    assert.notEqual(forged, bundle.refresh_token);
    assertOAuthError(await refresh(server, forged), 400, 'invalid_grant');
    // Not rotated (its own use is a first use, no grace answer) and the session was not revoked.
    nowMs += graceMs() + 1;
    const next = assertBundle(await refresh(server, bundle.refresh_token));
    assert.deepEqual((await verify(server, next.access_token)).body, { success: true });
  });

  test('an expired session is refused, and its token is not rotated', async () => {
    const bundle = await server.signIn(nextEmail());
    const session = await server.storage.db.kysely
      .selectFrom('sessions')
      .select('expires_at')
      .where('id', '=', sidOf(bundle))
      .executeTakeFirstOrThrow();
    nowMs = session.expires_at;
    assertOAuthError(await refresh(server, bundle.refresh_token), 400, 'invalid_grant');
    const row = await server.storage.db.kysely
      .selectFrom('refresh_tokens')
      .select('rotated_at')
      .where('session_id', '=', sidOf(bundle))
      .executeTakeFirstOrThrow();
    assert.equal(row.rotated_at, null);
  });

  test('an unknown or missing client is 401 invalid_client', async () => {
    const bundle = await server.signIn(nextEmail());
    assertOAuthError(
      await refresh(server, bundle.refresh_token, { clientId: 'pk_nobody' }),
      401,
      'invalid_client',
    );
    assertOAuthError(
      await refresh(server, bundle.refresh_token, { clientId: null, header: 'pk_nobody', form: true }),
      401,
      'invalid_client',
    );
    assertOAuthError(await refresh(server, bundle.refresh_token, { clientId: null }), 401, 'invalid_client');
    assertBundle(await refresh(server, bundle.refresh_token));
  });

  test('an unsupported grant_type is unsupported_grant_type', async () => {
    const bundle = await server.signIn(nextEmail());
    for (const grantType of ['password', 'client_credentials', '']) {
      assertOAuthError(
        await refresh(server, bundle.refresh_token, { grantType }),
        400,
        'unsupported_grant_type',
      );
    }
    // The code grant is for registered OAuth clients (issue 31), not the project's API key.
    assertOAuthError(
      await refresh(server, bundle.refresh_token, { grantType: 'authorization_code' }),
      400,
      'unauthorized_client',
    );
    assertBundle(await refresh(server, bundle.refresh_token));
  });

  test('malformed requests and unknown tokens get RFC 6749 errors', async () => {
    assertOAuthError(await refresh(server, undefined), 400, 'invalid_request');
    assertOAuthError(
      await server.request('POST', '/oauth/token', {
        body: { refresh_token: 'x', client_id: server.project.api_key_id },
      }),
      400,
      'invalid_request',
    );
    assertOAuthError(
      await server.request('POST', '/oauth/token', {
        raw: '{not json',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'invalid_request',
    );
    const bundle = await server.signIn(nextEmail());
    // A JWT is no refresh token (too long for the field, or simply not one).
    const jwt = await refresh(server, bundle.access_token);
    assert.equal(jwt.status, 400);
    assert.ok(['invalid_grant', 'invalid_request'].includes(jwt.body.error), summary(jwt));
    for (const token of [
      'garbage',
      `${bundle.refresh_token.slice(0, -1)}${bundle.refresh_token.endsWith('A') ? 'B' : 'A'}`,
      `tsr_${'A'.repeat(22)}.${'B'.repeat(43)}`,
    ]) {
      assertOAuthError(await refresh(server, token), 400, 'invalid_grant');
    }
    // None of these touched the real session.
    assertBundle(await refresh(server, bundle.refresh_token));
  });

  test('a refresh after revocation fails', async () => {
    const bundle = await server.signIn(nextEmail());
    const revoked = await server.request('POST', '/oauth/revoke', {
      body: { token: bundle.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(revoked.status, 200);
    assertOAuthError(await refresh(server, bundle.refresh_token), 400, 'invalid_grant');
  });
});

eachDialect('refresh without a grace window (TESSERA_REFRESH_GRACE=0)', (dialect) => {
  let server: TestServer;
  const nowMs = Date.now();
  before(async () => {
    // A frozen clock: both uses of the token happen in the same millisecond.
    server = await startServer(dialect, { env: { ...ENV, TESSERA_REFRESH_GRACE: '0' }, now: () => nowMs });
  });
  after(() => server.close());

  test('the second of two concurrent refreshes is a reuse that revokes the session', async () => {
    for (let round = 0; round < 3; round++) {
      const bundle = await server.signIn(nextEmail());
      const answers = await Promise.all([
        refresh(server, bundle.refresh_token),
        refresh(server, bundle.refresh_token),
      ]);
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      assert.equal(ok.length, 1, answers.map(summary).join(', '));
      assert.equal(refused.length, 1);
      assertOAuthError(refused[0]!, 400, 'invalid_grant');
      const winner = assertBundle(ok[0]!);
      assertOAuthError(await refresh(server, winner.refresh_token), 400, 'invalid_grant');
      assert.deepEqual((await verify(server, winner.access_token)).body, {
        success: false,
        reason: VerifyReasons.revoked,
      });
    }
  });

  test('a sequential second use is a reuse as well', async () => {
    const bundle = await server.signIn(nextEmail());
    const next = assertBundle(await refresh(server, bundle.refresh_token));
    assertOAuthError(await refresh(server, bundle.refresh_token), 400, 'invalid_grant');
    assertOAuthError(await refresh(server, next.refresh_token), 400, 'invalid_grant');
  });
});

/** Polls /verify until it refuses the token (bounded: about 5 s of short waits). */
async function verifyUntilRevoked(server: TestServer, accessToken: string): Promise<TestResponse> {
  let answer = await verify(server, accessToken);
  for (let i = 0; i < 50 && answer.body.success !== false; i++) {
    await sleep(100);
    answer = await verify(server, accessToken);
  }
  return answer;
}

eachDialect('two server processes on one database', (dialect) => {
  let a: TestServer;
  let b: TestServer;
  before(async () => {
    a = await startServer(dialect, { env: ENV });
    // Same issuer, storage and master key: the second instance of one deployment.
    b = await startServer(dialect, {
      env: { ...ENV, TESSERA_ISSUER: a.url },
      storage: a.storage,
      masterKey: a.masterKey,
    });
  });
  after(async () => {
    await b.close();
    await a.close();
  });
  const asA = (server: TestServer, token: string, options: RefreshOptions = {}) =>
    refresh(server, token, { clientId: a.project.api_key_id, ...options });

  test('both instances sign with the same key and accept each other’s tokens', async () => {
    const bundle = await a.signIn(nextEmail());
    assert.deepEqual((await verify(b, bundle.access_token)).body, { success: true });
    const next = assertBundle(await asA(b, bundle.refresh_token));
    assert.deepEqual((await verify(a, next.access_token)).body, { success: true });
    assert.equal(decodeJwt(next.access_token).iss, a.url);
  });

  test('parallel refreshes of one token over both instances rotate exactly once', async () => {
    for (let round = 0; round < 3; round++) {
      const bundle = await a.signIn(nextEmail());
      const n = 12;
      const answers = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          asA(i % 2 === 0 ? a : b, bundle.refresh_token, { form: i % 3 === 0 }),
        ),
      );
      const successes = answers.filter((r) => r.status === 200).map(assertBundle);
      assert.ok(successes.length >= 1, answers.map(summary).join(', '));
      const successors = new Set(successes.map((s) => s.refresh_token));
      assert.equal(successors.size, 1, 'every answer carries the same successor');
      for (const r of answers.filter((x) => x.status !== 200)) assert.equal(typeof r.body.error, 'string');

      const sid = sidOf(bundle);
      const rows = await a.storage.db.kysely
        .selectFrom('refresh_tokens')
        .select(['id', 'rotated_at'])
        .where('session_id', '=', sid)
        .execute();
      assert.equal(rows.length, 2, 'one rotation: the original and one successor');
      assert.equal(rows.filter((r) => r.rotated_at === null).length, 1);
      // The session was not taken for a reuse, and the successor rotates on.
      const [successor] = successors;
      assertBundle(await asA(round % 2 === 0 ? b : a, successor!));
    }
  });

  test('a revoke on one instance is seen by /verify on the other', async () => {
    const bundle = await a.signIn(nextEmail());
    assert.deepEqual((await verify(b, bundle.access_token)).body, { success: true });
    const revoked = await a.request('POST', '/oauth/revoke', {
      body: { token: bundle.refresh_token, client_id: a.project.api_key_id },
    });
    assert.equal(revoked.status, 200, summary(revoked));
    assert.deepEqual((await verify(a, bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
    assert.deepEqual((await verifyUntilRevoked(b, bundle.access_token)).body, {
      success: false,
      reason: VerifyReasons.revoked,
    });
    assertOAuthError(await asA(b, bundle.refresh_token), 400, 'invalid_grant');
  });

  test('a revoke racing a refresh never leaves a working token behind', async () => {
    const accessTokens: string[] = [];
    const refreshTokens: string[] = [];
    for (let round = 0; round < 12; round++) {
      const bundle = await a.signIn(nextEmail());
      const [refresher, revoker] = round % 2 === 0 ? [a, b] : [b, a];
      const byAccessToken = round % 3 === 0;
      const [refreshed, revoked] = await Promise.all([
        asA(refresher, bundle.refresh_token),
        revoker.request('POST', '/oauth/revoke', {
          body: {
            token: byAccessToken ? bundle.access_token : bundle.refresh_token,
            client_id: a.project.api_key_id,
          },
        }),
      ]);
      assert.equal(revoked.status, 200, summary(revoked));
      accessTokens.push(bundle.access_token);
      refreshTokens.push(bundle.refresh_token);
      if (refreshed.status === 200) {
        const next = assertBundle(refreshed);
        accessTokens.push(next.access_token);
        refreshTokens.push(next.refresh_token);
      } else {
        assertOAuthError(refreshed, 400, 'invalid_grant');
      }
    }
    for (const token of refreshTokens) {
      for (const server of [a, b]) assertOAuthError(await asA(server, token), 400, 'invalid_grant');
    }
    for (const token of accessTokens) {
      for (const server of [a, b]) {
        assert.deepEqual((await verifyUntilRevoked(server, token)).body, {
          success: false,
          reason: VerifyReasons.revoked,
        });
      }
    }
  });
});
