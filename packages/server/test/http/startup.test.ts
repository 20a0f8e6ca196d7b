import assert from 'node:assert/strict';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { test } from 'node:test';
import { cliDatabase, logLines, outputMatches, startCli } from '../helpers/cli.js';
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
    const databasePort = await freePort();
    const cli = await cliDatabase('postgres', { postgresHost: `127.0.0.1:${databasePort}` });
    const port = await freePort();
    const { child, output, done } = startCli(['serve'], {
      ...cli.env,
      TESSERA_PORT: String(port),
      TESSERA_DEMO: 'false',
      TESSERA_LOG_LEVEL: 'info',
    });
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
      await cli.cleanup();
      assert.equal(result.code, 0, result.stderr);
    }
  });
});
