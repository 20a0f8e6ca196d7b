import type { OtpMessage } from '../delivery.js';
import { BUILTIN } from './builtin.js';
import type { LocaleTemplates, MessageTemplates, Placeholder, TemplateField } from './types.js';

/** `{{ name }}`: a placeholder, spaces inside the braces allowed. */
export const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/**
 * A field of the texts for `locale`, first found in: the project's texts for the locale, the
 * built-in ones for it, the project's default locale, the built-in default locale, built-in English.
 */
export function resolveTemplate(locale: string, templates: MessageTemplates | null | undefined) {
  const fallback = templates?.default_locale ?? 'en';
  const chain: Array<LocaleTemplates | undefined> = [
    templates?.locales[locale],
    BUILTIN[locale],
    templates?.locales[fallback],
    BUILTIN[fallback],
    BUILTIN.en,
  ];
  const field = (name: TemplateField): string => chain.find((t) => t?.[name] !== undefined)![name]!;
  return {
    email_subject: field('email_subject'),
    email_text: field('email_text'),
    email_html: field('email_html'),
    sms_text: field('sms_text'),
  };
}

/** "5 minutes", "5 Minuten": an OTP lifetime in the locale's words, rounded up to whole minutes. */
export function localLifetime(locale: string, expiresInSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(expiresInSeconds / 60));
  try {
    return new Intl.NumberFormat(locale, { style: 'unit', unit: 'minute', unitDisplay: 'long' }).format(
      minutes,
    );
  } catch {
    return minutes === 1 ? '1 minute' : `${minutes} minutes`;
  }
}

/** Replaces every placeholder (validated templates name only known ones) with its value, escaped by `encode`. */
export function fill(
  template: string,
  values: Record<Placeholder, string>,
  encode: (value: string) => string = (v) => v,
): string {
  return template.replace(PLACEHOLDER, (whole, name: string) =>
    Object.hasOwn(values, name) ? encode(values[name as Placeholder]) : whole,
  );
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function valuesOf(message: OtpMessage, locale: string): Record<Placeholder, string> {
  return {
    code: message.code,
    minutes: String(Math.max(1, Math.ceil(message.expiresInSeconds / 60))),
    lifetime: localLifetime(locale, message.expiresInSeconds),
    project: message.projectName,
    brand: message.templates?.brand ?? message.projectName,
  };
}

/** The OTP e-mail in the message's locale: subject and text as written, HTML with every value escaped. */
export function renderOtpEmail(message: OtpMessage): { subject: string; text: string; html: string } {
  const locale = message.locale ?? 'en';
  const template = resolveTemplate(locale, message.templates);
  const values = valuesOf(message, locale);
  return {
    // One line: a value can hold no line break (names refuse control characters), the template neither.
    subject: fill(template.email_subject, values).replace(/[\r\n]+/g, ' '),
    text: fill(template.email_text, values),
    html: fill(template.email_html, values, escapeHtml),
  };
}

/**
 * The OTP text message in the message's locale. With a `webOtpDomain` its last line is
 * `@<domain> #<code>`, the origin-bound form of the WebOTP API (https://wicg.github.io/web-otp/),
 * which lets the browser on that domain offer the code for autofill.
 */
export function renderOtpSms(message: OtpMessage): string {
  const locale = message.locale ?? 'en';
  const text = fill(resolveTemplate(locale, message.templates).sms_text, valuesOf(message, locale));
  return message.webOtpDomain ? `${text}\n\n@${message.webOtpDomain} #${message.code}` : text;
}
