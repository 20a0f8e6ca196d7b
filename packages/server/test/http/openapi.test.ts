import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Type } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import Fastify from 'fastify';
import openapiTS, { astToString } from 'openapi-typescript';
import { checkResponseContract } from '../../src/http/response-contract.js';
import { authorizedClient, basicAuth, startServer, type TestServer } from '../helpers/harness.js';
import { refreshGrant } from '../helpers/sign-in-methods.js';

const OPERATOR_TOKEN = 'operator-token-for-the-openapi-test-0123456789';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
// biome-ignore lint/suspicious/noExplicitAny: the document is inspected member by member
type Doc = any;

async function documentOf(server: TestServer): Promise<Doc> {
  const response = await server.request('GET', '/openapi.json');
  assert.equal(response.status, 200, response.text);
  return response.body;
}

function operations(doc: Doc): Array<{ method: string; path: string; op: Doc }> {
  return Object.entries(doc.paths as Record<string, Doc>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, path, op: item[method] })),
  );
}

test('the OpenAPI document is valid OpenAPI 3.1 and every operation is fully described', async () => {
  // The console on: its routes and its security schemes (console token, Tessera-Project) are in.
  const server = await startServer('sqlite', {
    env: { TESSERA_OPERATOR_TOKEN: OPERATOR_TOKEN, TESSERA_CONSOLE: 'true' },
  });
  try {
    const doc = await documentOf(server);
    assert.ok(doc.paths['/v1/console/me']?.get, 'GET /v1/console/me is documented');
    assert.equal(
      JSON.stringify(doc.paths['/v1/users/search']?.get?.security),
      '[{"basic":[]},{"consoleToken":[],"consoleProject":[]}]',
    );
    assert.equal(doc.openapi, '3.1.0');
    const result = await validate(structuredClone(doc));
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));

    const schemes = doc.components.securitySchemes;
    assert.deepEqual(schemes.apiKey, { type: 'apiKey', in: 'header', name: 'API_KEY_ID' });
    assert.equal(schemes.basic.scheme, 'basic');
    assert.equal(schemes.accessToken.scheme, 'bearer');
    assert.equal(schemes.operatorToken.scheme, 'bearer');
    for (const name of ['Problem', 'OAuthError', 'TokenBundle', 'SignInResult'])
      assert.ok(doc.components.schemas[name], `components.schemas.${name}`);

    const ops = operations(doc);
    const ids = new Set<string>();
    for (const { method, path, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(op.operationId, `${where}: operationId`);
      assert.ok(!ids.has(op.operationId), `${where}: operationId ${op.operationId} is unique`);
      ids.add(op.operationId);
      assert.ok(op.summary, `${where}: summary`);
      assert.ok(op.tags?.length, `${where}: tags`);
      for (const tag of op.tags)
        assert.ok(
          doc.tags.some((t: Doc) => t.name === tag),
          `${where}: tag ${tag} is declared`,
        );
      for (const requirement of op.security ?? [])
        for (const name of Object.keys(requirement)) assert.ok(schemes[name], `${where}: scheme ${name}`);

      const success = Object.entries(op.responses as Record<string, Doc>).filter(([s]) => /^2/.test(s));
      assert.ok(success.length > 0, `${where}: a 2xx response`);
      for (const [status, response] of success) {
        if (status === '204') continue;
        const content = Object.values(response.content ?? {}) as Doc[];
        assert.ok(content[0]?.schema, `${where}: ${status} has a schema`);
      }

      // The hosted pages (issue 31) answer in HTML, errors included.
      if (['/oauth/authorize', '/oauth/logout'].includes(path)) {
        for (const status of ['4XX', '5XX'])
          assert.ok(op.responses[status]?.content?.['text/html'], `${where}: ${status}`);
        continue;
      }
      const format = path.startsWith('/oauth/')
        ? ['application/json', '#/components/schemas/OAuthError']
        : path === '/verify'
          ? ['application/json', '#/components/schemas/VerifyAnswer']
          : ['application/problem+json', '#/components/schemas/Problem'];
      for (const status of ['4XX', '5XX'])
        assert.equal(
          op.responses[status]?.content?.[format[0]!]?.schema?.$ref,
          format[1],
          `${where}: ${status}`,
        );
    }
    // The families and their credentials.
    const byId = new Map(ops.map((o) => [o.op.operationId as string, o.op]));
    assert.deepEqual(byId.get('startOtp').security, [{ apiKey: [] }]);
    assert.deepEqual(byId.get('listDevices').security, [{ accessToken: [] }]);
    assert.deepEqual(byId.get('getUser').security, [{ basic: [] }, { consoleToken: [], consoleProject: [] }]);
    assert.deepEqual(byId.get('introspectToken').security, [{ basic: [] }]);
    assert.deepEqual(byId.get('listProjects').security, [{ operatorToken: [] }, { consoleToken: [] }]);
    assert.deepEqual(byId.get('consoleMe').security, [{ consoleToken: [] }]);
    // RFC 6749 clients send forms; JSON is accepted too.
    for (const id of ['refreshTokens', 'revokeToken', 'introspectToken'])
      assert.deepEqual(Object.keys(byId.get(id).requestBody.content).sort(), [
        'application/json',
        'application/x-www-form-urlencoded',
      ]);
    // Development routes are documented only where they exist; the demo's files never.
    assert.equal(byId.get('listDevOutbox').tags[0], 'development');
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/demo')));
    assert.ok(ops.length >= 55, `${ops.length} operations`);
  } finally {
    await server.close();
  }
});

