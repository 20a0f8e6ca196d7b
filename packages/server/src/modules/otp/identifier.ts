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
 * Characters no one can see or type on purpose (and U+FFFD, what bytes that were not UTF-8 became): format characters (zero-width spaces and joiners,
 * the soft hyphen, bidirectional overrides), other default-ignorable ones (the Hangul filler),
 * separators, surrogates, private-use and unassigned code points. In an address they only make a
 * look-alike of another one, a second user for the same person or a way around per-address limits.
 */
const INVISIBLE = /[\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\ufffd]/u;

/**
 * The zero-width non-joiner and joiner where Persian and Indic spellings need them (IDNA's
 * CONTEXTJ, simplified): after a non-ASCII letter or mark (a virama). After an ASCII letter they
 * only make a look-alike, and stay refused with the other invisible characters.
 */
const SCRIPT_JOINER = /(?<=[\p{L}\p{M}])(?<![\0-\x7f])[\u200c\u200d]/gu;

/**
 * Domains one provider delivers to the same inbox, by the name they count as, as the providers
 * document them: an address at one is an address at all of them.
 */
const SAME_INBOX: Record<string, string> = {
  'googlemail.com': 'gmail.com',
  'me.com': 'icloud.com',
  'mac.com': 'icloud.com',
  'protonmail.com': 'proton.me',
  'protonmail.ch': 'proton.me',
  'pm.me': 'proton.me',
  'ya.ru': 'yandex.ru',
  'yandex.com': 'yandex.ru',
  'yandex.by': 'yandex.ru',
  'yandex.kz': 'yandex.ru',
  'yandex.ua': 'yandex.ru',
};

/** How providers fold the local part: Gmail ignores dots, Yandex takes a hyphen for a dot. */
const FOLD_LOCAL: Record<string, (local: string) => string> = {
  'gmail.com': (local) => local.replaceAll('.', '') || local,
  'yandex.ru': (local) => local.replaceAll('-', '.'),
};

/** Providers with subdomain addressing: `anything@user.fastmail.com` reaches `user@fastmail.com`. */
const SUBDOMAIN_ADDRESSING = ['fastmail.com', 'fastmail.fm'];

/** The mailbox a lower-cased address reaches (see {@link Identifier.mailbox}). */
function mailboxOf(email: string): string {
  const at = email.lastIndexOf('@');
  let local = email.slice(0, at);
  let domain = email.slice(at + 1);
  for (const provider of SUBDOMAIN_ADDRESSING) {
    const user = domain.endsWith(`.${provider}`) ? domain.slice(0, -provider.length - 1) : '';
    if (user && !user.includes('.')) [local, domain] = [user, provider];
  }
  domain = SAME_INBOX[domain] ?? domain;
  const plus = local.indexOf('+');
  // A local part that is only a tag ("+x@") is kept as it is.
  if (plus > 0) local = local.slice(0, plus);
  local = FOLD_LOCAL[domain]?.(local) ?? local;
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
    if (INVISIBLE.test(email.replace(SCRIPT_JOINER, '')))
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
