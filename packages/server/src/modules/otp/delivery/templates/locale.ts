import { BUILTIN } from './builtin.js';
import type { MessageTemplates } from './types.js';

/** A BCP 47 language tag as Tessera takes it: language, then up to four subtags (`pt-BR`, `zh-Hant-TW`). */
export const LOCALE_TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}$/;

const MAX_ACCEPT_LANGUAGE = 1024;
const MAX_RANGES = 20;

/**
 * The language ranges of an `Accept-Language` header (RFC 9110 §12.5.4), best first; `*`, ranges
 * with `q=0` and malformed entries are left out. Lower-cased.
 */
export function acceptedLanguages(header: string | undefined): string[] {
  if (!header) return [];
  const ranges = header
    .slice(0, MAX_ACCEPT_LANGUAGE)
    .split(',')
    .slice(0, MAX_RANGES)
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag: tag.trim().toLowerCase(), q: q === undefined ? 1 : Number(q), index };
    })
    .filter((r) => r.q > 0 && LOCALE_TAG.test(r.tag));
  // Stable: equal weights keep the header's order.
  ranges.sort((a, b) => b.q - a.q || a.index - b.index);
  return ranges.map((r) => r.tag);
}

/**
 * The locale a message is written in: the first of `languages` (the request's explicit `locale`,
 * then its Accept-Language) that the project or the built-in texts have, matched exactly or by its
 * language alone (`fr-CA` → `fr`); else the project's default locale, else `en`.
 */
export function chooseLocale(languages: readonly string[], templates: MessageTemplates | null): string {
  const available = new Set([...Object.keys(BUILTIN), ...Object.keys(templates?.locales ?? {})]);
  for (const raw of languages) {
    const tag = raw.toLowerCase();
    if (available.has(tag)) return tag;
    const language = tag.split('-')[0]!;
    if (available.has(language)) return language;
  }
  return templates?.default_locale ?? 'en';
}
