/** A project's texts for one locale; a field left out falls back (see `resolveTemplate`). */
export interface LocaleTemplates {
  email_subject?: string;
  email_text?: string;
  email_html?: string;
  sms_text?: string;
}

/**
 * A project's message overrides, as stored (JSON) and as the CLI and operator API take them:
 * `brand` replaces the project name in `{{brand}}`; `default_locale` is used when none of the
 * user's languages is available; `locales` maps a BCP 47 tag (lower case) to its texts.
 */
export interface MessageTemplates {
  brand?: string;
  default_locale?: string;
  locales: Record<string, LocaleTemplates>;
}

export type TemplateField = keyof LocaleTemplates;

export const TEMPLATE_FIELDS: readonly TemplateField[] = [
  'email_subject',
  'email_text',
  'email_html',
  'sms_text',
];

/** What a placeholder may name: `{{code}}`, `{{minutes}}`, `{{lifetime}}`, `{{project}}`, `{{brand}}`. */
export const PLACEHOLDERS = ['code', 'minutes', 'lifetime', 'project', 'brand'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
