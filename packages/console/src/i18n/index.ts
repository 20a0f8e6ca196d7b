import { format, pickLocale } from '@tessera/ui';
import { de } from './de.js';
import { en, type Messages } from './en.js';
import { fr } from './fr.js';

export type { Messages };

/** The console's languages, chosen as `<tessera-sign-in>` chooses its own (`pickLocale`). */
export const CONSOLE_LOCALES: Readonly<Record<string, Messages>> = { en, fr, de };

/** The language of the page: the first of the browser's the console has, else English. */
export const locale: string = pickLocale(
  null,
  typeof navigator === 'undefined' ? [] : navigator.languages,
  CONSOLE_LOCALES,
);

/** The texts in that language. */
export const t: Messages = CONSOLE_LOCALES[locale]!;

/** A text with its `{placeholders}` filled in (the sign-in element's own `format`). */
export const fill = (text: string, values: Readonly<Record<string, string | number>>): string =>
  format(text, values);

const dateTime = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short' });
const number = new Intl.NumberFormat(locale);

/** A date and time in the page's language, or the text for "never". */
export const when = (iso: string | null | undefined): string =>
  iso ? dateTime.format(new Date(iso)) : t.never;

/** A number in the page's language. */
export const count = (n: number): string => number.format(n);
