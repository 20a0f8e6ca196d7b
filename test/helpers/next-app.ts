// Shared by the end-to-end tests of examples/next and examples/next-authjs: Next is not a dependency
// of the monorepo, so each test installs its app with npm into a temporary copy, then builds it
// with `next build` and serves it with `next start` (or `next dev`) on 127.0.0.1.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Whether the npm registry answers for `spec` (`npm view <spec> version`): Next is installed from it. */
export async function registryHas(spec: string): Promise<boolean> {
  try {
    await run('npm', ['view', spec, 'version'], { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/** `npm install` in the app's copy `dir`, its lifecycle scripts off. */
export async function npmInstall(dir: string): Promise<void> {
  await run(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--loglevel=error'],
    { cwd: dir, timeout: 600_000 },
  );
}

const nextBin = (dir: string) => join(dir, 'node_modules', 'next', 'dist', 'bin', 'next');

/** `next build` in `dir`: what it printed, or an error that says it. */
export function nextBuild(dir: string, env: NodeJS.ProcessEnv): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [nextBin(dir), 'build'], { cwd: dir, env, timeout: 600_000 }).catch(
    (error: { stdout?: string; stderr?: string }) => {
      throw new Error(`next build failed:\n${error.stdout}\n${error.stderr}`);
    },
  );
}

export interface NextServer {
  /** What the server printed so far. */
  log(): string;
  /** SIGTERM, then SIGKILL after 5 s; nothing if it has exited. */
  stop(): Promise<void>;
}

/**
 * `next start` (or `next dev`) in `dir` on 127.0.0.1:`port`, once it answers HTTP; if it exits
 * first or does not answer within 60 s, it is stopped and the error shows its log.
 */
export async function startNext(
  dir: string,
  command: 'start' | 'dev',
  port: number,
  env: NodeJS.ProcessEnv,
): Promise<NextServer> {
  const child = spawn(process.execPath, [nextBin(dir), command, '-H', '127.0.0.1', '-p', String(port)], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => (log += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk));
  const server = { log: () => log, stop: () => stop(child) };
  try {
    await waitForHttp(`http://127.0.0.1:${port}`, child, server.log, command);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

async function waitForHttp(
  origin: string,
  child: ChildProcess,
  log: () => string,
  command: string,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`next ${command} exited with ${child.exitCode}:\n${log()}`);
    const up = await fetch(`${origin}/`, { redirect: 'manual' }).then(
      () => true,
      () => false,
    );
    if (up) return;
    await sleep(250);
  }
  throw new Error(`next ${command} did not answer within 60 s:\n${log()}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(5000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}
