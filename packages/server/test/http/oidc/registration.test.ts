import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { run, withCliDatabase } from '../../helpers/cli.js';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../helpers/harness.js';
import { authorizeUrl, Browser, pkce } from '../../helpers/oidc.js';

const TOKEN = randomBytes(32).toString('base64url');
const REDIRECT = 'http://127.0.0.1/callback';

eachDialect('Dynamic Client Registration (RFC 7591), per project, off by default', (dialect) => {
  let server: TestServer;
  let clock = Date.now();
  before(async () => {
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: TOKEN, TESSERA_TRUST_PROXY: '1' },
      now: () => clock,
    });
  });
  after(() => server.close());

  const setOpen = (open: boolean) =>
    server.request('PATCH', `/v1/operator/projects/${server.project.api_key_id}`, {
      body: { open_registration: open },
      headers: { authorization: `Bearer ${TOKEN}` },
    });
  let nextIp = 1;
  /** A registration from its own address (X-Forwarded-For, one proxy trusted) unless `ip` is given. */
  const register = (
    body: unknown,
    ip = `198.51.100.${nextIp++ % 250}`,
    apiKeyId = server.project.api_key_id,
  ) =>
    server.request('POST', `/oauth/register/${apiKeyId}`, {
      body,
      headers: { 'x-forwarded-for': ip },
    });
  const projectMetadata = (kind = 'oauth-authorization-server') =>
    server.request('GET', `/.well-known/${kind}/projects/${server.project.api_key_id}`);
  const valid = { client_name: 'MCP client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };

  test('closed by default: 403, and no registration_endpoint in the metadata', async () => {
    const closed = await register(valid);
    assert.equal(closed.status, 403, closed.text);
    assert.equal(closed.body.error, 'access_denied');
    assert.match(closed.body.error_description, /open_registration/);
    const unknown = await register(valid, undefined, 'pk_nosuchproject');
    assert.equal(unknown.status, 403);
    assert.deepEqual(unknown.body, closed.body);
    const meta = await projectMetadata();
    assert.equal(meta.status, 200, meta.text);
    assert.equal(meta.body.registration_endpoint, undefined);
    assert.equal(meta.body.issuer, server.url);
    assert.equal(
      (await server.request('GET', '/.well-known/oauth-authorization-server/projects/pk_nosuch')).status,
      404,
    );
    assert.equal(
      (await server.request('GET', '/.well-known/openid-configuration')).body.registration_endpoint,
      undefined,
    );
  });

  test('open: registration_endpoint advertised; a third-party public client is registered and can authorize', async () => {
    const opened = await setOpen(true);
    assert.equal(opened.status, 200, opened.text);
    assert.equal(opened.body.open_registration, true);
    for (const kind of ['oauth-authorization-server', 'openid-configuration']) {
      const meta = await projectMetadata(kind);
      assert.equal(
        meta.body.registration_endpoint,
        `${server.url}/oauth/register/${server.project.api_key_id}`,
      );
    }
    const created = await register(valid);
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.client_id, /^tc_/);
    assert.equal(created.body.first_party, false);
    assert.equal(created.body.client_secret, undefined);
    const row = await server.storage.db.kysely
      .selectFrom('oauth_clients')
      .select(['dynamic', 'first_party'])
      .where('client_id', '=', created.body.client_id)
      .executeTakeFirstOrThrow();
    assert.equal(row.dynamic, 1);
    assert.equal(row.first_party, 0);
    // A confidential client gets its secret once.
    const confidential = await register({ ...valid, token_endpoint_auth_method: 'client_secret_basic' });
    assert.equal(confidential.status, 201, confidential.text);
    assert.match(confidential.body.client_secret, /^tcs_/);
    // The client starts a flow: the hosted sign-in page, not an error page.
    const { challenge } = pkce();
    const start = await new Browser(server.url).go(
      authorizeUrl({
        response_type: 'code',
        client_id: created.body.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    assert.equal(start.status, 303, start.text);
    assert.match(start.location ?? '', /^\/oauth\/sign-in/);
  });

  test('metadata is validated and the refusal names the field', async () => {
    const cases: Array<[unknown, string, string]> = [
      [{ ...valid, redirect_uris: [] }, 'invalid_redirect_uri', 'redirect_uris'],
      [{ ...valid, redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri', 'redirect_uris[0]'],
      [
        { ...valid, redirect_uris: ['https://a.example/cb#frag'] },
        'invalid_redirect_uri',
        'redirect_uris[0]',
      ],
      [{ ...valid, client_name: '' }, 'invalid_client_metadata', 'client_name'],
      [
        { ...valid, token_endpoint_auth_method: 'private_key_jwt' },
        'invalid_client_metadata',
        'token_endpoint_auth_method',
      ],
      [{ ...valid, grant_types: ['implicit'] }, 'invalid_client_metadata', 'grant_types'],
      [{ ...valid, scope: 'openid admin' }, 'invalid_client_metadata', 'scope'],
      [{ ...valid, logo_uri: 'http://a.example/logo.png' }, 'invalid_client_metadata', 'logo_uri'],
      [{ ...valid, first_party: true }, 'invalid_client_metadata', 'first_party'],
      [['not', 'an', 'object'], 'invalid_client_metadata', 'body'],
    ];
    for (const [body, error, field] of cases) {
      const refused = await register(body);
      assert.equal(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`);
      assert.equal(refused.body.error, error, JSON.stringify(body));
      assert.ok(refused.body.error_description.startsWith(`${field}:`), refused.body.error_description);
    }
    const notJson = await server.request('POST', `/oauth/register/${server.project.api_key_id}`, {
      raw: '{"client_name":',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.251' },
    });
    assert.equal(notJson.status, 400, notJson.text);
  });

  test('rate limits: 10 per network per hour, 100 per project per hour; thousands refused cleanly', async () => {
    const ip = '203.0.113.7';
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await register(valid, ip)).status);
    assert.deepEqual(statuses.slice(0, 10), Array(10).fill(201));
    assert.deepEqual(statuses.slice(10), [429, 429]);
    const limited = await register(valid, ip);
    assert.equal(limited.body.error, 'slow_down');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);

    // A flood from many networks: the project's hourly budget holds.
    const before = await countDynamic();
    const answers: number[] = [];
    const attempts = 2000;
    let sent = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < attempts) {
          const n = sent++;
          answers.push((await register(valid, `10.${(n >> 8) & 255}.${n & 255}.1`)).status);
        }
      }),
    );
    const created = answers.filter((s) => s === 201).length;
    const refused = answers.filter((s) => s === 429).length;
    assert.equal(created + refused, attempts, `only 201 and 429: ${[...new Set(answers)]}`);
    assert.ok(before + created <= 100 + 2 /* the confidential and first client of earlier tests */);
    assert.ok(refused >= attempts - 100, `refused ${refused}`);
    const flooded = await register(valid, '10.255.255.1');
    assert.equal(flooded.status, 429);
    assert.equal(flooded.body.error, 'temporarily_unavailable');
  });

  test('an unused registered client expires; a used one stays; the integrator’s clients never expire', async () => {
    clock += 3_600_000 + 1000; // a new hour: the limits' windows have passed
    const unused = await register(valid);
    const used = await register(valid);
    assert.equal(unused.status, 201, unused.text);
    assert.equal(used.status, 201, used.text);
    clock += 20 * 86_400_000;
    const { challenge } = pkce();
    const start = await new Browser(server.url).go(
      authorizeUrl({
        response_type: 'code',
        client_id: used.body.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    assert.equal(start.status, 303, start.text);
    clock += 15 * 86_400_000;
    const integrators = await server.storage.db.kysely
      .selectFrom('oauth_clients')
      .select('client_id')
      .where('dynamic', '=', 0)
      .execute();
    await server.ctx.clients.expireUnused();
    const left = new Set(
      (await server.storage.db.kysely.selectFrom('oauth_clients').select('client_id').execute()).map(
        (r) => r.client_id,
      ),
    );
    assert.ok(!left.has(unused.body.client_id), 'the unused client is gone');
    assert.ok(left.has(used.body.client_id), 'the client used 15 days ago stays');
    for (const c of integrators) assert.ok(left.has(c.client_id));
    const gone = await new Browser(server.url).go(
      authorizeUrl({
        response_type: 'code',
        client_id: unused.body.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    assert.equal(gone.status, 400, gone.text);
  });

  test('closing registration (the integrator API) removes the endpoint from the metadata and refuses', async () => {
    const integrator = { authorization: basicAuth(server.project) };
    const read = await server.request('GET', '/v1/project/client-registration', { headers: integrator });
    assert.deepEqual(read.body, { open_registration: true, client_id_metadata_documents: false });
    const closed = await server.request('PUT', '/v1/project/client-registration', {
      body: { open_registration: false },
      headers: integrator,
    });
    assert.equal(closed.status, 200, closed.text);
    assert.deepEqual(closed.body, { open_registration: false, client_id_metadata_documents: false });
    const bad = await server.request('PUT', '/v1/project/client-registration', {
      body: { open_registration: 'yes' },
      headers: integrator,
    });
    assert.equal(bad.status, 400);
    assert.equal((await projectMetadata()).body.registration_endpoint, undefined);
    assert.equal((await register(valid)).status, 403);
  });

  async function countDynamic(): Promise<number> {
    const rows = await server.storage.db.kysely
      .selectFrom('oauth_clients')
      .select('client_id')
      .where('dynamic', '=', 1)
      .execute();
    return rows.length;
  }
});

test('CLI: projects update --open-registration / --no-open-registration, shown by projects show', async () => {
  await withCliDatabase<{ open_registration: boolean }>(async ({ env, json }) => {
    await json(['projects', 'create', '--name', 'mcp', '--origin', 'https://mcp.example']);
    const opened = await json(['projects', 'update', 'mcp', '--open-registration']);
    assert.equal(opened.open_registration, true);
    assert.match((await run(['projects', 'show', 'mcp'], env)).stdout, /open registration: {3}yes/);
    assert.equal(
      (await json(['projects', 'update', 'mcp', '--no-open-registration'])).open_registration,
      false,
    );
  });
});
