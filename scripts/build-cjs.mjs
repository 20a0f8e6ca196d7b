// Dual ESM + CommonJS for every publishable workspace package, after `tsc -b` has built dist/ (ESM).
//
//   node scripts/build-cjs.mjs              writes dist/cjs/ of each package: its dist/**/*.js turned
//                                           into CommonJS, its .d.ts copied beside them, and a
//                                           package.json {"type":"commonjs"} so Node and TypeScript
//                                           read both as CommonJS.
//   node scripts/build-cjs.mjs --manifests  rewrites each package.json's "exports", "main", "module",
//                                           "types" and "typesVersions" from its entries' sources.
//   node scripts/build-cjs.mjs --check      exits 1 when a package.json differs from what --manifests
//                                           would write.
//
// An entry is an "exports" subpath with a "tessera-source" condition (./src/<name>.ts or .tsx);
// the rest is derived from it. A package without such entries (the server: a CLI) is left alone.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { transform } from 'esbuild';
import { publishable } from './lib/workspaces.mjs';

/** The entries of a manifest: [subpath, source] for each export with a tessera-source condition. */
export function entriesOf(manifest) {
  return Object.entries(manifest.exports ?? {})
    .filter(([, target]) => target && typeof target === 'object' && target['tessera-source'])
    .map(([subpath, target]) => [subpath, target['tessera-source']]);
}

/** The manifest with exports for ESM (import) and CommonJS (require), and node10 fallbacks. */
export function dualManifest(manifest) {
  const entries = entriesOf(manifest);
  if (entries.length === 0) return manifest;
  const built = (source, dir) => {
    const base = source.replace(/^\.\/src\//, `./${dir}/`).replace(/\.tsx?$/, '');
    return { types: `${base}.d.ts`, default: `${base}.js` };
  };
  const exports = {};
  const typesVersions = {};
  for (const [subpath, source] of entries) {
    exports[subpath] = {
      'tessera-source': source,
      import: built(source, 'dist'),
      require: built(source, 'dist/cjs'),
    };
    if (subpath !== '.') typesVersions[subpath.slice(2)] = [built(source, 'dist/cjs').types];
  }
  for (const [subpath, target] of Object.entries(manifest.exports))
    if (!(subpath in exports)) exports[subpath] = target; // ./package.json and the like
  const root = exports['.'];
  const next = {};
  for (const [key, value] of Object.entries(manifest)) {
    if (['main', 'module', 'types', 'typesVersions'].includes(key)) continue;
    next[key] = key === 'exports' ? exports : value;
    if (key === 'exports' && root) {
      // For resolvers that do not read "exports" (TypeScript's node10, old bundlers).
      next.main = root.require.default;
      next.module = root.import.default;
      next.types = root.require.types;
    }
    if (key === 'exports' && Object.keys(typesVersions).length > 0)
      next.typesVersions = { '*': typesVersions };
  }
  return next;
}

/** Writes dist/cjs of a built package: CommonJS JavaScript and the declarations beside it. */
async function buildCjs(dir) {
  const dist = join(dir, 'dist');
  const out = join(dist, 'cjs');
  if (!existsSync(dist)) throw new Error(`${dist} is missing: run tsc -b first`);
  rmSync(out, { recursive: true, force: true });
  const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter(
    (file) => !file.startsWith(`cjs/`) && file !== 'cjs' && /\.(js|d\.ts)$/.test(file),
  );
  for (const file of files) {
    const code = readFileSync(join(dist, file), 'utf8');
    mkdirSync(dirname(join(out, file)), { recursive: true });
    if (file.endsWith('.d.ts')) {
      // In a CommonJS declaration file "require" is the default resolution mode already, and
      // TypeScript before 5.3 refuses resolution-mode outside node16/nodenext (TS1452).
      writeFileSync(
        join(out, file),
        code.replace(/^(\/\/\/ <reference types="[^"]+") resolution-mode="require"\s*\/>/gm, '$1 />'),
      );
      continue;
    }
    const usesMeta = code.includes('import.meta');
    const result = await transform(code, {
      format: 'cjs',
      platform: 'node',
      target: 'es2022',
      sourcefile: relative(dir, join(dist, file)),
      // import.meta.url has no CommonJS twin; only files that use it get the (Node-only) shim.
      ...(usesMeta
        ? {
            define: { 'import.meta.url': '__tesseraImportMetaUrl' },
            banner: "const __tesseraImportMetaUrl = require('node:url').pathToFileURL(__filename).href;",
          }
        : {}),
      logLevel: 'error',
    });
    writeFileSync(join(out, file), result.code);
  }
  writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
}

const mode = process.argv[2];
let stale = 0;
for (const { dir, path, manifest } of publishable()) {
  if (entriesOf(manifest).length === 0) continue;
  const expected = `${JSON.stringify(dualManifest(manifest), null, 2)}\n`;
  const file = join(dir, 'package.json');
  if (mode === '--manifests') {
    if (readFileSync(file, 'utf8') !== expected) writeFileSync(file, expected);
  } else if (mode === '--check') {
    if (readFileSync(file, 'utf8') !== expected) {
      stale++;
      console.error(`${path}/package.json: exports are not dual; run node scripts/build-cjs.mjs --manifests`);
    }
  } else {
    await buildCjs(dir);
  }
}
if (stale > 0) process.exit(1);
