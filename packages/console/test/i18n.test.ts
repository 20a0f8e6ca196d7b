import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LOCALES as SIGN_IN_LOCALES } from '../../ui/src/messages/index.js';
import { de } from '../src/i18n/de.js';
import { en } from '../src/i18n/en.js';
import { fr } from '../src/i18n/fr.js';

// The console's texts in every language it has: the same keys as English, the same placeholders,
// nothing left empty or left in English. (The catalogs are read directly: src/i18n/index.ts loads
// @tessera/ui, which needs a browser.)

const LANGUAGES = { fr, de } as const;

/** The `{placeholders}` of a text as `format` fills them (and JSON examples), sorted; then its braces in order. */
const placeholders = (text: string): string[] =>
  [...text.matchAll(/\{\w+\}|\{"[^{}]*\}/g)].map((m) => m[0]).sort();
const braces = (text: string): string => [...text].filter((c) => c === '{' || c === '}').join('');

/** The words of a text, placeholders left out: a text of three words or more is a sentence to translate. */
const words = (text: string): string[] => text.replace(/\{[^{}]*\}/g, ' ').match(/\p{L}{2,}/gu) ?? [];

test('every language has every text of English, and no other', () => {
  for (const [language, messages] of Object.entries(LANGUAGES))
    assert.deepEqual(Object.keys(messages).sort(), Object.keys(en).sort(), language);
});

test('every text keeps the placeholders and braces of its English text', () => {
  for (const [language, messages] of Object.entries(LANGUAGES)) {
    for (const [key, english] of Object.entries(en)) {
      const text = messages[key as keyof typeof en];
      assert.deepEqual(placeholders(text), placeholders(english), `${language}.${key}: ${text}`);
      assert.equal(braces(text), braces(english), `${language}.${key}: ${text}`);
    }
  }
});

test('no text is empty, and none that is a sentence in English is left in English', () => {
  for (const [language, messages] of Object.entries(LANGUAGES)) {
    for (const [key, english] of Object.entries(en)) {
      const text = messages[key as keyof typeof en];
      assert.ok(text.trim().length > 0, `${language}.${key} is empty`);
      assert.equal(text, text.trim(), `${language}.${key}: no space around the text`);
      if (words(english).length >= 3) assert.notEqual(text, english, `${language}.${key} is still English`);
    }
  }
});

test('the console speaks the languages of the sign-in element it embeds', () => {
  assert.deepEqual(Object.keys(SIGN_IN_LOCALES).sort(), ['en', ...Object.keys(LANGUAGES)].sort());
});
