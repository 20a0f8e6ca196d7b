import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertOneLineError, run, withCliDatabase } from '../helpers/cli.js';
import {
  assertProblem,
  authorizedClient,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../helpers/harness.js';

// The sign-in UI's branding (migration 017): set by the integrator (PUT /v1/project/branding), the
// operator (PATCH /v1/operator/projects/{id}) and the CLI; read by any page, with the API key id,
// at GET /v1/projects/{api_key_id}/branding.
const TOKEN = randomBytes(32).toString('base64url');

eachDialect('sign-in branding', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: TOKEN } });
  });
  after(() => server?.close());

  const publicRead = (apiKeyId: string, origin = 'https://anywhere.example') =>
    server.request('GET', `/v1/projects/${apiKeyId}/branding`, { headers: { origin } });

  test('a project without branding: its name, no logo or colours, its sign-in options', async () => {
    const created = await server.ctx.projects.create({
      name: 'plain',
      origins: ['https://plain.example'],
      deviceRequiresPin: true,
      smsCountries: 'FR,DE',
    });
    const answer = await publicRead(created.api_key_id);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      name: 'plain',
      logo_url: null,
      primary_color: null,
      primary_color_dark: null,
      device_requires_pin: true,
      passkeys: true,
      sms_countries: [
        { country: 'FR', calling_code: '33' },
        { country: 'DE', calling_code: '49' },
      ],
    });
    // Any origin may read it (it shows on any sign-in page); browsers and proxies may keep it.
    assert.equal(answer.headers.get('access-control-allow-origin'), '*');
    assert.match(answer.headers.get('cache-control') ?? '', /public, max-age=300/);
    // The server's default countries ('*' unless TESSERA_SMS_COUNTRIES): every country.
    const all = (await publicRead(server.project.api_key_id)).body as {
      sms_countries: unknown[];
      passkeys: boolean;
    };
    assert.ok(all.sms_countries.length > 200, `${all.sms_countries.length} countries`);
    assert.deepEqual(
      all.sms_countries.find((c) => (c as { country: string }).country === 'US'),
      { country: 'US', calling_code: '1' },
    );
  });

  test('an unknown API key id is a 404 problem document', async () => {
    assertProblem(await publicRead('pk_nobody'), 404, 'unknown_api_key');
    assertProblem(await publicRead('not%20an%20id'), 404, 'unknown_api_key');
  });

  test('the integrator sets and reads its branding; the public read shows it at once', async () => {
    const integrator = authorizedClient(server, basicAuth(server.project), '/v1/project');
    assert.deepEqual((await integrator('GET', '/branding')).body, {});
    const set = await integrator('PUT', '/branding', {
      display_name: 'Acme Cloud',
      logo_url: 'https://cdn.acme.example/logo.svg',
      primary_color: '#0A7C5A',
    });
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body, {
      display_name: 'Acme Cloud',
      logo_url: 'https://cdn.acme.example/logo.svg',
      primary_color: '#0a7c5a',
    });
    const read = (await publicRead(server.project.api_key_id)).body as Record<string, unknown>;
    assert.equal(read.name, 'Acme Cloud');
    assert.equal(read.logo_url, 'https://cdn.acme.example/logo.svg');
    assert.equal(read.primary_color, '#0a7c5a');
    assert.equal(read.primary_color_dark, null);
    // Each bad member is refused with a reason naming it; nothing changes.
    for (const [body, reason] of [
      [{ primary_color: 'green' }, /primary_color/],
      [{ logo_url: 'http://cdn.acme.example/logo.svg' }, /logo_url must be an https URL/],
      [{ logo_url: 'javascript:alert(1)' }, /logo_url/],
      [{ display_name: 'a\u0007b' }, /display_name/],
      [{ font: 'Comic Sans' }, /font/],
    ] as const) {
      const refused = await integrator('PUT', '/branding', body);
      assertProblem(refused, 400, 'invalid_request');
      assert.match(JSON.stringify(refused.body), reason);
    }
    assert.equal(
      ((await integrator('GET', '/branding')).body as { display_name: string }).display_name,
      'Acme Cloud',
    );
    // {} removes it.
    assert.deepEqual((await integrator('PUT', '/branding', {})).body, {});
    assert.equal(((await publicRead(server.project.api_key_id)).body as { name: string }).name, 'test');
    assertProblem(
      await authorizedClient(server, 'Basic bm9ib2R5Om5vdGhpbmc=', '/v1/project')('GET', '/branding'),
      401,
      'invalid_client',
    );
  });

  test('the operator sets branding with the other settings, and sees it in the project', async () => {
    const operator = authorizedClient(server, `Bearer ${TOKEN}`, '/v1/operator');
    const id = server.project.api_key_id;
    const patched = await operator('PATCH', `/projects/${id}`, {
      branding: { display_name: 'Operated', primary_color_dark: '#9DB8FF' },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual((patched.body as { branding: unknown }).branding, {
      display_name: 'Operated',
      primary_color_dark: '#9db8ff',
    });
    assert.equal(
      ((await publicRead(id)).body as { primary_color_dark: string }).primary_color_dark,
      '#9db8ff',
    );
    const cleared = await operator('PATCH', `/projects/${id}`, { branding: null });
    assert.equal((cleared.body as { branding: unknown }).branding, null);
  });
});

eachDialect('sign-in branding reads are limited per address', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: { TESSERA_RATE_LIMIT_IP: '3/60' } });
  });
  after(() => server?.close());

  test('past the per-IP limit: 429 with Retry-After', async () => {
    const read = () => server.request('GET', `/v1/projects/${server.project.api_key_id}/branding`);
    for (let i = 0; i < 3; i++) assert.equal((await read()).status, 200);
    const refused = await read();
    assertProblem(refused, 429, 'rate_limited');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
  });
});

test('CLI: projects update sets branding members one by one, shows them, and clears them', async () => {
  await withCliDatabase<{ branding: unknown }>(async ({ env, json }) => {
    await json(['projects', 'create', '--name', 'acme', '--origin', 'https://acme.example']);
    await json(['projects', 'update', 'acme', '--brand-name', 'Acme', '--primary-color', '#112233']);
    const updated = await json(['projects', 'update', 'acme', '--logo-url', 'https://acme.example/logo.png']);
    assert.deepEqual(updated.branding, {
      display_name: 'Acme',
      primary_color: '#112233',
      logo_url: 'https://acme.example/logo.png',
    });
    const shown = await run(['projects', 'show', 'acme'], env);
    assert.match(
      shown.stdout,
      /sign-in branding: {4}display_name Acme, logo_url https:\/\/acme.example\/logo.png, primary_color #112233\n/,
    );
    assertOneLineError(
      await run(['projects', 'update', 'acme', '--primary-color', 'red'], env),
      2,
      /branding\.primary_color must be a colour as #rrggbb/,
    );
    assert.equal((await json(['projects', 'update', 'acme', '--clear-branding'])).branding, null);
  });
});
