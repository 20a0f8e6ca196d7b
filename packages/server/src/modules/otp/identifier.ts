import { ErrorCodes } from '@tessera/core';
import { badRequest } from '../../errors.js';
import { phoneNumbers } from './sms-countries.js';

export interface Identifier {
  /** Lower-cased e-mail address (Unicode NFC) or E.164 phone number. */
  value: string;
  type: 'email' | 'phone';
  channel: 'email' | 'sms';
  /**
   * The mailbox or phone a code sent to `value` reaches, what the send limits count by: an
   * address without its sub-address (`ada+x@` is `ada@`) and, at Gmail, without dots; a number as
   * it is. Sign-ins still tell `ada+x@` and `ada@` apart: two identifiers, two users.
   */
  mailbox: string;
}

// Deliberately plain: one @, no spaces or control characters (C0, DEL, C1), a dotted domain. The
// mail server is the final judge; this refuses what can never be delivered.
const EMAIL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  /^[^\s\x00-\x1f\x7f-\x9f@"<>()[\]\\,;:]{1,64}@(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * Characters no one can see or type on purpose: format characters (zero-width spaces and joiners,
 * the soft hyphen, bidirectional overrides), other default-ignorable ones (the Hangul filler),
 * separators, surrogates, private-use and unassigned code points. In an address they only make a
 * look-alike of another one, a second user for the same person or a way around per-address limits.
 */
const INVISIBLE = /[\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}]/u;

/** Mail providers that ignore dots in the local part (one mailbox for every spelling). */
const DOTLESS_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/** The mailbox a lower-cased address reaches (see {@link Identifier.mailbox}). */
function mailboxOf(email: string): string {
  const at = email.lastIndexOf('@');
  let local = email.slice(0, at);
  let domain = email.slice(at + 1);
  const plus = local.indexOf('+');
  // A local part that is only a tag ("+x@") is kept as it is.
  if (plus > 0) local = local.slice(0, plus);
  if (DOTLESS_DOMAINS.has(domain)) {
    local = local.replaceAll('.', '') || local;
    domain = 'gmail.com';
  }
  return `${local}@${domain}`;
}

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
    // NFC: an accented letter typed as one code point or as two is one address (RFC 6532 §3.1).
    const email = trimmed.toLowerCase().normalize('NFC');
    if (INVISIBLE.test(email))
      throw badRequest(
        'identifier is not a valid e-mail address: it contains an invisible or unassigned character',
        ErrorCodes.invalidIdentifier,
      );
    if (!EMAIL.test(email))
      throw badRequest('identifier is not a valid e-mail address', ErrorCodes.invalidIdentifier);
    return { value: email, type: 'email', channel: 'email', mailbox: mailboxOf(email) };
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
    return { value: phone.number, type: 'phone', channel: 'sms', mailbox: phone.number };
  }
  throw badRequest('identifier must be an e-mail address or a phone number', ErrorCodes.invalidIdentifier);
}
