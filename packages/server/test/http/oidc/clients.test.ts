import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sha256 } from '../../../src/crypto/hash.js';
import {
  authorizedClient,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../helpers/harness.js';

const TOKEN = randomBytes(32).toString('base64url');

eachDialect('OAuth clients (RFC 7591/7592 integrator API, operator API)', (dialect) => {
  let server: TestServer;
  let api: ReturnType<typeof authorizedClient>;
  before(async () => {
    server = await startServer(dialect, { env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: TOKEN } });
    api = authorizedClient(server, basicAuth(server.project));
  });
  after(() => server.close());

  test('a confidential client: 201 with client_secret once, hashed at rest, never read back', async () => {
    const created = await api('POST', '/v1/clients', {
      client_name: 'Server app',
      redirect_uris: ['https://app.example.com/callback'],
      post_logout_redirect_uris: ['https://app.example.com/'],
      logo_uri: 'https://app.example.com/logo.png',
      scope: 'openid email offline_access',
    });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.client_id, /^tc_[A-Za-z0-9_-]{22}$/);
    assert.match(created.body.client_secret, /^tcs_/);
    assert.equal(created.body.token_endpoint_auth_method, 'client_secret_basic');
    assert.deepEqual(created.body.grant_types, ['authorization_code', 'refresh_token']);
    assert.equal(created.body.scope, 'openid email offline_access');
    assert.equal(created.body.first_party, false);
    assert.equal(created.headers.get('cache-control'), 'no-store');
    const row = await server.storage.db.kysely
      .selectFrom('oauth_clients')
      .selectAll()
      .where('client_id', '=', created.body.client_id)
      .executeTakeFirstOrThrow();
    assert.equal(row.secret_hash, sha256(created.body.client_secret));
    assert.ok(!JSON.stringify(row).includes(created.body.client_secret));
    const read = await api('GET', `/v1/clients/${created.body.client_id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.client_secret, undefined);
    assert.equal(read.body.client_name, 'Server app');
    const list = await api('GET', '/v1/clients');
    assert.ok(list.body.clients.some((c: { client_id: string }) => c.client_id === created.body.client_id));
  });

  test('a public client has no secret; PUT replaces the metadata; DELETE removes it', async () => {
    const created = await api('POST', '/v1/clients', {
      client_name: 'SPA',
      redirect_uris: ['http://127.0.0.1/cb', 'com.example.app:/callback'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.client_secret, undefined);
    assert.equal(created.body.first_party, true);
    const id = created.body.client_id;
    const replaced = await api('PUT', `/v1/clients/${id}`, {
      client_id: id,
      client_name: 'SPA 2',
      redirect_uris: ['https://spa.example.com/cb'],
      token_endpoint_auth_method: 'none',
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.client_name, 'SPA 2');
    assert.deepEqual(replaced.body.redirect_uris, ['https://spa.example.com/cb']);
    assert.equal(replaced.body.first_party, false);
    assert.equal((await api('DELETE', `/v1/clients/${id}`)).status, 204);
    const gone = await api('GET', `/v1/clients/${id}`);
    assert.equal(gone.status, 404);
    assert.equal(gone.body.error, 'invalid_client');
  });

  test('validation names the field (RFC 7591 §3.2.2)', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ redirect_uris: ['https://a.example/cb'] }, 'invalid_client_metadata', /^client_name:/],
      [{ client_name: 'x' }, 'invalid_redirect_uri', /^redirect_uris:/],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb#frag'] },
        'invalid_redirect_uri',
        /^redirect_uris\[0\]: .*fragment/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb', 'http://evil.example/cb'] },
        'invalid_redirect_uri',
        /^redirect_uris\[1\]: .*loopback/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://user:pw@a.example/cb'] },
        'invalid_redirect_uri',
        /user-info/,
      ],
      [{ client_name: 'x', redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri', /private-use/],
      [
        {
          client_name: 'x',
          redirect_uris: ['https://a.example/cb'],
          token_endpoint_auth_method: 'private_key_jwt',
        },
        'invalid_client_metadata',
        /^token_endpoint_auth_method:/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb'], grant_types: ['implicit'] },
        'invalid_client_metadata',
        /^grant_types:/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb'], response_types: ['token'] },
        'invalid_client_metadata',
        /^response_types:/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb'], scope: 'openid admin' },
        'invalid_client_metadata',
        /^scope:/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb'], logo_uri: 'http://a.example/l.png' },
        'invalid_client_metadata',
        /^logo_uri:/,
      ],
      [
        { client_name: 'x', redirect_uris: ['https://a.example/cb'], post_logout_redirect_uris: ['ftp://x'] },
        'invalid_client_metadata',
        /^post_logout_redirect_uris\[0\]:/,
      ],
      [
        { client_name: 'x', redirect_uris: 'https://a.example/cb' },
        'invalid_redirect_uri',
        /^redirect_uris:/,
      ],
    ];
    for (const [body, error, description] of cases) {
      const answer = await api('POST', '/v1/clients', body);
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
      assert.equal(answer.body.error, error, answer.text);
      assert.match(answer.body.error_description, description, answer.text);
    }
  });

  test('another project cannot see or change the client; bad credentials are invalid_client', async () => {
    const created = await api('POST', '/v1/clients', {
      client_name: 'A',
      redirect_uris: ['https://a.example/cb'],
    });
    const other = await server.ctx.projects.create({ name: 'other', origins: [] });
    const theirs = authorizedClient(server, basicAuth(other));
    assert.equal((await theirs('GET', `/v1/clients/${created.body.client_id}`)).status, 404);
    assert.equal((await theirs('DELETE', `/v1/clients/${created.body.client_id}`)).status, 404);
    const wrong = authorizedClient(server, basicAuth({ ...server.project, api_key_secret: 'nope' }));
    const refused = await wrong('GET', '/v1/clients');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_client');
  });

  test('the operator API manages the same clients under a project', async () => {
    const op = authorizedClient(
      server,
      `Bearer ${TOKEN}`,
      `/v1/operator/projects/${server.project.api_key_id}`,
    );
    const created = await op('POST', '/clients', {
      client_name: 'Op',
      redirect_uris: ['https://op.example/cb'],
    });
    assert.equal(created.status, 201, created.text);
    assert.ok(created.body.client_secret);
    const seen = await api('GET', `/v1/clients/${created.body.client_id}`);
    assert.equal(seen.body.client_name, 'Op');
    assert.equal((await op('GET', '/clients')).status, 200);
    assert.equal((await op('DELETE', `/clients/${created.body.client_id}`)).status, 204);
  });
});
