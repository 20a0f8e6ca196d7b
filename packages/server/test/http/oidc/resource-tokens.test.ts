/**
 * Tokens bound to a resource (RFC 8707: `aud` is the resource server's URL, `api_key_id` its
 * project) at `POST /verify` and `GET /oauth/userinfo` (issue 31). A resource server without a
 * backend library names itself with `resource`; userinfo, a resource of the authorization server,
 * takes tokens of the project and tokens bound to the issuer or to the userinfo URL.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import { eachDialect, RELAXED_LIMITS, startServer, type TestServer } from '../../helpers/harness.js';
import { Browser, codeFlowTokens, registerClient } from '../../helpers/oidc.js';

const REDIRECT = 'http://127.0.0.1/callback';
const MCP = 'https://mcp.example.com/mcp';

eachDialect('resource-bound tokens at /verify and /oauth/userinfo', (dialect) => {
  let server: TestServer;
  let plain: string;
  let bound: string;
  let forUserinfo: string;
  let forIssuer: string;
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS });
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const flow = (resource?: string) =>
      codeFlowTokens(server, browser, {
        clientId: client.client_id,
        redirectUri: REDIRECT,
        email: 'resource@example.com',
        ...(resource ? { resource } : {}),
      });
    plain = (await flow()).access_token;
    bound = (await flow(MCP)).access_token;
    forUserinfo = (await flow(`${server.url}/oauth/userinfo`)).access_token;
    forIssuer = (await flow(server.url)).access_token;
  });
  after(() => server.close());

  const verify = (token: string, body: Record<string, unknown> = {}, apiKeyId?: string) =>
    server.request('POST', '/verify', {
      body: { oauth_token: { access_token: token }, ...body },
      headers: apiKeyId === undefined ? {} : { api_key_id: apiKeyId },
    });
  const refused = (reason: string) => ({ success: false, reason });

  test('the token is bound: aud is the resource, api_key_id its project', () => {
    const claims = JSON.parse(Buffer.from(bound.split('.')[1]!, 'base64url').toString());
    assert.equal(claims.aud, MCP);
    assert.equal(claims.api_key_id, server.project.api_key_id);
  });

  test('/verify with resource: valid for that resource (and its project), refused for another', async () => {
    // Twice each: the second answer comes from the verified-token cache (and the fast path).
    for (let i = 0; i < 2; i++) {
      assert.deepEqual((await verify(bound, { resource: MCP })).body, { success: true });
      assert.deepEqual((await verify(bound, { resource: MCP }, server.project.api_key_id)).body, {
        success: true,
      });
      assert.deepEqual(
        (await verify(bound, { resource: MCP }, 'pk_another_project')).body,
        refused(VerifyReasons.wrongAudience),
      );
      assert.deepEqual(
        (await verify(bound, { resource: 'https://other.example.com/api' })).body,
        refused(VerifyReasons.wrongResource),
      );
      // A token of the project (not bound) is not a token for the resource.
      assert.deepEqual((await verify(plain, { resource: MCP })).body, refused(VerifyReasons.wrongResource));
    }
  });

  test('/verify without resource: the contract is unchanged, and a bound token is refused', async () => {
    assert.deepEqual((await verify(plain)).body, { success: true });
    assert.deepEqual((await verify(plain, {}, server.project.api_key_id)).body, { success: true });
    assert.deepEqual((await verify(bound)).body, refused(VerifyReasons.wrongResource));
    assert.deepEqual(
      (await verify(bound, {}, server.project.api_key_id)).body,
      refused(VerifyReasons.wrongAudience),
    );
  });

  test('/verify: a malformed resource is a 400 with the contract body', async () => {
    for (const resource of [5, '', 'x'.repeat(2001), null]) {
      const answer = await verify(bound, { resource });
      assert.equal(answer.status, 400, `${JSON.stringify(resource)}: ${answer.text}`);
      assert.equal(answer.body.success, false);
      assert.equal(typeof answer.body.reason, 'string');
    }
  });

  test('/oauth/userinfo: tokens of the project, or bound to the issuer or to userinfo; not another resource', async () => {
    const userinfo = (token: string) =>
      server.request('GET', '/oauth/userinfo', { headers: { authorization: `Bearer ${token}` } });
    for (const token of [plain, forUserinfo, forIssuer]) {
      const answer = await userinfo(token);
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.email, 'resource@example.com');
    }
    const other = await userinfo(bound);
    assert.equal(other.status, 401, other.text);
    assert.match(other.headers.get('www-authenticate') ?? '', /invalid_token/);
    assert.match(other.text, /issued for another resource/);
  });

  test('the user’s own endpoints (/v1/me/*) take tokens of the project alone', async () => {
    for (const token of [bound, forUserinfo]) {
      const answer = await server.request('GET', '/v1/me/grants', {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(answer.status, 401, answer.text);
    }
    const own = await server.request('GET', '/v1/me/grants', {
      headers: { authorization: `Bearer ${plain}` },
    });
    assert.equal(own.status, 200, own.text);
  });
});
