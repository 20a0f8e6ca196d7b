import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Dialect, postgresUrl } from './harness.js';

/** The repository root, where the CLI runs from source (as `npm run tessera` does). */
export const root = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI = ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts'];

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The parent's environment without any TESSERA_*, PORT or NODE_ENV, plus `extra`. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('TESSERA_') && name !== 'NODE_ENV' && name !== 'PORT') env[name] = value;
  }
  return { ...env, ...extra };
}

export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...CLI, ...args], { cwd: root, env: cleanEnv(env), stdio: 'pipe' });
}

/** What a child printed so far (updated as it prints). */
export function collect(child: ChildProcess): { stdout: string; stderr: string } {
  const output = { stdout: '', stderr: '' };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk;
  });
  return output;
}

export function finished(child: ChildProcess, output: { stdout: string; stderr: string }): Promise<Run> {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, ...output }));
  });
}

/** A CLI child being run: what it printed so far, and its end. */
export interface RunningCli {
  child: ChildProcess;
  output: { stdout: string; stderr: string };
  done: Promise<Run>;
}

/** Starts `tessera <args>`, collecting its output as it prints. */
export function startCli(args: string[], env: Record<string, string>): RunningCli {
  const child = spawnCli(args, env);
  const output = collect(child);
  return { child, output, done: finished(child, output) };
}

/** Runs `tessera <args>` to the end. */
export function run(args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawnCli(args, env);
  return finished(child, collect(child));
}

/** A single-line error on stderr with no stack trace, and nothing on stdout. */
export function assertOneLineError(result: Run, code: number, pattern: RegExp): void {
  assert.equal(result.code, code, `exit ${result.code}; stderr: ${result.stderr}`);
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `stderr is not one line: ${result.stderr}`);
  assert.match(lines[0]!, /^tessera: /);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(result.stderr, /^\s+at /m);
  assert.equal(result.stdout, '');
}

/** Resolves once `predicate` holds for the child's output; rejects if the child exits first or time runs out. */
export function outputMatches(
  child: ChildProcess,
  output: { stdout: string; stderr: string },
  predicate: (output: { stdout: string; stderr: string }) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      clearInterval(poll);
      clearTimeout(timer);
      child.removeListener('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const check = () => {
      if (predicate(output)) done();
    };
    const onClose = (code: number | null) =>
      done(new Error(`exited ${code} before ${what}: ${output.stderr}${output.stdout}`));
    const poll = setInterval(check, 25);
    const timer = setTimeout(
      () => done(new Error(`timed out waiting for ${what}: ${output.stderr}${output.stdout}`)),
      timeoutMs,
    );
    child.once('close', onClose);
    check();
  });
}

/** The JSON log lines of an output (other lines, such as the banner, are skipped). */
export function logLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** One statement on a short-lived connection to the test PostgreSQL server. */
async function adminQuery(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * A database for CLI processes, with its data directory and master key in `env`: a SQLite file,
 * or a PostgreSQL schema of its own named in the URL's search_path. `postgresHost` points the
 * URL elsewhere (a forwarder that stands for a database not up yet).
 */
export async function cliDatabase(
  dialect: Dialect,
  options: { postgresHost?: string } = {},
): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-cli-'));
  const base = { TESSERA_DATA_DIR: dir, TESSERA_MASTER_KEY: randomBytes(32).toString('base64') };
  if (dialect === 'sqlite') {
    return {
      env: { ...base, TESSERA_DATABASE_URL: `sqlite:${join(dir, 'tessera.db')}` },
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  const url = new URL(postgresUrl!);
  if (options.postgresHost) url.host = options.postgresHost;
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { ...base, TESSERA_DATABASE_URL: url.toString() },
    cleanup: async () => {
      await adminQuery(`drop schema if exists ${schema} cascade`);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `body` against a fresh SQLite database of its own (removed afterwards): `env` for `run`, and
 * `json`, which runs `tessera <args> --json`, asserts it exits 0 and parses what it printed.
 */
export async function withCliDatabase<T>(
  body: (cli: { env: Record<string, string>; json(args: string[]): Promise<T> }) => Promise<void>,
): Promise<void> {
  const { env, cleanup } = await cliDatabase('sqlite');
  const json = async (args: string[]) => {
    const result = await run([...args, '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
  };
  try {
    await body({ env, json });
  } finally {
    await cleanup();
  }
}
