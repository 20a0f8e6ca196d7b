import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Delivery, OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import { renderOtpEmail, renderOtpSms } from '../../src/modules/otp/delivery/templates/render.js';
import { run } from '../helpers/cli.js';
import { eachDialect, RELAXED_LIMITS, startServer, type TestServer } from '../helpers/harness.js';

const TOKEN = randomBytes(32).toString('base64url');

/** A delivery that keeps what it is handed, as a provider would receive it. */
class Capture implements Delivery {
  readonly sent: OtpMessage[] = [];
  async send(message: OtpMessage): Promise<void> {
    this.sent.push(message);
  }
  async notify(): Promise<void> {}
  async close(): Promise<void> {}
}

const TEMPLATES = {
  brand: 'Acme <Cloud>',
  default_locale: 'fr',
  locales: {
    fr: { sms_text: '{{brand}} : votre code est {{code}}' },
    es: {
      email_subject: 'Tu código de {{brand}}',
      email_text: 'Código: {{code}} ({{lifetime}})',
      email_html: '<p>{{brand}}</p><p>{{code}}</p>',
    },
  },
};

async function start(
  server: TestServer,
  identifier: string,
  body: object = {},
  headers: Record<string, string> = {},
) {
  return server.request('POST', '/v1/auth/otp/start', {
    body: { identifier, ...body },
    headers: { api_key_id: server.project.api_key_id, ...headers },
  });
}

eachDialect('message templates', (dialect) => {
  test('operator-set templates, the locale field and Accept-Language choose the texts; WebOTP line on SMS', async () => {
    const capture = new Capture();
    const server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: TOKEN },
      delivery: capture,
    });
    try {
      const path = `/v1/operator/projects/${server.project.api_key_id}`;
      const auth = { authorization: `Bearer ${TOKEN}` };
      const set = await server.request('PATCH', path, {
        body: { message_templates: TEMPLATES },
        headers: auth,
      });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(set.body.message_templates, TEMPLATES);
      assert.deepEqual(
        (await server.request('GET', path, { headers: auth })).body.message_templates,
        TEMPLATES,
      );

      // The explicit locale wins over Accept-Language.
      assert.equal(
        (await start(server, '+14155550101', { locale: 'fr-CA' }, { 'accept-language': 'de' })).status,
        200,
      );
      let sent = capture.sent.at(-1)!;
      assert.equal(sent.locale, 'fr');
      assert.equal(sent.webOtpDomain, 'app.test');
      assert.equal(
        renderOtpSms(sent),
        `Acme <Cloud> : votre code est ${sent.code}\n\n@app.test #${sent.code}`,
      );

      // Accept-Language alone; German has no project texts: the built-in ones with the brand.
      assert.equal(
        (await start(server, '+14155550102', {}, { 'accept-language': 'it;q=0.9, de;q=0.8' })).status,
        200,
      );
      sent = capture.sent.at(-1)!;
      assert.equal(sent.locale, 'de');
      assert.match(renderOtpSms(sent), new RegExp(`^${sent.code} ist Ihr Anmeldecode für Acme <Cloud>\\.`));

      // A project locale with no built-in texts, by e-mail: no WebOTP line on e-mail.
      assert.equal((await start(server, 'ana@example.com', { locale: 'es' })).status, 200);
      sent = capture.sent.at(-1)!;
      assert.equal(sent.webOtpDomain, undefined);
      const email = renderOtpEmail(sent);
      assert.equal(email.subject, 'Tu código de Acme <Cloud>');
      assert.equal(email.html, `<p>Acme &#60;Cloud&#62;</p><p>${sent.code}</p>`);
      assert.equal(email.text, `Código: ${sent.code} (5 minutos)`);

      // No language given: the project's default locale.
      assert.equal((await start(server, '+14155550103')).status, 200);
      assert.equal(capture.sent.at(-1)!.locale, 'fr');

      // A malformed locale is a 400; a well-formed unknown one falls back.
      const bad = await start(server, '+14155550104', { locale: 'fr_FR!' });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /locale/);
      assert.equal((await start(server, '+14155550105', { locale: 'ja' })).status, 200);
      assert.equal(capture.sent.at(-1)!.locale, 'fr');

      // Refused templates name the problem; the stored ones stay.
      const refused = await server.request('PATCH', path, {
        body: { message_templates: { locales: { en: { sms_text: 'Code {{code}} for {{user}}' } } } },
        headers: auth,
      });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.detail, /locales\.en\.sms_text: unknown placeholder \{\{user\}\}/);
      assert.deepEqual(
        (await server.request('GET', path, { headers: auth })).body.message_templates,
        TEMPLATES,
      );

      // null goes back to the built-in texts.
      const cleared = await server.request('PATCH', path, {
        body: { message_templates: null },
        headers: auth,
      });
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.message_templates, null);
    } finally {
      await server.close();
    }
  });
});

test('tessera projects update --template-file stores the templates; a bad file is refused with the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-templates-'));
  const env = { TESSERA_DATA_DIR: dir, TESSERA_MASTER_KEY: randomBytes(32).toString('base64') };
  try {
    const created = await run(
      ['projects', 'create', '--name', 'acme', '--origin', 'https://app.acme.test'],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify(TEMPLATES));
    const updated = await run(['projects', 'update', 'acme', '--template-file', good, '--json'], env);
    assert.equal(updated.code, 0, updated.stderr);
    assert.deepEqual(JSON.parse(updated.stdout).message_templates, TEMPLATES);
    const shown = await run(['projects', 'show', 'acme'], env);
    assert.match(shown.stdout, /message templates: {3}own texts for fr, es, brand Acme <Cloud>/);

    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ locales: { de: { email_text: 'no code here' } } }));
    const refused = await run(['projects', 'update', 'acme', '--template-file', bad], env);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /locales\.de\.email_text must contain \{\{code\}\}/);
    writeFileSync(bad, '{"locales": ');
    const notJson = await run(['projects', 'update', 'acme', '--template-file', bad], env);
    assert.equal(notJson.code, 2, notJson.stderr);
    assert.match(notJson.stderr, /is not JSON/);

    const cleared = await run(['projects', 'update', 'acme', '--clear-templates', '--json'], env);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.equal(JSON.parse(cleared.stdout).message_templates, null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
