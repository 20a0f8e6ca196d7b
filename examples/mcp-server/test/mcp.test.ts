// The official MCP TypeScript SDK's client, with no prior configuration, connects to the example
// MCP server protected by Tessera: 401 with resource_metadata → Protected Resource Metadata (RFC
// 9728) → the project's authorization server metadata at the path-inserted URL (RFC 8414) → Dynamic
// Client Registration (RFC 7591) → authorization with PKCE S256 and `resource` (RFC 8707) on the
// hosted pages, driven in Chromium (code from the dev outbox, consent) → a token bound to the
// server's URL → the `whoami` tool. The SDK's `auth()` flow runs unmodified; the provider below is
// the storage and redirect hooks every SDK user writes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import { type Browser, chromium } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../../packages/server/test/helpers/chromium.js';
import {
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../../../packages/server/test/helpers/harness.js';
import { createMcpApp } from '../src/server.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const ARTEFACTS = join(ROOT, 'test-artifacts', 'mcp');

/** An MCP client's OAuth state, in memory; the redirect is recorded for the test's browser. */
class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Example MCP client',
      redirect_uris: [this.redirectUrl],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

test('docs/OIDC.md shows the example’s own code (its mcp-server snippet is in src/server.ts as written)', () => {
  const docs = readFileSync(join(ROOT, 'docs/OIDC.md'), 'utf8');
  const snippet = /<!-- snippet: mcp-server -->\n```ts\n([\s\S]*?)\n```\n/.exec(docs)?.[1];
  assert.ok(snippet, 'docs/OIDC.md has the mcp-server snippet');
  assert.ok(readFileSync(join(ROOT, 'examples/mcp-server/src/server.ts'), 'utf8').includes(snippet));
});

describe('an MCP client with no configuration connects to examples/mcp-server through Tessera', {
  skip: !existsSync(CHROMIUM) && `${CHROMIUM} not found`,
}, () => {
  let tessera: TestServer;
  let mcp: Server;
  let mcpUrl = '';
  let callback: Server;
  let browser: Browser;
  const requests: string[] = [];

  before(async () => {
    mkdirSync(ARTEFACTS, { recursive: true });
    const bundled = spawnSync(
      process.execPath,
      [join(ROOT, 'packages/server/scripts/bundle-hosted.mjs'), '--source'],
      { stdio: 'inherit' },
    );
    assert.equal(bundled.status, 0);
    tessera = await startServer('sqlite', {
      env: RELAXED_LIMITS,
      onRoute: (route) => {
        const handler = route.handler;
        route.handler = function (this: unknown, request, reply) {
          requests.push(`${request.method} ${request.url}`);
          return handler.call(this as never, request, reply);
        };
      },
    });
    // The project lets MCP clients register themselves (off by default).
    await tessera.ctx.projects.update(tessera.project.api_key_id, { openRegistration: true });
    mcp = createServer();
    mcp.listen(0, '127.0.0.1');
    await once(mcp, 'listening');
    mcpUrl = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
    mcp.on(
      'request',
      createMcpApp({ issuer: tessera.url, apiKeyId: tessera.project.api_key_id, resource: mcpUrl }),
    );
    callback = createServer((_req, res) => res.end('You may close this window.'));
    callback.listen(0, '127.0.0.1');
    await once(callback, 'listening');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    mcp?.closeAllConnections();
    mcp?.close();
    callback?.close();
    await tessera?.close();
  });

  test('discovers, registers, signs in on the hosted page, gets a resource-bound token and calls whoami', async () => {
    const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    const provider = new MemoryProvider(redirectUrl);
    const first = new Client({ name: 'example-mcp-client', version: '1.0.0' });
    await assert.rejects(
      first.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider })),
      UnauthorizedError,
    );
    // Discovery went through the project's metadata at the path-inserted URL, then registered.
    const path = `/projects/${tessera.project.api_key_id}`;
    assert.ok(requests.includes(`GET /.well-known/oauth-authorization-server${path}`), requests.join('\n'));
    assert.ok(requests.includes(`POST /oauth/register/${tessera.project.api_key_id}`), requests.join('\n'));
    assert.match(provider.client!.client_id, /^tc_/);

    // What the SDK asks for: code, PKCE S256, the resource of the MCP server, the PRM's scopes.
    const asked = provider.authorizationUrl!;
    assert.equal(`${asked.origin}${asked.pathname}`, `${tessera.url}/oauth/authorize`);
    assert.equal(asked.searchParams.get('response_type'), 'code');
    assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(asked.searchParams.get('resource'), mcpUrl);
    assert.equal(asked.searchParams.get('scope'), 'openid email');

    const page = await browser.newPage();
    await page.goto(asked.href);
    await page.waitForURL(/\/oauth\/sign-in\?/);
    const email = uniqueEmail('mcp');
    const element = page.locator('tessera-sign-in');
    await element.getByLabel('E-mail or phone number').fill(email);
    await element.getByRole('button', { name: 'Send code' }).click();
    await element.getByLabel('Code').waitFor();
    await element.getByLabel('Code').fill(tessera.lastCode(email));
    await element
      .getByRole('button', { name: 'Sign in', exact: true })
      .click({ timeout: 1000 })
      .catch(() => {});
    const consentOrOffers = async () => {
      for (let i = 0; i < 10; i++) {
        const skip = element.getByRole('button', { name: /^(Not now|Continue)$/ }).first();
        const atConsent = await Promise.race([
          page.waitForURL(/\/oauth\/consent\?/, { timeout: 15_000 }).then(() => true),
          skip.waitFor({ timeout: 15_000 }).then(() => false),
        ]).catch(() => false);
        if (atConsent) return;
        await skip.click().catch(() => {});
      }
    };
    await consentOrOffers();
    // An openly registered client is third-party: the user is asked.
    await page.waitForURL(/\/oauth\/consent\?/);
    await page.screenshot({ path: join(ARTEFACTS, 'consent.png') });
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.href.startsWith(redirectUrl));
    const answer = new URL(page.url());
    await page.close();
    assert.equal(answer.searchParams.get('iss'), tessera.url);

    // The SDK exchanges the code (with the verifier and the resource) and keeps the tokens.
    const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider });
    await transport.finishAuth(answer.searchParams.get('code')!);
    const claims = decodeJwt(provider.saved!.access_token);
    assert.equal(claims.aud, mcpUrl);
    assert.equal(claims.api_key_id, tessera.project.api_key_id);
    assert.equal(claims.client_id, provider.client!.client_id);

    const client = new Client({ name: 'example-mcp-client', version: '1.0.0' });
    await client.connect(transport);
    const tools = await client.listTools();
    assert.deepEqual(
      tools.tools.map((t) => t.name),
      ['whoami'],
    );
    const result = await client.callTool({ name: 'whoami', arguments: {} });
    const who = result.structuredContent as Record<string, unknown>;
    assert.equal(who.identifier, email);
    assert.equal(who.client_id, provider.client!.client_id);
    assert.equal(who.audience, mcpUrl);
    await client.close();

    // A token of the project's apps (aud: the API key id) is refused by the MCP server.
    const appToken = (await tessera.signIn(uniqueEmail('app'))).access_token;
    const refused = await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${appToken}`, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(refused.status, 401);
    assert.match(
      refused.headers.get('www-authenticate') ?? '',
      /resource_metadata="[^"]+oauth-protected-resource\/mcp"/,
    );
  });
});