// Issue 30: SignInResult had no required member, grant_type was a free string, and the integrator
// API answered client_user_id null while the tokens carried the user's id.
test('what is always present is required; answers validate against the document; the integrator API and the tokens agree on client_user_id', async () => {
  const server = await startServer('sqlite');
  try {
    const doc = await documentOf(server);
    const schemas = doc.components.schemas;
    const refOf = (name: string) => `#/components/schemas/${name}`;
    const shapes = (schemas.SignInResult.anyOf ?? schemas.SignInResult.oneOf ?? []) as Doc[];
    assert.deepEqual(
      shapes.map((shape) => schemas[shape.$ref.split('/').at(-1)].required),
      [['oauth_token'], ['user_id', 'auth_method']],
      'SignInResult: the bundle, or who signed in and how, each required',
    );
    assert.deepEqual([...schemas.TokenBundle.required].sort(), [
      'access_token',
      'auth_method',
      'expires_in',
      'id_token',
      'refresh_token',
      'token_type',
    ]);
    assert.ok(schemas.Problem.required.includes('detail'), 'a problem always has its detail');
    assert.deepEqual(schemas.User.properties.client_user_id.type, 'string', 'never null');
    assert.ok(schemas.User.required.includes('client_user_id'));
    for (const content of Object.values(doc.paths['/oauth/token'].post.requestBody.content) as Doc[])
      assert.deepEqual(content.schema.properties.grant_type.enum, ['refresh_token', 'authorization_code']);

    // Answers validated against the document's own schemas (required members, no null where none).
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const [name, schema] of Object.entries(schemas as Record<string, Doc>))
      ajv.addSchema({ ...schema, $id: undefined }, refOf(name));
    const conforms = (name: string, value: unknown) => {
      const check = ajv.getSchema(refOf(name))!;
      assert.ok(check(value), `${name}: ${JSON.stringify(check.errors)}`);
    };

    const email = 'agree@example.com';
    const bundle = await server.signIn(email);
    const userId = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sub;
    const integrator = authorizedClient(server, basicAuth(server.project));
    const claimOf = (token: string) =>
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).client_user_id;
    let refreshToken = bundle.refresh_token;
    const refreshed = async () => {
      const answer = await refreshGrant(server, refreshToken);
      assert.equal(answer.status, 200, answer.text);
      conforms('TokenBundle', answer.body);
      refreshToken = answer.body.refresh_token;
      return answer.body;
    };
    const userinfo = async (token: string) =>
      (await server.request('GET', '/oauth/userinfo', { headers: { authorization: `Bearer ${token}` } }))
        .body;

    for (const set of [undefined, 'crm-42', null]) {
      if (set !== undefined) {
        const patched = await integrator('PATCH', `/v1/users/${userId}`, { client_user_id: set });
        assert.equal(patched.status, 200, patched.text);
        conforms('User', patched.body);
      }
      const expected = set ?? userId;
      const tokens = await refreshed();
      const read = await integrator('GET', `/v1/users/${userId}`);
      conforms('User', read.body);
      const byIdentifier = await integrator('GET', `/v1/users?identifier=${encodeURIComponent(email)}`);
      const where = `client_user_id after setting ${JSON.stringify(set)}`;
      assert.equal(read.body.client_user_id, expected, `${where}: GET /v1/users/{id}`);
      assert.equal(byIdentifier.body.client_user_id, expected, `${where}: GET /v1/users?identifier`);
      assert.equal(claimOf(tokens.access_token), expected, `${where}: access token`);
      assert.equal(claimOf(tokens.id_token), expected, `${where}: ID token`);
      assert.equal((await userinfo(tokens.access_token)).client_user_id, expected, `${where}: userinfo`);
    }

    // Both shapes of a sign-in answer, and a problem, conform.
    const other = 'shapes@example.com';
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: other },
      headers: { api_key_id: server.project.api_key_id },
    });
    const wrong = await server.request('POST', '/v1/auth/otp/complete', {
      body: {
        challenge_id: started.body.challenge_id,
        code: '000000' === server.lastCode(other) ? '111111' : '000000',
      },
      headers: { api_key_id: server.project.api_key_id },
    });
    conforms('Problem', wrong.body);
    const noTokens = await server.request('POST', '/v1/auth/otp/complete', {
      body: { challenge_id: started.body.challenge_id, code: server.lastCode(other), getOAuthToken: false },
      headers: { api_key_id: server.project.api_key_id },
    });
    assert.equal(noTokens.status, 200, noTokens.text);
    conforms('SignInResult', noTokens.body);
    conforms('SignInResult', { oauth_token: bundle });
    const unsupported = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'password', client_id: server.project.api_key_id },
    });
    assert.equal(unsupported.status, 400, unsupported.text);
    assert.equal(unsupported.body.error, 'unsupported_grant_type');
  } finally {
    await server.close();
  }
});

