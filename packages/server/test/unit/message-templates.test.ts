import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TesseraError } from '../../src/errors.js';
import type { OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import { acceptedLanguages, chooseLocale } from '../../src/modules/otp/delivery/templates/locale.js';
import { renderOtpEmail, renderOtpSms } from '../../src/modules/otp/delivery/templates/render.js';
import type { MessageTemplates } from '../../src/modules/otp/delivery/templates/types.js';
import { parseMessageTemplates } from '../../src/modules/otp/delivery/templates/validate.js';
import { webOtpDomain } from '../../src/modules/projects/project-settings.js';

const message = (extra: Partial<OtpMessage> = {}): OtpMessage => ({
  to: '+15551234567',
  channel: 'sms',
  code: '482913',
  projectName: 'Acme',
  expiresInSeconds: 300,
  ...extra,
});

/** The 400 a bad template set is refused with, its detail matched. */
function refused(input: unknown, detail: RegExp): void {
  assert.throws(
    () => parseMessageTemplates(input),
    (error: unknown) => {
      assert.ok(error instanceof TesseraError, String(error));
      assert.equal(error.statusCode, 400);
      assert.match(error.message, detail);
      return true;
    },
  );
}

test('Accept-Language: ranges by weight, equal weights in header order, q=0, * and junk left out', () => {
  assert.deepEqual(acceptedLanguages('fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5'), [
    'fr-ch',
    'fr',
    'en',
    'de',
  ]);
  assert.deepEqual(acceptedLanguages('de;q=0.5, es, it;q=0, <script>, en-US;q=0.9'), ['es', 'en-us', 'de']);
  assert.deepEqual(acceptedLanguages(undefined), []);
  assert.deepEqual(acceptedLanguages(''), []);
});

test('the locale: the first available of the languages, by tag or language alone, else the default', () => {
  assert.equal(chooseLocale(['fr-CA', 'de'], null), 'fr');
  assert.equal(chooseLocale(['es', 'de'], null), 'de');
  assert.equal(chooseLocale(['es'], null), 'en');
  assert.equal(chooseLocale([], null), 'en');
  const own: MessageTemplates = {
    default_locale: 'de',
    locales: { 'pt-br': { sms_text: 'Código {{code}}' } },
  };
  assert.equal(chooseLocale(['pt-BR'], own), 'pt-br');
  assert.equal(chooseLocale(['pt'], own), 'de', 'pt-br does not serve a bare pt');
  assert.equal(chooseLocale(['ja'], own), 'de');
});

test('built-in texts: English by default, French and German by locale, the lifetime in the locale', () => {
  assert.equal(renderOtpSms(message()), '482913 is your Acme sign-in code. It expires in 5 minutes.');
  assert.equal(
    renderOtpSms(message({ locale: 'fr' })),
    '482913 est votre code de connexion Acme. Il expire dans 5 minutes.',
  );
  const de = renderOtpEmail(message({ channel: 'email', locale: 'de', expiresInSeconds: 60 }));
  assert.equal(de.subject, 'Ihr Anmeldecode für Acme');
  assert.match(de.text, /^Ihr Anmeldecode für Acme lautet:\n\n482913\n\nEr läuft in 1 Minute ab\./);
  assert.match(de.html, /<html lang="de">/);
  assert.match(de.html, />482913</);
});

test('project texts and brand override the built-in ones field by field; HTML values are escaped', () => {
  const templates = parseMessageTemplates({
    brand: 'Acme & <Co>',
    locales: {
      fr: { sms_text: '{{brand}} : {{ code }} ({{minutes}} min, {{project}})' },
      en: {
        email_subject: '{{brand}} code',
        email_html: '<p>Hello from {{brand}}</p><b>{{code}}</b> valid {{lifetime}}',
      },
    },
  });
  assert.equal(renderOtpSms(message({ locale: 'fr', templates })), 'Acme & <Co> : 482913 (5 min, Acme)');
  const email = renderOtpEmail(message({ channel: 'email', templates }));
  assert.equal(email.subject, 'Acme & <Co> code');
  assert.equal(email.html, '<p>Hello from Acme &#38; &#60;Co&#62;</p><b>482913</b> valid 5 minutes');
  // Not overridden: the built-in English text, with the brand.
  assert.match(email.text, /^Your Acme & <Co> sign-in code is:/);
  // German is not overridden at all: built-in German with the brand.
  assert.match(
    renderOtpSms(message({ locale: 'de', templates })),
    /^482913 ist Ihr Anmeldecode für Acme & <Co>\./,
  );
});

test('WebOTP: the SMS ends with "@<domain> #<code>" when the project has a web origin', () => {
  const sms = renderOtpSms(message({ webOtpDomain: 'app.example.com' }));
  const lines = sms.split('\n');
  assert.equal(lines.at(-1), '@app.example.com #482913');
  assert.equal(lines[0], '482913 is your Acme sign-in code. It expires in 5 minutes.');
  assert.equal(
    webOtpDomain({ rp_id: 'example.com', origins: ['https://app.example.com'] }),
    'app.example.com',
  );
  assert.equal(
    webOtpDomain({
      rp_id: 'login.example.com',
      origins: ['https://app.example.com', 'https://login.example.com'],
    }),
    'login.example.com',
  );
  assert.equal(webOtpDomain({ rp_id: null, origins: ['http://localhost:5173'] }), 'localhost');
  assert.equal(
    webOtpDomain({ rp_id: null, origins: [`android:apk-key-hash:${'a'.repeat(43)}`] }),
    undefined,
    'an app-only project has no web origin',
  );
  assert.equal(webOtpDomain({ rp_id: null, origins: [] }), undefined);
});

test('templates are validated: each refusal names the field and what is wrong', () => {
  refused(
    { locales: { en: { sms_text: 'Code {{code}} {{ usr }}' } } },
    /locales\.en\.sms_text: unknown placeholder \{\{usr\}\}.*\{\{code\}\}/,
  );
  refused(
    { locales: { en: { sms_text: 'Your code is ready' } } },
    /locales\.en\.sms_text must contain \{\{code\}\}/,
  );
  refused(
    { locales: { en: { email_html: '<p>{{code}}</p> {{brand' } } },
    /email_html: a "\{\{" or "\}\}" is not part/,
  );
  refused(
    { locales: { en: { sms_text: `{{code}} ${'x'.repeat(480)}` } } },
    /sms_text must be a text of 1 to 480/,
  );
  refused(
    { locales: { en: { email_subject: 'Code\r\nBcc: x@example.com' } } },
    /email_subject contains control characters/,
  );
  refused({ locales: { en: { sms_body: '{{code}}' } } }, /unknown field "sms_body"/);
  refused({ locales: { 'not a tag': { sms_text: '{{code}}' } } }, /"not a tag" is not a language tag/);
  refused(
    { locales: { EN: { sms_text: '{{code}}' }, en: { sms_text: '{{code}}' } } },
    /locale "en" is given twice/,
  );
  refused({ default_locale: 'es', locales: {} }, /default_locale "es" has no texts/);
  refused({ brand: '', locales: {} }, /brand must be 1 to 100 characters/);
  refused({ colour: 'red', locales: {} }, /unknown key "colour"/);
  refused([], /must be a JSON object/);
  refused({ locales: [] }, /"locales" must be an object/);
  const many = Object.fromEntries(
    Array.from({ length: 31 }, (_, i) => [`x${String.fromCharCode(97 + (i % 26))}${i > 25 ? 'a' : ''}`, {}]),
  );
  refused({ locales: many }, /at most 30 locales/);
  refused(
    {
      locales: {
        en: { email_html: `{{code}}${'x'.repeat(49_990)}` },
        fr: { email_html: `{{code}}${'x'.repeat(49_990)}` },
        de: { email_html: `{{code}}${'x'.repeat(49_990)}` },
        it: { email_html: `{{code}}${'x'.repeat(49_990)}` },
        es: { email_html: `{{code}}${'x'.repeat(49_990)}` },
        nl: { email_html: `{{code}}${'x'.repeat(49_990)}` },
      },
    },
    /at most 256 KiB/,
  );
  assert.deepEqual(
    parseMessageTemplates({ default_locale: 'FR', locales: { 'PT-br': { sms_text: '{{code}}' } } }),
    {
      default_locale: 'fr',
      locales: { 'pt-br': { sms_text: '{{code}}' } },
    },
  );
});
