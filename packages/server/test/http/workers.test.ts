import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { cliDatabase, logLines, outputMatches, run, startCli } from '../helpers/cli.js';
import { eachDialect, freePort } from '../helpers/harness.js';

/** One HTTP request on a connection of its own (the cluster hands out connections, not requests). */
function post(port: number, path: string, headers: Record<string, string>, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

eachDialect('tessera serve --workers', (dialect) => {
  test('two workers answer on one port from two processes sharing the database; a killed worker is replaced; SIGTERM stops all', {
    timeout: 240_000,
  }, async () => {
    const database = await cliDatabase(dialect);
    const port = await freePort();
    const env = {
      ...database.env,
      TESSERA_PORT: String(port),
      TESSERA_DEMO: 'false',
      TESSERA_LOG_LEVEL: 'debug',
      TESSERA_RATE_LIMIT_IP: '100000/60',
      TESSERA_RATE_LIMIT_OTP_START: '100000/60',
      TESSERA_OTP_RESEND_INTERVAL: '0',
    };
    let apiKeyId = '';
    const { child, output, done } = startCli(['serve', '--workers', '2'], env);
    const logs = () => logLines(output.stdout);
    const started = () => logs().filter((l) => l.msg === 'worker started');
    /** The pids that answered OTP starts (each worker logs its requests with its pid). */
    const answeredBy = () =>
      new Set(
        logs()
          .filter((l) => l.msg === 'request completed' && l.url === '/v1/auth/otp/start' && l.status === 200)
          .map((l) => l.pid as number),
      );
    let counter = 0;
    /** OTP starts, each a write, on new connections at once: both processes write to the one database. */
    const signInStarts = async (n: number) => {
      const statuses = await Promise.all(
        Array.from({ length: n }, () =>
          post(
            port,
            '/v1/auth/otp/start',
            { api_key_id: apiKeyId },
            { identifier: `w${++counter}@example.com` },
          ),
        ),
      );
      assert.deepEqual(new Set(statuses), new Set([200]), output.stdout.slice(-3000));
    };
    try {
      await outputMatches(
        child,
        output,
        () => logs().filter((l) => String(l.msg).startsWith('Server listening at')).length === 2,
        'two workers to listen',
      );
      const workers = started().map((l) => l.pid as number);
      assert.equal(new Set(workers).size, 2);
      assert.ok(!workers.includes(child.pid!), 'the primary serves itself');
      // The primary migrated the new database once, before forking; the workers did not.
      const migrated = logs().filter((l) => l.msg === 'database migrated');
      assert.deepEqual(
        migrated.map((l) => l.pid ?? 'primary'),
        ['primary'],
      );
      // Another process (the CLI) writes to the database the workers use.
      const created = await run(['projects', 'create', '--name', 'cluster', '--json'], env);
      assert.equal(created.code, 0, created.stderr);
      apiKeyId = JSON.parse(created.stdout).api_key_id as string;

      await signInStarts(12);
      await outputMatches(
        child,
        output,
        () => answeredBy().size === 2,
        'requests answered by both workers',
        10_000,
      );
      assert.deepEqual([...answeredBy()].sort(), [...workers].sort());

      // A worker killed outright is replaced, and the replacement serves.
      const victim = workers[0]!;
      process.kill(victim, 'SIGKILL');
      await outputMatches(child, output, () => started().length === 3, 'a replacement worker', 30_000);
      const died = logs().find((l) => l.msg === 'worker died; replacing it');
      assert.deepEqual([died?.pid, died?.signal, died?.restartInMs], [victim, 'SIGKILL', 500]);
      const replacement = started()[2]!.pid as number;
      assert.ok(!workers.includes(replacement));
      await outputMatches(
        child,
        output,
        () => logs().filter((l) => String(l.msg).startsWith('Server listening at')).length === 3,
        'the replacement to listen',
      );
      // Connections go to the workers in turn: a few rounds reach the replacement.
      for (let round = 0; round < 20 && !answeredBy().has(replacement); round++) {
        await signInStarts(4);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(answeredBy().has(replacement), 'the replacement answered no request');
    } finally {
      child.kill('SIGTERM');
    }
    const result = await done;
    try {
      assert.equal(result.signal, null);
      assert.equal(result.code, 0, result.stdout.slice(-2000));
      const pids = started().map((l) => l.pid as number);
      for (const pid of pids) assert.equal(alive(pid), false, `worker ${pid} outlived the primary`);
      const stopped = logs().filter((l) => l.msg === 'worker stopped');
      assert.deepEqual(
        stopped.map((l) => l.code),
        [0, 0],
      );
      assert.equal(logs().filter((l) => l.msg === 'stopped' && l.status === 0).length, 1);
    } finally {
      await database.cleanup();
    }
  });

  test('workers that keep dying make the primary give up with exit status 1', {
    timeout: 120_000,
  }, async () => {
    const database = await cliDatabase(dialect);
    // The port is taken: every worker fails to listen.
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await run(['serve', '--workers', '2'], {
        ...database.env,
        TESSERA_PORT: String(port),
        TESSERA_DEMO: 'false',
        TESSERA_LOG_LEVEL: 'info',
      });
      assert.equal(result.code, 1, result.stderr);
      const lines = logLines(result.stdout);
      assert.equal(lines.filter((l) => l.msg === 'worker died; replacing it').length, 4);
      assert.deepEqual(
        lines.filter((l) => l.msg === 'worker died; replacing it').map((l) => l.restartInMs),
        [500, 1000, 2000, 4000],
      );
      assert.equal(lines.filter((l) => l.msg === 'workers keep dying; giving up').length, 1);
      assert.ok(result.stderr.includes('EADDRINUSE'), result.stderr);
    } finally {
      blocker.close();
      await database.cleanup();
    }
  });
});

/** GET on a connection of its own; the parsed JSON answer. */
function getJson(port: number, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        body += chunk;
      });
      res.once('end', () => resolve(JSON.parse(body)));
    });
    req.once('error', reject);
    req.end();
  });
}

