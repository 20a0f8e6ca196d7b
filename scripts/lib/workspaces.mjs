// The workspace packages, read from the root package.json's "workspaces" (plain paths and "dir/*").
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Every workspace as { dir (absolute), path (relative to the root), manifest }. */
export function workspaces(root = ROOT) {
  const patterns = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces ?? [];
  const paths = patterns.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    return readdirSync(join(root, parent), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${parent}/${entry.name}`)
      .sort();
  });
  return paths
    .filter((path) => existsSync(join(root, path, 'package.json')))
    .map((path) => ({
      dir: join(root, path),
      path,
      manifest: JSON.parse(readFileSync(join(root, path, 'package.json'), 'utf8')),
    }));
}

/** The workspaces that are published: every one not marked "private". */
export function publishable(root = ROOT) {
  return workspaces(root).filter((w) => w.manifest.private !== true);
}
