import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { MasterKey } from '../../src/crypto/master-key.js';
import { refreshGraceNeeded, warnShortRefreshGrace } from '../../src/main.js';

type Env = Record<string, string | undefined>;

const MASTER_KEY = randomBytes(32).toString('base64');
/** The least a production start needs. */
const PRODUCTION: Env = {
  TESSERA_ENV: 'production',
  TESSERA_MASTER_KEY: MASTER_KEY,
  TESSERA_ISSUER: 'https://auth.example.com',
  TESSERA_SMTP_URL: 'smtp://mail.example.com:587',
};

/** Asserts that loading `env` fails with a one-line ConfigError naming `variable`. */
function assertRefused(env: Env, variable: string): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    caught = error;
  }
  assert.ok(
    caught instanceof ConfigError,
    `${JSON.stringify(env)} was accepted or failed otherwise: ${caught}`,
  );
  assert.equal(caught.name, 'ConfigError');
  assert.ok(caught.message.includes(variable), `"${caught.message}" does not name ${variable}`);
  assert.ok(!/[\r\n]/.test(caught.message), `"${caught.message}" is not one line`);
  assert.ok(caught.message.length < 200, `"${caught.message}" is long`);
  return caught;
}

describe('loadConfig defaults', () => {
  test('an empty environment is a development setup on localhost:8080', () => {
    const config = loadConfig({});
    assert.equal(config.env, 'development');
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.issuer, 'http://localhost:8080');
    assert.equal(config.dataDir, resolve('./data'));
    assert.equal(config.databaseUrl, `sqlite:${resolve('./data', 'tessera.db')}`);
    assert.equal(config.masterKey, undefined);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.trustProxy, false);
    assert.equal(config.bodyLimit, 16 * 1024);
    assert.equal(config.sqliteCacheKiB, 4 * 1024);
    assert.equal(config.accessTokenTtl, 3600);
    assert.equal(config.idTokenTtl, 3600);
    assert.equal(config.refreshTokenTtl, 30 * 86400);
    assert.equal(config.refreshGrace, 30);
    assert.equal(config.clockLeeway, 5);
    assert.deepEqual(config.otp, { ttl: 300, maxAttempts: 5, resendInterval: 30 });
    assert.deepEqual(config.rateLimits, {
      otpStartPerIdentifier: { limit: 5, window: 900 },
      otpGuessesPerIdentifier: { limit: 10, window: 900 },
      otpStartCeiling: { limit: 30, window: 3600 },
      otpGuessesCeiling: { limit: 100, window: 86400 },
      otpGuessesPerNetworkDaily: { limit: 20, window: 86400 },
      perIp: { limit: 60, window: 60 },
    });
    assert.deepEqual(config.delivery, {
      mode: 'dev',
      smtpUrl: undefined,
      mailFrom: 'Tessera <no-reply@localhost>',
      smsUrl: undefined,
      smsToken: undefined,
      smsFrom: undefined,
      smsProvider: undefined,
    });
    assert.deepEqual(config.keys, { rotationDelay: 86400, rotationPeriod: 0 });
    assert.deepEqual(config.webhooks, {
      backoff: [5, 60, 300, 1800, 7200, 18000, 36000, 86400],
      timeoutMs: 10_000,
      allowPrivate: true,
      maxEndpoints: 10,
      deliveriesPerMinute: 600,
    });
    assert.equal(config.metricsToken, undefined);
    assert.deepEqual(config.otpSending, {
      budgets: { sms: { hourly: 200, daily: 1000 }, email: { hourly: 2000, daily: 20_000 } },
      smsCountries: ['*'],
      smsPrefix: { limit: 10, window: 60 },
      smsPrefixDigits: 4,
      startVerifier: undefined,
    });
    assert.equal(config.devOutboxPublic, false);
    assert.equal(config.demo, true);
    assert.deepEqual(config.databaseTimeouts, { connectMs: 5000, statementMs: 5000, idleMs: 30_000 });
    assert.deepEqual(config.http, {
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5000,
      socketTimeoutMs: 60_000,
    });
    assert.equal(config.shutdownTimeoutMs, 10_000);
    assert.ok(Object.isFrozen(config));
  });

  test('NODE_ENV picks the mode when TESSERA_ENV is unset; TESSERA_ENV wins', () => {
    assert.equal(loadConfig({ NODE_ENV: 'test' }).env, 'test');
    assert.equal(loadConfig({ NODE_ENV: 'test' }).logLevel, 'silent');
    assert.equal(loadConfig({ NODE_ENV: 'staging' }).env, 'development');
    assert.equal(loadConfig({ NODE_ENV: 'production', TESSERA_ENV: 'development' }).env, 'development');
    assert.equal(
      loadConfig({ ...PRODUCTION, TESSERA_ENV: undefined, NODE_ENV: 'production' }).env,
      'production',
    );
    assertRefused({ NODE_ENV: 'production' }, 'TESSERA_');
  });

  test('empty strings count as unset', () => {
    const config = loadConfig({
      TESSERA_PORT: '',
      TESSERA_ISSUER: '',
      TESSERA_DATABASE_URL: '',
      TESSERA_DEMO: '',
    });
    assert.equal(config.port, 8080);
    assert.equal(config.issuer, 'http://localhost:8080');
    assert.equal(config.demo, true);
  });

  test('values are parsed as documented', () => {
    const config = loadConfig({
      TESSERA_PORT: '9090',
      TESSERA_HOST: '0.0.0.0',
      TESSERA_ISSUER: 'https://auth.example.com/',
      TESSERA_DATA_DIR: '/tmp/tessera-data',
      TESSERA_DATABASE_URL: 'postgres://u@db:5432/tessera',
      TESSERA_LOG_LEVEL: 'debug',
      TESSERA_TRUST_PROXY: 'YES',
      TESSERA_BODY_LIMIT: '32768',
      TESSERA_SQLITE_CACHE_MB: '64',
      TESSERA_ACCESS_TOKEN_TTL: '900',
      TESSERA_ID_TOKEN_TTL: '600',
      TESSERA_REFRESH_TOKEN_TTL: '86400',
      TESSERA_REFRESH_GRACE: '0',
      TESSERA_CLOCK_LEEWAY: '0',
      TESSERA_OTP_TTL: '120',
      TESSERA_OTP_MAX_ATTEMPTS: '3',
      TESSERA_OTP_RESEND_INTERVAL: '0',
      TESSERA_RATE_LIMIT_OTP_START: ' 7 / 60 ',
      TESSERA_RATE_LIMIT_OTP_GUESSES: '8/900',
      TESSERA_RATE_LIMIT_IP: '100/1',
      TESSERA_KEY_ROTATION_DELAY: '0',
      TESSERA_KEY_ROTATION_PERIOD: '7776000',
      TESSERA_WEBHOOK_BACKOFF: '1, 10,100',
      TESSERA_WEBHOOK_TIMEOUT: '5',
      TESSERA_WEBHOOK_ALLOW_PRIVATE: 'false',
      TESSERA_WEBHOOK_MAX_ENDPOINTS: '3',
      TESSERA_WEBHOOK_DELIVERIES_PER_MINUTE: '60',
      TESSERA_METRICS_TOKEN: 'metrics-token',
      TESSERA_DEMO: 'off',
      TESSERA_SMS_URL: 'https://sms.example.com/send',
      TESSERA_SMS_TOKEN: 'token',
      TESSERA_SMS_FROM: 'Tessera',
      TESSERA_MAIL_FROM: 'Acme <auth@acme.example>',
      TESSERA_DATABASE_CONNECT_TIMEOUT: '2',
      TESSERA_DATABASE_STATEMENT_TIMEOUT: '15',
      TESSERA_DATABASE_IDLE_TIMEOUT: '600',
      TESSERA_HTTP_REQUEST_TIMEOUT: '20',
      TESSERA_HTTP_HEADERS_TIMEOUT: '20',
      TESSERA_HTTP_KEEP_ALIVE_TIMEOUT: '65',
      TESSERA_HTTP_IDLE_TIMEOUT: '120',
      TESSERA_SHUTDOWN_TIMEOUT: '25',
      TESSERA_SMS_BUDGET_HOURLY: '50',
      TESSERA_SMS_BUDGET_DAILY: '0',
      TESSERA_EMAIL_BUDGET_HOURLY: '0',
      TESSERA_EMAIL_BUDGET_DAILY: '900',
      TESSERA_SMS_COUNTRIES: ' us, ca,GB,us ',
      TESSERA_RATE_LIMIT_SMS_PREFIX: '3/120',
      TESSERA_SMS_PREFIX_DIGITS: '6',
      TESSERA_OTP_START_VERIFIER_URL: 'https://verify.example.com/otp-start',
      TESSERA_OTP_START_VERIFIER_TOKEN: 'verifier-token',
      TESSERA_OTP_START_VERIFIER_CHANNELS: 'sms',
      TESSERA_OTP_START_VERIFIER_TIMEOUT: '2',
    });
    assert.equal(config.port, 9090);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.issuer, 'https://auth.example.com');
    assert.equal(config.dataDir, '/tmp/tessera-data');
    assert.equal(config.databaseUrl, 'postgres://u@db:5432/tessera');
    assert.equal(config.logLevel, 'debug');
    // `true` trusts one proxy hop, never the left-most X-Forwarded-For entry.
    assert.equal(config.trustProxy, 1);
    assert.equal(config.bodyLimit, 32768);
    assert.equal(config.sqliteCacheKiB, 64 * 1024);
    assert.equal(config.accessTokenTtl, 900);
    assert.equal(config.idTokenTtl, 600);
    assert.equal(config.refreshTokenTtl, 86400);
    assert.equal(config.refreshGrace, 0);
    assert.equal(config.clockLeeway, 0);
    assert.deepEqual(config.otp, { ttl: 120, maxAttempts: 3, resendInterval: 0 });
    assert.deepEqual(config.rateLimits, {
      otpStartPerIdentifier: { limit: 7, window: 60 },
      otpGuessesPerIdentifier: { limit: 8, window: 900 },
      otpStartCeiling: { limit: 30, window: 3600 },
      otpGuessesCeiling: { limit: 100, window: 86400 },
      otpGuessesPerNetworkDaily: { limit: 20, window: 86400 },
      perIp: { limit: 100, window: 1 },
    });
    assert.deepEqual(config.keys, { rotationDelay: 0, rotationPeriod: 7776000 });
    assert.deepEqual(config.webhooks, {
      backoff: [1, 10, 100],
      timeoutMs: 5000,
      allowPrivate: false,
      maxEndpoints: 3,
      deliveriesPerMinute: 60,
    });
    assert.equal(config.metricsToken, 'metrics-token');
    assert.equal(config.demo, false);
    // An SMS provider alone switches delivery to live.
    assert.equal(config.delivery.mode, 'live');
    assert.equal(config.delivery.smsUrl, 'https://sms.example.com/send');
    assert.equal(config.delivery.mailFrom, 'Acme <auth@acme.example>');
    assert.deepEqual(config.databaseTimeouts, { connectMs: 2000, statementMs: 15_000, idleMs: 600_000 });
    assert.deepEqual(config.http, {
      requestTimeoutMs: 20_000,
      headersTimeoutMs: 20_000,
      keepAliveTimeoutMs: 65_000,
      socketTimeoutMs: 120_000,
    });
    assert.equal(config.shutdownTimeoutMs, 25_000);
    assert.deepEqual(config.otpSending, {
      budgets: { sms: { hourly: 50, daily: 0 }, email: { hourly: 0, daily: 900 } },
      smsCountries: ['US', 'CA', 'GB'],
      smsPrefix: { limit: 3, window: 120 },
      smsPrefixDigits: 6,
      startVerifier: {
        url: 'https://verify.example.com/otp-start',
        token: 'verifier-token',
        channels: ['sms'],
        timeoutMs: 2000,
      },
    });
  });

  test('TESSERA_SMS_COUNTRIES: empty or * allows every country', () => {
    assert.deepEqual(loadConfig({ TESSERA_SMS_COUNTRIES: '' }).otpSending.smsCountries, ['*']);
    assert.deepEqual(loadConfig({ TESSERA_SMS_COUNTRIES: ' , ' }).otpSending.smsCountries, ['*']);
    assert.deepEqual(loadConfig({ TESSERA_SMS_COUNTRIES: '*' }).otpSending.smsCountries, ['*']);
  });

  test('the start verifier asks for both channels by default', () => {
    const config = loadConfig({ TESSERA_OTP_START_VERIFIER_URL: 'http://127.0.0.1:9000/check' });
    assert.deepEqual(config.otpSending.startVerifier, {
      url: 'http://127.0.0.1:9000/check',
      token: undefined,
      channels: ['sms', 'email'],
      timeoutMs: 5000,
    });
  });

  test('the headers timeout defaults to 10 s, or to a shorter request timeout', () => {
    assert.equal(loadConfig({ TESSERA_HTTP_REQUEST_TIMEOUT: '4' }).http.headersTimeoutMs, 4000);
    assert.equal(loadConfig({ TESSERA_HTTP_REQUEST_TIMEOUT: '60' }).http.headersTimeoutMs, 10_000);
  });

  test('TESSERA_TRUST_PROXY takes a hop count or proxy addresses and CIDR ranges', () => {
    const at = (value: string) => loadConfig({ TESSERA_ENV: 'test', TESSERA_TRUST_PROXY: value }).trustProxy;
    assert.equal(at('false'), false);
    assert.equal(at('2'), 2);
    assert.deepEqual(at('10.0.0.0/8, 192.168.1.7,fd00::/8'), ['10.0.0.0/8', '192.168.1.7', 'fd00::/8']);
  });

  test('the default issuer follows the port; the database follows the data directory', () => {
    const config = loadConfig({ TESSERA_PORT: '3000', TESSERA_DATA_DIR: '/srv/tessera' });
    assert.equal(config.issuer, 'http://localhost:3000');
    assert.equal(config.databaseUrl, 'sqlite:/srv/tessera/tessera.db');
  });

  test('an SMTP URL switches delivery to live unless TESSERA_DELIVERY says dev', () => {
    assert.equal(loadConfig({ TESSERA_SMTP_URL: 'smtps://u:p@mail.example.com' }).delivery.mode, 'live');
    assert.equal(
      loadConfig({ TESSERA_SMTP_URL: 'smtp://mail.example.com', TESSERA_DELIVERY: 'dev' }).delivery.mode,
      'dev',
    );
  });
});

