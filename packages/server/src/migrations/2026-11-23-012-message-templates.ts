import type { Kysely } from 'kysely';

// Frozen: a project's own OTP message texts and brand, as a JSON object
// {"brand"?, "default_locale"?, "locales": {"<tag>": {"email_subject"?, "email_text"?, "email_html"?, "sms_text"?}}};
// null: the built-in texts.

/** Additive: a new nullable column. */
export const additive = true;

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').addColumn('message_templates', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are untyped by design
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('projects').dropColumn('message_templates').execute();
}
