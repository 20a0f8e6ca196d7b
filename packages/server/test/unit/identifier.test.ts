import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCodes } from '@tessera/core';
import { TesseraError } from '../../src/errors.js';
import { normaliseIdentifier } from '../../src/modules/otp/identifier.js';

/** Asserts a 400 invalid_identifier whose text does not repeat the input. */
function assertRefused(raw: string, detail?: RegExp): void {
  let caught: unknown;
  try {
    normaliseIdentifier(raw);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof TesseraError, `${JSON.stringify(raw)} was accepted`);
  assert.equal(caught.statusCode, 400);
  assert.equal(caught.code, ErrorCodes.invalidIdentifier, JSON.stringify(raw));
  if (raw.trim())
    assert.ok(!caught.message.includes(raw.trim()), `the message repeats the input: ${caught.message}`);
  if (detail) assert.match(caught.message, detail, JSON.stringify(raw));
}

describe('normaliseIdentifier: e-mail addresses', () => {
  const accepted: [string, string][] = [
    ['ada@example.com', 'ada@example.com'],
    ['Ada@Example.COM', 'ada@example.com'],
    ['  ada@example.com\t', 'ada@example.com'],
    ['ADA.LOVELACE+tessera@mail.example.co.uk', 'ada.lovelace+tessera@mail.example.co.uk'],
    ["o'brien@example.ie", "o'brien@example.ie"],
    ['a_b-c.d@sub-domain.example.org', 'a_b-c.d@sub-domain.example.org'],
    ['x@x.io', 'x@x.io'],
    [`${'a'.repeat(64)}@example.com`, `${'a'.repeat(64)}@example.com`],
    // 254 characters, the most an address may have.
    [
      `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
      `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`,
    ],
  ];
  for (const [raw, value] of accepted) {
    test(`${JSON.stringify(raw)} → ${value}`, () => {
      const { mailbox: _, ...rest } = normaliseIdentifier(raw);
      assert.deepEqual(rest, { value, type: 'email', channel: 'email' });
    });
  }

  test('refuses what can never be delivered', () => {
    for (const raw of [
      'ada@localhost',
      'ada@example',
      'ada@example.c',
      'ada@.example.com',
      'ada@example..com',
      'ada@-example.com',
      'ada@example-.com',
      'ada@exa_mple.com',
      'ada@example.com.',
      'ada lovelace@example.com',
      'ada@exa mple.com',
      'ada@@example.com',
      'ada@b@example.com',
      '@example.com',
      'ada@',
      '@',
      '"ada"@example.com',
      '<ada@example.com>',
      'Ada <ada@example.com>',
      'ada,bob@example.com',
      'ada;@example.com',
      'ada@example.com\nbcc@example.com',
      'ada@example.123',
      `${'a'.repeat(65)}@example.com`,
    ]) {
      assertRefused(raw, /e-mail/);
    }
  });

  // Issue 12: the comment above EMAIL promised this, the pattern only refused what \s matches.
  test('refuses control characters (C0, DEL, C1) anywhere in the local part', () => {
    const controls = [
      ...Array.from({ length: 0x20 }, (_, i) => i),
      ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i),
    ].map((code) => String.fromCharCode(code));
    assert.equal(controls.length, 65);
    for (const c of controls) {
      assertRefused(`ad${c}a@example.com`, /e-mail/);
      assertRefused(`ada${c}@example.com`, /e-mail/);
      // Leading white space is trimmed (see above); other controls are not.
      if (c.trim() !== '') assertRefused(`${c}ada@example.com`, /e-mail/);
    }
    // Printable non-ASCII stays accepted (internationalised addresses, RFC 6531).
    assert.equal(normaliseIdentifier('josé@example.com').value, 'josé@example.com');
    assert.equal(normaliseIdentifier('\u00a1ada@example.com').value, '\u00a1ada@example.com');
  });

  test('refuses invisible, unassigned and private-use characters anywhere in the local part', () => {
    for (const c of [
      '\u00ad', // soft hyphen
      '\u034f', // combining grapheme joiner
      '\u115f', // Hangul choseong filler
      '\u180e', // Mongolian vowel separator
      '\u200b', // zero-width space
      '\u200c', // zero-width non-joiner
      '\u200d', // zero-width joiner
      '\u200e', // left-to-right mark
      '\u202e', // right-to-left override
      '\u2060', // word joiner
      '\u2066', // left-to-right isolate
      '\u3164', // Hangul filler
      '\ufe0f', // variation selector
      '\ufeff', // byte order mark
      '\ue000', // private use
      '\u{f0000}', // supplementary private use
      '\ud800', // lone surrogate
      '\u0378', // unassigned
      '\u{e0041}', // tag letter
      '\u00a0', // no-break space
      '\u3000', // ideographic space
      '\ufffd', // what bytes that were not UTF-8 became
    ]) {
      assertRefused(`ad${c}a@example.com`, /e-mail/);
      assertRefused(`ada${c}@example.com`, /e-mail/);
    }
    assertRefused('ad\u200ba@example.com', /invisible/);
  });

  test('the joiners Persian and Indic spellings need are accepted after their letters, not after ASCII', () => {
    // Persian: "mi" + ZWNJ + "khaham"; Devanagari: KSSA with a visible virama (virama + ZWNJ), and
    // a half form (virama + ZWJ).
    for (const local of [
      '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645',
      '\u0915\u094d\u200c\u0937',
      '\u0915\u094d\u200d\u0937',
    ])
      assert.equal(normaliseIdentifier(`${local}@example.com`).value, `${local}@example.com`);
    assertRefused('ada\u200c@example.com', /invisible/);
    assertRefused('\u200dada@example.com', /invisible/);
    assertRefused('a\u200db@example.com', /invisible/);
  });

  test('an accented letter typed as one code point or as two is one address (NFC)', () => {
    const composed = normaliseIdentifier('jos\u00e9@example.com');
    const decomposed = normaliseIdentifier('jose\u0301@example.com');
    assert.equal(decomposed.value, composed.value);
    assert.equal(decomposed.value, 'jos\u00e9@example.com');
  });

  test('mailbox: the inbox a code reaches, without sub-address, and at Gmail without dots', () => {
    const cases: [string, string][] = [
      ['ada@example.com', 'ada@example.com'],
      ['Ada+News@Example.com', 'ada@example.com'],
      ['ada+a+b@example.com', 'ada@example.com'],
      ['a.da+x@example.com', 'a.da@example.com'],
      ['ada-x@example.com', 'ada-x@example.com'],
      ['+tag@example.com', '+tag@example.com'],
      ['A.D.A@gmail.com', 'ada@gmail.com'],
      ['a.d.a+spam@googlemail.com', 'ada@gmail.com'],
      ['a.da@mail.gmail.com', 'a.da@mail.gmail.com'],
      ['...@gmail.com', '...@gmail.com'],
      // One provider's domains, as documented: iCloud, Proton, Yandex (dots and hyphens ignored).
      ['ada@me.com', 'ada@icloud.com'],
      ['ada+x@mac.com', 'ada@icloud.com'],
      ['a.da@me.com', 'a.da@icloud.com'],
      ['ada@pm.me', 'ada@proton.me'],
      ['ada@protonmail.com', 'ada@proton.me'],
      ['ada@protonmail.ch', 'ada@proton.me'],
      ['ivan.petrov@yandex.ru', 'ivan.petrov@yandex.ru'],
      ['ivan-petrov@ya.ru', 'ivan.petrov@yandex.ru'],
      ['Ivan-Petrov+x@yandex.com', 'ivan.petrov@yandex.ru'],
      ['ivanpetrov@yandex.ru', 'ivanpetrov@yandex.ru'],
      // Fastmail's subdomain addressing: anything@user.fastmail.com is user@fastmail.com.
      ['x0@ada.fastmail.com', 'ada@fastmail.com'],
      ['ada+x@fastmail.com', 'ada@fastmail.com'],
      ['x@ada.fastmail.fm', 'ada@fastmail.fm'],
      ['x@a.b.fastmail.com', 'x@a.b.fastmail.com'],
      ['x@evilfastmail.com', 'x@evilfastmail.com'],
    ];
    for (const [raw, mailbox] of cases) assert.equal(normaliseIdentifier(raw).mailbox, mailbox, raw);
    // The identifier itself keeps the tag and the dots: they are how the mail is addressed.
    assert.equal(normaliseIdentifier('A.D.A+spam@gmail.com').value, 'a.d.a+spam@gmail.com');
  });

  test('refuses anything over 254 characters, and the empty string', () => {
    // Every part within its own limit, 260 characters in all.
    assertRefused(`${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`);
    assertRefused('');
    assertRefused('   ');
    assertRefused(`${'a'.repeat(300)}@example.com`);
  });
});

describe('normaliseIdentifier: phone numbers', () => {
  const accepted: [string, string][] = [
    ['+14155552671', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['+1.415.555.2671', '+14155552671'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+44 (0)20 7946 0958', '+442079460958'],
    ['0044 20 7946 0958', '+442079460958'],
    ['+33 6 12 34 56 78', '+33612345678'],
    ['+49 30 12345678', '+493012345678'],
    ['  +33612345678  ', '+33612345678'],
  ];
  for (const [raw, value] of accepted) {
    test(`${JSON.stringify(raw)} → ${value}`, () => {
      assert.deepEqual(normaliseIdentifier(raw), { value, type: 'phone', channel: 'sms', mailbox: value });
    });
  }

  test('a number without a country code is refused, saying so', () => {
    for (const raw of ['4155552671', '415-555-2671', '020 7946 0958', '06 12 34 56 78', '12345']) {
      assertRefused(raw, /country code/);
    }
  });

  test('numbers that cannot exist are refused', () => {
    for (const raw of [
      '+1 123',
      '+999 1234567',
      '+1 415 555 26711',
      '+44 20 7946',
      '+0 1234567',
      '+1234567890123456',
    ]) {
      assertRefused(raw, /not a valid phone number/);
    }
  });

  test('neither an address nor a number', () => {
    for (const raw of [
      'garbage',
      'ada',
      '+',
      '1234',
      '+1-800-FLOWERS',
      '415 555 2671 ext',
      'tel:+14155552671',
      '++14155552671',
      '(415) 555-2671',
    ]) {
      assertRefused(raw);
    }
  });
});
