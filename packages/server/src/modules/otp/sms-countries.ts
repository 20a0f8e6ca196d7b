import { lazyRequire } from '../../lazy.js';

/**
 * libphonenumber-js with its full metadata, loaded on the first phone number or country code: it
 * holds about 2.3 MB of heap, which a deployment signing in by e-mail never needs.
 */
export const phoneNumbers = lazyRequire<typeof import('libphonenumber-js/max')>('libphonenumber-js/max');

/** In a country allow-list: every destination country (and numbers that belong to none). */
export const EVERY_COUNTRY = '*';

/**
 * Parses an allow-list of SMS destination countries: ISO 3166-1 alpha-2 codes separated by
 * commas (`US,CA,GB`), or `*` for every country. Returns the upper-cased codes, or a sentence
 * saying what is wrong. An empty list is allowed: no country at all (SMS off).
 */
export function parseCountryList(raw: string): readonly string[] | { error: string } {
  const entries = raw
    .split(',')
    .map((entry) => entry.trim().toUpperCase())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    if (entry !== EVERY_COUNTRY && !phoneNumbers().isSupportedCountry(entry)) {
      return {
        error: `"${entry.slice(0, 10)}" is not a two-letter country code (ISO 3166-1, e.g. US,CA,GB) or *`,
      };
    }
  }
  return [...new Set(entries)];
}

/**
 * The country of an E.164 number as libphonenumber-js (full metadata) places it: `+1 876…` is
 * JM, not US. Numbers of no country (`+800`, `+881`, `+882`, `+883`: international networks and
 * satellite phones) have none.
 */
export function phoneCountry(e164: string): string | undefined {
  return phoneNumbers().parsePhoneNumberFromString(e164)?.country;
}

/** Whether SMS may go to `e164` under `allowed` (a list from {@link parseCountryList}). */
export function countryAllowed(allowed: readonly string[], e164: string): boolean {
  if (allowed.includes(EVERY_COUNTRY)) return true;
  const country = phoneCountry(e164);
  return country !== undefined && allowed.includes(country);
}

/**
 * The number range an SMS velocity limit counts: the country calling code and the first
 * `digits` digits of the national number (`+1 415 5…` → `1-4155`). SMS pumping walks through
 * numbers of one range a fraudulent carrier controls, so those share a counter while real users,
 * spread over many ranges, rarely meet.
 */
export function numberPrefix(e164: string, digits: number): string {
  const phone = phoneNumbers().parsePhoneNumberFromString(e164);
  if (!phone) return e164.slice(0, digits + 2);
  return `${phone.countryCallingCode}-${phone.nationalNumber.slice(0, digits)}`;
}