describe('loadConfig refuses bad values with one line naming the variable', () => {
  const cases: [variable: string, values: string[]][] = [
    ['TESSERA_ENV', ['staging', 'PRODUCTION', 'dev']],
    ['TESSERA_PORT', ['abc', '-1', '65536', '80.5', '1e3', '0x50', '8080abc']],
    ['TESSERA_ISSUER', ['not a url', 'ftp://auth.example.com', 'auth.example.com']],
    ['TESSERA_DATABASE_URL', ['mysql://db/tessera', './tessera.db', 'postgres:db']],
    ['TESSERA_LOG_LEVEL', ['verbose', 'INFO ', 'loud']],
    [
      'TESSERA_TRUST_PROXY',
      ['maybe', '11', '10.0.0.0/33', '300.1.1.1', '10.0.0.1, proxy.internal', '1.2.3.4/8/1'],
    ],
    ['TESSERA_BODY_LIMIT', ['10', '1023', '2000000', 'big']],
    ['TESSERA_SQLITE_CACHE_MB', ['0', '1025', '2.5', 'lots']],
    ['TESSERA_ACCESS_TOKEN_TTL', ['0', '29', '86401', '1.5', '1h']],
    ['TESSERA_ID_TOKEN_TTL', ['0', '86401', 'x']],
    ['TESSERA_REFRESH_TOKEN_TTL', ['59', '31536001', '30d']],
    ['TESSERA_REFRESH_GRACE', ['121', '-1']],
    ['TESSERA_CLOCK_LEEWAY', ['301', '-5']],
    ['TESSERA_OTP_TTL', ['29', '3601', 'five']],
    ['TESSERA_OTP_MAX_ATTEMPTS', ['0', '21']],
    ['TESSERA_OTP_RESEND_INTERVAL', ['3601', 'abc']],
    [
      'TESSERA_RATE_LIMIT_OTP_START',
      [
        '5',
        '0/900',
        '5/0',
        'five/900',
        '5/900/1',
        '-5/900',
        '2147483648/900',
        '99999999999999999999/900',
        '5/315360001',
      ],
    ],
    ['TESSERA_RATE_LIMIT_OTP_GUESSES', ['10', '0/900', '10:900']],
    ['TESSERA_RATE_LIMIT_IP', ['60', '60/0', '60 per 60']],
    ['TESSERA_SMTP_URL', ['not a url', 'http://mail.example.com', 'mail.example.com:25']],
    ['TESSERA_SMS_URL', ['not a url', 'smtp://sms.example.com']],
    ['TESSERA_DELIVERY', ['email', 'LIVE', 'smtp']],
    ['TESSERA_KEY_ROTATION_DELAY', ['-1', '2592001', 'soon']],
    ['TESSERA_KEY_ROTATION_PERIOD', ['-1', '315360001', '90d']],
    ['TESSERA_WEBHOOK_BACKOFF', ['5,a', '5,,60', '-5', '1.5', '1234567', Array(21).fill('5').join(',')]],
    ['TESSERA_WEBHOOK_TIMEOUT', ['0', '61', '10s']],
    ['TESSERA_DEMO', ['maybe', 'enabled']],
    ['TESSERA_DATABASE_CONNECT_TIMEOUT', ['0', '301', '5s', '0.5']],
    ['TESSERA_DATABASE_STATEMENT_TIMEOUT', ['0', '3601', '5000ms', '-1']],
    ['TESSERA_DATABASE_IDLE_TIMEOUT', ['0', '3601', 'never']],
    ['TESSERA_HTTP_REQUEST_TIMEOUT', ['0', '601', '30s']],
    ['TESSERA_HTTP_HEADERS_TIMEOUT', ['0', '601', 'x']],
    ['TESSERA_HTTP_KEEP_ALIVE_TIMEOUT', ['0', '601', '5.5']],
    ['TESSERA_HTTP_IDLE_TIMEOUT', ['0', '3601', 'off']],
    ['TESSERA_SHUTDOWN_TIMEOUT', ['0', '601', '10s']],
    ['TESSERA_SMS_BUDGET_HOURLY', ['-1', 'lots', '1.5']],
    ['TESSERA_SMS_BUDGET_DAILY', ['-1', '1000/day']],
    ['TESSERA_EMAIL_BUDGET_HOURLY', ['x', '100000001']],
    ['TESSERA_EMAIL_BUDGET_DAILY', ['-5']],
    ['TESSERA_SMS_COUNTRIES', ['USA', 'US;CA', 'XX', 'U', 'US,1']],
    ['TESSERA_RATE_LIMIT_SMS_PREFIX', ['10', '0/60', '10/0']],
    ['TESSERA_SMS_PREFIX_DIGITS', ['0', '13', 'four']],
    ['TESSERA_OTP_START_VERIFIER_URL', ['not a url', 'ftp://verify.example.com']],
    ['TESSERA_OTP_START_VERIFIER_TIMEOUT', ['0', '61', '5s']],
    ['TESSERA_DEV_OUTBOX_PUBLIC', ['maybe']],
  ];
  for (const [variable, values] of cases) {
    test(variable, () => {
      for (const value of values) assertRefused({ [variable]: value }, variable);
    });
  }

  test('TESSERA_OTP_START_VERIFIER_CHANNELS', () => {
    for (const value of ['push', 'sms,push', 'SMS', 'sms;email']) {
      assertRefused(
        {
          TESSERA_OTP_START_VERIFIER_URL: 'https://verify.example.com',
          TESSERA_OTP_START_VERIFIER_CHANNELS: value,
        },
        'TESSERA_OTP_START_VERIFIER_CHANNELS',
      );
    }
  });

  test('the refused value is quoted back for whole-number settings', () => {
    const error = assertRefused({ TESSERA_PORT: 'abc' }, 'TESSERA_PORT');
    assert.equal(error.message, 'TESSERA_PORT must be a whole number, got "abc"');
  });

  test('a headers timeout longer than the request timeout is refused (Node would refuse it later)', () => {
    const error = assertRefused(
      { TESSERA_HTTP_REQUEST_TIMEOUT: '5', TESSERA_HTTP_HEADERS_TIMEOUT: '6' },
      'TESSERA_HTTP_HEADERS_TIMEOUT',
    );
    assert.match(error.message, /TESSERA_HTTP_REQUEST_TIMEOUT/);
  });

  test('TESSERA_ALLOW_HTTP_ISSUER is read as a boolean when it matters', () => {
    assertRefused(
      { ...PRODUCTION, TESSERA_ISSUER: 'http://auth.internal', TESSERA_ALLOW_HTTP_ISSUER: 'maybe' },
      'TESSERA_ALLOW_HTTP_ISSUER',
    );
  });

  test('TESSERA_MASTER_KEY must decode to 32 bytes', () => {
    for (const value of [
      'short',
      'g'.repeat(64),
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('hex'),
    ]) {
      assert.throws(
        () => MasterKey.parse(value),
        (error: unknown) => error instanceof ConfigError && /TESSERA_MASTER_KEY/.test(error.message),
      );
    }
    assert.ok(MasterKey.parse(randomBytes(32).toString('hex')) instanceof MasterKey);
    assert.ok(MasterKey.parse(randomBytes(32).toString('base64url')) instanceof MasterKey);
    assert.ok(MasterKey.parse(` ${MASTER_KEY}\n`) instanceof MasterKey);
  });
});