test('without the development outbox the document has no development route', async () => {
  const server = await startServer('sqlite', {
    env: { TESSERA_DELIVERY: 'live', TESSERA_SMTP_URL: 'smtp://127.0.0.1:1', TESSERA_MAIL_FROM: 'a@b.test' },
  });
  try {
    const doc = await documentOf(server);
    assert.ok(!('/dev/outbox' in doc.paths));
    assert.ok(!doc.paths['/v1/operator/projects'], 'no operator routes without the operator token');
  } finally {
    await server.close();
  }
});

const USAGE = `
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type Problem = components['schemas']['Problem'];

/** OTP sign-in → dev outbox → wrong code (a typed problem) → right code → /verify → refresh. */
export async function signInAndVerify(baseUrl: string, apiKeyId: string, email: string) {
  const client = createClient<paths>({ baseUrl, headers: { API_KEY_ID: apiKeyId } });
  const started = await client.POST('/v1/auth/otp/start', { body: { identifier: email } });
  if (!started.data) throw new Error('otp/start failed');
  const channel: 'email' | 'sms' = started.data.channel;

  const outbox = await client.GET('/dev/outbox');
  const code = outbox.data?.find((m) => m.to === email)?.code;
  if (!code) throw new Error('no code in the outbox');

  const wrong = await client.POST('/v1/auth/otp/complete', {
    body: { challenge_id: started.data.challenge_id, code: code === '000000' ? '111111' : '000000' },
  });
  const problem: Problem | undefined = wrong.error;

  const done = await client.POST('/v1/auth/otp/complete', {
    body: { challenge_id: started.data.challenge_id, code, getOAuthToken: true },
  });
  // SignInResult is one of two shapes, each with its members required: narrow, then no undefined.
  if (!done.data || !('oauth_token' in done.data)) throw new Error('no token bundle');
  const bundle = done.data.oauth_token;
  const method: 'OTP' | 'TRUSTED DEVICE' | 'PIN' | 'BIOMETRIC' = bundle.auth_method;
  const expiresIn: number = bundle.expires_in;

  const verified = await client.POST('/verify', { body: { oauth_token: { access_token: bundle.access_token } } });
  const success: boolean | undefined = verified.data?.success;

  const refreshed = await client.POST('/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: bundle.refresh_token, client_id: apiKeyId },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  const rotated: string | undefined = refreshed.data?.refresh_token;
  const oauthError: string | undefined = (await client.POST('/oauth/token', {
    body: { grant_type: 'refresh_token', client_id: apiKeyId },
  })).error?.error;

  const detail: string | undefined = problem?.detail;
  return { channel, problem, detail, method, expiresIn, success, rotated, oldRefresh: bundle.refresh_token, oauthError };
}
`;

