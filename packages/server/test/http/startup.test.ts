import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { collect, finished, logLines, outputMatches, spawnCli } from '../helpers/cli.js';
import { describePostgres, freePort, postgresUrl } from '../helpers/harness.js';

/** Forwards connections on `port` to PostgreSQL: the database "coming up" on that port. */
function forwarder(port: number, target: URL): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () =>
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => done());
          }),
      }),
    ),
  );
}

describePostgres('start-up against a database that is not up yet [postgres]', () => {
  test('serve retries with back-off, logging, and serves once the database answers', {
    timeout: 120_000,
  }, async () => {
    const target = new URL(postgresUrl!);
    const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
    const admin = async (statement: string) => {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      try {
        await client.query(statement);
      } finally {
        await client.end();
      }
    };
    await admin(`create schema ${schema}`);
    const dir = mkdtempSync(join(tmpdir(), 'tessera-startup-'));
    const databasePort = await freePort();
    const url = new URL(postgresUrl!);
    url.host = `127.0.0.1:${databasePort}`;
    url.searchParams.set('options', `-c search_path=${schema}`);
    const port = await freePort();
    const child = spawnCli(['serve'], {
      TESSERA_DATA_DIR: dir,
      TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
      TESSERA_DATABASE_URL: url.toString(),
      TESSERA_PORT: String(port),
      TESSERA_DEMO: 'false',
      TESSERA_LOG_LEVEL: 'info',
    });
    const output = collect(child);
    const done = finished(child, output);
    let database: { close(): Promise<void> } | undefined;
    try {
      const retries = () =>
        logLines(output.stdout).filter((l) => l.msg === 'database not reachable yet; retrying');
      await outputMatches(child, output, () => retries().length >= 3, 'three retries');
      assert.deepEqual(
        retries()
          .slice(0, 3)
          .map((l) => [l.code, l.attempt, l.retryInMs]),
        [
          ['ECONNREFUSED', 1, 500],
          ['ECONNREFUSED', 2, 1000],
          ['ECONNREFUSED', 3, 2000],
        ],
      );
      database = await forwarder(databasePort, target);
      await outputMatches(
        child,
        output,
        () => output.stdout.includes('Server listening at'),
        'the server to listen',
      );
      const reachable = logLines(output.stdout).find((l) => l.msg === 'database reachable');
      assert.ok(reachable && (reachable.attempts as number) >= 4, output.stdout);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 200);
    } finally {
      child.kill('SIGTERM');
      const result = await done;
      await database?.close();
      await admin(`drop schema if exists ${schema} cascade`);
      rmSync(dir, { recursive: true, force: true });
      assert.equal(result.code, 0, result.stderr);
    }
  });
});
