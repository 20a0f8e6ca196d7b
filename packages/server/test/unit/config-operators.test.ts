import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { describe, test } from 'node:test';
import { ConfigError, KNOWN_VARIABLES, loadConfig, readConfig } from '../../src/config/index.js';

const PRODUCTION = {
  TESSERA_ENV: 'production',
  TESSERA_MASTER_KEY: randomBytes(32).toString('base64'),
  TESSERA_ISSUER: 'https://auth.example.com',
  TESSERA_SMTP_URL: 'smtp://mail.example.com:587',
};

function refused(env: Record<string, string>, pattern: RegExp): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, pattern);
      assert.ok(!error.message.includes('\n'));
      return true;
    },
  );
}

describe('configuration for operators', () => {
  test('PORT is honoured when TESSERA_PORT is unset (and then names the issuer); TESSERA_PORT wins', () => {
    assert.equal(loadConfig({ PORT: '3000' }).port, 3000);
    assert.equal(loadConfig({ PORT: '3000' }).issuer, 'http://localhost:3000');
    assert.equal(loadConfig({ PORT: '3000', TESSERA_PORT: '4000' }).port, 4000);
    assert.equal(loadConfig({ PORT: '3000', TESSERA_PORT: '' }).port, 3000);
    assert.equal(loadConfig({}).port, 8080);
    refused({ PORT: 'http' }, /^PORT must be a whole number, got "http"$/);
    // A bad PORT does not matter when TESSERA_PORT is set.
    assert.equal(loadConfig({ PORT: 'http', TESSERA_PORT: '4000' }).port, 4000);
  });

  test('TESSERA_OPERATOR_TOKEN: unset turns the operator API off; a short one is refused', () => {
    assert.equal(loadConfig({}).operatorToken, undefined);
    const token = randomBytes(32).toString('base64');
    assert.equal(loadConfig({ TESSERA_OPERATOR_TOKEN: token }).operatorToken, token);
    refused({ TESSERA_OPERATOR_TOKEN: 'letmein' }, /^TESSERA_OPERATOR_TOKEN must be at least 32 characters/);
    refused({ TESSERA_OPERATOR_TOKEN: `${'a'.repeat(20)} ${'b'.repeat(20)}` }, /TESSERA_OPERATOR_TOKEN/);
    // The refusal never quotes the value.
    assert.throws(
      () => loadConfig({ TESSERA_OPERATOR_TOKEN: 'secret-value' }),
      (e: Error) => !e.message.includes('secret-value'),
    );
  });

  test('TESSERA_DATABASE_WAIT: 60 s by default, 0 to 3600', () => {
    assert.equal(loadConfig({}).databaseWaitMs, 60_000);
    assert.equal(loadConfig({ TESSERA_DATABASE_WAIT: '0' }).databaseWaitMs, 0);
    assert.equal(loadConfig({ TESSERA_DATABASE_WAIT: '5' }).databaseWaitMs, 5_000);
    refused({ TESSERA_DATABASE_WAIT: '-1' }, /TESSERA_DATABASE_WAIT must be a whole number/);
    refused({ TESSERA_DATABASE_WAIT: '3601' }, /TESSERA_DATABASE_WAIT must be between 0 and 3600/);
  });

  test('TESSERA_WORKERS: the number of cores in production, 1 otherwise', () => {
    assert.equal(loadConfig({}).workers, 1);
    assert.equal(loadConfig({ TESSERA_ENV: 'test' }).workers, 1);
    assert.equal(loadConfig(PRODUCTION).workers, availableParallelism());
    assert.equal(loadConfig({ ...PRODUCTION, TESSERA_WORKERS: '3' }).workers, 3);
    refused({ TESSERA_WORKERS: '0' }, /TESSERA_WORKERS must be between 1 and 256/);
  });

  test('unknown TESSERA_* variables are reported with the closest known name', () => {
    const { unknown } = readConfig({
      TESSERA_DATABSE_URL: 'postgres://x',
      TESSERA_PROT: '80',
      TESSERA_SOMETHING_ELSE_ENTIRELY: '1',
      TESSERA_PORT: '8081',
      PORT: '9',
      HOME: '/root',
    });
    assert.deepEqual(unknown, [
      { name: 'TESSERA_DATABSE_URL', suggestion: 'TESSERA_DATABASE_URL' },
      { name: 'TESSERA_PROT', suggestion: 'TESSERA_PORT' },
      { name: 'TESSERA_SOMETHING_ELSE_ENTIRELY', suggestion: undefined },
    ]);
    // Known variables that are read only in some modes are not unknown in the others.
    assert.deepEqual(
      readConfig({ TESSERA_ALLOW_HTTP_ISSUER: 'true', TESSERA_TEST_LOG_LEVEL: 'info' }).unknown,
      [],
    );
    assert.deepEqual(readConfig(PRODUCTION).unknown, []);
  });

  test('every variable the loader reads is known, and every known variable is documented in docs/CONFIGURATION.md, and vice versa', () => {
    const read = new Set<string>();
    const recording = (env: Record<string, string>) =>
      new Proxy(env, {
        get(target, name) {
          if (typeof name === 'string') read.add(name);
          return Reflect.get(target, name);
        },
      });
    loadConfig(recording({}));
    loadConfig(
      recording({ ...PRODUCTION, TESSERA_ISSUER: 'http://auth.internal', TESSERA_ALLOW_HTTP_ISSUER: 'true' }),
    );
    const readTessera = [...read].filter((name) => name.startsWith('TESSERA_'));
    for (const name of readTessera)
      assert.ok(KNOWN_VARIABLES.includes(name), `${name} is read but not in KNOWN_VARIABLES`);

    const docs = readFileSync(new URL('../../../../docs/CONFIGURATION.md', import.meta.url), 'utf8');
    const documented = new Set([...docs.matchAll(/^\| `(TESSERA_[A-Z0-9_]+)`/gm)].map((m) => m[1]!));
    const configurable = KNOWN_VARIABLES.filter((name) => !name.startsWith('TESSERA_TEST_'));
    for (const name of configurable)
      assert.ok(documented.has(name), `${name} is not documented in docs/CONFIGURATION.md`);
    for (const name of documented)
      assert.ok(KNOWN_VARIABLES.includes(name), `${name} is documented but unknown`);
  });
});
