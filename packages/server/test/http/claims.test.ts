import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type OAuthTokenBundle, RESERVED_CLAIMS } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  assertProblem,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

/** Many sign-ins of the same identifiers from loopback. */
const ENV = RELAXED_LIMITS;

const nextEmail = () => uniqueEmail('claims');

function claimsCall(
  server: TestServer,
  method: 'GET' | 'PUT' | 'DELETE',
  userId: string,
  options: { project?: ProjectCredentials; body?: unknown; authorization?: string | null } = {},
): Promise<TestResponse> {
  const authorization =
    options.authorization === undefined
      ? basicAuth(options.project ?? server.project)
      : options.authorization;
  return server.request(method, `/v1/users/${encodeURIComponent(userId)}/claims`, {
    ...(options.body !== undefined ? { body: options.body } : {}),
    headers: authorization === null ? {} : { authorization },
  });
}

async function refresh(server: TestServer, bundle: OAuthTokenBundle, project = server.project) {
  const response = await server.request('POST', '/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: bundle.refresh_token, client_id: project.api_key_id },
  });
  assert.equal(response.status, 200, response.text);
  return response.body as OAuthTokenBundle;
}

eachDialect('custom claims (integrator API)', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: ENV });
  });
  after(() => server.close());

  async function newUser(project = server.project) {
    const email = nextEmail();
    const bundle = await server.signIn(email, project);
    return { email, bundle, userId: decodeJwt(bundle.access_token).sub! };
  }

  test('PUT stores the claims, GET reads them back, DELETE removes them', async () => {
    const { userId } = await newUser();
    const empty = await claimsCall(server, 'GET', userId);
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body, { claims: {} });

    const claims = {
      role: 'admin',
      plan: { tier: 'gold', seats: 5 },
      flags: ['beta', 'x'],
      ok: true,
      n: null,
    };
    const put = await claimsCall(server, 'PUT', userId, { body: { claims } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, { claims });
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims });

    // PUT replaces the whole set.
    const replaced = await claimsCall(server, 'PUT', userId, { body: { claims: { tenant: 't-1' } } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: { tenant: 't-1' } });

    const deleted = await claimsCall(server, 'DELETE', userId);
    assert.equal(deleted.status, 204, deleted.text);
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: {} });
    // Deleting again is harmless.
    assert.equal((await claimsCall(server, 'DELETE', userId)).status, 204);
  });

  test('claims land in access tokens issued afterwards, on sign-in and on refresh, never in the ID token', async () => {
    const { email, bundle: before, userId } = await newUser();
    const claims = { role: 'editor', org: { id: 'org_1', teams: ['a', 'b'] } };
    assert.equal((await claimsCall(server, 'PUT', userId, { body: { claims } })).status, 200);

    // A token issued before the change does not have them (tokens are not rewritten).
    assert.equal(decodeJwt(before.access_token).role, undefined);

    const signedIn = await server.signIn(email);
    const access = decodeJwt(signedIn.access_token);
    assert.equal(access.sub, userId);
    assert.equal(access.role, 'editor');
    assert.deepEqual(access.org, claims.org);
    // The service's own claims are intact.
    assert.equal(access.type, 'access_token');
    assert.equal(access.aud, server.project.api_key_id);
    const id = decodeJwt(signedIn.id_token);
    assert.equal(id.role, undefined);
    assert.equal(id.org, undefined);

    // The session started before the change picks them up on its next refresh.
    const refreshed = await refresh(server, before);
    assert.equal(decodeJwt(refreshed.access_token).role, 'editor');
    assert.deepEqual(decodeJwt(refreshed.access_token).org, claims.org);
    assert.equal(decodeJwt(refreshed.id_token).role, undefined);

    // And a change is seen by the following refresh; after DELETE the claims are gone.
    await claimsCall(server, 'PUT', userId, { body: { claims: { role: 'viewer' } } });
    const again = await refresh(server, refreshed);
    assert.equal(decodeJwt(again.access_token).role, 'viewer');
    assert.equal(decodeJwt(again.access_token).org, undefined);
    await claimsCall(server, 'DELETE', userId);
    const cleared = decodeJwt((await refresh(server, again)).access_token);
    assert.equal(cleared.role, undefined);
    assert.equal(cleared.sub, userId);
  });

  test('every reserved claim name is refused with reserved_claim', async () => {
    const { userId } = await newUser();
    const sample = [
      'sub',
      'aud',
      'exp',
      'iss',
      'sid',
      'type',
      'identifier',
      'auth_time',
      'nonce',
      'email',
      'client_id',
      'active',
      'token_type',
      'cnf',
    ];
    for (const name of sample) assert.ok(RESERVED_CLAIMS.has(name), `${name} should be reserved`);
    for (const name of RESERVED_CLAIMS) {
      const response = await claimsCall(server, 'PUT', userId, { body: { claims: { ok: 1, [name]: 'x' } } });
      assertProblem(response, 400, 'reserved_claim');
      assert.ok(response.body.detail.includes(`"${name}"`), `detail names ${name}: ${response.body.detail}`);
    }
    // Nothing was stored on the way.
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: {} });
  });

  test("authorization claims (roles, groups, permissions, entitlements) are the integrator's to set", async () => {
    const { email, userId } = await newUser();
    const claims = {
      roles: ['admin', 'billing'],
      groups: ['eng'],
      permissions: ['invoices:read', 'invoices:write'],
      entitlements: ['pro'],
      name: 'Ada',
      locale: 'en-GB',
    };
    for (const name of Object.keys(claims)) assert.ok(!RESERVED_CLAIMS.has(name), `${name} is not reserved`);
    const put = await claimsCall(server, 'PUT', userId, { body: { claims } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body, { claims });
    const access = decodeJwt((await server.signIn(email)).access_token);
    for (const [name, value] of Object.entries(claims)) assert.deepEqual(access[name], value, name);
    assert.equal(access.sub, userId);
  });

  test('claims must be a JSON object', async () => {
    const { userId } = await newUser();
    for (const claims of [[], ['role'], 'admin', 42, true, null]) {
      assertProblem(await claimsCall(server, 'PUT', userId, { body: { claims } }), 400, 'invalid_claims');
    }
    // No claims member at all is a malformed request.
    assertProblem(await claimsCall(server, 'PUT', userId, { body: {} }), 400, 'invalid_request');
    assertProblem(await claimsCall(server, 'PUT', userId, { body: [] }), 400, 'invalid_request');
  });

  test('nesting: 4 levels are accepted, deeper is refused with invalid_claims', async () => {
    const { userId } = await newUser();
    const four = { a: { b: { c: { d: 1 } } } };
    assert.equal((await claimsCall(server, 'PUT', userId, { body: { claims: four } })).status, 200);
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: four });
    const fourWithArray = { a: [[['x']]] };
    assert.equal((await claimsCall(server, 'PUT', userId, { body: { claims: fourWithArray } })).status, 200);

    for (const deep of [
      { a: { b: { c: { d: { e: 1 } } } } },
      { a: [[[['x']]]] },
      { ok: 1, a: [{ b: { c: [] } }] },
    ]) {
      const response = await claimsCall(server, 'PUT', userId, { body: { claims: deep } });
      assertProblem(response, 400, 'invalid_claims');
      assert.match(response.body.detail, /nested/);
    }
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: fourWithArray });
  });

  test('claims nested thousands deep are refused with 400 invalid_claims, not a 500', async () => {
    const { userId } = await newUser();
    for (const [open, close] of [
      ['[', ']'],
      ['{"a":', '}'],
    ] as const) {
      for (const depth of [5, 1000, 5000, 100_000]) {
        const raw = `{"claims":{"deep":${open.repeat(depth)}1${close.repeat(depth)}}}`;
        const response = await server.request('PUT', `/v1/users/${userId}/claims`, {
          raw,
          headers: { authorization: basicAuth(server.project), 'content-type': 'application/json' },
        });
        if (raw.length > server.config.bodyLimit) {
          assertProblem(response, 413, 'payload_too_large');
        } else {
          assertProblem(response, 400, 'invalid_claims');
          assert.match(response.body.detail, /nested more than 4 levels/);
        }
      }
    }
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: {} });
  });

  test('serialised claims over 1,000 bytes are refused with 413 claims_too_large', async () => {
    const { userId } = await newUser();
    // {"x":"…"} is 8 bytes around the value.
    const exactly = { x: 'a'.repeat(992) };
    assert.equal(Buffer.byteLength(JSON.stringify(exactly)), 1000);
    assert.equal((await claimsCall(server, 'PUT', userId, { body: { claims: exactly } })).status, 200);

    const over = { x: 'a'.repeat(993) };
    const response = await claimsCall(server, 'PUT', userId, { body: { claims: over } });
    assertProblem(response, 413, 'claims_too_large');
    assert.match(response.body.detail, /1001 bytes/);

    // Bytes, not characters: 497 two-byte characters are 1,002 bytes.
    const multibyte = { x: 'é'.repeat(497) };
    assertProblem(
      await claimsCall(server, 'PUT', userId, { body: { claims: multibyte } }),
      413,
      'claims_too_large',
    );
    // The refused writes left the previous claims in place.
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: exactly });
  });

  test('bad claim names are refused with invalid_claims', async () => {
    const { userId } = await newUser();
    for (const name of [
      '',
      '1st',
      'has space',
      'semi;colon',
      'quote"',
      'a'.repeat(65),
      'émoji',
      'a/b',
      '$ref',
    ]) {
      const response = await claimsCall(server, 'PUT', userId, { body: { claims: { [name]: 1 } } });
      assertProblem(response, 400, 'invalid_claims');
    }
    for (const name of ['_private', 'https:example.com', 'app.role', 'x-tenant', 'a'.repeat(64)]) {
      const response = await claimsCall(server, 'PUT', userId, { body: { claims: { [name]: 1 } } });
      assert.equal(response.status, 200, `${name}: ${response.text}`);
    }
  });

  test('an unknown user is 404 user_not_found', async () => {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const response = await claimsCall(server, method, 'no-such-user', {
        ...(method === 'PUT' ? { body: { claims: { a: 1 } } } : {}),
      });
      assertProblem(response, 404, 'user_not_found');
    }
  });

  test('wrong or missing credentials are 401 invalid_client', async () => {
    const { userId } = await newUser();
    const other = await server.ctx.projects.create({ name: 'other-credentials' });
    const attempts: Array<string | null> = [
      null,
      'Basic',
      'Bearer abc',
      basicAuth({ api_key_id: server.project.api_key_id, api_key_secret: 'sk_wrong' }),
      basicAuth({ api_key_id: server.project.api_key_id, api_key_secret: '' }),
      basicAuth({ api_key_id: 'pk_unknown', api_key_secret: server.project.api_key_secret }),
      // The other project's secret with this project's id, and the reverse.
      basicAuth({ api_key_id: server.project.api_key_id, api_key_secret: other.api_key_secret }),
      basicAuth({ api_key_id: other.api_key_id, api_key_secret: server.project.api_key_secret }),
      `Basic ${Buffer.from(server.project.api_key_secret).toString('base64')}`,
    ];
    for (const authorization of attempts) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const response = await claimsCall(server, method, userId, {
          authorization,
          ...(method === 'PUT' ? { body: { claims: { a: 1 } } } : {}),
        });
        assertProblem(response, 401, 'invalid_client');
        assert.doesNotMatch(response.text, new RegExp(server.project.api_key_secret));
      }
    }
    // A refused credential changed nothing.
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: {} });
  });

  test("project B cannot read or change project A's user claims (404 user_not_found)", async () => {
    const projectB = await server.ctx.projects.create({ name: 'b' });
    const { email, userId } = await newUser();
    const claimsA = { role: 'owner' };
    assert.equal((await claimsCall(server, 'PUT', userId, { body: { claims: claimsA } })).status, 200);

    assertProblem(await claimsCall(server, 'GET', userId, { project: projectB }), 404, 'user_not_found');
    assertProblem(
      await claimsCall(server, 'PUT', userId, { project: projectB, body: { claims: { role: 'pwned' } } }),
      404,
      'user_not_found',
    );
    assertProblem(await claimsCall(server, 'DELETE', userId, { project: projectB }), 404, 'user_not_found');
    assert.deepEqual((await claimsCall(server, 'GET', userId)).body, { claims: claimsA });

    // The same person signed in to project B is another user, with claims of its own.
    const inB = await server.signIn(email, projectB);
    const userB = decodeJwt(inB.access_token).sub!;
    assert.notEqual(userB, userId);
    assert.equal(decodeJwt(inB.access_token).role, undefined);
    assertProblem(await claimsCall(server, 'GET', userB), 404, 'user_not_found');
    const putB = await claimsCall(server, 'PUT', userB, {
      project: projectB,
      body: { claims: { role: 'guest' } },
    });
    assert.equal(putB.status, 200, putB.text);
    assert.equal(decodeJwt((await refresh(server, inB, projectB)).access_token).role, 'guest');
    assert.equal(decodeJwt((await server.signIn(email)).access_token).role, 'owner');
  });
});
