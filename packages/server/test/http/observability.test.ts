import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { parse as parseYaml } from 'yaml';
import { maskedPath } from '../../src/http/common.js';
import { createLogger } from '../../src/logger.js';
import { DELIVERY_FAILURES_TO_FAIL, DELIVERY_RECOVERY_MS } from '../../src/modules/health/delivery-health.js';
import { methodLabel } from '../../src/modules/metrics/metrics.js';
import { describeFailure, providerName } from '../../src/modules/otp/delivery/observed.js';
import { HttpSmsDelivery } from '../../src/modules/otp/delivery/sms.js';
import { SmtpDelivery } from '../../src/modules/otp/delivery/smtp.js';
import { eachDialect, freePort, RELAXED_LIMITS, startServer, uniqueEmail } from '../helpers/harness.js';

const docs = new URL('../../../../docs/', import.meta.url);

/** Collects a logger's JSON lines. */
function logLines(): { stream: { write(line: string): void }; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

/** Names of the metric families in a Prometheus text answer (`# TYPE name kind`). */
function families(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) found.set(match[1]!, match[2]!);
  return found;
}

/** Does `name` (a series as written in a query, e.g. `…_bucket`) belong to a served family? */
function served(name: string, known: Map<string, string>): boolean {
  if (known.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && ['histogram', 'summary'].includes(known.get(base) ?? '');
}

/** Every `tessera_…`, `process_…` and `nodejs_…` name in a query. */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:tessera|process|nodejs)_[a-z0-9_]+)\b/g)].map((m) => m[1]!);
}

describe('observability helpers', () => {
  test('sign-in method labels have no spaces or capitals', () => {
    assert.equal(methodLabel('TRUSTED DEVICE'), 'trusted_device');
    assert.equal(methodLabel('OTP'), 'otp');
    assert.equal(methodLabel('BIOMETRIC'), 'biometric');
  });

  test('an unmatched path is logged without anything that could be a secret', () => {
    assert.equal(maskedPath('/v1/auth/otp/eyJhbGciOiJFUzI1NiJ9.abc?code=123456'), '/v1/auth/otp/:x');
    assert.equal(maskedPath('/v1/sessions/123456'), '/v1/sessions/:x');
    assert.equal(maskedPath('/nope'), '/nope');
    assert.equal(maskedPath('/a/b/c/d/e/f/g/h/i/j'), '/a/b/c/d/e/f/g/h/…');
  });

  test('providers are named from their class, or their own name', () => {
    assert.equal(
      providerName(new SmtpDelivery({ url: 'smtp://127.0.0.1:1', from: 'a@b.c' }, createLogger('silent'))),
      'smtp',
    );
    assert.equal(
      providerName(new HttpSmsDelivery({ url: 'http://127.0.0.1:1' }, createLogger('silent'))),
      'http_sms',
    );
    class TwilioSmsDelivery {}
    assert.equal(providerName(new TwilioSmsDelivery()), 'twilio_sms');
    assert.equal(providerName({ provider: 'vonage' }), 'vonage');
    assert.equal(providerName(undefined), 'none');
  });

  test('a failure is described by its codes: nodemailer code, system error under it, status', () => {
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), {
      code: 'ESOCKET',
      errno: -111,
    });
    const smtp = describeFailure(new Error('SMTP connection failed', { cause: socket }));
    assert.deepEqual(smtp, { errorCode: 'ESOCKET', systemError: 'ECONNREFUSED', rejected: false });
    const auth = describeFailure(Object.assign(new Error('x'), { code: 'EAUTH', responseCode: 535 }));
    assert.deepEqual(auth, { errorCode: 'EAUTH', responseCode: 535, rejected: false });
    const recipient = describeFailure(
      Object.assign(new Error('x'), { code: 'EENVELOPE', responseCode: 550 }),
    );
    assert.equal(recipient.rejected, true);
    const fetchFailed = describeFailure(
      new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }),
    );
    assert.deepEqual(fetchFailed, { systemError: 'ECONNREFUSED', rejected: false });
    assert.equal(describeFailure({ status: 400 }).rejected, true);
    assert.equal(describeFailure({ status: 401 }).rejected, false);
  });

  test('pretty logs are readable lines, still redacted', () => {
    let out = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        out += String(chunk);
        done();
      },
    });
    const logger = createLogger('info', sink as never, 'pretty');
    logger.info({ otp: { code: '123456' } }, 'hello operator');
    logger.flush?.();
    return new Promise<void>((resolve) =>
      setImmediate(() => {
        assert.match(out, /INFO.*hello operator/);
        assert.doesNotMatch(out, /123456/);
        assert.throws(() => JSON.parse(out.split('\n')[0]!));
        resolve();
      }),
    );
  });
});

