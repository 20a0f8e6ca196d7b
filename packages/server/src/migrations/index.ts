import type { Migration, MigrationProvider } from 'kysely';
import * as m001 from './2026-11-22-001-initial.js';
import * as m002 from './2026-11-22-002-sign-in-methods.js';
import * as m003 from './2026-11-22-003-integrator-operations.js';
import * as m004 from './2026-11-23-004-session-indexes.js';

/** Every migration, in order. Imported statically so the build needs no file-system scan. */
const migrations: Record<string, Migration> = {
  '2026-11-22-001-initial': m001,
  '2026-11-22-002-sign-in-methods': m002,
  '2026-11-22-003-integrator-operations': m003,
  '2026-11-23-004-session-indexes': m004,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