test('a client generated from the document type-checks and signs in against the server', async () => {
  const server = await startServer('sqlite');
  const here = dirname(fileURLToPath(import.meta.url));
  // Inside the package, so the generated code resolves openapi-fetch from the workspace.
  const dir = mkdtempSync(join(here, '..', '.openapi-client-'));
  try {
    const doc = await documentOf(server);
    writeFileSync(join(dir, 'schema.d.ts'), astToString(await openapiTS(doc)));
    writeFileSync(join(dir, 'usage.ts'), USAGE);

    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const checked = spawnSync(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--lib',
        'es2022,dom',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        join(dir, 'schema.d.ts'),
        join(dir, 'usage.ts'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(checked.status, 0, `tsc: ${checked.stdout}${checked.stderr}`);

    const usage = await import(pathToFileURL(join(dir, 'usage.ts')).href);
    const outcome = await usage.signInAndVerify(server.url, server.project.api_key_id, 'typed@example.com');
    assert.equal(outcome.channel, 'email');
    assert.equal(outcome.problem?.code, 'invalid_code');
    assert.equal(outcome.method, 'OTP');
    assert.equal(typeof outcome.expiresIn, 'number');
    assert.equal(typeof outcome.detail, 'string');
    assert.equal(outcome.success, true);
    assert.ok(outcome.rotated && outcome.rotated !== outcome.oldRefresh);
    assert.equal(outcome.oauthError, 'invalid_request');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});

test('the type-check of the generated client fails on a misuse (the check is real)', async () => {
  const server = await startServer('sqlite');
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = mkdtempSync(join(here, '..', '.openapi-client-'));
  try {
    writeFileSync(join(dir, 'schema.d.ts'), astToString(await openapiTS(await documentOf(server))));
    writeFileSync(
      join(dir, 'usage.ts'),
      `import createClient from 'openapi-fetch';
import type { paths } from './schema.js';
const client = createClient<paths>({ baseUrl: 'http://x' });
export const wrong = client.POST('/v1/auth/otp/start', { body: { identifer: 'typo' } });
export const grant = client.POST('/oauth/token', { body: { grant_type: 'password' } });
export async function unnarrowed() {
  const done = await client.POST('/v1/auth/otp/complete', { body: { challenge_id: 'c', code: '1' } });
  return done.data?.oauth_token.access_token;
}
`,
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const checked = spawnSync(
      process.execPath,
      [
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        join(dir, 'usage.ts'),
      ],
      { encoding: 'utf8' },
    );
    assert.notEqual(checked.status, 0);
    assert.match(checked.stdout, /identifer/);
    // grant_type is an enum, and a sign-in answer must be narrowed before its bundle is read.
    assert.match(checked.stdout, /usage\.ts\(5,[^\n]*'"password"'/);
    assert.match(checked.stdout, /usage\.ts\(8,[^\n]*oauth_token/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  }
});

test('/docs renders the document with its script served by Tessera, nothing from a CDN', async () => {
  const server = await startServer('sqlite');
  try {
    // /docs redirects to /docs/, against which the page's relative sources resolve.
    const response = await fetch(`${server.url}/docs`);
    const page = { status: response.status, headers: response.headers, text: await response.text() };
    assert.equal(response.url, `${server.url}/docs/`);
    assert.equal(page.status, 200, page.text);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.text, /\/openapi\.json/);
    assert.doesNotMatch(page.text, /https?:\/\//, 'no absolute URL: nothing from elsewhere');
    const sources = [...page.text.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(sources.length > 0, 'the page loads a script');
    for (const source of sources) {
      const url = new URL(source, response.url);
      assert.equal(url.origin, server.url, `${source} is served locally`);
      const asset = await fetch(url);
      assert.equal(asset.status, 200, source);
      assert.ok((await asset.arrayBuffer()).byteLength > 1000, `${source} has content`);
    }
  } finally {
    await server.close();
  }
});

test('the response contract check fails an answer whose schema would drop a member', async () => {
  const app = Fastify();
  checkResponseContract(app);
  const schema = { response: { 200: Type.Object({ kept: Type.String() }) } };
  app.get('/drops', { schema }, async () => ({ kept: 'a', dropped: 'b' }));
  app.get('/keeps', { schema }, async () => ({ kept: 'a' }));
  const errors: string[] = [];
  const original = console.error;
  console.error = (message: string) => errors.push(message);
  try {
    assert.equal((await app.inject({ url: '/keeps' })).statusCode, 200);
    assert.equal((await app.inject({ url: '/drops' })).statusCode, 500);
    assert.match(errors.join('\n'), /GET \/drops \(200\) does not match the answer at \$\.dropped/);
  } finally {
    console.error = original;
    await app.close();
  }
});
