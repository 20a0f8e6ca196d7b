export { backupSqlite } from './backup.js';
export { GroupCommitDialect } from './dialect.js';
export { SqliteBusyError, SqliteClosedError } from './errors.js';
export { openSqlite, type SqliteOptions } from './open.js';
export type { SlowTransaction, SqliteStats } from './options.js';
