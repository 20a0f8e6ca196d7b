import type { TemplateField } from './api/types.js';
import { fill, t } from './i18n/index.js';

/** The fields of a language's message texts, in the editor's order. */
export const TEMPLATE_FIELDS: readonly TemplateField[] = [
  'email_subject',
  'email_text',
  'email_html',
  'sms_text',
];

/** The service's rules for message texts (packages/server/src/modules/otp/delivery/templates/validate.ts). */
const LIMITS: Readonly<Record<TemplateField, number>> = {
  email_subject: 200,
  email_text: 10_000,
  email_html: 50_000,
  sms_text: 480,
};
export const PLACEHOLDERS = ['code', 'minutes', 'lifetime', 'project', 'brand'] as const;
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
/** A language tag such as en, fr or pt-BR. */
export const LOCALE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}$/;

/**
 * What is wrong with one text of a template (empty text: the field falls back to the built-in
 * one, so it is left out rather than refused), or undefined when the service will take it.
 */
export function templateProblem(field: TemplateField, value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > LIMITS[field]) return fill(t.templateTooLong, { limit: LIMITS[field] });
  const names = [...value.matchAll(PLACEHOLDER)].map((m) => m[1]!);
  const unknown = names.find((name) => !(PLACEHOLDERS as readonly string[]).includes(name));
  if (unknown !== undefined)
    return fill(t.templateUnknownPlaceholder, {
      name: unknown.slice(0, 40),
      known: PLACEHOLDERS.map((p) => `{{${p}}}`).join(', '),
    });
  if (/\{\{|\}\}/.test(value.replace(PLACEHOLDER, ''))) return t.templateStrayBraces;
  if (field !== 'email_subject' && !names.includes('code')) return t.templateNeedsCode;
  return undefined;
}

/** A text with sample values in its placeholders, as a user would receive it. */
export function sample(value: string, brand: string): string {
  const values: Record<string, string> = {
    code: '123456',
    minutes: '5',
    lifetime: fill(t.sampleLifetime, { n: 5 }),
    project: brand,
    brand,
  };
  return value.replace(PLACEHOLDER, (all, name: string) => values[name] ?? all);
}
