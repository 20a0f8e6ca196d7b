import { existsSync } from 'node:fs';
import SQLite from 'better-sqlite3';

/**
 * Copies a live SQLite database (WAL included) to `destination` with SQLite's online backup API:
 * a consistent snapshot taken while other connections keep writing. All pages go in one step, under
 * one read transaction, so writers never restart it. A plain file copy of a WAL database misses
 * what is still in `-wal`, or tears pages mid-write. Refuses to overwrite an existing file.
 */
export async function backupSqlite(source: string, destination: string): Promise<{ pages: number }> {
  if (existsSync(destination)) throw new Error(`${destination} exists already; choose a new file`);
  const db = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const { totalPages } = await db.backup(destination, { progress: ({ totalPages: total }) => total });
    return { pages: totalPages };
  } finally {
    db.close();
  }
}
