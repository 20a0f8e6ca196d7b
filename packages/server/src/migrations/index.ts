import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './2026-11-22-001-initial.js';
import * as m002 from './2026-11-22-002-sign-in-methods.js';
import * as m003 from './2026-11-22-003-integrator-operations.js';
import * as m004 from './2026-11-23-004-session-indexes.js';
import * as m005 from './2026-11-23-005-session-binding.js';
import * as m006 from './2026-11-23-006-audit-events-created-at.js';
import * as m007 from './2026-11-23-007-device-pin-policy.js';
import * as m010 from './2026-11-23-010-unique-project-names.js';
import * as m011 from './2026-11-23-011-sms-countries.js';
import * as m012 from './2026-11-23-012-message-templates.js';
import * as m013 from './2026-11-23-013-rate-limits-reset-at.js';
import * as m014 from './2026-11-28-014-fewer-index-writes.js';
import * as m016 from './2026-11-29-016-database-id.js';
import * as m017 from './2026-11-29-017-project-branding.js';
import * as m018 from './2026-11-29-018-oauth-clients.js';
import * as m019 from './2026-11-29-019-oauth-flow.js';
import * as m020 from './2026-11-29-020-client-registration.js';
import * as m021 from './2026-11-29-021-console-members.js';
import * as m022 from './2026-11-29-022-session-network.js';
import * as m023 from './2026-11-29-023-project-token-lifetimes.js';

/**
 * A migration and whether it is additive: a release that does not know it can still run correctly
 * against a schema that has it (new tables, new nullable or defaulted columns, new indexes).
 */
export interface MigrationModule extends Migration {
  additive: boolean;
}

export type MigrationSet = Readonly<Record<string, MigrationModule>>;

/** Every migration, in order. Imported statically so the build needs no file-system scan. */
export const migrations: MigrationSet = {
  '2026-11-22-001-initial': m001,
  '2026-11-22-002-sign-in-methods': m002,
  '2026-11-22-003-integrator-operations': m003,
  '2026-11-23-004-session-indexes': m004,
  '2026-11-23-005-session-binding': m005,
  '2026-11-23-006-audit-events-created-at': m006,
  '2026-11-23-007-device-pin-policy': m007,
  '2026-11-23-010-unique-project-names': m010,
  '2026-11-23-011-sms-countries': m011,
  '2026-11-23-012-message-templates': m012,
  '2026-11-23-013-rate-limits-reset-at': m013,
  '2026-11-28-014-fewer-index-writes': m014,
  '2026-11-29-016-database-id': m016,
  '2026-11-29-017-project-branding': m017,
  '2026-11-29-018-oauth-clients': m018,
  '2026-11-29-019-oauth-flow': m019,
  '2026-11-29-020-client-registration': m020,
  '2026-11-29-021-console-members': m021,
  '2026-11-29-022-session-network': m022,
  '2026-11-29-023-project-token-lifetimes': m023,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => ({ ...migrations }),
};