describe('the development outbox stays on loopback', () => {
  test('regression: development delivery on a non-loopback address is refused, naming the variables', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'dev.example.com', '128.0.0.1', '::ffff:10.0.0.1']) {
      for (const env of [
        { TESSERA_HOST: host },
        { TESSERA_HOST: host, TESSERA_ENV: 'development', TESSERA_DELIVERY: 'dev' },
        { TESSERA_HOST: host, TESSERA_ENV: 'test' },
        { TESSERA_HOST: host, TESSERA_DEV_OUTBOX_PUBLIC: 'false' },
      ]) {
        const error = assertRefused(env, 'TESSERA_HOST');
        assert.match(error.message, /TESSERA_DELIVERY=dev/);
        assert.match(error.message, /TESSERA_DEV_OUTBOX_PUBLIC=true/);
      }
    }
  });

  test('loopback addresses keep the outbox', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) {
      const config = loadConfig({ TESSERA_HOST: host });
      assert.equal(config.host, host);
      assert.equal(config.delivery.mode, 'dev');
      assert.equal(config.devOutboxPublic, false);
    }
  });

  test('TESSERA_DEV_OUTBOX_PUBLIC=true is the explicit override (a container in development)', () => {
    const config = loadConfig({ TESSERA_HOST: '0.0.0.0', TESSERA_DEV_OUTBOX_PUBLIC: 'true' });
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.delivery.mode, 'dev');
    assert.equal(config.devOutboxPublic, true);
  });

  test('live delivery has no outbox: any address is fine', () => {
    const config = loadConfig({ TESSERA_HOST: '0.0.0.0', TESSERA_SMTP_URL: 'smtp://mail.example.com' });
    assert.equal(config.delivery.mode, 'live');
    assert.equal(loadConfig(PRODUCTION).host, '0.0.0.0');
  });
});

