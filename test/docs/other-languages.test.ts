// The Python and Go sections of docs/APPS.md ("A backend"), run as written against a real server:
// each is marked `<!-- example: python -->` / `<!-- example: go -->` before its code fence, gets
// only the issuer and API key id substituted, and must accept a valid access token and refuse the
// same claims signed by the same key under typ "JWT" (only the typ check tells them apart), an ID
// token, another project's token, an expired one and a forged one. Each runs where its toolchain is present and says when it skips:
// Python needs PyJWT ≥ 2.6 (Debian: python3-jwt); Go needs `go` and github.com/lestrrat-go/jwx/v2
// already in the module cache (modules are never downloaded here: GOPROXY=off).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { signJwt } from '../../packages/server/src/tokens/jwt.js';
import { RELAXED_LIMITS, startServer, type TestServer } from '../../packages/server/test/helpers/harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The code under `<!-- example: name -->` in docs/APPS.md. */
function exampleOf(name: string): string {
  const text = readFileSync(join(ROOT, 'docs/APPS.md'), 'utf8');
  const match = new RegExp(`<!-- example: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(text);
  assert.ok(match, `docs/APPS.md has no code marked <!-- example: ${name} -->`);
  return `${match[1]!}\n`;
}

const substitute = (code: string, issuer: string, apiKeyId: string) =>
  code.replaceAll('https://auth.example.com', issuer).replaceAll('pk_…', apiKeyId);

/** A Python with PyJWT ≥ 2.6 and cryptography, or undefined. */
function pythonWithPyJwt(): string | undefined {
  const probe =
    "import jwt, cryptography; v = tuple(int(p) for p in jwt.__version__.split('.')[:2]); assert v >= (2, 6)";
  for (const candidate of ['python3', '/usr/bin/python3', 'python']) {
    if (spawnSync(candidate, ['-c', probe], { encoding: 'utf8' }).status === 0) return candidate;
  }
  return undefined;
}

const GO_ENV = {
  ...process.env,
  GOPROXY: 'off',
  GOFLAGS: '-mod=mod',
  GONOSUMDB: '*',
  GONOSUMCHECK: '1',
  GOSUMDB: 'off',
};

/** The cached version of jwx v2 when `go` is installed and has it, or why not. */
function goWithJwx(): { version: string } | { why: string } {
  if (spawnSync('go', ['version'], { encoding: 'utf8' }).status !== 0) return { why: 'go is not installed' };
  const listed = spawnSync('go', ['list', '-m', '-json', 'github.com/lestrrat-go/jwx/v2@latest'], {
    encoding: 'utf8',
    env: GO_ENV,
    cwd: tmpdir(),
  });
  if (listed.status !== 0)
    return {
      why: 'github.com/lestrrat-go/jwx/v2 is not in the Go module cache (modules are not downloaded here)',
    };
  return { version: (JSON.parse(listed.stdout) as { Version: string }).Version };
}

const python = pythonWithPyJwt();
const go = goWithJwx();
if (!python)
  console.log('# Python example skipped: no python3 with PyJWT >= 2.6 (Debian: apt-get install python3-jwt)');
if ('why' in go) console.log(`# Go example skipped: ${go.why}`);

/**
 * Runs a program without blocking this process (it calls the server this process runs), feeding
 * `input` on stdin.
 */
function run(
  command: string,
  args: string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** Outcome per token line: { ok, sub } or { ok: false }. */
type Outcome = { ok: true; sub: string } | { ok: false; error: string };

describe('docs/APPS.md: backends in other languages', () => {
  let server: TestServer;
  let work: string;
  const tokens: Record<string, string> = {};
  let sub: string;
  const clock = { t: Date.now(), now: () => clock.t };

  before(async () => {
    server = await startServer('sqlite', { env: RELAXED_LIMITS, now: clock.now });
    work = mkdtempSync(join(tmpdir(), 'tessera-languages-'));
    clock.t = Date.now() - 3 * 3600_000;
    tokens.expired = (await server.signIn('old@example.com')).access_token;
    clock.t = Date.now();
    const bundle = await server.signIn('ada@example.com');
    tokens.valid = bundle.access_token;
    tokens.idToken = bundle.id_token;
    sub = JSON.parse(Buffer.from(bundle.access_token.split('.')[1]!, 'base64url').toString()).sub;
    const other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
    tokens.otherProject = (await server.signIn('ada@example.com', other)).access_token;
    const [h, p, s] = tokens.valid.split('.') as [string, string, string];
    // The access token's very claims, signed by the issuer's key, under typ "JWT": only the typ
    // check (RFC 8725 §3.11) refuses it.
    const key = server.ctx.keys.signingKey();
    tokens.wrongTyp = signJwt(
      { alg: 'ES256', kid: key.kid, typ: 'JWT' },
      JSON.parse(Buffer.from(p, 'base64url').toString()),
      key.privateKey,
    );
    const forged = JSON.parse(Buffer.from(p, 'base64url').toString());
    forged.sub = 'someone-else';
    tokens.forged = `${h}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${s}`;
  });
  after(async () => {
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const ORDER = ['valid', 'wrongTyp', 'idToken', 'otherProject', 'expired', 'forged'] as const;
  /** Checks a program's answer: one JSON outcome a line, in ORDER. */
  const assertOutcomes = (stdout: string) => {
    const outcomes = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Outcome);
    assert.equal(outcomes.length, ORDER.length, JSON.stringify(outcomes));
    const [valid, ...refused] = outcomes;
    assert.deepEqual(valid, { ok: true, sub }, 'a valid access token is accepted');
    for (const [i, outcome] of refused.entries())
      assert.equal(outcome.ok, false, `${ORDER[i + 1]} is refused: ${JSON.stringify(outcome)}`);
  };

  test('Python (PyJWT with PyJWKClient, typ checked)', {
    skip: python ? false : 'no python3 with PyJWT >= 2.6',
  }, async () => {
    const file = join(work, 'verify.py');
    writeFileSync(
      file,
      `${substitute(exampleOf('python'), server.url, server.project.api_key_id)}
import json, sys
for line in sys.stdin:
    try:
        print(json.dumps({'ok': True, 'sub': verify_access_token(line.strip())['sub']}))
    except jwt.InvalidTokenError as error:
        print(json.dumps({'ok': False, 'error': type(error).__name__}))
`,
    );
    const ran = await run(python!, [file], { input: ORDER.map((k) => tokens[k]).join('\n') });
    assert.equal(ran.status, 0, ran.stderr);
    assertOutcomes(ran.stdout);
  });

  test('Go (lestrrat-go/jwx, typ checked)', { skip: 'why' in go ? go.why : false }, async () => {
    const version = (go as { version: string }).version;
    const code = substitute(exampleOf('go'), server.url, server.project.api_key_id).replace(
      /^package \w+/m,
      'package main',
    );
    writeFileSync(
      join(work, 'go.mod'),
      `module example.test/verify\n\ngo 1.21\n\nrequire github.com/lestrrat-go/jwx/v2 ${version}\n`,
    );
    writeFileSync(join(work, 'verify.go'), code);
    writeFileSync(
      join(work, 'main.go'),
      `package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	verifier, err := NewVerifier(context.Background())
	if err != nil {
		panic(err)
	}
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		claims, err := verifier.Verify(lines.Text())
		var out map[string]any
		if err != nil {
			out = map[string]any{"ok": false, "error": err.Error()}
		} else {
			out = map[string]any{"ok": true, "sub": claims.Subject()}
		}
		line, _ := json.Marshal(out)
		fmt.Println(string(line))
	}
}
`,
    );
    await run('go', ['mod', 'tidy'], { cwd: work, env: GO_ENV });
    const ran = await run('go', ['run', '.'], {
      cwd: work,
      env: GO_ENV,
      input: ORDER.map((k) => tokens[k]).join('\n'),
    });
    assert.equal(ran.status, 0, ran.stderr);
    assertOutcomes(ran.stdout);
  });
});
