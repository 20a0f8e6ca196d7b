/**
 * Client ID Metadata Documents (issue 31; draft-ietf-oauth-client-id-metadata-document, the MCP
 * authorization specification): a client id that is a URL, whose JSON Tessera fetches under the
 * webhooks' address policy. Documents are served by a local HTTP server: http and loopback are
 * what the webhook tests use too (allowed outside production, TESSERA_WEBHOOK_ALLOW_PRIVATE);
 * the SSRF suite turns private addresses off as production does.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { publicOnlyLookup } from '../../../src/net/address-policy.js';
import { run, withCliDatabase } from '../../helpers/cli.js';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../helpers/harness.js';
import {
  Browser,
  formFields,
  pkce,
  redirectParams,
  signInOnHostedPages,
  tokenRequest,
} from '../../helpers/oidc.js';

const REDIRECT = 'http://127.0.0.1/callback';
const OPERATOR = randomBytes(32).toString('base64url');

/** The document host: each path's answer, and how many times each path was asked for. */
class DocumentHost {
  readonly hits = new Map<string, number>();
  readonly documents = new Map<
    string,
    (url: string) => { status?: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  >();
  #server: Server | undefined;
  origin = '';

  async start(): Promise<void> {
    this.#server = createServer((request, response) => {
      const path = request.url ?? '/';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const answer = this.documents.get(path)?.(`${this.origin}${path}`) ?? { status: 404, body: '' };
      const send = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers });
        response.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs).unref();
      else send();
    });
    await new Promise<void>((done) => this.#server!.listen(0, '127.0.0.1', done));
    this.origin = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** A document at `path` whose client_id is its own URL, with `extra` members. */
  serve(path: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    this.documents.set(path, (url) => ({
      headers,
      body: JSON.stringify({
        client_id: url,
        client_name: 'Desk MCP',
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'none',
        ...extra,
      }),
    }));
    return `${this.origin}${path}`;
  }

  hitsOf(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((done) => this.#server?.close(done));
  }
}

const authorizeAt = (server: TestServer, params: Record<string, string>) =>
  `/oauth/authorize/${server.project.api_key_id}?${new URLSearchParams(params).toString()}`;

const setting = (server: TestServer, body: Record<string, boolean>) =>
  server.request('PUT', '/v1/project/client-registration', {
    body,
    headers: { authorization: basicAuth(server.project) },
  });

/** The error page's text of a refused authorization request (never a redirect). */
async function refusedPage(server: TestServer, clientId: string, redirectUri = REDIRECT) {
  const { challenge } = pkce();
  const page = await new Browser(server.url).go(
    authorizeAt(server, {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  );
  assert.equal(page.status, 400, page.text);
  assert.equal(page.location, undefined, 'an error page, never a redirect');
  return page.text.replace(/&#39;|&rsquo;/g, "'");
}

eachDialect('Client ID Metadata Documents (a client id that is an https URL)', (dialect) => {
  const host = new DocumentHost();
  let server: TestServer;
  before(async () => {
    await host.start();
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: OPERATOR },
    });
  });
  after(async () => {
    await server.close();
    await host.close();
  });

  test('off by default: not advertised, and a URL client id is refused without a fetch', async () => {
    const clientId = host.serve('/off.json');
    const meta = await server.request(
      'GET',
      `/.well-known/oauth-authorization-server/projects/${server.project.api_key_id}`,
    );
    assert.equal(meta.body.client_id_metadata_document_supported, undefined);
    assert.equal(meta.body.token_endpoint, `${server.url}/oauth/token`);
    const text = await refusedPage(server, clientId);
    assert.match(text, /client_id_metadata_documents is off/);
    assert.equal(host.hitsOf('/off.json'), 0);
  });

  test('the setting: integrator API, advertised in the project’s metadata only (not the service’s)', async () => {
    const on = await setting(server, { client_id_metadata_documents: true });
    assert.equal(on.status, 200, on.text);
    assert.deepEqual(on.body, { open_registration: false, client_id_metadata_documents: true });
    const empty = await setting(server, {});
    assert.equal(empty.status, 400, empty.text);
    const id = server.project.api_key_id;
    for (const kind of ['oauth-authorization-server', 'openid-configuration']) {
      const meta = await server.request('GET', `/.well-known/${kind}/projects/${id}`);
      assert.equal(meta.body.client_id_metadata_document_supported, true);
      assert.equal(meta.body.authorization_endpoint, `${server.url}/oauth/authorize/${id}`);
      assert.equal(meta.body.token_endpoint, `${server.url}/oauth/token/${id}`);
      assert.equal(meta.body.revocation_endpoint, `${server.url}/oauth/revoke/${id}`);
      assert.equal(meta.body.issuer, server.url);
      const global = await server.request('GET', `/.well-known/${kind}`);
      assert.equal(global.body.client_id_metadata_document_supported, undefined);
      assert.equal(global.body.token_endpoint, `${server.url}/oauth/token`);
    }
  });

  test('the whole flow: consent names the document’s host, tokens for the URL client, one fetch', async () => {
    // first_party in a document is ignored: anyone can publish one.
    const clientId = host.serve('/client.json', { first_party: true }, { 'cache-control': 'max-age=600' });
    const browser = new Browser(server.url);
    const { verifier, challenge } = pkce();
    const start = await browser.go(
      authorizeAt(server, {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'openid email offline_access',
        state: 'st',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    assert.equal(start.status, 303, start.text);
    const signedIn = await signInOnHostedPages(server, browser, start.location!, 'cimd@example.com');
    assert.equal(signedIn.status, 303, signedIn.text);
    assert.match(signedIn.location ?? '', /^\/oauth\/consent/, 'a third-party client: consent is asked');
    const consent = await browser.go(signedIn.location!);
    assert.equal(consent.status, 200, consent.text);
    assert.match(consent.text, /Desk MCP/);
    assert.match(consent.text, /describes itself at 127\.0\.0\.1:\d+/);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(consent.text, '/oauth/consent'), decision: 'allow' },
    });
    assert.equal(allowed.status, 303, allowed.text);
    const answer = redirectParams(allowed.location);
    assert.equal(answer.state, 'st');
    assert.equal(answer.iss, server.url);

    const exchange = (path: string, fields: Record<string, string>) =>
      server.request('POST', path, {
        raw: new URLSearchParams(fields).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const fields = {
      grant_type: 'authorization_code',
      client_id: clientId,
      code: answer.code!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    };
    // The service's own token endpoint cannot tell the project of a URL client id.
    const global = await tokenRequest(server, fields);
    assert.equal(global.status, 401, global.text);
    assert.equal(global.body.error, 'invalid_client');
    assert.match(global.body.error_description, /project's own endpoints/);
    const tokenPath = `/oauth/token/${server.project.api_key_id}`;
    const tokens = await exchange(tokenPath, fields);
    assert.equal(tokens.status, 200, tokens.text);
    const idClaims = JSON.parse(Buffer.from(tokens.body.id_token.split('.')[1], 'base64url').toString());
    assert.equal(idClaims.aud, clientId);
    assert.equal(idClaims.azp, clientId);
    const atClaims = JSON.parse(Buffer.from(tokens.body.access_token.split('.')[1], 'base64url').toString());
    assert.equal(atClaims.client_id, clientId);
    assert.equal(atClaims.aud, server.project.api_key_id);

    // A secret is refused: such a client is public.
    const withSecret = await exchange(tokenPath, {
      grant_type: 'refresh_token',
      client_id: clientId,
      client_secret: 'x',
      refresh_token: tokens.body.refresh_token,
    });
    assert.equal(withSecret.status, 401, withSecret.text);
    const refreshed = await exchange(tokenPath, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: tokens.body.refresh_token,
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    const userinfo = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${refreshed.body.access_token}` },
    });
    assert.equal(userinfo.status, 200, userinfo.text);
    assert.equal(userinfo.body.email, 'cimd@example.com');

    // The user's grants list it by the host of its URL; cached: one fetch for all of the above.
    const grants = await server.request('GET', '/v1/me/grants', {
      headers: { authorization: `Bearer ${refreshed.body.access_token}` },
    });
    assert.equal(grants.status, 200, grants.text);
    assert.equal(grants.body.grants[0].client_id, clientId);
    assert.equal(grants.body.grants[0].client_name, new URL(clientId).host);
    assert.equal(host.hitsOf('/client.json'), 1);

    const revoked = await exchange(`/oauth/revoke/${server.project.api_key_id}`, {
      token: refreshed.body.refresh_token,
      client_id: clientId,
    });
    assert.equal(revoked.status, 200, revoked.text);
    const after = await exchange(tokenPath, {
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: refreshed.body.refresh_token,
    });
    assert.equal(after.status, 400, after.text);
    assert.equal(after.body.error, 'invalid_grant');
    // RP-initiated logout knows the client by its ID token (aud: the URL) and the session's project.
    const logout = await browser.go(
      `/oauth/logout?${new URLSearchParams({ id_token_hint: tokens.body.id_token, client_id: clientId })}`,
    );
    assert.equal(logout.status, 200, logout.text);
    assert.match(logout.text, /signed out/);
  });

  test('a code is bound to its project: the same URL client at another project cannot spend it', async () => {
    const other = await server.ctx.projects.create({ name: 'other' });
    await server.ctx.projects.update(other.api_key_id, { clientIdMetadataDocuments: true });
    const clientId = host.serve('/client.json', { first_party: true }, { 'cache-control': 'max-age=600' });
    const browser = new Browser(server.url);
    const { verifier, challenge } = pkce();
    const start = await browser.go(
      authorizeAt(server, {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    const signedIn = await signInOnHostedPages(server, browser, start.location!, 'cimd2@example.com');
    const consent = await browser.go(signedIn.location!);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(consent.text, '/oauth/consent'), decision: 'allow' },
    });
    const { code } = redirectParams(allowed.location);
    const elsewhere = await server.request('POST', `/oauth/token/${other.api_key_id}`, {
      raw: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: clientId,
        code: code!,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(elsewhere.status, 400, elsewhere.text);
    assert.equal(elsewhere.body.error, 'invalid_grant');
  });

  test('a redirect_uri not in the document gets the error page, never a redirect', async () => {
    const clientId = host.serve('/narrow.json');
    const text = await refusedPage(server, clientId, 'http://127.0.0.1/elsewhere');
    assert.match(text, /redirect_uri is not one of the client/);
  });

  test('PKCE is required, plain refused', async () => {
    const clientId = host.serve('/pkce.json');
    const answer = await new Browser(server.url).go(
      authorizeAt(server, {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'plain',
      }),
    );
    assert.equal(answer.status, 303, answer.text);
    assert.equal(redirectParams(answer.location).error, 'invalid_request');
  });

  test('a document whose client_id is not its URL is refused', async () => {
    host.documents.set('/impostor.json', () => ({
      body: JSON.stringify({ client_id: `${host.origin}/client.json`, redirect_uris: [REDIRECT] }),
    }));
    const text = await refusedPage(server, `${host.origin}/impostor.json`);
    assert.match(text, /its client_id is not the URL it was fetched from/);
  });

  test('a huge document is refused, declared or streamed', async () => {
    const padding = 'x'.repeat(100_000);
    host.documents.set('/huge.json', (url) => {
      const body = JSON.stringify({ client_id: url, redirect_uris: [REDIRECT], padding });
      return { headers: { 'content-length': String(Buffer.byteLength(body)) }, body };
    });
    assert.match(await refusedPage(server, `${host.origin}/huge.json`), /larger than 5120 bytes/);
    host.documents.set('/streamed.json', (url) => ({
      // No Content-Length: the limit is counted as it arrives.
      headers: { 'transfer-encoding': 'chunked' },
      body: JSON.stringify({ client_id: url, redirect_uris: [REDIRECT], padding }),
    }));
    assert.match(await refusedPage(server, `${host.origin}/streamed.json`), /larger than 5120 bytes/);
  });

  test('a slow document is refused at the time limit', async () => {
    // The production limit (5 s); the host would answer after 8.
    host.documents.set('/slow.json', (url) => ({
      delayMs: 8000,
      body: JSON.stringify({ client_id: url, redirect_uris: [REDIRECT] }),
    }));
    const started = Date.now();
    assert.match(await refusedPage(server, `${host.origin}/slow.json`), /did not arrive within 5 s/);
    assert.ok(Date.now() - started < 7500, 'refused at the limit, not when the host answers');
  });

  test('redirects are not followed', async () => {
    const target = host.serve('/target.json');
    host.documents.set('/moved.json', () => ({ status: 302, headers: { location: target } }));
    assert.match(
      await refusedPage(server, `${host.origin}/moved.json`),
      /answered 302; redirects are not followed/,
    );
    assert.equal(host.hitsOf('/target.json'), 0);
  });

  test('what Tessera does not support is refused with a clear reason', async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['/pkjwt.json', { token_endpoint_auth_method: 'private_key_jwt' }, /private_key_jwt is not supported/],
      ['/basic.json', { token_endpoint_auth_method: 'client_secret_basic' }, /must be none/],
      ['/secret.json', { client_secret: 'shh' }, /holds no client_secret/],
      ['/no-redirects.json', { redirect_uris: [] }, /redirect_uris/],
      ['/bad-scope.json', { scope: 'openid admin' }, /scope/],
    ];
    for (const [path, extra, reason] of cases) {
      const clientId = host.serve(path, extra);
      assert.match(await refusedPage(server, clientId), reason, path);
    }
    host.documents.set('/page.html', () => ({ headers: { 'content-type': 'text/html' }, body: '<p>hi</p>' }));
    assert.match(await refusedPage(server, `${host.origin}/page.html`), /not served as application\/json/);
    // A client id URL is checked before anything is fetched.
    for (const [clientId, reason] of [
      [`${host.origin}/`, /has a path/],
      [`${host.origin}/a/../client.json`, /normal form/],
      [`${host.origin.replace('http://', 'http://user@')}/client.json`, /user-info/],
    ] as const)
      assert.match(await refusedPage(server, clientId), reason, clientId);
  });

  test('the operator API sets it too; turned off, URL client ids are refused again without a fetch', async () => {
    const operator = { authorization: `Bearer ${OPERATOR}` };
    const path = `/v1/operator/projects/${server.project.api_key_id}`;
    const patched = await server.request('PATCH', path, {
      body: { client_id_metadata_documents: true },
      headers: operator,
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.client_id_metadata_documents, true);
    assert.equal(patched.body.open_registration, false);
    const view = await server.request('GET', '/v1/project/client-registration', {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(view.body.client_id_metadata_documents, true);
    const off = await setting(server, { client_id_metadata_documents: false });
    assert.deepEqual(off.body, { open_registration: false, client_id_metadata_documents: false });
    const clientId = host.serve('/after-off.json');
    assert.match(await refusedPage(server, clientId), /client_id_metadata_documents is off/);
    assert.equal(host.hitsOf('/after-off.json'), 0);
  });
});

/** A resolver answering from a table: a name that resolves to loopback (DNS rebinding). */
const resolverTo =
  (table: Record<string, string>) =>
  (
    hostname: string,
    _options: unknown,
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    const address = table[hostname];
    if (!address) return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
    callback(null, [{ address, family: address.includes(':') ? 6 : 4 }]);
  };

eachDialect('Client ID Metadata Documents: SSRF (private addresses refused, as in production)', (dialect) => {
  const host = new DocumentHost();
  let server: TestServer;
  before(async () => {
    await host.start();
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_WEBHOOK_ALLOW_PRIVATE: 'false' },
      clientMetadata: {
        lookup: publicOnlyLookup(
          resolverTo({ 'rebind.test': '127.0.0.1', 'mapped.test': '::ffff:127.0.0.1' }),
        ),
      },
    });
    assert.equal((await setting(server, { client_id_metadata_documents: true })).status, 200);
  });
  after(async () => {
    await server.close();
    await host.close();
  });

  describe('no private, loopback or link-local target is ever reached', () => {
    test('address literals and localhost are refused before connecting', async () => {
      const port = new URL(host.origin).port;
      for (const clientId of [
        host.serve('/literal.json'),
        `http://[::ffff:7f00:1]:${port}/literal.json`,
        `http://localhost:${port}/literal.json`,
        'http://10.0.0.7/client.json',
        'http://169.254.169.254/latest/meta-data/client.json',
        'http://[fd00::1]/client.json',
      ])
        assert.match(await refusedPage(server, clientId), /loopback, private or link-local/, clientId);
      assert.equal(host.hitsOf('/literal.json'), 0);
    });

    test('a name that resolves to loopback (DNS rebinding) is refused at connect time', async () => {
      const port = new URL(host.origin).port;
      host.serve('/rebound.json');
      for (const name of ['rebind.test', 'mapped.test']) {
        const text = await refusedPage(server, `http://${name}:${port}/rebound.json`);
        assert.match(text, /resolves to a loopback, private or link-local address/, name);
      }
      assert.equal(host.hitsOf('/rebound.json'), 0);
      // Refusals name no address.
      const text = await refusedPage(server, `http://rebind.test:${port}/again.json`);
      assert.ok(!text.includes('127.0.0.1'), 'the answer does not say which address was refused');
    });
  });
});

test('CLI: projects update --client-id-metadata-documents / --no-…, shown by projects show', async () => {
  await withCliDatabase<{ client_id_metadata_documents: boolean }>(async ({ env, json }) => {
    await json(['projects', 'create', '--name', 'mcp', '--origin', 'https://mcp.example']);
    assert.equal((await json(['projects', 'show', 'mcp'])).client_id_metadata_documents, false);
    const on = await json(['projects', 'update', 'mcp', '--client-id-metadata-documents']);
    assert.equal(on.client_id_metadata_documents, true);
    assert.match((await run(['projects', 'show', 'mcp'], env)).stdout, /metadata documents: {2}yes/);
    const off = await json(['projects', 'update', 'mcp', '--no-client-id-metadata-documents']);
    assert.equal(off.client_id_metadata_documents, false);
  });
});