eachDialect('observability', (dialect) => {
  test('/metrics serves process, database and delivery metrics; sign-in labels have no spaces', async () => {
    const server = await startServer(dialect, { env: RELAXED_LIMITS });
    try {
      await server.signIn(uniqueEmail('metrics'));
      const text = (await server.request('GET', '/metrics')).text;
      const known = families(text);
      for (const name of [
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_p99_seconds',
        'tessera_db_pool_max',
        'tessera_db_waiting',
        'tessera_db_connections',
        'tessera_deliveries_total',
        'tessera_delivery_duration_seconds',
        'tessera_sqlite_commit_batch_size',
      ])
        assert.ok(known.has(name), `${name} missing`);
      assert.match(text, /tessera_signins_total\{method="otp",outcome="success"\} 1/);
      assert.match(
        text,
        /tessera_deliveries_total\{channel="email",provider="dev_outbox",kind="otp",outcome="success"\} 1/,
      );
      assert.match(text, new RegExp(`tessera_db_pool_max ${dialect === 'sqlite' ? 1 : 10}\\b`));
      assert.match(text, /tessera_db_waiting 0\b/);
      if (dialect === 'postgres') assert.match(text, /tessera_db_connections\{state="idle"\} \d+/);
      else assert.match(text, /tessera_sqlite_commit_batch_size_count [1-9]/);
      for (const line of text.split('\n').filter((l) => l.startsWith('tessera_signins_total{')))
        assert.doesNotMatch(line, /method="[^"]* [^"]*"/);
    } finally {
      await server.close();
    }
  });

  test('every metric the Grafana dashboard and the alert rules name is served', async () => {
    const server = await startServer(dialect);
    try {
      const known = families((await server.request('GET', '/metrics')).text);
      const dashboard = JSON.parse(readFileSync(new URL('grafana-dashboard.json', docs), 'utf8')) as {
        panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
      };
      const rules = parseYaml(readFileSync(new URL('prometheus-alerts.yml', docs), 'utf8')) as {
        groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
      };
      const queries = [
        ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: p.title, expr: t.expr }))),
        ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: r.alert, expr: r.expr }))),
      ];
      assert.ok(dashboard.panels.length >= 10 && queries.length >= 25, 'dashboard or rules are missing');
      let checked = 0;
      for (const { where, expr } of queries) {
        for (const name of metricNames(expr)) {
          assert.ok(served(name, known), `${where}: ${name} is not served by /metrics`);
          checked++;
        }
      }
      assert.ok(checked >= queries.length - 1, 'queries name no metric');
    } finally {
      await server.close();
    }
  });

  test('per-IP counts that cannot reach the database are logged once a run and counted, and the recovery is logged', async () => {
    const log = logLines();
    const server = await startServer(dialect, { logStream: log.stream });
    const { db, ipLimiter } = server.ctx;
    // Writes of rate_limits fail while the trigger is there, as if the database refused them.
    const refuse =
      dialect === 'postgres'
        ? [
            sql`create function refuse_rate_limits() returns trigger language plpgsql as $$ begin raise exception 'away'; end $$`,
            sql`create trigger refuse before insert or update on rate_limits for each row execute function refuse_rate_limits()`,
          ]
        : [sql`create trigger refuse before insert on rate_limits begin select raise(abort, 'away'); end`];
    const allow =
      dialect === 'postgres'
        ? [sql`drop trigger refuse on rate_limits`, sql`drop function refuse_rate_limits()`]
        : [sql`drop trigger refuse`];
    const rule = { limit: 100, window: 60 };
    const notShared = () =>
      log.lines.filter((l) => String(l.msg).startsWith('per-IP counts not shared with'));
    try {
      for (const statement of refuse) await statement.execute(db.kysely);
      for (let i = 0; i < 3; i++) {
        ipLimiter.hit('test', '192.0.2.50', rule);
        await assert.rejects(ipLimiter.sync());
      }
      assert.equal(notShared().length, 1, 'one line for the run, not one per failed sync');
      assert.equal(notShared()[0]!.level, 40);
      assert.equal(notShared()[0]!.failedSyncs, 1);
      const metrics = (await server.request('GET', '/metrics')).text;
      const failures = Number(/^tessera_ip_limit_sync_failures_total (\d+)/m.exec(metrics)?.[1]);
      assert.ok(failures >= 3, `tessera_ip_limit_sync_failures_total ${failures}`);

      for (const statement of allow) await statement.execute(db.kysely);
      ipLimiter.hit('test', '192.0.2.50', rule);
      await ipLimiter.sync();
      const recovered = log.lines.find((l) => l.msg === 'per-IP counts shared again');
      assert.ok(recovered, 'no recovery line');
      assert.ok(Number(recovered.failedSyncs) >= 3);
      // The hits made while the database refused them are shared now, each once.
      assert.equal(ipLimiter.hit('test', '192.0.2.50', rule).count, 5);
    } finally {
      await server.close();
    }
  });

  test('a failed request is logged with its error code and project; an unknown path by its masked path', async () => {
    const log = logLines();
    const server = await startServer(dialect, { logStream: log.stream });
    try {
      const wrong = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: 'nope', code: '123456' },
        headers: { api_key_id: server.project.api_key_id },
      });
      assert.ok(wrong.status >= 400);
      const failed = log.lines.find(
        (l) => l.msg === 'request completed' && l.url === '/v1/auth/otp/complete',
      );
      assert.ok(failed, 'no access-log line');
      assert.equal(failed.code, wrong.body.code);
      assert.equal(failed.project, server.project.project_id);
      // Request ids: this process's prefix and a counter (crypto/random.ts, requestIds).
      assert.match(String(failed.reqId), /^[A-Za-z0-9_-]{12}-[0-9a-z]+$/);
      // Every request has the fields authentication sets, null until set (one V8 shape for all).
      for (const field of ['project', 'auth', 'client'])
        assert.ok(server.app.hasRequestDecorator(field), `request.${field} is not declared`);

      const secretPath = '/v1/nothing/eyJhbGciOiJFUzI1NiJ9SECRET?token=abc';
      assert.equal((await server.request('GET', secretPath)).status, 404);
      const unmatched = log.lines.find((l) => l.msg === 'request completed' && l.status === 404);
      assert.equal(unmatched?.url, '/v1/nothing/:x');
      assert.equal(unmatched?.code, 'not_found');
      assert.equal(unmatched?.project, undefined, 'a request without a project was logged with one');
      assert.equal(String(unmatched?.reqId).slice(0, 12), String(failed.reqId).slice(0, 12));
      assert.notEqual(unmatched?.reqId, failed.reqId);
      assert.ok(!JSON.stringify(log.lines).includes('SECRET'), 'the raw path was logged');
      const metrics = (await server.request('GET', '/metrics')).text;
      assert.match(metrics, /tessera_http_requests_total\{method="GET",route="not_found",status="404"\} 1/);
    } finally {
      await server.close();
    }
  });

  test('a refused SMTP connection is logged with ECONNREFUSED and counted; /readyz follows delivery when asked', async () => {
    const log = logLines();
    let now = Date.now();
    const closedPort = await freePort();
    const delivery = new SmtpDelivery(
      { url: `smtp://127.0.0.1:${closedPort}`, from: 'Tessera <no-reply@example.com>', timeoutMs: 5000 },
      createLogger('silent'),
    );
    const server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_READYZ_DELIVERY: 'on' },
      delivery,
      logStream: log.stream,
      now: () => now,
    });
    try {
      assert.equal((await server.request('GET', '/readyz')).status, 200);
      for (let i = 0; i < DELIVERY_FAILURES_TO_FAIL; i++) {
        const start = await server.request('POST', '/v1/auth/otp/start', {
          body: { identifier: uniqueEmail('smtp-down') },
          headers: { api_key_id: server.project.api_key_id },
        });
        assert.equal(start.status, 503, start.text);
        assert.equal(start.body.code, 'delivery_failed');
        if (i < DELIVERY_FAILURES_TO_FAIL - 1)
          assert.equal((await server.request('GET', '/readyz')).status, 200);
      }
      const line = log.lines.find((l) => l.msg?.toString().startsWith('delivery failed'));
      assert.ok(line, 'no delivery failure line');
      assert.equal(line.provider, 'smtp');
      assert.equal(line.channel, 'email');
      assert.equal(line.systemError, 'ECONNREFUSED');
      assert.equal(typeof line.errorCode, 'string');
      const notReady = await server.request('GET', '/readyz');
      assert.equal(notReady.status, 503);
      assert.match(notReady.body.detail, /OTP delivery is failing/);
      assert.doesNotMatch(notReady.text, /email|smtp/i, 'strangers are not told which channel fails');
      const warning = log.lines.find((l) => l.msg === 'not ready: OTP delivery is failing');
      assert.equal(warning?.channels, 'email', 'operators are, in the log');
      const metrics = (await server.request('GET', '/metrics')).text;
      assert.match(
        metrics,
        new RegExp(
          `tessera_deliveries_total\\{channel="email",provider="smtp",kind="otp",outcome="failure"\\} ${DELIVERY_FAILURES_TO_FAIL}`,
        ),
      );
      // Out of rotation it makes no attempts: it comes back by itself to try again.
      now += DELIVERY_RECOVERY_MS;
      assert.equal((await server.request('GET', '/readyz')).status, 200);
    } finally {
      await server.close();
    }
  });

  test('an SMS provider answering 503 is logged with the status; without TESSERA_READYZ_DELIVERY /readyz stays ready', async () => {
    const log = logLines();
    const provider: Server = createServer((_req, res) =>
      res.writeHead(503).end('{"error":"down, code 123456"}'),
    );
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const port = (provider.address() as { port: number }).port;
    const delivery = new HttpSmsDelivery(
      { url: `http://127.0.0.1:${port}/sms`, retryDelayMs: 1 },
      createLogger('silent'),
    );
    const server = await startServer(dialect, { env: RELAXED_LIMITS, delivery, logStream: log.stream });
    try {
      for (let i = 0; i < DELIVERY_FAILURES_TO_FAIL + 1; i++) {
        const start = await server.request('POST', '/v1/auth/otp/start', {
          body: { identifier: `+1415555${String(2000 + i)}` },
          headers: { api_key_id: server.project.api_key_id },
        });
        assert.equal(start.status, 503, start.text);
      }
      const line = log.lines.find((l) => l.msg?.toString().startsWith('delivery failed'));
      assert.equal(line?.provider, 'http_sms');
      assert.equal(line?.status, 503);
      // A 5xx may still have sent the SMS: said in the log and counted apart.
      assert.equal(line?.sent, 'unknown');
      assert.match(String(line?.msg), /unknown whether sent/);
      assert.ok(!JSON.stringify(log.lines).includes('123456'), 'the provider answer was logged');
      assert.equal((await server.request('GET', '/readyz')).status, 200);
      const metrics = (await server.request('GET', '/metrics')).text;
      const failures = DELIVERY_FAILURES_TO_FAIL + 1;
      assert.match(
        metrics,
        new RegExp(
          `tessera_deliveries_total\\{channel="sms",provider="http_sms",kind="otp",outcome="failure"\\} ${failures}`,
        ),
      );
      assert.match(
        metrics,
        new RegExp(
          `tessera_deliveries_unknown_total\\{channel="sms",provider="http_sms",kind="otp"\\} ${failures}`,
        ),
      );
    } finally {
      await server.close();
      provider.close();
    }
  });
});
