// docs/OIDC.md's client snippets, read by the tests that run them as written: only the
// placeholders (the issuer https://auth.example.com, 'tc_…', 'tcs_…', the port 3000) are replaced.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './browser.js';

/** docs/OIDC.md's snippets marked `<!-- snippet: name -->`, by name. */
export function oidcSnippets(): Map<string, string> {
  const text = readFileSync(join(ROOT, 'docs/OIDC.md'), 'utf8');
  const out = new Map<string, string>();
  for (const match of text.matchAll(/<!-- snippet: ([\w-]+) -->\n```\w+\n([\s\S]*?)\n```\n/g))
    out.set(match[1]!, match[2]!);
  return out;
}

/** A snippet with its placeholders replaced by the test's issuer, client and port. */
export const substitute = (
  code: string,
  v: { issuer: string; clientId: string; secret?: string; port?: number },
) => {
  let out = code.replaceAll('https://auth.example.com', v.issuer).replaceAll("'tc_…'", `'${v.clientId}'`);
  if (v.secret) out = out.replaceAll("'tcs_…'", `'${v.secret}'`);
  if (v.port) out = out.replaceAll('3000', String(v.port));
  return out;
};