describe('production mode', () => {
  test('a complete production setup loads with production defaults', () => {
    const config = loadConfig(PRODUCTION);
    assert.equal(config.env, 'production');
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.issuer, 'https://auth.example.com');
    assert.equal(config.masterKey, MASTER_KEY);
    assert.equal(config.delivery.mode, 'live');
    assert.equal(config.demo, false);
    assert.equal(config.webhooks.allowPrivate, false);
    assert.equal(
      loadConfig({ ...PRODUCTION, TESSERA_WEBHOOK_ALLOW_PRIVATE: 'true' }).webhooks.allowPrivate,
      true,
    );
  });

  test('refuses to start without TESSERA_MASTER_KEY', () => {
    const error = assertRefused({ ...PRODUCTION, TESSERA_MASTER_KEY: undefined }, 'TESSERA_MASTER_KEY');
    assert.match(error.message, /required in production/);
    assertRefused({ ...PRODUCTION, TESSERA_MASTER_KEY: '' }, 'TESSERA_MASTER_KEY');
  });

  test('refuses development delivery, asked for or by default', () => {
    assertRefused({ ...PRODUCTION, TESSERA_DELIVERY: 'dev' }, 'TESSERA_DELIVERY');
    assertRefused({ ...PRODUCTION, TESSERA_SMTP_URL: undefined }, 'TESSERA_DELIVERY');
  });

  test('refuses an http issuer, the default one included, unless explicitly allowed', () => {
    const error = assertRefused(
      { ...PRODUCTION, TESSERA_ISSUER: 'http://auth.example.com' },
      'TESSERA_ISSUER',
    );
    assert.match(error.message, /https/);
    assertRefused({ ...PRODUCTION, TESSERA_ISSUER: undefined }, 'TESSERA_ISSUER');
    const allowed = loadConfig({
      ...PRODUCTION,
      TESSERA_ISSUER: 'http://auth.internal',
      TESSERA_ALLOW_HTTP_ISSUER: 'true',
    });
    assert.equal(allowed.issuer, 'http://auth.internal');
  });

  test('development accepts what production refuses', () => {
    const config = loadConfig({
      TESSERA_ENV: 'development',
      TESSERA_DELIVERY: 'dev',
      TESSERA_ISSUER: 'http://localhost:8080',
    });
    assert.equal(config.delivery.mode, 'dev');
    assert.equal(config.masterKey, undefined);
  });
});

