import { badRequest } from '../../../../errors.js';
import { BUILTIN } from './builtin.js';
import { LOCALE_TAG } from './locale.js';
import { PLACEHOLDER } from './render.js';
import {
  type LocaleTemplates,
  type MessageTemplates,
  PLACEHOLDERS,
  TEMPLATE_FIELDS,
  type TemplateField,
} from './types.js';

/** Longest text of each field, in characters. */
export const FIELD_LIMITS: Readonly<Record<TemplateField, number>> = {
  email_subject: 200,
  email_text: 10_000,
  email_html: 50_000,
  sms_text: 480,
};
export const MAX_LOCALES = 30;
export const MAX_BRAND_LENGTH = 100;
/** Largest template set, as JSON in UTF-8. */
export const MAX_TEMPLATES_BYTES = 256 * 1024;

/** Fields that must show the code: a message without it would be useless. */
const NEEDS_CODE: readonly TemplateField[] = ['email_text', 'email_html', 'sms_text'];

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
const CONTROL = /[\u0000-\u001f\u007f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: line breaks and tabs are allowed in bodies
const CONTROL_BUT_WHITESPACE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks a project's message templates (CLI file or operator API) and returns them normalised
 * (locale tags lower-cased). Throws a 400 naming the field and what is wrong: unknown keys or
 * placeholders, a text over its size limit, a body without `{{code}}`, an unclosed brace.
 */
export function parseMessageTemplates(input: unknown): MessageTemplates {
  if (!isObject(input)) throw badRequest('message templates must be a JSON object with "locales"');
  if (Buffer.byteLength(JSON.stringify(input)) > MAX_TEMPLATES_BYTES)
    throw badRequest(`message templates: at most ${MAX_TEMPLATES_BYTES / 1024} KiB of JSON`);
  for (const key of Object.keys(input)) {
    if (!['brand', 'default_locale', 'locales'].includes(key))
      throw badRequest(
        `message templates: unknown key "${key.slice(0, 40)}" (known: brand, default_locale, locales)`,
      );
  }
  const result: MessageTemplates = { locales: {} };
  if (input.brand !== undefined) result.brand = brand(input.brand);
  if (!isObject(input.locales))
    throw badRequest('message templates: "locales" must be an object of locale → texts');
  const entries = Object.entries(input.locales);
  if (entries.length > MAX_LOCALES) throw badRequest(`message templates: at most ${MAX_LOCALES} locales`);
  for (const [rawTag, texts] of entries) {
    const tag = localeTag(rawTag, 'a locale');
    if (Object.hasOwn(result.locales, tag))
      throw badRequest(`message templates: locale "${tag}" is given twice`);
    result.locales[tag] = localeTemplates(tag, texts);
  }
  if (input.default_locale !== undefined) {
    const tag = localeTag(input.default_locale, 'default_locale');
    if (!Object.hasOwn(result.locales, tag) && !Object.hasOwn(BUILTIN, tag)) {
      throw badRequest(
        `message templates: default_locale "${tag}" has no texts (built in: ${Object.keys(BUILTIN).join(', ')})`,
      );
    }
    result.default_locale = tag;
  }
  return result;
}

function brand(value: unknown): string {
  if (typeof value !== 'string' || !value.trim() || value.length > MAX_BRAND_LENGTH || CONTROL.test(value))
    throw badRequest(
      `message templates: brand must be 1 to ${MAX_BRAND_LENGTH} characters without control characters`,
    );
  return value.trim();
}

function localeTag(value: unknown, what: string): string {
  if (typeof value !== 'string' || !LOCALE_TAG.test(value))
    throw badRequest(
      `message templates: ${what} "${String(value).slice(0, 40)}" is not a language tag such as en, fr or pt-BR`,
    );
  return value.toLowerCase();
}

function localeTemplates(tag: string, texts: unknown): LocaleTemplates {
  if (!isObject(texts)) throw badRequest(`message templates: locales.${tag} must be an object of texts`);
  const result: LocaleTemplates = {};
  for (const [key, value] of Object.entries(texts)) {
    if (!(TEMPLATE_FIELDS as readonly string[]).includes(key)) {
      throw badRequest(
        `message templates: locales.${tag}: unknown field "${key.slice(0, 40)}" (known: ${TEMPLATE_FIELDS.join(', ')})`,
      );
    }
    const field = key as TemplateField;
    result[field] = text(`locales.${tag}.${field}`, field, value);
  }
  return result;
}

function text(where: string, field: TemplateField, value: unknown): string {
  const limit = FIELD_LIMITS[field];
  if (typeof value !== 'string' || value.length === 0 || value.length > limit)
    throw badRequest(`message templates: ${where} must be a text of 1 to ${limit} characters`);
  if ((field === 'email_subject' ? CONTROL : CONTROL_BUT_WHITESPACE).test(value))
    throw badRequest(`message templates: ${where} contains control characters`);
  const names = [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!);
  const unknown = names.find((name) => !(PLACEHOLDERS as readonly string[]).includes(name));
  if (unknown !== undefined) {
    throw badRequest(
      `message templates: ${where}: unknown placeholder {{${unknown.slice(0, 40)}}} (known: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')})`,
    );
  }
  if (/\{\{|\}\}/.test(value.replace(PLACEHOLDER, '')))
    throw badRequest(`message templates: ${where}: a "{{" or "}}" is not part of a placeholder`);
  if (NEEDS_CODE.includes(field) && !names.includes('code'))
    throw badRequest(`message templates: ${where} must contain {{code}}`);
  return value;
}
