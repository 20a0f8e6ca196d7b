import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { connect, type Db, migrate } from '../../src/db/connect.js';
import { STORAGE_FULL_QUIET_MS } from '../../src/db/outage.js';
import { RELAXED_LIMITS, startServer, type TestServer, type TestStorage } from '../helpers/harness.js';
import { adminQuery, postgresOnly } from './helpers.js';

/** Log lines (JSON) a test server writes, kept for assertions. */
function captureLog(): { stream: { write(line: string): void }; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return {
    lines,
    stream: {
      write(line: string) {
        for (const one of line.split('\n').filter(Boolean)) lines.push(JSON.parse(one));
      },
    },
  };
}

const otpStart = (server: TestServer, identifier: string) =>
  server.request('POST', '/v1/auth/otp/start', {
    body: { identifier },
    headers: { api_key_id: server.project.api_key_id },
  });

/** Error lines that carry a stack (an `err` object): a fault must log none per request. */
const stackLines = (lines: Array<Record<string, unknown>>) =>
  lines.filter((l) => (l.level as number) >= 50 && typeof l.err === 'object');

describe('SQLite storage full (max_page_count): 503 with Retry-After, readiness fails, one log line each way', () => {
  let server: TestServer;
  const log = captureLog();
  let skew = 0;
  before(async () => {
    server = await startServer('sqlite', {
      env: RELAXED_LIMITS,
      logStream: log.stream,
      now: () => Date.now() + skew,
    });
  });
  after(() => server.close());

  test('writes get 503 + Retry-After naming full storage, /readyz is 503, and both recover when space returns', async () => {
    const db = server.ctx.db.kysely;
    const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]!.page_count;
    // The database may not grow: the next write that needs a page fails with SQLITE_FULL.
    await sql.raw(`pragma max_page_count = ${pages}`).execute(db);
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof otpStart>> | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const answer = await otpStart(server, `full${i}@example.com`);
      statuses.push(answer.status);
      if (answer.status !== 200) refused = answer;
    }
    assert.ok(refused, `200 writes all fitted in ${pages} pages`);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.headers.get('retry-after'), '5');
    assert.equal(refused.body.code, 'service_unavailable');
    assert.match(refused.body.detail, /storage is full or failing/);
    // More writes while full: 503 each, never a 500.
    for (let i = 0; i < 5; i++) assert.equal((await otpStart(server, `more${i}@example.com`)).status, 503);
    const ready = await server.request('GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.match(ready.body.detail, /cannot take writes/);

    const began = log.lines.filter((l) => l.msg?.toString().startsWith('database outage began'));
    assert.equal(began.length, 1, 'one line when the outage starts');
    assert.equal(began[0]!.code, 'SQLITE_FULL');
    assert.deepEqual(stackLines(log.lines), [], 'no error line with a stack per request');

    await sql.raw('pragma max_page_count = 1073741823').execute(db);
    // Writes that need no new page kept committing meanwhile: the episode ends at a commit after
    // STORAGE_FULL_QUIET_MS without a failure.
    skew = STORAGE_FULL_QUIET_MS;
    assert.equal((await otpStart(server, 'roomy@example.com')).status, 200);
    assert.equal((await server.request('GET', '/readyz')).status, 200);
    const over = log.lines.filter((l) => l.msg === 'database outage over (storage full or failing)');
    assert.equal(over.length, 1, 'one line when it ends');
    assert.equal(over[0]!.refusedRequests, 6);
    assert.equal(over[0]!.failedReadinessProbes, 1);
  });
});

/** Storage in a PostgreSQL database of the test's own (ALTER DATABASE touches only it). */
async function ownDatabase(url: string): Promise<TestStorage & { name: string }> {
  const name = `tessera_ro_${randomBytes(6).toString('hex')}`;
  await adminQuery(url, `create database ${name}`);
  const own = new URL(url);
  own.pathname = `/${name}`;
  const ownUrl = own.toString();
  const db = await connect(ownUrl);
  await migrate(db);
  const opened: Db[] = [db];
  return {
    db,
    url: ownUrl,
    name,
    reopen: async () => {
      const other = await connect(ownUrl);
      opened.push(other);
      return other;
    },
    cleanup: async () => {
      for (const d of opened) await d.close().catch(() => {});
      await adminQuery(url, `drop database if exists ${name} with (force)`);
    },
  };
}

postgresOnly('PostgreSQL read-only (default_transaction_read_only on its database)', (url) => {
  let storage: TestStorage & { name: string };
  let server: TestServer;
  const log = captureLog();
  before(async () => {
    storage = await ownDatabase(url);
    server = await startServer('postgres', {
      env: RELAXED_LIMITS,
      storage,
      masterKey: randomBytes(32).toString('base64'),
      logStream: log.stream,
    });
  });
  after(async () => {
    await server.close();
    await storage.cleanup();
  });

  test('writes get 503 saying read-only, /readyz is 503 while it lasts, and both recover', async () => {
    assert.equal((await otpStart(server, 'before@example.com')).status, 200);
    await adminQuery(url, `alter database ${storage.name} set default_transaction_read_only = on`);
    // Existing connections keep their settings: end them, as a demotion would.
    await adminQuery(
      url,
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [storage.name],
    );
    // The first statements may meet terminated connections (503 unreachable) until the pool has
    // let them go (a full run once met two in a row); then every write is refused as read-only.
    let write = await otpStart(server, 'during@example.com');
    for (let i = 0; i < 20 && !/read-only/.test(write.body?.detail ?? ''); i++) {
      assert.equal(write.status, 503, write.text);
      await new Promise((resolve) => setTimeout(resolve, 100));
      write = await otpStart(server, `during${i}@example.com`);
    }
    assert.equal(write.status, 503, write.text);
    assert.equal(write.headers.get('retry-after'), '5');
    assert.match(write.body.detail, /read-only/);
    const ready = await server.request('GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.match(ready.body.detail, /read-only/);
    assert.ok(log.lines.some((l) => /^database outage began \(read-only\)/.test(String(l.msg))));

    await adminQuery(url, `alter database ${storage.name} set default_transaction_read_only = off`);
    await adminQuery(
      url,
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [storage.name],
    );
    let readyAgain = await server.request('GET', '/readyz');
    for (let i = 0; i < 20 && readyAgain.status !== 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      readyAgain = await server.request('GET', '/readyz');
    }
    assert.equal(readyAgain.status, 200, readyAgain.text);
    assert.equal((await otpStart(server, 'after@example.com')).status, 200);
    // The terminated connections may have turned it into an "unreachable" episode meanwhile.
    assert.ok(log.lines.some((l) => /^database outage over/.test(String(l.msg))));
    assert.deepEqual(stackLines(log.lines), [], 'no error line with a stack per request or probe');
  });
});
