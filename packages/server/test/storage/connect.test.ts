import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

const connectModule = new URL('../../src/db/connect.ts', import.meta.url).href;

/** Module hooks that make the SQLite engine look not installed. */
const withoutSqlite = `data:text/javascript,${encodeURIComponent(`
  export async function resolve(specifier, context, next) {
    if (specifier === '@tessera/sqlite' || specifier === 'better-sqlite3') {
      throw Object.assign(new Error('not installed: ' + specifier), { code: 'ERR_MODULE_NOT_FOUND' });
    }
    return next(specifier, context);
  }
`)}`;

test('PostgreSQL works without the SQLite engine installed; SQLite then fails with a clear message', () => {
  const script = `
    import { register } from 'node:module';
    register(${JSON.stringify(withoutSqlite)});
    const { connect } = await import(${JSON.stringify(connectModule)});
    const postgres = await connect('postgres://127.0.0.1:1/unused'); // a pool: no connection yet
    await postgres.close();
    const sqlite = await connect('sqlite::memory:').then(() => 'opened', (error) => error.message);
    console.log(JSON.stringify({ postgres: 'opened', sqlite }));
  `;
  const child = spawnSync(
    process.execPath,
    ['--conditions=tessera-source', '--import', 'tsx', '--input-type=module', '--eval', script],
    { encoding: 'utf8' },
  );
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout.trim().split('\n').at(-1)!), {
    postgres: 'opened',
    sqlite:
      'TESSERA_DATABASE_URL names a SQLite database, but @tessera/sqlite (better-sqlite3) could not be loaded; install it or use PostgreSQL',
  });
});