describe('the refresh grace window against the database timeouts', () => {
  const warned = (env: Env): Array<Record<string, unknown>> => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = { warn: (fields: Record<string, unknown>) => void lines.push(fields) };
    warnShortRefreshGrace(logger as unknown as Parameters<typeof warnShortRefreshGrace>[0], loadConfig(env));
    return lines;
  };
  const postgres = { TESSERA_DATABASE_URL: 'postgres://tessera@db.example.com/tessera' };

  test('the default covers a lost answer retried after the 503 Retry-After', () => {
    // Connect 5 s + statement 5 s + 1 s, then Retry-After 5 s: 16 s, within the default 30 s.
    assert.equal(refreshGraceNeeded(loadConfig(postgres)), 16);
    assert.deepEqual(warned(postgres), []);
  });

  test('a shorter window on PostgreSQL is warned about; 0 (no grace) and SQLite are not', () => {
    assert.deepEqual(warned({ ...postgres, TESSERA_REFRESH_GRACE: '10' }), [
      { refreshGrace: 10, needed: 16 },
    ]);
    assert.deepEqual(
      warned({ ...postgres, TESSERA_REFRESH_GRACE: '20', TESSERA_DATABASE_STATEMENT_TIMEOUT: '30' }),
      [{ refreshGrace: 20, needed: 41 }],
    );
    assert.deepEqual(warned({ ...postgres, TESSERA_REFRESH_GRACE: '0' }), []);
    assert.deepEqual(warned({ TESSERA_REFRESH_GRACE: '5' }), []);
  });
});
