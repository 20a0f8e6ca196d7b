import { ErrorCodes } from '@tessera/core';
import { badRequest } from '../../errors.js';
import { phoneNumbers } from './sms-countries.js';

export interface Identifier {
  /** Lower-cased e-mail address or E.164 phone number. */
  value: string;
  type: 'email' | 'phone';
  channel: 'email' | 'sms';
}

// Deliberately plain: one @, no spaces or control characters (C0, DEL, C1), a dotted domain. The
// mail server is the final judge; this refuses what can never be delivered.
const EMAIL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  /^[^\s\x00-\x1f\x7f-\x9f@"<>()[\]\\,;:]{1,64}@(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * Normalises an end user's identifier: e-mail addresses lower-cased, phone numbers to E.164.
 * Anything else is refused with a reason the user can act on.
 */
export function normaliseIdentifier(raw: string): Identifier {
  const trimmed = raw.trim();
  if (trimmed.length === 0 || trimmed.length > 254) {
    throw badRequest('identifier must be an e-mail address or a phone number', ErrorCodes.invalidIdentifier);
  }
  if (trimmed.includes('@')) {
    const email = trimmed.toLowerCase();
    if (!EMAIL.test(email))
      throw badRequest('identifier is not a valid e-mail address', ErrorCodes.invalidIdentifier);
    return { value: email, type: 'email', channel: 'email' };
  }
  if (/^[+\d][\d\s().-]{4,24}$/.test(trimmed)) {
    if (!trimmed.startsWith('+') && !trimmed.startsWith('00')) {
      throw badRequest(
        'phone numbers need the international format with a country code, e.g. +14155550123',
        ErrorCodes.invalidIdentifier,
      );
    }
    const phone = phoneNumbers().parsePhoneNumberFromString(trimmed.replace(/^00/, '+'));
    if (!phone?.isValid())
      throw badRequest('identifier is not a valid phone number', ErrorCodes.invalidIdentifier);
    return { value: phone.number, type: 'phone', channel: 'sms' };
  }
  throw badRequest('identifier must be an e-mail address or a phone number', ErrorCodes.invalidIdentifier);
}
