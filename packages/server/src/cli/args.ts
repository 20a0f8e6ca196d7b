import { InvalidArgumentError } from 'commander';
import { TesseraError } from '../errors.js';
import { parseCountryList } from '../modules/otp/sms-countries.js';
import {
  normaliseName,
  normaliseOrigin,
  normaliseRpId,
  originOf,
} from '../modules/projects/project-settings.js';

/**
 * Argument parsers of the `tessera` commands. Each refuses a bad value before anything is opened,
 * with commander's one-line error and exit status 2 (see src/cli.ts for the convention).
 */

/** A usage error found after parsing (e.g. a project that does not exist): exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Runs a project-settings check, turning its 400 into commander's invalid-argument error. */
function checked<T>(check: (raw: string) => T): (raw: string) => T {
  return (raw) => {
    try {
      return check(raw);
    } catch (error) {
      if (error instanceof TesseraError) throw new InvalidArgumentError(error.message);
      throw error;
    }
  };
}

/** A whole number between min and max, written as digits only ("1e3", "-1", "2.5" are refused). */
export function wholeNumber(what: string, min: number, max: number): (raw: string) => number {
  return (raw) => {
    const value = /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
    if (!(value >= min && value <= max))
      throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}`);
    return value;
  };
}

/** For repeatable options: parses each value and collects them in order. */
export function repeatable<T>(parse: (raw: string) => T): (raw: string, previous: T[] | undefined) => T[] {
  return (raw, previous) => [...(previous ?? []), parse(raw)];
}

/** The longest key-rotation delay, as TESSERA_KEY_ROTATION_DELAY allows: 30 days. */
export const MAX_ROTATION_DELAY_SECONDS = 30 * 86_400;

export const rotationDelayArg = wholeNumber('the delay in seconds', 0, MAX_ROTATION_DELAY_SECONDS);
export const workersArg = wholeNumber('the number of workers', 1, 256);
export const nameArg = checked(normaliseName);
export const originArg = checked(normaliseOrigin);
/** An origin to remove: as stored, so that one an earlier version accepted can still be removed. */
export const storedOriginArg = checked(originOf);
export const rpIdArg = checked(normaliseRpId);

/**
 * `--access-token-ttl 900`: a token lifetime in seconds, or `server` to follow the server's
 * TESSERA_*_TTL again (commander turns a parsed null into '', hence the word). The service checks
 * the number against the server's, which is the longest allowed.
 */
export function lifetimeArg(raw: string): number | 'server' {
  if (raw.trim() === 'server') return 'server';
  return wholeNumber('the lifetime in seconds (or "server")', 1, 365 * 86_400)(raw);
}

/** A `lifetimeArg` as the projects service takes it: null for `server`. */
export const lifetimeOf = (value: number | 'server' | undefined): number | null | undefined =>
  value === 'server' ? null : value;

/** `--sms-countries US,CA`: ISO country codes, `*` for all, '' for none. */
export function smsCountriesArg(raw: string): string {
  const parsed = parseCountryList(raw);
  if ('error' in parsed) throw new InvalidArgumentError(parsed.error);
  return raw;
}
