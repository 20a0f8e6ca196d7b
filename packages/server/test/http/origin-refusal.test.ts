/**
 * Issue 30: an app served from an origin its project does not list got `network_error` from the
 * SDK (the preflight was a 404), and the server logged only `OPTIONS /v1/auth/* 404`. Now the
 * preflight is answered, the request is a readable `403 origin_not_allowed`, and the log warns,
 * naming the origin and the project, at most once a minute per pair.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertProblem, eachDialect, startServer, type TestServer } from '../helpers/harness.js';

const UNLISTED = 'http://localhost:5173';

eachDialect('a browser origin the project does not list', (dialect) => {
  let server: TestServer;
  const lines: Array<Record<string, unknown>> = [];
  const clock = { t: Date.now(), now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, {
      now: clock.now,
      env: { TESSERA_LOG_LEVEL: 'warn' },
      logStream: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
  });
  after(() => server.close());

  const warnings = () => lines.filter((l) => String(l.msg).startsWith('browser origin not allowed'));
  const headers = (origin: string) => ({ origin, api_key_id: server.project.api_key_id });

  test('the preflight is answered and the request refused readably, before it reaches the route', async () => {
    const preflight = await server.request('OPTIONS', '/v1/auth/otp/start', {
      headers: {
        origin: UNLISTED,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'api_key_id, content-type',
      },
    });
    assert.equal(preflight.status, 204, preflight.text);
    assert.equal(preflight.headers.get('access-control-allow-origin'), UNLISTED);
    assert.match((preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase(), /api_key_id/);

    const refused = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'ada@example.com' },
      headers: headers(UNLISTED),
    });
    assertProblem(refused, 403, 'origin_not_allowed');
    assert.equal(refused.headers.get('access-control-allow-origin'), UNLISTED, 'readable by the page');
    assert.match(refused.body.detail, /tessera projects update <project> --add-origin <origin>/);
    assert.ok(!refused.text.includes('localhost:5173'), 'the answer does not quote the request');
    assert.deepEqual(server.outbox.list(), [], 'no code sent');

    // Bearer routes and the OAuth family alike (the latter in its RFC 6749 format).
    const me = await server.request('GET', '/v1/me/sessions', {
      headers: { origin: UNLISTED, authorization: 'Bearer x' },
    });
    assertProblem(me, 403, 'origin_not_allowed');
    assert.equal(me.headers.get('access-control-allow-origin'), UNLISTED);
    const token = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: 'tsr_x.y', client_id: server.project.api_key_id },
      headers: { origin: UNLISTED },
    });
    assert.equal(token.status, 403, token.text);
    assert.equal(token.body.error, 'invalid_client');
    // The OAuth endpoints answer CORS for any origin, without credentials (their route checks the client's origins).
    assert.equal(token.headers.get('access-control-allow-origin'), '*');
  });

  test('the log warns, naming the origin and the project, once a minute per origin and project', async () => {
    lines.length = 0;
    const origin = 'http://127.0.0.1:3000';
    for (let i = 0; i < 3; i++) {
      const answer = await server.request('POST', '/v1/auth/otp/start', {
        body: { identifier: 'ada@example.com' },
        headers: headers(origin),
      });
      assert.equal(answer.status, 403, answer.text);
    }
    assert.equal(warnings().length, 1, JSON.stringify(warnings()));
    const [warning] = warnings();
    assert.equal(warning!.level, 40, 'warn');
    assert.equal(warning!.origin, origin);
    assert.equal(warning!.api_key_id, server.project.api_key_id);
    assert.equal(warning!.project, (await server.ctx.projects.byApiKeyId(server.project.api_key_id))!.name);
    assert.match(String(warning!.msg), /tessera projects update \S+ --add-origin http:\/\/127\.0\.0\.1:3000/);

    // An origin another project lists is refused by the route's own check: warned about too.
    await server.ctx.projects.create({ name: 'other-app', origins: ['http://other.test'] });
    await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'ada@example.com' },
      headers: headers('http://other.test'),
    });
    assert.equal(warnings().length, 2);
    assert.equal(warnings()[1]!.origin, 'http://other.test');

    clock.t += 61_000;
    await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'ada@example.com' },
      headers: headers(origin),
    });
    assert.equal(warnings().length, 3, 'again after a minute');
  });

  test('an origin the project lists is untouched', async () => {
    const answer = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: 'listed@example.com' },
      headers: headers('http://app.test'),
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('access-control-allow-origin'), 'http://app.test');
  });
});
