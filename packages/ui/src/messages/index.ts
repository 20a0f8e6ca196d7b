import { de } from './de.js';
import { en, type Messages } from './en.js';
import { fr } from './fr.js';

export type { Messages } from './en.js';

/** The languages built in. */
export const LOCALES: Readonly<Record<string, Messages>> = { en, fr, de };

/**
 * The language to show: the `locale` attribute when it names a built-in language (`fr`, `fr-CA`),
 * else the first of the browser's languages that does, else English. `locales` names another
 * table of languages (an app's own texts, the console's) to choose among by the same rule.
 */
export function pickLocale(
  attribute: string | null,
  languages: readonly string[],
  locales: Readonly<Record<string, unknown>> = LOCALES,
): string {
  for (const tag of [attribute ?? '', ...languages]) {
    const base = tag.toLowerCase().split('-')[0]!;
    if (base in locales) return base;
  }
  return 'en';
}

/** A text with its `{placeholders}` filled in; an unknown placeholder stays as written. */
export function format(text: string, values: Readonly<Record<string, string | number>>): string {
  return text.replace(/\{(\w+)\}/g, (all, name: string) => (name in values ? String(values[name]) : all));
}