test('serve --workers 2 in development: every worker shows every code in /dev/outbox', {
  timeout: 120_000,
}, async () => {
  const database = await cliDatabase('sqlite');
  const port = await freePort();
  const env = {
    ...database.env,
    TESSERA_PORT: String(port),
    TESSERA_DEMO: 'false',
    TESSERA_DELIVERY: 'dev',
    TESSERA_LOG_LEVEL: 'debug',
    TESSERA_RATE_LIMIT_IP: '100000/60',
    TESSERA_RATE_LIMIT_OTP_START: '100000/60',
  };
  const { child, output, done } = startCli(['serve', '--workers', '2'], env);
  try {
    await outputMatches(
      child,
      output,
      () =>
        logLines(output.stdout).filter((l) => String(l.msg).startsWith('Server listening at')).length === 2,
      'two workers to listen',
    );
    const created = await run(['projects', 'create', '--name', 'outbox', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const apiKeyId = JSON.parse(created.stdout).api_key_id as string;
    const identifiers = Array.from({ length: 8 }, (_, i) => `outbox${i}@example.com`);
    // New connections go to the workers in turn: the codes are sent by both.
    for (const identifier of identifiers)
      assert.equal(await post(port, '/v1/auth/otp/start', { api_key_id: apiKeyId }, { identifier }), 200);
    const pids = new Set(
      logLines(output.stdout)
        .filter((l) => l.msg === 'request completed' && l.url === '/v1/auth/otp/start' && l.status === 200)
        .map((l) => l.pid),
    );
    assert.equal(pids.size, 2, 'both workers sent codes');
    // Whichever worker answers, it lists every code (each worker kept only its own before).
    for (let i = 0; i < 4; i++) {
      let listed: string[] = [];
      for (let wait = 0; wait < 50; wait++) {
        listed = ((await getJson(port, '/dev/outbox')) as Array<{ to: string }>).map((e) => e.to);
        if (identifiers.every((id) => listed.includes(id))) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual([...listed].sort(), [...identifiers].sort());
    }
  } finally {
    child.kill('SIGTERM');
    await done;
    await database.cleanup();
  }
});
